"""The text-layer engine on generated PDFs (boxes checked against pixels) and on docling PDFs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from ocr_engine.engines.extract import extract_document
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.schema import Block, BlockType, Document, Page, PageStatus
from tests.conftest import shared_path

ZOOM = 3
BODY = (
    "Retrieval systems answer questions from documents and cite the page region they used. "
    "Each answer points at the lines that support it, so a reader can check the claim quickly. "
)


def _reopen(doc: pymupdf.Document) -> pymupdf.Document:
    return pymupdf.open("pdf", doc.tobytes())


def _read_first_page(doc: pymupdf.Document) -> Page:
    """The document's first page as the engine reads it, from the PDF's bytes."""
    return PyMuPDFEngine().extract_page(_reopen(doc)[0])


def _only_table(result: Page) -> Block:
    """The one table the engine found on the page."""
    [table] = [b for b in result.blocks if b.type == BlockType.table]
    return table


def _dark(page: pymupdf.Page) -> np.ndarray:
    pix = page.get_pixmap(matrix=pymupdf.Matrix(ZOOM, ZOOM), colorspace=pymupdf.csGRAY)
    return np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width) < 128


def _region(dark: np.ndarray, box: tuple[float, float, float, float], pad: float) -> np.ndarray:
    x0, y0 = max(int((box[0] - pad) * ZOOM), 0), max(int((box[1] - pad) * ZOOM), 0)
    x1, y1 = int((box[2] + pad) * ZOOM) + 1, int((box[3] + pad) * ZOOM) + 1
    return dark[y0:y1, x0:x1]


def _assert_box_matches_pixels(page: pymupdf.Page, box: tuple[float, float, float, float]) -> None:
    dark = _dark(page)
    inside = int(_region(dark, box, 0.5).sum())
    grown = int(_region(dark, box, 8.0).sum())
    assert inside > 20, f"no ink inside {box}"
    assert grown == inside, f"ink just outside {box}: {grown - inside} dark pixels"
    assert int(dark.sum()) == inside, "the page has ink the box does not cover"


def _one_word_page(rotation: int = 0, crop: bool = False) -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=600)
    page.insert_text((120, 170), "Citation", fontsize=22)
    if crop:
        page.set_cropbox(pymupdf.Rect(60, 90, 360, 520))
    page.set_rotation(rotation)
    return _reopen(doc)[0]


@pytest.mark.parametrize("crop", [False, True], ids=["mediabox", "offset-cropbox"])
@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_word_box_is_where_pymupdf_draws_it(rotation: int, crop: bool) -> None:
    page = _one_word_page(rotation, crop)
    result = PyMuPDFEngine().extract_page(page)
    assert (result.width, result.height) == (page.rect.width, page.rect.height)
    [block] = result.blocks
    [line] = block.lines
    assert line.text == "Citation"
    _assert_box_matches_pixels(page, line.bbox)
    _assert_box_matches_pixels(page, block.bbox)


def _texts(page: Page, kind: BlockType | None = None) -> list[str]:
    return [b.text for b in page.blocks if kind is None or b.type == kind]


def test_two_columns_read_left_column_first() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "A Study of Columns", fontsize=24)
    for i, top in enumerate((120, 260, 400)):
        page.insert_textbox(pymupdf.Rect(72, top, 295, top + 120), f"L{i} " + BODY, fontsize=10)
        page.insert_textbox(pymupdf.Rect(317, top, 540, top + 120), f"R{i} " + BODY, fontsize=10)
    result = _read_first_page(doc)
    starts = [t.split()[0] for t in _texts(result)]
    assert starts == ["A", "L0", "L1", "L2", "R0", "R1", "R2"]
    assert result.blocks[0].type == BlockType.title


def test_headings_typed_with_levels() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Structured Extraction", fontsize=24, fontname="hebo")
    page.insert_text((72, 130), "1 Introduction", fontsize=15, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 140, 540, 200), BODY, fontsize=10)
    page.insert_text((72, 230), "1.1 Background", fontsize=12, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 240, 540, 300), BODY, fontsize=10)
    page.insert_text((72, 330), "- first point of the list", fontsize=10)
    page.insert_text((72, 346), "- second point of the list", fontsize=10)
    page.insert_text((300, 825), "7", fontsize=9)
    result = _read_first_page(doc)
    kinds = [(b.type, b.level, b.text.split("\n")[0][:14]) for b in result.blocks]
    assert kinds == [
        (BlockType.title, 1, "Structured Ext"),
        (BlockType.section_header, 1, "1 Introduction"),
        (BlockType.text, None, "Retrieval syst"),
        (BlockType.section_header, 2, "1.1 Background"),
        (BlockType.text, None, "Retrieval syst"),
        (BlockType.list_item, None, "- first point "),
        (BlockType.list_item, None, "- second point"),
        (BlockType.text, None, "7"),  # one page: furniture needs repetition
    ]


def _ruled_table_page() -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Table 1: Quarterly revenue", fontsize=10)
    xs, ys = [72, 200, 330, 460], [100, 125, 150, 175]
    for y in ys:
        page.draw_line((xs[0], y), (xs[-1], y))
    for x in xs:
        # the header row spans the two value columns: no rule between them there
        page.draw_line((x, ys[1] if x == xs[2] else ys[0]), (x, ys[-1]))
    rows = [["Segment", "Revenue"], ["Cloud", "120", "135"], ["Devices", "80", "95"]]
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            page.insert_text((xs[c] + 5, ys[r] + 17), text, fontsize=10)
    return _reopen(doc)[0]


def test_ruled_table_detected_with_cells_and_spans() -> None:
    page = _ruled_table_page()
    result = PyMuPDFEngine().extract_page(page)
    table = _only_table(result)
    cells = {(c.row, c.col): c for c in table.cells}
    assert cells[(0, 0)].text == "Segment" and cells[(0, 0)].header
    assert cells[(0, 1)].text == "Revenue" and cells[(0, 1)].col_span == 2
    assert cells[(2, 2)].text == "95"
    assert table.text.splitlines()[0] == "| Segment | Revenue |   |"
    assert [line.text for line in table.lines] == [
        "| Segment | Revenue |   |",
        "| Cloud | 120 | 135 |",
        "| Devices | 80 | 95 |",
    ]
    assert table.html is not None and 'colspan="2"' in table.html and "<th" in table.html
    assert all("120" not in t for t in _texts(result, BlockType.text)), "cell text duplicated"
    assert _texts(result, BlockType.caption) == ["Table 1: Quarterly revenue"]


def _ruled_figures(above: list[tuple[tuple[float, float], str]]) -> Page:
    """A ruled grid of figures (Boeing's revenue by customer location) with the `above` texts
    written just over its top rule, read by the engine."""
    doc = pymupdf.open()
    page = doc.new_page()
    xs, ys = [72, 300, 400, 500], [110, 130, 150, 170]
    for y in ys:
        page.draw_line((xs[0], y), (xs[-1], y))
    for x in xs:
        page.draw_line((x, ys[0]), (x, ys[-1]))
    for point, text in above:
        page.insert_text(point, text, fontsize=10)
    rows = [
        ["Asia", "$8,393", "$5,845"],
        ["Europe", "7,916", "8,967"],
        ["Total", "66,608", "62,286"],
    ]
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            page.insert_text((xs[c] + 5, ys[r] + 15), text, fontsize=10)
    return _read_first_page(doc)


def test_headings_above_a_ruled_tables_top_rule_are_its_header() -> None:
    """A filing's layout: the years stand above the top rule, the grid holds only figures; the
    years used to stay loose text lines and the first row of figures became the header."""
    result = _ruled_figures(
        [
            ((72, 104), "Years ended December 31,"),
            ((340, 104), "2022"),
            ((440, 104), "2021"),
        ]
    )
    table = _only_table(result)
    assert [line.text for line in table.lines] == [
        "| Years ended December 31, | 2022 | 2021 |",
        "| Asia | $8,393 | $5,845 |",
        "| Europe | 7,916 | 8,967 |",
        "| Total | 66,608 | 62,286 |",
    ]
    cells = {(c.row, c.col): c for c in table.cells}
    assert cells[(0, 1)].header and not cells[(1, 1)].header
    assert table.bbox[1] < 100 and not any("2022" in t for t in _texts(result, BlockType.text))


def test_a_row_of_notes_between_the_headings_and_a_ruled_table_does_not_part_them() -> None:
    """A filing prints its unit on a row of its own between the dates and the grid, with the
    section's label over the labels ("Inventories: (In millions)"); the dates above it still
    head the table (they were loose lines, and the cells had no dates)."""
    above = [((340, 80), "December 31,"), ((440, 80), "December 31,")]
    above += [((340, 93), "2022"), ((440, 93), "2021")]
    above += [((72, 106), "Revenues:"), ((380, 106), "(In millions)")]
    result = _ruled_figures(above)
    table = _only_table(result)
    cells = {(c.row, c.col): c for c in table.cells}
    assert [cells[(r, 1)].text for r in range(3)] == ["December 31,", "2022", "(In millions)"]
    assert cells[(2, 0)].text == "Revenues:" and cells[(2, 1)].col_span == 2
    assert all(cells[(r, 1)].header for r in range(3)) and not cells[(3, 1)].header
    assert cells[(3, 0)].text == "Asia" and table.bbox[1] < 75
    assert not any("2021" in t or "millions" in t for t in _texts(result, BlockType.text))


def test_a_label_alone_between_the_headings_and_a_ruled_table_does_not_part_them() -> None:
    """A filing names the rows' group on a line of its own right over the grid, under the unit
    and the dates ("Revenue:"); the dates still head the table (they were loose lines, and the
    cells had no dates), and the label stays a row of the body, not a heading."""
    above = [((340, 62), "December 31,"), ((440, 62), "December 31,")]
    above += [((340, 73), "2022"), ((440, 73), "2021")]
    above += [((380, 84), "(In millions)"), ((72, 95), "Revenues:")]
    result = _ruled_figures(above)
    table = _only_table(result)
    cells = {(c.row, c.col): c for c in table.cells}
    assert [cells[(r, 1)].text for r in range(3)] == ["December 31,", "2022", "(In millions)"]
    assert all(cells[(r, 1)].header for r in range(3))
    assert cells[(3, 0)].text == "Revenues:" and not cells[(3, 0)].header
    assert cells[(4, 0)].text == "Asia" and not cells[(4, 1)].header
    assert not any("2021" in t or "Revenues" in t for t in _texts(result, BlockType.text))


def test_a_label_alone_over_a_grid_with_no_headings_above_stays_out_of_the_table() -> None:
    """A label over the grid with nothing heading the columns above it: the table keeps its
    first row, and the label stays a line of text."""
    result = _ruled_figures([((72, 104), "Revenues:")])
    table = _only_table(result)
    assert table.lines[0].text == "| Asia | $8,393 | $5,845 |"
    assert any("Revenues" in t for t in _texts(result, BlockType.text))


def test_a_row_of_notes_with_no_headings_above_stays_out_of_the_table() -> None:
    """A unit note alone over a grid heads no column: the table keeps its first row."""
    result = _ruled_figures([((72, 106), "Revenues:"), ((380, 106), "(In millions)")])
    table = _only_table(result)
    assert table.lines[0].text == "| Asia | $8,393 | $5,845 |"


def test_a_row_of_dot_leaders_above_a_table_is_no_heading_and_no_failure() -> None:
    """Leaders alone make a visual row without segments (a Pew page failed on one)."""
    result = _ruled_figures([((320, 104), ". . . . . . . . . . . . . . . . . . . . . .")])
    assert result.status == PageStatus.ok, result.errors
    table = _only_table(result)
    assert table.lines[0].text == "| Asia | $8,393 | $5,845 |"


def test_a_tables_first_row_of_figures_keeps_text_above_that_heads_nothing() -> None:
    """A sentence above the grid is no heading: the table stays as it was found."""
    sentence = "Revenues by customer location consisted of the following:"
    result = _ruled_figures([((72, 104), sentence)])
    table = _only_table(result)
    assert table.lines[0].text == "| Asia | $8,393 | $5,845 |"
    assert any("following" in t for t in _texts(result, BlockType.text))


def _assert_lines_in_block(block: Block) -> None:
    position = 0
    for line in block.lines:
        assert line.text.strip(), f"{block.id}: empty line"
        found = block.text.find(line.text, position)
        assert found >= 0, f"{block.id}: {line.text!r} not in order in block text"
        position = found + len(line.text)


def _assert_well_formed(doc: Document) -> None:
    for page in doc.pages:
        assert page.status == PageStatus.ok, page.errors
        for index, block in enumerate(page.blocks):
            assert block.id == f"p{page.number}-b{index}"
            x0, y0, x1, y1 = block.bbox
            assert 0 <= x0 <= x1 <= page.width and 0 <= y0 <= y1 <= page.height
            _assert_lines_in_block(block)


def test_line_text_in_block_text_on_docling_pdfs() -> None:
    folder = shared_path("docling", "pdf")
    pdfs = sorted(folder.glob("*.pdf"))
    assert pdfs
    for pdf in pdfs:
        _assert_well_formed(extract_document(pdf))


def test_docling_headers_and_columns() -> None:
    doc = extract_document(shared_path("docling", "pdf", "2305.03393v1-pg9.pdf"))
    page = doc.pages[0]
    headings = [b.text for b in page.blocks if b.type == BlockType.section_header]
    assert headings == ["5.1 Hyper Parameter Optimization", "5.2 Quantitative Results"]
    assert [b.level for b in page.blocks if b.type == BlockType.section_header] == [2, 2]
    assert any(b.type == BlockType.table and b.cells for b in page.blocks)


class _FailingOnPage2(PyMuPDFEngine):
    def extract_page(self, page: pymupdf.Page) -> Page:
        if page.number == 1:
            raise ValueError("boom")
        return super().extract_page(page)


def test_failed_page_is_recorded_not_lost(tmp_path: Path) -> None:
    pdf = pymupdf.open()
    for i in range(3):
        pdf.new_page().insert_text((72, 72), f"page {i + 1}", fontsize=12)
    pdf.set_metadata({"title": "Three pages", "author": "folio"})
    path = tmp_path / "three.pdf"
    pdf.save(path)
    doc = extract_document(path, engine=_FailingOnPage2())
    assert [p.status for p in doc.pages] == [PageStatus.ok, PageStatus.failed, PageStatus.ok]
    assert doc.pages[1].errors[0].message == "ValueError: boom"
    assert doc.pages[2].blocks[0].text == "page 3"
    assert doc.source == "three.pdf" and len(doc.doc_id) == 64
    assert doc.metadata == {"title": "Three pages", "author": "folio"}


def test_repeated_header_becomes_page_header() -> None:
    pdf = pymupdf.open()
    for i in range(4):
        page = pdf.new_page()
        page.insert_text((72, 70), "ACME Corp Annual Report 2024", fontsize=10)
        page.insert_textbox(pymupdf.Rect(72, 100, 540, 300), BODY, fontsize=10)
        page.insert_text((300, 770), f"Page {i + 1} of 4", fontsize=10)
    doc = extract_document(pdf.tobytes())
    for page in doc.pages:
        assert page.blocks[0].type == BlockType.page_header
        assert page.blocks[-1].type == BlockType.page_footer
        _assert_lines_in_block(page.blocks[1])


def _unruled_table_page(*, shaded: bool = False) -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page()
    if shaded:  # as SEC filings draw tables: a filled, unstroked box behind every cell
        for r in range(5):
            for x0, x1 in ((70, 300), (300, 360), (360, 460)):
                y = 120 + 14 * r
                page.draw_rect(pymupdf.Rect(x0, y, x1, y + 13), color=None, fill=(0.85, 0.9, 1))
    page.insert_textbox(pymupdf.Rect(72, 60, 540, 100), BODY, fontsize=10)
    page.insert_text((330, 130), "2018", fontsize=9)
    page.insert_text((430, 130), "2017", fontsize=9)
    rows = [
        ("Net revenue", "$ 17,360", "$ 16,202"),
        ("Cost of sales", "(1,226)", "1,263"),
        ("Research and development", "288", "268"),
        ("Operating income", "$ 5,374", "$ 5,921"),
    ]
    for r, (label, a, b) in enumerate(rows):
        y = 145 + 14 * r
        page.insert_text((72, y), label, fontsize=9)
        for x_right, value in ((352, a), (452, b)):  # figures right-aligned, no rules anywhere
            width = pymupdf.get_text_length(value, fontsize=9)
            page.insert_text((x_right - width, y), value, fontsize=9)
    page.insert_textbox(pymupdf.Rect(72, 220, 540, 260), BODY, fontsize=10)
    return _reopen(doc)[0]


@pytest.mark.parametrize("shaded", [False, True], ids=["bare", "shaded-cells"])
def test_unruled_table_of_figures_detected(shaded: bool) -> None:
    page = _unruled_table_page(shaded=shaded)
    result = PyMuPDFEngine().extract_page(page)
    table = _only_table(result)
    assert [line.text for line in table.lines] == [
        "|   | 2018 | 2017 |",
        "| Net revenue | $ 17,360 | $ 16,202 |",
        "| Cost of sales | (1,226) | 1,263 |",
        "| Research and development | 288 | 268 |",
        "| Operating income | $ 5,374 | $ 5,921 |",
    ]
    _assert_lines_in_block(table)
    cells = {(c.row, c.col): c for c in table.cells}
    assert cells[(0, 1)].header and cells[(0, 1)].text == "2018"
    assert cells[(3, 2)].text == "268" and not cells[(3, 2)].header
    for line in table.lines:  # one line per markdown row, boxed around the row
        assert line.bbox[0] >= 72 and line.bbox[2] <= 453
    texts = _texts(result, BlockType.text)
    assert len(texts) == 2 and all("17,360" not in t for t in texts)
    assert [b.type for b in result.blocks] == [BlockType.text, BlockType.table, BlockType.text]


def _figure_rows(page: pymupdf.Page, rows: list[tuple[str, str, str]]) -> None:
    """Rows of a label and two figures right-aligned in columns, no rules, from y = 124."""
    for r, (label, a, b) in enumerate(rows):
        y = 124 + 12 * r
        page.insert_text((72, y), label, fontsize=9)
        for x_right, value in ((362, a), (462, b)):
            width = pymupdf.get_text_length(value, fontsize=9)
            page.insert_text((x_right - width, y), value, fontsize=9)


def test_a_heading_row_with_a_stub_over_the_labels_heads_an_unruled_table() -> None:
    """A statement of cash flows: "Fiscal Years Ended" over the labels on the row of dates, then
    a section label, then figures; the dates used to be read as headings outside the table."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Fiscal Years Ended", fontsize=9)
    for x, date in ((300, "January 28, 2023"), (400, "January 29, 2022")):
        page.insert_text((x, 100), date, fontsize=9)
    page.insert_text((72, 112), "Operating activities", fontsize=9)
    rows = [("Net earnings", "$ 1,419", "$ 2,454"), ("Depreciation", "918", "869")]
    rows += [("Restructuring charges", "147", "(34)"), ("Total cash provided", "1,824", "3,252")]
    _figure_rows(page, rows)
    result = _read_first_page(doc)
    table = _only_table(result)
    assert [line.text for line in table.lines[:3]] == [
        "| Fiscal Years Ended | January 28, 2023 | January 29, 2022 |",
        "| Operating activities |   |   |",
        "| Net earnings | $ 1,419 | $ 2,454 |",
    ]
    assert not any("January" in b.text for b in result.blocks if b.type != BlockType.table)


