"""Scanned pages read as documents: layout regions, tables with cells, orientation (CPU models).

The table page is made here: a born-digital PDF with a heading, a paragraph and a ruled table,
rasterised to an image-only page, read by the CPU engine; each cell's box must hold its text as
the source PDF places it. One engine (models loaded once) serves the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pymupdf
import pytest
from PIL import Image

from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.geometry import Box
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.layout.orientation import classify_orientation
from ocr_engine.layout.scan_models import MODEL_FILES, ScanModels, model_path
from ocr_engine.layout.scan_tables import grid_cells, split_words
from ocr_engine.options import CpuOcrOptions
from ocr_engine.schema import BlockType, Page
from tests.conftest import shared_path

HEADER = ["Harbour", "Ships", "Tonnes"]
ROWS = [["Rotterdam", "412", "9870"], ["Hamburg", "305", "6120"], ["Antwerp", "288", "5430"]]
SLACK = 3.0  # points a cell's box may fall short of its text's box (ink against font metrics)


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOCREngine]:
    yield RapidOCREngine(CpuOcrOptions(dpi=150))


def rule_grid(page: pymupdf.Page, x_edges: list[int], top: int, row_h: int, rows: int) -> None:
    """Rules a grid of `rows` rows between the column edges `x_edges`, from `top` down."""
    shape = page.new_shape()
    for r in range(rows + 1):
        shape.draw_line((x_edges[0], top + r * row_h), (x_edges[-1], top + r * row_h))
    for x in x_edges:
        shape.draw_line((x, top), (x, top + rows * row_h))
    shape.finish(color=(0, 0, 0), width=0.8)
    shape.commit()


def table_source() -> tuple[pymupdf.Document, dict[str, Box]]:
    """A page with a heading, a paragraph and a ruled 4 x 3 table; each cell text's box."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 90), "Port traffic in 2024", fontsize=20, fontname="hebo")
    para = (
        "The three largest harbours of the North Sea reported the ships that called and the "
        "cargo they landed, in thousands of tonnes, over the whole year."
    )
    page.insert_textbox(pymupdf.Rect(72, 110, 523, 170), para, fontsize=11, fontname="helv")
    x_edges, top, row_h = [72, 262, 392, 523], 200, 28
    rows = [HEADER, *ROWS]
    boxes: dict[str, Box] = {}
    rule_grid(page, x_edges, top, row_h, len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            font = "hebo" if r == 0 else "helv"
            where = (x_edges[c] + 8, top + r * row_h + 19)
            page.insert_text(where, text, fontsize=12, fontname=font)
            cell = pymupdf.Rect(x_edges[c], top + r * row_h, x_edges[c + 1], top + (r + 1) * row_h)
            boxes[text] = tuple(page.search_for(text, clip=cell)[0])  # type: ignore[assignment]
    return doc, boxes


def as_scan(source: pymupdf.Page, dpi: int = 150) -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=source.rect.width, height=source.rect.height)
    page.insert_image(page.rect, pixmap=source.get_pixmap(dpi=dpi))
    return doc


def holds(outer: Box, inner: Box, slack: float = SLACK) -> bool:
    return (
        outer[0] <= inner[0] + slack
        and outer[1] <= inner[1] + slack
        and outer[2] >= inner[2] - slack
        and outer[3] >= inner[3] - slack
    )


def test_model_files_ship_inside_their_wheels() -> None:
    for name in MODEL_FILES:
        path = model_path(name)
        assert path.suffix == ".onnx" and path.stat().st_size > 1_000_000


def test_a_rasterised_table_page_gives_a_table_block_whose_cells_hold_their_text(
    engine: RapidOCREngine,
) -> None:
    source, truth = table_source()
    with as_scan(source[0]) as scan:
        assert not scan[0].get_text().strip()  # an image-only page
        page = engine.extract_page(scan[0])
    [table] = [b for b in page.blocks if b.type == BlockType.table]
    by_text = {" ".join(c.text.split()): c for c in table.cells}
    for text, box in truth.items():
        assert text in by_text, f"{text!r} not a cell of {sorted(by_text)}"
        cell = by_text[text]
        assert cell.bbox is not None and holds(cell.bbox, box), (text, cell.bbox, box)
    rotterdam, ships = by_text["Rotterdam"], by_text["412"]
    assert rotterdam.row == ships.row and ships.col == rotterdam.col + 1
    assert by_text["Harbour"].header and not rotterdam.header
    assert "| Rotterdam | 412 | 9870 |" in table.text
    assert table.html is not None and "<td>412</td>" in table.html
    headings = [b for b in page.blocks if b.type in (BlockType.title, BlockType.section_header)]
    assert [h.text for h in headings] == ["Port traffic in 2024"]
    order = [b.type for b in page.blocks]
    assert order.index(BlockType.text) < order.index(BlockType.table)  # the paragraph first
    Page.model_validate(json.loads(page.model_dump_json()))


