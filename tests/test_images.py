"""Images as documents: wrapped into PDF pages (DPI, EXIF, frames), refused when bad, ingested,
uploaded and rendered like PDFs; boxes checked against the pixels of the rendered page."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import pymupdf
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from doubles.fakes import HashEmbedder
from ocr_engine.engines.extract import extract_document
from ocr_engine.errors import BadInputError
from ocr_engine.inputs.images import MAX_IMAGE_PIXELS, document_pdf_bytes, image_to_pdf
from ocr_engine.inputs.pdf import open_pdf
from ocr_engine.options import OcrMode
from server.serve.app import create_app
from server.services import build_services
from server.settings import Settings
from tests.imagegen import dark_share_inside, encode, text_image, tiff_frames

LINES = ["Invoice number 4711", "Total due 1,250 EUR"]


def _pages(pdf: bytes) -> list[tuple[float, float]]:
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [(round(p.rect.width, 1), round(p.rect.height, 1)) for p in doc]


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` (its pixel data is a single empty row)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00" * (width + 1))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_page_size_comes_from_dpi_or_72() -> None:
    image = text_image(LINES, size=(600, 300))
    assert _pages(image_to_pdf(encode(image, "PNG"), "a.png")) == [(600.0, 300.0)]
    at_200 = image_to_pdf(encode(image, "JPEG", dpi=(200, 200)), "a.jpg")
    assert _pages(at_200) == [(216.0, 108.0)]
    assert _pages(image_to_pdf(encode(image, "WEBP"), "a.webp")) == [(600.0, 300.0)]
    assert _pages(image_to_pdf(encode(image, "BMP", dpi=(144, 144)), "a.bmp"))[0][0] == (
        pytest.approx(300.0, abs=0.5)
    )


def test_every_tiff_frame_is_a_page_in_order() -> None:
    frames = [text_image([f"Frame {n}"], size=(400, 200 + 50 * n)) for n in range(1, 4)]
    pdf = image_to_pdf(tiff_frames(frames, dpi=(72, 72)), "scan.tiff")
    assert _pages(pdf) == [(400.0, 250.0), (400.0, 300.0), (400.0, 350.0)]


def _sideways_jpeg() -> tuple[bytes, Image.Image]:
    """A JPEG stored rotated a quarter turn, with EXIF orientation 6 to show it upright."""
    upright = text_image(LINES)
    stored = upright.rotate(90, expand=True)
    exif = Image.Exif()
    exif[0x0112] = 6
    return encode(stored, "JPEG", quality=95, exif=exif), upright


def test_exif_orientation_is_applied_and_ocr_boxes_land_on_the_text() -> None:
    data, upright = _sideways_jpeg()
    document = extract_document(data, source="photo.jpg")
    [page] = document.pages
    assert (page.width, page.height) == upright.size  # landscape as shown, not as stored
    assert page.route is not None and page.route != "text layer"
    text = " ".join(line.text for block in page.blocks for line in block.lines)
    assert "4711" in text and "1,250" in text.replace(" ", "")
    boxes = [line.bbox for block in page.blocks for line in block.lines]
    with open_pdf(data, name="photo.jpg") as pdf:
        pix = pdf[0].get_pixmap(dpi=144, alpha=False)
        rendered = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    assert dark_share_inside(rendered, boxes, 2.0) > 0.97
    page_area = page.width * page.height
    assert sum((b[2] - b[0]) * (b[3] - b[1]) for b in boxes) < 0.5 * page_area
    assert document.doc_id == __import__("hashlib").sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("cut.png", lambda: encode(text_image(LINES), "PNG")[:3000], "truncated or damaged"),
        ("cut.jpg", lambda: encode(text_image(LINES), "JPEG")[:2000], "truncated or damaged"),
        ("empty.png", lambda: _png_header(0, 0), "0x0"),
        ("bomb.png", lambda: _png_header(20_000, 20_000), f"{MAX_IMAGE_PIXELS:,} pixels"),
        ("photo.png", lambda: encode(text_image(LINES), "JPEG"), "named .png but is a JPEG"),
        ("report.png", lambda: image_to_pdf(encode(text_image(LINES), "PNG"), "x.png"), "a PDF"),
        ("scan.pdf", lambda: encode(text_image(LINES), "PNG"), "named .pdf but is a PNG"),
        ("fake.png", lambda: b"not a png", "named .png but is not a PNG image"),
        ("photo.jpg", lambda: b"<html>a saved page</html>", "named .jpg but is not a JPEG image"),
        (
            "anim.gif",
            lambda: encode(
                Image.new("RGB", (20, 20), "red"),
                "GIF",
                save_all=True,
                append_images=[Image.new("RGB", (20, 20), c) for c in ("green", "blue")],
            ),
            "animated GIF (3 frames)",
        ),
        ("still.gif", lambda: encode(Image.new("RGB", (20, 20), "red"), "GIF"), "not accepted"),
    ],
)
def test_bad_images_are_refused_with_the_reason(name: str, make: object, reason: str) -> None:
    data = make()  # type: ignore[operator]
    with pytest.raises(BadInputError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        document_pdf_bytes(data, name)
        open_pdf(data, name=name)


def test_images_are_ingested_rendered_and_bad_ones_fail_alone(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "invoice.png").write_bytes(encode(text_image(LINES), "PNG", dpi=(144, 144)))
    frames = [text_image([f"Page {n} of the fax"], size=(800, 300)) for n in (1, 2, 3)]
    (inbox / "fax.tif").write_bytes(tiff_frames(frames))
    (inbox / "broken.jpg").write_bytes(encode(text_image(LINES), "JPEG")[:1500])
    (inbox / "notes.txt").write_text("not a document")
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.auto)
    services = build_services(settings, embedder=HashEmbedder())
    try:
        results = {Path(r.path).name: r for r in services.sync.ingest_paths([inbox])}
        assert sorted(results) == ["broken.jpg", "fax.tif", "invoice.png"]
        assert results["invoice.png"].status.value == "ok", results["invoice.png"]
        assert results["fax.tif"].status.value == "ok", results["fax.tif"]
        assert results["broken.jpg"].status.value == "failed"
        broken = services.ledger.get(str(results["broken.jpg"].doc_id))
        assert "truncated or damaged" in " ".join(broken.errors) and not broken.retryable
        fax_id = str(results["fax.tif"].doc_id)
        assert services.ledger.get(fax_id).pages == 3
        stored = services.files.pdf_path(fax_id).read_bytes()
        assert stored == (inbox / "fax.tif").read_bytes()  # the original bytes, as for a PDF
        document = services.files.load_document(fax_id)
        assert document.source == "fax.tif"
        assert [("Page 2" in " ".join(b.text for b in p.blocks)) for p in document.pages] == [
            False,
            True,
            False,
        ]
        app = create_app(services, watch=False)
        with TestClient(app) as client:
            page = document.pages[1]
            box = page.blocks[0].bbox
            png = client.get(f"/documents/{fax_id}/pages/2.png?dpi=72")
            assert png.status_code == 200, png.text
            assert Image.open(io.BytesIO(png.content)).size == (800, 300)
            drawn = client.get(
                f"/documents/{fax_id}/pages/2.png?dpi=72&highlight={','.join(map(str, box))}"
            )
            assert drawn.status_code == 200 and drawn.content != png.content
            crop = client.get(
                f"/documents/{fax_id}/pages/2/crop.png?bbox={','.join(map(str, box))}"
            )
            assert crop.status_code == 200, crop.text
            searchable = client.get(f"/documents/{fax_id}/searchable.pdf")
            assert searchable.status_code == 200, searchable.text
            with pymupdf.open(stream=searchable.content, filetype="pdf") as pdf:
                assert pdf.page_count == 3  # the frames, with their read text behind them
                assert "Page 2" in pdf[1].get_text()
    finally:
        services.close()


def test_upload_takes_images_and_refuses_bad_ones_touching_nothing(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never)
    services = build_services(settings, embedder=HashEmbedder())
    try:
        app = create_app(services, watch=False)
        with TestClient(app) as client:
            gif = encode(
                Image.new("RGB", (9, 9), "red"),
                "GIF",
                save_all=True,
                append_images=[Image.new("RGB", (9, 9), "blue")],
            )
            refused = client.post("/documents", files={"file": ("a.gif", gif, "image/gif")})
            assert refused.status_code == 415 and "animated GIF" in refused.text
            bomb = client.post(
                "/documents", files={"file": ("b.png", _png_header(20_000, 20_000), "image/png")}
            )
            assert bomb.status_code == 415 and "pixel bomb" in bomb.text
            assert services.ledger.count() == 0
            assert list(services.files.root.iterdir()) == []
            png = encode(text_image(LINES), "PNG")
            accepted = client.post("/documents", files={"file": ("scan.png", png, "image/png")})
            assert accepted.status_code == 202, accepted.text
            assert accepted.json()["source"] == "scan.png"
    finally:
        services.close()