def test_a_row_of_notes_under_the_dates_of_an_unruled_table_keeps_them_its_header() -> None:
    """The unruled layout of a filing's note: dates, then "Accrued liabilities: (In
    millions)", then the figures; the dates head the columns (they were loose lines)."""
    doc = pymupdf.open()
    page = doc.new_page()
    for x, date, year in ((320, "October 30,", "2022"), (420, "January 30,", "2022")):
        page.insert_text((x, 88), date, fontsize=9)
        page.insert_text((x + 8, 100), year, fontsize=9)
    page.insert_text((72, 112), "Accrued liabilities:", fontsize=9)
    page.insert_text((360, 112), "(In millions)", fontsize=9)
    rows = [("Customer program accruals", "$ 1,394", "$ 1,000"), ("Deferred revenue", "338", "300")]
    rows += [("Accrued payroll", "307", "409"), ("Total accrued liabilities", "$ 4,115", "$ 2,552")]
    _figure_rows(page, rows)
    result = _read_first_page(doc)
    table = _only_table(result)
    assert [line.text for line in table.lines[:2]] == [
        "|   | October 30, | January 30, |",
        "|   | 2022 | 2022 |",
    ]
    assert table.lines[2].text.startswith("| Accrued liabilities: | (In millions) |")
    assert not any("October" in b.text for b in result.blocks if b.type != BlockType.table)