def test_without_layout_the_same_page_is_paragraphs_of_lines(engine: RapidOCREngine) -> None:
    plain = RapidOCREngine(CpuOcrOptions(dpi=150), layout=False)
    plain._models = engine._load()  # the same RapidOCR sessions, loaded once
    source, _ = table_source()
    with as_scan(source[0]) as scan:
        page = plain.extract_page(scan[0])
    assert not [b for b in page.blocks if b.type == BlockType.table]
    assert "Rotterdam" in " ".join(b.text for b in page.blocks)


def test_structure_tokens_are_laid_on_a_grid_with_spans() -> None:
    tokens = ["<tr>", "<td", ' rowspan="2"', ">", "</td>", "<td", ' colspan="2"', ">", "</td>"]
    tokens += ["</tr>", "<tr>", "<td></td>", "<td></td>", "</tr>"]
    cells = [(c.row, c.col, c.row_span, c.col_span) for c in grid_cells(tokens)]
    assert cells == [(0, 0, 2, 1), (0, 1, 1, 2), (1, 1, 1, 1), (1, 2, 1, 1)]


def test_a_line_splits_into_words_over_its_box() -> None:
    words = split_words(OcrLine("Tweets 24 12", (0.0, 0.0, 120.0, 10.0)))
    assert [w for w, _ in words] == ["Tweets", "24", "12"]
    assert words[0][1][0] == 0.0 and words[-1][1][2] == 120.0
    assert words[0][1][2] < words[1][1][0] < words[1][1][2] < words[2][1][0]


def test_the_orientation_model_rights_a_turned_scan() -> None:
    path = shared_path("scanned", "tesseract_test", "phototest.tif")
    upright = np.asarray(Image.open(path).convert("RGB"))
    models = ScanModels()
    for k in range(4):
        turned = np.ascontiguousarray(np.rot90(upright, k))
        assert classify_orientation(models, turned).turns == (-k) % 4


def _ruled_grid(texts: list[list[str]]) -> tuple[np.ndarray, Box, list[OcrLine]]:
    """A ruled grid of two columns rendered at 150 dpi; its box and its texts as OCR lines
    (upright points), as the engine would hand them to the table reader."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=400)
    x_edges, top, row_h = [72, 132, 523], 60, 30
    rule_grid(page, x_edges, top, row_h, len(texts))
    lines = []
    for r, row in enumerate(texts):
        for c, text in enumerate(row):
            if text:
                page.insert_text((x_edges[c] + 6, top + r * row_h + 19), text, fontsize=11)
                box = tuple(page.search_for(text)[0])
                lines.append(OcrLine(text=text, box=box, score=0.99))  # type: ignore[arg-type]
    pix = page.get_pixmap(dpi=150)
    image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)[..., :3]
    grid: Box = (x_edges[0], top, x_edges[-1], top + len(texts) * row_h)
    return np.ascontiguousarray(image), grid, lines


def test_a_grid_whose_rows_mostly_hold_one_cell_is_no_table() -> None:
    """A table's rows hold a label and its values: a ruled grid where most rows hold one text
    (a definition list set out in boxes) is laid out as text, while the same grid with a figure
    beside each text reads as a table."""
    from ocr_engine.layout.scan_tables import read_table

    models = ScanModels()
    terms = [
        "The user connects with the profile ALICE.",
        "ALICE calls a procedure owned by JOE.",
        "The special register still holds ALICE.",
        "When the procedure ends, the session reverts.",
    ]
    listed = [["a", terms[0]], *[["", text] for text in terms[1:]]]
    image, box, lines = _ruled_grid(listed)
    assert read_table(models, image, 150 / 72, box, lines) is None
    image, box, lines = _ruled_grid([[str(n), text] for n, text in enumerate(terms, 1)])
    table = read_table(models, image, 150 / 72, box, lines)
    assert table is not None and table.n_rows == 4 and table.n_cols == 2
