"""GET /documents/{id}/pages/{n}/crop.png: just the cited region, clamped to the page, checked."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from PIL import Image

from server.pages import HIGHLIGHT_EDGE, PageRenderer
from tests.apiapp import ApiApp, api_app


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiApp]:
    with api_app(tmp_path_factory.mktemp("crops")) as served:
        yield served


def _png(app: ApiApp, n: int = 1, **params: str) -> Image.Image:
    response = app.client.get(f"/documents/{app.doc_id}/pages/{n}/crop.png", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    return Image.open(io.BytesIO(response.content))


def test_the_crop_is_the_box_and_its_margin_at_144_dpi(app: ApiApp) -> None:
    assert _png(app, bbox="72,100,272,150").size == (2 * (200 + 32), 2 * (50 + 32))
    assert _png(app, bbox="72,100,272,150", margin="0", dpi="72").size == (200, 50)


def test_the_crop_is_clamped_to_the_page_and_draws_the_highlight(app: ApiApp) -> None:
    image = _png(app, bbox="-50,-50,100,40", margin="0", dpi="72", highlight="20,20,60,30")
    assert image.size == (100, 40)  # 0..100 x 0..40: the page starts at 0
    rgb = image.convert("RGB")
    assert rgb.getpixel((18, 25)) == HIGHLIGHT_EDGE[:3]  # the edge, just outside the box
    assert rgb.getpixel((40, 25)) == (255, 241, 165)  # translucent yellow over white paper
    assert rgb.getpixel((80, 25)) == (255, 255, 255)


def test_the_margin_stops_short_of_a_line_it_would_cut(app: ApiApp) -> None:
    """A cited line's margin reached into half of the line above and of the line below (a
    sliver of each showed): the crop ends where they do not begin."""
    lines = sorted(PageRenderer().text_lines(app.pdf, 1), key=lambda b: b[1])
    above, cited, below = next(
        (a, b, c)
        for a, b, c in zip(lines, lines[1:], lines[2:], strict=False)
        if a[3] > b[1] - 24 > a[1] and c[1] < b[3] + 24 < c[3]
    )
    box = ",".join(f"{v:.1f}" for v in cited)
    image = _png(app, bbox=box, dpi="72", margin="24")
    top, bottom = above[3] + 0.5, below[1] - 0.5
    assert image.size[1] == pytest.approx(bottom - top, abs=2)
    whole = _png(app, bbox=box, dpi="72", margin="3")  # a margin inside the gaps is kept
    assert whole.size[1] == pytest.approx(cited[3] - cited[1] + 6, abs=2)
    # a line reaching into the cited part (a row label's first line over its figures) is whole
    into = f"{cited[0]:.1f},{(cited[1] + cited[3]) / 2:.1f},{cited[2]:.1f},{cited[3]:.1f}"
    taller = _png(app, bbox=into, dpi="72", margin="3")
    assert taller.size[1] == pytest.approx(cited[3] + 3 - (cited[1] - 0.5), abs=2)


def test_two_regions_are_shown_one_under_the_other(app: ApiApp) -> None:
    """A table cell's column headings over its row: the margin around the whole, 2 points where
    the parts meet, a grey rule between them, the highlight drawn where it falls; both parts as
    wide as the wider, so that columns line up."""
    image = _png(
        app,
        bbox="72,100,272,110;90,300,200,310",
        margin="0",
        dpi="72",
        highlight="100,300,140,310",
    ).convert("RGB")
    assert image.size == (200, 12 + 3 + 12)
    assert image.getpixel((100, 13)) == (160, 160, 160)  # the rule
    assert image.getpixel((48, 20)) == (255, 241, 165)  # the highlight, in the second part
    assert image.getpixel((48, 5)) != (255, 241, 165)  # not in the first


@pytest.mark.parametrize(
    ("bbox", "code"),
    [
        ("1,2,3", "invalid_highlight"),
        ("1,2,3,x", "invalid_highlight"),
        ("1,2,3,4;5,6,7,8;1,2,3,4;5,6,7,8", "invalid_highlight"),
        ("5000,5000,5100,5100", "invalid_bbox"),
    ],
)
def test_bad_boxes_are_refused(app: ApiApp, bbox: str, code: str) -> None:
    response = app.client.get(f"/documents/{app.doc_id}/pages/1/crop.png", params={"bbox": bbox})
    assert response.status_code == 422 and response.json()["error"]["code"] == code


def test_unknown_documents_and_pages_are_not_found(app: ApiApp) -> None:
    params = {"bbox": "0,0,10,10"}
    page = app.client.get(f"/documents/{app.doc_id}/pages/9/crop.png", params=params)
    assert page.status_code == 404 and page.json()["error"]["code"] == "page_out_of_range"
    other = app.client.get(f"/documents/{'0' * 64}/pages/1/crop.png", params=params)
    assert other.status_code == 404 and other.json()["error"]["code"] == "unknown_document"
    missing = app.client.get(f"/documents/{app.doc_id}/pages/1/crop.png")
    assert missing.status_code == 422


def test_a_region_off_the_page_is_refused(app: ApiApp) -> None:
    renderer = PageRenderer()
    with pytest.raises(ValueError, match="outside the page"):
        renderer.render(app.pdf, 1, 72, (700, 800, 900, 900))
