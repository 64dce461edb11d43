"""A big figure on a scanned page that is a statement set without rules is read as a table;
one of text or of a few figures stays as it was (`ocr_engine.layout.scan_layout`)."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest

from ocr_engine.layout import scan_layout
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.layout.scan_models import ScanModels
from ocr_engine.schema import BlockType
from tests.test_scan_rows import _statement

ZOOM = 150 / 72


def _called_a_picture(monkeypatch: pytest.MonkeyPatch, box: tuple[float, ...]) -> None:
    """The layout model's answer on such pages (0.96 "figure" on a 10-K's rule-less balance
    sheet): one picture over the whole block."""
    picture = scan_layout.Region(BlockType.figure, box, 0.96, "figure")  # type: ignore[arg-type]
    monkeypatch.setattr(scan_layout, "detect_regions", lambda *_: [picture])


def _page_of(texts: list[str]) -> tuple[np.ndarray, list[OcrLine]]:
    """A page of the lines as written, 16 points apart, rendered at 150 dpi, and its lines as
    OCR lines (one per run of words set apart by a wide gap, as a detector boxes them)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for i, text in enumerate(texts):
        x = 60.0
        for part in text.split("\t"):
            page.insert_text((x, 80 + 16 * i), part, fontsize=11)
            x += 230
    lines = []
    for block in page.get_text("dict")["blocks"]:
        for line in block["lines"]:
            text = "".join(span["text"] for span in line["spans"])
            lines.append(OcrLine(text=text, box=tuple(line["bbox"]), score=0.99))  # type: ignore[arg-type]
    pix = page.get_pixmap(dpi=150)
    image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)[..., :3]
    return np.ascontiguousarray(image), lines


def test_a_statement_the_layout_model_calls_a_picture_is_read_as_a_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each row of the statement a label and its figures: a table, its rows as written."""
    image, box, lines, written = _statement(40)
    _called_a_picture(monkeypatch, box)
    laid = scan_layout.lay_out(ScanModels(), image, ZOOM, lines, 612, 792)
    [table] = laid.tables.values()
    rows: dict[int, list[tuple[int, str]]] = {}
    for cell in table.cells:
        if cell.text:
            rows.setdefault(cell.row, []).append((cell.col, cell.text))
    assert [[t for _, t in sorted(c)] for _, c in sorted(rows.items())] == written
    assert not [b for b in laid.blocks if b.type == BlockType.figure]


def test_a_big_figure_of_a_few_figures_among_text_stays_a_figure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A slide of points, a third of them with a figure beside them: not a table."""
    texts = []
    for i in range(24):
        point = f"Point {i + 1}: the market grew where the networks reached new towns"
        texts.append(f"Region {i + 1}\t{10 + i}%" if i % 3 == 0 else point)
    image, lines = _page_of(texts)
    _called_a_picture(monkeypatch, (50.0, 60.0, 560.0, 80.0 + 16 * len(texts)))
    laid = scan_layout.lay_out(ScanModels(), image, ZOOM, lines, 612, 792)
    assert not laid.tables
    assert [b for b in laid.blocks if b.type == BlockType.figure]
    assert any("Point 2" in ln.text for b in laid.blocks for ln in b.lines)


def test_a_big_figure_of_running_text_stays_text(monkeypatch: pytest.MonkeyPatch) -> None:
    sentence = "The harbour master counts the ships that call and the cargo that they land."
    image, lines = _page_of([sentence] * 30)
    _called_a_picture(monkeypatch, (50.0, 60.0, 560.0, 560.0))
    laid = scan_layout.lay_out(ScanModels(), image, ZOOM, lines, 612, 792)
    assert not laid.tables
    assert any(b.type == BlockType.text and b.lines for b in laid.blocks)
