"""Images of a giant page (14,400 pt a side): bounded in pixels, cached within bytes, never 500.

At 110 dpi such a page is 22,000 px a side, which MuPDF refuses ("Overly large image"); at 72 dpi
it is 622 MB of RGB. The renderer lowers the dpi to stay within FOLIO_MAX_RENDER_PIXELS and says
which dpi it used; what cannot be rendered at all is a 422 in the one error shape.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from server.pages import PageRenderer, UnrenderablePageError
from tests.apiapp import ApiApp, api_app
from tests.pdfgen import GIANT_PAGE_PT, giant_page_pdf

MAX_PIXELS = 4_000_000
CACHE_MB = 32


@pytest.fixture(scope="module")
def giant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiApp, str]]:
    root = tmp_path_factory.mktemp("giant")
    settings = {"max_render_pixels": MAX_PIXELS, "render_cache_mb": CACHE_MB}
    with api_app(root, **settings) as app:
        pdf = root / "harbour.pdf"
        pdf.write_bytes(giant_page_pdf())
        [result] = app.services.sync.ingest_paths([pdf])
        assert result.doc_id is not None and result.status.value == "ok", result
        yield app, result.doc_id


def _image(app: ApiApp, url: str, **params: str) -> tuple[Image.Image, int]:
    response = app.client.get(url, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    return Image.open(io.BytesIO(response.content)), int(response.headers["x-folio-render-dpi"])


def _renderer(app: ApiApp) -> PageRenderer:
    renderer: PageRenderer = app.client.app.state.renderer  # type: ignore[attr-defined]
    return renderer


def test_a_giant_page_is_rendered_at_the_dpi_that_fits(giant: tuple[ApiApp, str]) -> None:
    app, doc_id = giant
    image, dpi = _image(app, f"/documents/{doc_id}/pages/1.png")  # the default 110 dpi
    side = math.ceil(GIANT_PAGE_PT * dpi / 72)
    assert dpi == 10 and image.size == (side, side)
    assert image.width * image.height <= MAX_PIXELS
    lit, lit_dpi = _image(
        app, f"/documents/{doc_id}/pages/1.png", highlight="72,7150,1400,7210", dpi="300"
    )
    assert lit_dpi == dpi and lit.size == image.size
    assert lit.convert("RGB").getpixel((40, 1000)) != image.convert("RGB").getpixel((40, 1000))


def test_renders_at_nearby_dpis_share_one_render_within_the_cache_bound(
    giant: tuple[ApiApp, str],
) -> None:
    app, doc_id = giant
    renderer = _renderer(app)
    for asked in ("70", "71", "72"):
        assert _image(app, f"/documents/{doc_id}/pages/1.png", dpi=asked)[1] == 10
    stored = str(app.services.files.pdf_path(doc_id))
    assert [key[2] for key in renderer._cache if key[0] == stored] == [10]  # one render, not 3
    for n in (1, 2, 3):  # Letter pages at 300 dpi: 8.4 Mpx asked, ~12 MB each as rendered
        _, dpi = _image(app, f"/documents/{app.doc_id}/pages/{n}.png", dpi="300")
        assert dpi < 300 and math.ceil(8.5 * dpi) * math.ceil(11 * dpi) <= MAX_PIXELS
    assert 0 < renderer.cached_bytes <= CACHE_MB << 20


def test_a_crop_of_a_giant_page_is_sharp(giant: tuple[ApiApp, str]) -> None:
    app, doc_id = giant
    image, dpi = _image(
        app, f"/documents/{doc_id}/pages/1/crop.png", bbox="72,7150,1400,7210", margin="0"
    )
    assert dpi == 144 and image.size == (2 * (1400 - 72), 2 * 60)


def test_what_cannot_be_rendered_is_422(giant: tuple[ApiApp, str], tmp_path: Path) -> None:
    pdf = tmp_path / "giant.pdf"
    pdf.write_bytes(giant_page_pdf())
    with pytest.raises(UnrenderablePageError, match="too large"):
        PageRenderer(max_pixels=100).render(pdf, 1, 72)
    app, _ = giant
    damaged = tmp_path / "volcano"
    stored = app.services.files.pdf_path(app.doc_id)
    damaged.write_bytes(stored.read_bytes())
    try:
        stored.write_bytes(b"%PDF-1.7\n" + b"\x00" * 64)  # the stored copy damaged on disk
        response = app.client.get(f"/documents/{app.doc_id}/pages/2.png", params={"dpi": "99"})
        crop = app.client.get(
            f"/documents/{app.doc_id}/pages/2/crop.png", params={"bbox": "1,1,9,9"}
        )
    finally:
        stored.write_bytes(damaged.read_bytes())
    for answer in (response, crop):
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["code"] == "page_not_renderable"
