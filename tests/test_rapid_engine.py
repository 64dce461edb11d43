"""The CPU OCR engine on generated scans: text, page-point boxes, rotations, blank and huge pages.

OCR is slow on a shared CPU: pages are small, rendered at a low DPI, and one engine (models loaded
once) serves the whole module.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import pymupdf
import pytest

from ocr_engine.engines.rapid_engine import (
    RapidOCREngine,
    render_array,
    rotate_point,
    unrotate_box,
)
from ocr_engine.errors import EngineOutputError
from ocr_engine.layout.ocr_layout import OcrLine, group_paragraphs, gutter_cuts, layout_page
from ocr_engine.options import CpuOcrOptions
from ocr_engine.schema import Page, PageStatus
from tests.conftest import REPO_ROOT

Box = tuple[float, float, float, float]
LINES = ["Harbour pilots board ships", "at seven in the morning"]
FONT_SIZE = 22
TOLERANCE = 6.0  # points between an OCR line box and the box PyMuPDF reports for the drawn text
OPTIONS = CpuOcrOptions(dpi=110)


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOCREngine]:
    yield RapidOCREngine(OPTIONS)


def text_source() -> tuple[pymupdf.Document, list[Box]]:
    """A born-digital page with LINES, and the box of each line as PyMuPDF reads it."""
    doc = pymupdf.open()
    page = doc.new_page(width=380, height=220)
    for k, text in enumerate(LINES):
        page.insert_text((36, 80 + 44 * k), text, fontsize=FONT_SIZE, fontname="helv")
    boxes = [
        tuple(line["bbox"])
        for block in page.get_text("dict")["blocks"]
        for line in block.get("lines", [])
    ]
    return doc, boxes  # type: ignore[return-value]


def as_scan(source: pymupdf.Page, *, rotate: int = 0, dpi: int = 150) -> pymupdf.Document:
    """The page as an image-only page (a scan), then given /Rotate `rotate`."""
    doc = pymupdf.open()
    page = doc.new_page(width=source.rect.width, height=source.rect.height)
    page.insert_image(page.rect, pixmap=source.get_pixmap(dpi=dpi))
    page.set_rotation(rotate)
    return doc


def sideways_scan(rotated: pymupdf.Page, dpi: int = 150) -> pymupdf.Document:
    """The displayed (turned) page scanned as it lies: the content is turned inside the image."""
    doc = pymupdf.open()
    page = doc.new_page(width=rotated.rect.width, height=rotated.rect.height)
    page.insert_image(page.rect, pixmap=rotated.get_pixmap(dpi=dpi))
    return doc


def ocr_lines(result: Page) -> list[tuple[str, Box]]:
    return [(line.text, line.bbox) for block in result.blocks for line in block.lines]


def assert_reads(result: Page, expected: list[Box]) -> None:
    lines = ocr_lines(result)
    assert [" ".join(text.split()) for text, _ in lines] == LINES
    for (text, got), want in zip(lines, expected, strict=True):
        assert max(abs(g - w) for g, w in zip(got, want, strict=True)) <= TOLERANCE, (
            text,
            got,
            want,
        )


def test_reads_a_scanned_page_with_boxes_in_page_points(engine: RapidOCREngine) -> None:
    source, boxes = text_source()
    with as_scan(source[0]) as scan:
        result = engine.extract_page(scan[0])
    assert result.status == PageStatus.ok and not result.errors
    assert (result.width, result.height) == (380, 220)
    assert result.engine.name == "rapidocr" and result.engine.version
    assert result.engine.model and "det" in result.engine.model and "rec" in result.engine.model
    assert [b.id for b in result.blocks] == [f"p1-b{i}" for i in range(len(result.blocks))]
    assert_reads(result, boxes)
    for block in result.blocks:
        assert block.text == "\n".join(line.text for line in block.lines)
        x0, y0, x1, y1 = block.bbox
        assert all(
            x0 <= ln.bbox[0] and y0 <= ln.bbox[1] and ln.bbox[2] <= x1 and ln.bbox[3] <= y1
            for ln in block.lines
        )


@pytest.mark.parametrize("rotate", [90, 180, 270])
def test_rotated_pages_read_upright_with_displayed_boxes(
    engine: RapidOCREngine, rotate: int
) -> None:
    """/Rotate set on a scan, and the same page scanned sideways (no /Rotate): both read
    upright, with boxes on the page as displayed."""
    source, boxes = text_source()
    with as_scan(source[0], rotate=rotate) as turned:
        page = turned[0]
        expected = [tuple(pymupdf.Rect(b) * page.rotation_matrix) for b in boxes]
        assert_reads(engine.extract_page(page), expected)  # type: ignore[arg-type]
        with sideways_scan(page) as sideways:
            assert sideways[0].rotation == 0
            result = engine.extract_page(sideways[0])
            assert result.width == pytest.approx(page.rect.width)
            assert_reads(result, expected)  # type: ignore[arg-type]


def test_blank_pages_have_no_blocks(engine: RapidOCREngine) -> None:
    with pymupdf.open() as doc:
        doc.new_page(width=300, height=300)
        white = doc.new_page(width=300, height=300)
        pix = pymupdf.Pixmap(pymupdf.csRGB, 200, 200, b"\xff" * (200 * 200 * 3), False)
        white.insert_image(white.rect, pixmap=pix)
        for page in doc:
            result = engine.extract_page(page)
            assert result.status == PageStatus.ok and result.blocks == [] and not result.errors


def test_huge_page_is_rendered_under_the_pixel_cap() -> None:
    big = RapidOCREngine(CpuOcrOptions(dpi=200, max_pixels=400_000))
    with pymupdf.open() as doc:
        page = doc.new_page(width=3000, height=2000)
        page.insert_text((200, 900), "HARBOUR", fontsize=240, fontname="helv")
        rendered = render_array(page, 200, 400_000)
        height, width = rendered.image.shape[:2]
        assert width * height <= 400_000 and width / height == pytest.approx(1.5, rel=0.01)
        want = page.search_for("HARBOUR")[0]
        result = big.extract_page(page)
    [(text, got)] = ocr_lines(result)
    assert text == "HARBOUR"
    assert max(abs(g - w) for g, w in zip(got, tuple(want), strict=True)) <= 0.2 * 240


def test_models_load_lazily_and_once_across_threads() -> None:
    code = (
        "import sys\n"
        "from ocr_engine.engines.rapid_engine import RapidOCREngine\n"
        "RapidOCREngine()\n"
        "assert 'rapidocr' not in sys.modules and 'cv2' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT, timeout=120)

    class Counting(RapidOCREngine):
        builds = 0

        def _build(self):  # type: ignore[no-untyped-def]
            Counting.builds += 1
            return super()._build()

    fresh = Counting(OPTIONS)
    image = np.full((120, 400, 3), 255, np.uint8)
    image[50:70, 40:360] = 0  # a bar the detector may or may not call text: any answer will do
    results: list[object] = []
    threads = [
        threading.Thread(target=lambda: results.append(fresh.read_image(image))) for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Counting.builds == 1 and len(results) == 4


def test_model_errors_are_engine_output_errors(engine: RapidOCREngine) -> None:
    noise = np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8)  # no channels
    with pytest.raises(EngineOutputError):
        engine.read_image(noise)


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_box_rotation_round_trip(k: int) -> None:
    width, height = 300.0, 200.0
    image = np.zeros((int(height), int(width)), np.uint8)
    image[20:40, 50:120] = 1  # a box (50, 20, 120, 40) in the original image
    turned = np.rot90(image, k)
    ys, xs = np.nonzero(turned)
    box_turned = (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))
    assert unrotate_box(box_turned, k, width, height) == pytest.approx((50, 20, 120, 40))
    x, y = rotate_point(50, 20, k, width, height)
    assert box_turned[0] <= x <= box_turned[2] and box_turned[1] <= y <= box_turned[3]


def column_lines(x0: float, x1: float, rows: int, top: float = 100.0) -> list[Box]:
    return [(x0, top + 12 * r, x1, top + 12 * r + 10) for r in range(rows)]


def test_gutter_cut_splits_a_line_joined_across_columns() -> None:
    left, right = column_lines(50, 200, 6), column_lines(206, 356, 6)
    joined = (50.0, 88.0, 356.0, 98.0)  # the first row, detected as one box over both columns
    boxes = [joined, *left, *right]
    cuts = gutter_cuts(boxes)
    assert len(cuts[0]) == 1 and 200 <= cuts[0][0] <= 206
    assert all(c == [] for c in cuts[1:])
    table = [(50.0, 100.0 + 12 * r, 90.0, 110.0 + 12 * r) for r in range(6)]  # short labels
    values = column_lines(206, 356, 6)
    caption = (50.0, 88.0, 356.0, 98.0)
    assert gutter_cuts([caption, *table, *values])[0] == []


def test_paragraphs_and_reading_order_follow_columns_and_indents() -> None:
    def lines(texts: list[str], boxes: list[Box]) -> list[OcrLine]:
        return [OcrLine(t, b) for t, b in zip(texts, boxes, strict=True)]

    left = lines(["a1", "a2", "a3", "b1", "b2"], column_lines(50, 200, 5))
    left[3].box = (62.0, *left[3].box[1:])  # an indented first line starts paragraph b
    right = lines(["c1", "c2", "c3"], column_lines(206, 356, 3))
    paras = group_paragraphs([*right, *left])
    assert sorted([ln.text for ln in p] for p in paras) == [
        ["a1", "a2", "a3"],
        ["b1", "b2"],
        ["c1", "c2", "c3"],
    ]
    ordered = layout_page([*right, *left], 400, 400)
    assert [b.lines[0].text for b in ordered] == ["a1", "b1", "c1"]


@pytest.mark.parametrize("rotate", [90, 270])
def test_a_sideways_word_on_an_upright_page_is_read_either_way(
    engine: RapidOCREngine, rotate: int
) -> None:
    """A column heading set sideways (reading up, or down) on an upright page: the crop of its
    tall box is turned a quarter one way, so the other way is read too and the better kept."""
    with pymupdf.open() as doc:
        page = doc.new_page(width=400, height=300)
        for row in range(4):
            page.insert_text((40, 60 + 22 * row), "Harbour dues paid in full", fontsize=14)
        start = (330, 250) if rotate == 90 else (330, 90)
        page.insert_text(start, "WAREHOUSE", fontsize=16, rotate=rotate)
        with as_scan(page) as scan:
            texts = [text for text, _ in ocr_lines(engine.extract_page(scan[0]))]
    assert "WAREHOUSE" in texts
