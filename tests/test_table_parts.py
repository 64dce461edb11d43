"""A table printed in parts is read as one table (`ocr_engine.layout.table_parts`), on pages
generated here: a statement whose first rows are a ruled grid and whose rows under a group label
("Cost of sales:") are printed bare, as a filing's income statement is."""

from __future__ import annotations

import pymupdf

from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.schema import Block, BlockType, Page

XS = [72, 300, 400, 500]  # the grid's rules; figures end 5 points left of the next rule


def _figures(page: pymupdf.Page, y: float, row: list[str], ends: list[float] = XS[2:]) -> None:
    page.insert_text((XS[0] + 5, y), row[0], fontsize=10)
    for x_right, text in zip(ends, row[1:], strict=False):
        page.insert_text((x_right - 5 - pymupdf.get_text_length(text, fontsize=10), y), text)


def _statement(
    label: str | None, gap: float, below: list[list[str]], ends: list[float] = XS[2:]
) -> Page:
    """Years over a ruled grid of three rows, then (after `gap` points) `label` on a line of
    its own and the `below` rows, bare, their figures ending at `ends`; read by the engine."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 96), "Net sales:", fontsize=10)
    for x, year in ((340, "2023"), (440, "2022")):
        page.insert_text((x, 84), year, fontsize=10)
    ys = [100, 120, 140, 160]
    for y in ys:
        page.draw_line((XS[0], y), (XS[-1], y))
    for x in XS:
        page.draw_line((x, ys[0]), (x, ys[-1]))
    rows = [["Products", "$73,929", "$77,457"], ["Services", "20,907", "19,821"]]
    rows.append(["Total net sales", "94,836", "97,278"])
    for y, row in zip(ys, rows, strict=False):
        _figures(page, y + 15, row)
    y = ys[-1] + gap
    if label is not None:
        page.insert_text((72, y), label, fontsize=10)
    for row in below:
        y += 13
        _figures(page, y, row, ends)
    page.insert_text(
        (72, y + 60), "Gross margin decreased because of a weaker currency.", fontsize=10
    )
    return PyMuPDFEngine().extract_page(pymupdf.open("pdf", doc.tobytes())[0])


_COSTS = [["Products", "46,795", "49,290"], ["Services", "6,065", "5,429"]]
_COSTS.append(["Total cost of sales", "52,860", "54,719"])


def _tables(page: Page) -> list[Block]:
    return [b for b in page.blocks if b.type == BlockType.table]


def test_rows_under_a_group_label_after_a_wider_gap_are_the_rest_of_the_table() -> None:
    """The bare rows under "Cost of sales:" were a table of their own with no headings, so no
    cell of it said which year its figure is for; now they are the table's last rows, under its
    years, the label a row of its own."""
    page = _statement("Cost of sales:", 22, _COSTS)
    [table] = _tables(page)
    cells = {(c.row, c.col): c for c in table.cells}
    labels = [cells[(r, 0)].text for r in range(max(r for r, _ in cells) + 1) if (r, 0) in cells]
    assert labels[-4:] == ["Cost of sales:", "Products", "Services", "Total cost of sales"]
    services = next(r for r, c in cells if c == 0 and cells[(r, 0)].text == "Services" and r > 3)
    assert cells[(services, 1)].text == "6,065" and cells[(services, 2)].text == "5,429"
    assert not cells[(services, 1)].header
    years = [c for c in table.cells if c.text in ("2023", "2022")]
    assert [c.col for c in sorted(years, key=lambda c: c.col)] == [1, 2]
    assert table.lines[-1].text == "| Total cost of sales | 52,860 | 54,719 |"
    texts = [b.text for b in page.blocks if b.type != BlockType.table]
    assert not any("Cost of sales" in t or "6,065" in t for t in texts)


def test_a_table_of_its_own_under_a_grid_stays_apart() -> None:
    """Rows under a label that begin with their own years head their own columns: a second
    table, not the first one's rest."""
    below = [["Fiscal year", "2021", "2020"], *_COSTS]
    page = _statement("Cost of sales:", 22, below)
    assert len(_tables(page)) == 2


def test_rows_far_below_a_table_or_under_a_paragraph_stay_apart() -> None:
    """A part that stands further below than a few rows' height, or under a line of running
    text rather than a label, is no part of the table above."""
    assert len(_tables(_statement("Cost of sales:", 80, _COSTS))) == 2
    sentence = "The costs below are the same products and services for the two years:"
    assert len(_tables(_statement(sentence.lower(), 22, _COSTS))) == 2


def test_rows_whose_figures_stand_in_other_columns_stay_apart() -> None:
    """Figures that line up with none of the table's columns are another table's."""
    page = _statement("Cost of sales:", 22, _COSTS, ends=[250, 290])
    assert len(_tables(page)) == 2
