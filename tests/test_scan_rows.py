"""The rows of a scanned table anchored on its text lines (`ocr_engine.layout.scan_rows`)."""

from __future__ import annotations

import numpy as np
import pymupdf

from ocr_engine.geometry import Box
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.layout.scan_models import ScanModels
from ocr_engine.layout.scan_rows import bands_of, rows_of_bands
from ocr_engine.layout.scan_tables import read_table, split_words

ROW_H = 13.6  # points a row of a banded statement, as in a 10-K's balance sheet


def _statement(n_rows: int) -> tuple[np.ndarray, Box, list[OcrLine], list[list[str]]]:
    """A long statement with shaded bands and no rules, rendered at 150 dpi: every fifth row a
    section label alone, the others a label and two figures; its box, its texts as OCR lines
    (upright points) and the rows as written."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    top, lines, written = 60.0, [], []
    for r in range(n_rows):
        y = top + r * ROW_H
        if r % 2 == 0:
            page.draw_rect(pymupdf.Rect(40, y, 580, y + ROW_H), color=None, fill=(0.85, 0.92, 0.98))
        label = f"Line item number {r + 1} of the statement" if r % 5 else f"Section {r // 5 + 1}"
        figures = (
            [f"{(r * 7919) % 9000 + 100:,}", f"{(r * 104729) % 9000 + 100:,}"] if r % 5 else []
        )
        page.insert_text((48, y + 10), label, fontsize=8.5, fontname="tiro")
        for c, figure in enumerate(figures):
            right = 430 + c * 90 - pymupdf.get_text_length(figure, "tiro", 8.5)
            page.insert_text((right, y + 10), figure, fontsize=8.5, fontname="tiro")
        written.append([label, *figures])
        for text in (label, *figures):
            [box] = [b for b in page.search_for(text) if y - 1 <= b.y0 and b.y1 <= y + ROW_H + 1]
            lines.append(OcrLine(text=text, box=tuple(box), score=0.99))  # type: ignore[arg-type]
    pix = page.get_pixmap(dpi=150)
    image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, pix.n)[..., :3]
    return np.ascontiguousarray(image), (40.0, top, 580.0, top + n_rows * ROW_H), lines, written


def test_each_figure_of_a_long_statement_stays_on_its_row() -> None:
    """Down a 46-row statement the model's cell boxes drift (with them alone, two rows near the
    foot ran together); anchored on the text lines, every row reads as written."""
    image, box, lines, written = _statement(46)
    table = read_table(ScanModels(), image, 150 / 72, box, lines)
    assert table is not None and table.n_cols == 3
    rows: dict[int, list[tuple[int, str]]] = {}
    for cell in table.cells:
        if cell.text:
            rows.setdefault(cell.row, []).append((cell.col, cell.text))
    read = [[text for _, text in sorted(cells)] for _, cells in sorted(rows.items())]
    assert read == written
    by_text = {cell.text: cell for cell in table.cells if cell.text}
    label, figure = by_text[written[43][0]].bbox, by_text[written[43][1]].bbox
    assert label is not None and figure is not None
    assert abs(label[1] - figure[1]) < ROW_H / 2  # boxed on the same row


def test_rows_follow_a_model_that_drifts_half_a_row() -> None:
    """Twelve one-line rows whose model spans fall further below them row by row, up to 0.45 of
    a row: each band keeps its own row, in order."""
    bands = [(100 + 14.0 * r, 110 + 14.0 * r) for r in range(12)]
    spans = [(top + 0.04 * 14 * r, bottom + 0.04 * 14 * r) for r, (top, bottom) in enumerate(bands)]
    assert rows_of_bands(bands, spans, [True] * 12) == list(range(12))


def test_a_wrapped_cell_keeps_its_lines_and_an_empty_spacer_row_is_passed_over() -> None:
    bands = [(100, 110), (114, 124), (128, 138), (156, 166)]
    spans = [(98, 112), (112, 140), (140, 152), (154, 168)]  # row 1 holds two lines, row 2 none
    assert rows_of_bands(bands, spans, [True, True, False, True]) == [0, 1, 1, 3]


def test_a_label_set_midway_between_two_lines_does_not_join_them_into_one_band() -> None:
    first, label, second = (200, 100, 260, 110), (40, 106, 90, 116), (200, 113, 260, 123)
    bands, band_of = bands_of([first, label, second])
    assert band_of[0] != band_of[2] and len(bands) >= 2


def test_a_sideways_line_is_one_run_in_one_cell() -> None:
    [(text, box)] = split_words(OcrLine(text="No Authority", box=(526, 431, 533, 490)))
    assert text == "No Authority" and box == (526, 431, 533, 490)


def test_the_words_of_one_band_in_one_cell_read_left_to_right() -> None:
    """Two figures the model puts in one cell, the right one printed a point higher: read in
    the order they stand, not the order of their tops."""
    from ocr_engine.layout.scan_tables import GridCell, _held_by_rows

    grid = [GridCell(0, 0, 1, 1, False), GridCell(0, 1, 1, 1, False)]
    boxes: list[Box] = [(40, 100, 200, 112), (210, 100, 400, 112)]
    lines = [
        OcrLine(text="White, Non-Hispanic", box=(42, 101, 150, 111)),
        OcrLine(text="21*", box=(330, 100, 350, 110)),
        OcrLine(text="16", box=(250, 101, 262, 111)),
    ]
    held = _held_by_rows(grid, boxes, sorted(lines, key=lambda ln: (ln.box[1], ln.box[0])))
    assert [t for _, t, _ in sorted(held[1], key=lambda w: (w[0], w[2][0]))] == ["16", "21*"]