def test_the_row_of_years_under_a_spanning_heading_is_a_header_row() -> None:
    """ "Year Ended December 31," spans the columns, the years stand under it: both are the
    header (repeated over every part of a long table), though the years line up like figures."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((360, 100), "Year Ended December 31,", fontsize=9)
    for x, year in ((340, "2022"), (440, "2021")):
        page.insert_text((x, 112), year, fontsize=9)
    rows = [("Net income", "1,473", "1,254"), ("Depreciation", "918", "869")]
    rows += [("Dividends paid", "(4,048)", "(4,789)"), ("Other", "147", "(34)")]
    _figure_rows(page, rows)
    result = _read_first_page(doc)
    table = _only_table(result)
    header = sorted({c.row for c in table.cells if c.header})
    assert header == [0, 1] and table.lines[1].text == "|   | 2022 | 2021 |"


def test_a_line_of_prose_beside_a_charts_legend_makes_it_no_header() -> None:
    """Pew's layout: a text column at the left, a bar chart at the right whose legend row shares
    a line with the prose; the prose line is no stub heading, so the legend stays outside."""
    doc = pymupdf.open()
    page = doc.new_page()
    prose = ["More than eight-in-ten", "Americans say the U.S. can", "learn either a great deal"]
    prose += ["or a fair amount about ways to slow", "the spread of the coronavirus."]
    for i, text in enumerate(prose):
        page.insert_text((67, 104 + 16 * i), text, fontsize=10)
    for x, legend in ((300, "A great deal"), (380, "A fair amount"), (470, "Not too much")):
        page.insert_text((x, 168), legend, fontsize=8)
    chart = [
        ("Total", "46%", "38%", "13%"),
        ("White", "41", "42", "14"),
        ("Black", "56", "31", "9"),
    ]
    chart += [("Hispanic", "53", "33", "11")]
    for r, (label, *values) in enumerate(chart):
        y = 184 + 18 * r
        page.insert_text((250, y), label, fontsize=8)
        for x, value in zip((340, 430, 500), values, strict=True):
            page.insert_text((x, y), value, fontsize=8)
    result = _read_first_page(doc)
    table = _only_table(result)
    assert table.lines[0].text.startswith("| Total |")
    assert not any("great deal" in c.text for c in table.cells)


def test_paragraph_beside_a_chart_stays_text_not_label_cells() -> None:
    """A survey report's layout: a narrow column of prose at the left, and beside it, apart, a
    chart whose labels and figures line up; the prose lines used to be read into the labels."""
    doc = pymupdf.open()
    page = doc.new_page()
    prose = [
        "There also are differences in",
        "views on this question by race",
        "and ethnicity, as well as by",
        "level of educational attainment.",
        "Black and Hispanic people are",
        "more likely than white people",
        "to say the U.S. can learn a lot.",
        "Partisans differ as well.",
    ]
    for i, text in enumerate(prose):
        page.insert_text((67, 150 + 14 * i), text, fontsize=10)
    chart = [("Total", "46", "38"), ("White", "41", "42"), ("Black", "56", "31")]
    chart += [("Hispanic", "53", "33"), ("Rep/Lean Rep", "28", "47"), ("Dem/Lean Dem", "60", "31")]
    for r, (label, a, b) in enumerate(chart):
        y = 150 + 21 * r  # the chart's rows are further apart than the prose lines
        page.insert_text((236, y), label, fontsize=9)
        page.insert_text((360, y), a, fontsize=9)
        page.insert_text((460, y), b, fontsize=9)
    result = _read_first_page(doc)
    table = _only_table(result)
    assert [c.text for c in table.cells if c.col == 0] == [label for label, _, _ in chart]
    assert table.bbox[0] >= 230  # the table starts at the chart, not at the prose
    text = " ".join(_texts(result, BlockType.text)).split()
    assert " ".join(text).startswith("There also are differences in views on this question")
    assert "Hispanic people are more likely" in " ".join(text)


def test_cover_blurbs_and_margin_labels_are_not_headings() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((250, 40), "Front cover", fontsize=24, fontname="hebo")
    page.insert_text((40, 120), "Row and Column Access Control", fontsize=34, fontname="hebo")
    page.insert_text((40, 160), "Support in IBM DB2 for i", fontsize=31, fontname="hebo")
    blurbs = ["Implement roles and duties", "Leverage row permissions", "Protect columns by masks"]
    for i, blurb in enumerate(blurbs):
        page.insert_text((40, 300 + 40 * i), blurb, fontsize=14, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(200, 300, 540, 420), BODY, fontsize=10)
    page.insert_text((40, 700), "ibm.com/redbooks", fontsize=30)
    result = _read_first_page(doc)
    headings = [
        (b.type, b.text) for b in result.blocks if b.type.value in ("title", "section_header")
    ]
    assert headings == [
        (BlockType.title, "Row and Column Access Control\nSupport in IBM DB2 for i"),
    ]
    assert set(_texts(result, BlockType.text)) >= set(blurbs) | {"ibm.com/redbooks"}
    assert "Front cover" in _texts(result, BlockType.text)  # in the band: never a heading


def test_a_heading_under_the_running_header_heads_though_it_is_in_the_band() -> None:
    """A manual set with a narrow top margin: its section heading stands in the 7.5% band,
    under the running header; the running header alone is at the page's edge."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((490, 30), "Getting Started", fontsize=11)
    page.insert_text((45, 56), "Wake the screen", fontsize=12, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(45, 64, 540, 140), BODY, fontsize=10)
    page.insert_text((45, 250), "Turn off the screen", fontsize=12, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(45, 258, 540, 330), BODY, fontsize=10)
    result = _read_first_page(doc)
    assert _headings(result) == ["Wake the screen", "Turn off the screen"]
    assert "Getting Started" in _texts(result, BlockType.text)


def test_a_line_going_on_in_bold_is_one_block_with_the_line_above() -> None:
    """A manual's step whose menu path runs over a line in bold: the bold line starting in lower
    case goes on with the sentence (it was typed a heading, and the sentence was cut); a bold
    heading over "(amounts in millions)" or a paragraph starting "iOS" stays a heading alone."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((45, 150), "Restarting", fontsize=12, fontname="hebo")
    page.insert_text((45, 175), "- Press the Up button and go to Settings > System &", fontsize=12)
    page.insert_text((55, 191), "updates > Restart.", fontsize=12, fontname="hebo")
    page.insert_text((45, 230), "BALANCE SHEETS", fontsize=12, fontname="hebo")
    page.insert_text((45, 245), "(amounts in millions)", fontsize=12)
    page.insert_text((45, 260), "Notes for phones", fontsize=12, fontname="hebo")
    page.insert_text((45, 285), "iOS users can enable Show Time in the Health app.", fontsize=12)
    page.insert_textbox(pymupdf.Rect(45, 300, 540, 380), BODY, fontsize=12)
    result = _read_first_page(doc)
    assert _headings(result) == ["Restarting", "BALANCE SHEETS", "Notes for phones"]
    step = next(b for b in result.blocks if "Press the Up button" in b.text)
    assert step.text.endswith("updates > Restart.")


def _headings(page: Page) -> list[str]:
    return [b.text for b in page.blocks if b.type.value in ("title", "section_header")]


def test_headings_need_words_not_numbers_urls_or_brand_marks() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Results", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 110, 540, 170), BODY, fontsize=10)
    page.insert_text((72, 200), "No. 1695/2024", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 210, 540, 270), BODY, fontsize=10)
    page.insert_text((72, 300), "Redpaper \u00ae", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 310, 540, 370), BODY, fontsize=10)
    page.insert_text((72, 400), "ibm.com/redbooks", fontsize=11, fontname="cour")
    page.insert_textbox(pymupdf.Rect(72, 410, 540, 470), BODY, fontsize=10)
    page.insert_text((72, 500), "2.3 Methods", fontsize=16, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 510, 540, 570), BODY, fontsize=10)
    result = _read_first_page(doc)
    assert _headings(result) == ["Results", "2.3 Methods"]


def test_italic_cut_of_body_font_and_subtitle_are_not_headings() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Center of Excellence", fontsize=20, fontname="hebo")
    page.insert_text((72, 116), "Expert help for your requirements", fontsize=14, fontname="tiit")
    page.insert_textbox(pymupdf.Rect(72, 140, 540, 230), BODY * 2, fontsize=10, fontname="tiro")
    page.insert_text((72, 260), "an emphasised aside", fontsize=10.6, fontname="tiit")
    page.insert_textbox(pymupdf.Rect(72, 270, 540, 360), BODY * 2, fontsize=10, fontname="tiro")
    result = _read_first_page(doc)
    assert _headings(result) == ["Center of Excellence"]
    texts = _texts(result, BlockType.text)
    assert "Expert help for your requirements" in texts and "an emphasised aside" in texts


def test_diagram_labels_in_one_font_family_are_not_headings() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.draw_rect(pymupdf.Rect(60, 90, 540, 330))
    labels = [("CREATE PERMISSION", "hebo"), ("ON table", "heit"), ("AS name", "heit")]
    labels += [("FOR ROWS", "hebo"), ("ENFORCED FOR ALL ACCESS", "hebo")]
    for i, (label, font) in enumerate(labels):
        page.insert_text((72, 120 + 40 * i), label, fontsize=12, fontname=font)
        page.insert_text((300, 110 + 40 * i), "Names the permission", fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 350, 540, 600), BODY * 4, fontsize=10)
    result = _read_first_page(doc)
    assert _headings(result) == []
    assert set(_texts(result, BlockType.text)) >= {label for label, _ in labels}


def test_invisible_white_heading_is_text_but_white_on_dark_fill_is_a_heading() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text(
        (72, 100), "Hidden Bookmark Title", fontsize=14, fontname="hebo", color=(1, 1, 1)
    )
    page.insert_textbox(pymupdf.Rect(72, 120, 540, 200), BODY, fontsize=10)
    page.draw_rect(pymupdf.Rect(60, 230, 540, 260), fill=(0.1, 0.2, 0.5), color=None)
    page.insert_text((72, 252), "Banner Section", fontsize=14, fontname="hebo", color=(1, 1, 1))
    page.insert_textbox(pymupdf.Rect(72, 280, 540, 360), BODY, fontsize=10)
    result = _read_first_page(doc)
    assert _headings(result) == ["Banner Section"]
    assert "Hidden Bookmark Title" in _texts(result, BlockType.text)


def test_checkbox_grid_on_a_spread_is_a_table() -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=1224, height=792)
    for i in range(
        8
    ):  # left page of the spread: running text with check boxes at the rows' heights
        y = 420 + 18 * i
        page.insert_text((100, y), "*", fontsize=9)
        page.insert_text((115, y), "Yes, at the national level of the legal aid system", fontsize=9)
    page.insert_textbox(pymupdf.Rect(100, 100, 520, 400), BODY * 5, fontsize=9)
    page.insert_textbox(pymupdf.Rect(770, 100, 1160, 380), BODY * 5, fontsize=9)
    page.insert_text((1050, 402), "State funded", fontsize=9)
    page.insert_text((1135, 402), "CSOs", fontsize=9)
    labels = ["Persons with disabilities", "Children", "Women", "The elderly", "Migrants"]
    for i, label in enumerate(labels):
        y = 420 + 18 * i
        page.insert_text((792, y), label, fontsize=9)
        page.insert_text((1072, y), "*", fontsize=9)
        page.insert_text((1142, y), "*", fontsize=9)
    result = _read_first_page(doc)
    table = _only_table(result)
    assert table.bbox[0] > 760 and table.bbox[1] < 402
    cells = {(c.row, c.col): c.text for c in table.cells or []}
    assert cells[(0, 1)] == "State funded" and cells[(0, 2)] == "CSOs"
    assert cells[(1, 0)] == "Persons with disabilities" and cells[(1, 2)] == "*"


def test_ligatures_are_expanded_so_text_reads_as_typed() -> None:

    doc = extract_document(shared_path("docling", "pdf", "2305.03393v1-pg9.pdf"))
    text = "\n".join(block.text for page in doc.pages for block in page.blocks)
    assert "difficult financial tables" in " ".join(text.split())
    assert not any(ch in text for ch in "\ufb00\ufb01\ufb02\ufb03\ufb04")


def _bulleted_page(number_gap: float) -> pymupdf.Document:
    """Body lines, then items whose bullet is set larger in another font than their text, then
    a page number `number_gap` points under the last item."""
    doc = pymupdf.open()
    page = doc.new_page(width=792, height=612)
    y = 80.0
    for i in range(6):
        page.insert_text((18, y), f"Line {i} of the body. {BODY[:80]}", fontname="helv", fontsize=8)
        y += 10
    items = [
        "mentors who inspire new passions and possibilities;",
        "social and emotional support, including mental health resources; and",
        "paid internship and career exploration opportunities that put learning into practice.",
    ]
    for item in items:
        y += 10
        page.insert_text((34, y), "\u2022", fontname="tiro", fontsize=8.9)
        page.insert_text((50, y), item, fontname="helv", fontsize=8)
    page.insert_text((303, y + number_gap), "6", fontname="helv", fontsize=8)
    return doc


def test_an_item_whose_bullet_is_set_in_a_larger_symbol_font_is_no_heading() -> None:
    """The bullet and its text are two lines in the text layer; joined, the line has the text's
    font and size, so a short item that ends without a stop is a list item, not a heading."""
    blocks = _read_first_page(_bulleted_page(number_gap=14)).blocks
    items = [b for b in blocks if "support" in b.text or "mentors" in b.text or "paid" in b.text]
    assert [b.type for b in items] == [BlockType.list_item] * 3
    assert not [b for b in blocks if b.type == BlockType.section_header]
