"""Tables ruled across their rows alone (top, header and bottom rules, a rule between groups of
rows) or between their columns alone, on pages made in the test and read by the text-layer
engine."""

from __future__ import annotations

import pymupdf

from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.layout.rule_tables import find_rule_tables, with_unruled
from ocr_engine.layout.tables import FoundTable
from ocr_engine.layout.textlayer import PageFrame, read_words
from ocr_engine.schema import Block, BlockType, Page

LEFT, RIGHT = 72.0, 540.0
COLUMNS = (76.0, 190.0, 330.0, 450.0)
LINE = 13.0
READ_EVERY = ("hour", "day", "week")


def _rule(page: pymupdf.Page, y: float, x0: float = LEFT) -> None:
    page.draw_line((x0, y), (RIGHT, y), width=0.6)


def _row(page: pymupdf.Page, y: float, cells: dict[int, str]) -> None:
    for col, text in cells.items():
        page.insert_text((COLUMNS[col], y), text, fontsize=9)


def _headed_page(headings: tuple[str, ...]) -> tuple[pymupdf.Document, pymupdf.Page]:
    """A new page with a table's top rule, its headings (one a column) and the rule under them."""
    doc = pymupdf.open()
    page = doc.new_page()
    _rule(page, 100)
    _row(page, 112, dict(enumerate(headings)))
    _rule(page, 118)
    return doc, page


def _read(doc: pymupdf.Document) -> Page:
    return PyMuPDFEngine().extract_page(pymupdf.open("pdf", doc.tobytes())[0])


def _tables(page: Page) -> list[Block]:
    return [b for b in page.blocks if b.type == BlockType.table]


def _row_of(table: Block | FoundTable, label: str) -> dict[int, str]:
    assert table.cells is not None
    [row] = {c.row for c in table.cells if c.col == 0 and c.text == label}
    return {c.col: c.text for c in table.cells if c.row == row}


def _grouped_table() -> pymupdf.Document:
    """Groups of rows, each with its label printed once beside several lines, ruled apart."""
    doc, page = _headed_page(("Station", "Gauges", "Unit", "Read every"))
    page.insert_text((LEFT, 90), "Table 3. Gauges kept at each station", fontsize=9)
    y = 118.0
    groups = [
        ("Northfield", ["Rain gauge", "Wind vane", "Barometer"], ["mm", "degrees", "hPa"]),
        ("Harbour", ["Tide staff"], ["cm"]),
        ("Quarry Hill", ["Rain gauge", "Seismograph"], ["mm", "micrometres"]),
    ]
    for label, gauges, units in groups:
        top = y
        for i, (gauge, unit) in enumerate(zip(gauges, units, strict=True)):
            _row(page, top + 12 + i * LINE, {1: gauge, 2: unit, 3: READ_EVERY[i]})
        y = top + 6 + len(gauges) * LINE
        _row(page, (top + y) / 2 + 4, {0: label})  # the label sits once, across its lines
        _rule(page, y)
    return doc


def test_a_table_ruled_between_groups_of_rows_reads_a_row_per_group() -> None:
    [table] = _tables(_read(_grouped_table()))
    assert table.cells is not None
    assert [c.text for c in table.cells if c.row == 0] == [
        "Station",
        "Gauges",
        "Unit",
        "Read every",
    ]
    assert _row_of(table, "Harbour") == {0: "Harbour", 1: "Tide staff", 2: "cm", 3: "hour"}
    north = _row_of(table, "Northfield")
    assert north[1] == "Rain gauge Wind vane Barometer"
    assert north[2] == "mm degrees hPa"
    assert _row_of(table, "Quarry Hill")[2] == "mm micrometres"


def test_headings_that_number_what_they_name_head_a_table() -> None:
    """A word's number is a heading's ("Rung 1", "Layer 2"), not a row of figures."""
    doc, page = _headed_page(("Measure", "Rung 1", "Rung 2", "Rung 3"))
    rows = [("Samples", "3,160", "3,160", "3,792"), ("Words per sample", "73.4", "77.0", "90.4")]
    for i, cells in enumerate(rows):
        _row(page, 130 + i * LINE, dict(enumerate(cells)))
    _rule(page, 130 + LINE + 6)
    [table] = _tables(_read(doc))
    assert _row_of(table, "Samples") == {0: "Samples", 1: "3,160", 2: "3,160", 3: "3,792"}
    assert _row_of(table, "Words per sample")[3] == "90.4"


def test_a_table_ruled_between_its_columns_alone_reads_a_row_per_line() -> None:
    """A box, rules between the columns and under the headings, none between the rows: the
    finder reads the body as one tall row; each line of figures is a row of its own."""
    doc, page = _headed_page(("Month", "High", "Low", "Close"))
    months = [("April", "390.00", "340.00", "352.10"), ("May", "397.00", "320.00", "330.45")]
    months += [("June", "395.00", "369.00", "371.20"), ("July", "420.00", "350.00", "415.00")]
    for i, cells in enumerate(months):
        _row(page, 130 + i * LINE, dict(enumerate(cells)))
    bottom = 130 + 3 * LINE + 6
    _rule(page, bottom)
    for x in (LEFT, *COLUMNS[1:], RIGHT):
        page.draw_line((x - 2 if x != LEFT else x, 100), (x - 2 if x != LEFT else x, bottom))
    [table] = _tables(_read(doc))
    assert _row_of(table, "June") == {0: "June", 1: "395.00", 2: "369.00", 3: "371.20"}
    assert _row_of(table, "April")[3] == "352.10"
    assert len({c.row for c in table.cells or []}) == 5


def test_a_table_with_three_rules_reads_a_row_per_labelled_line() -> None:
    doc, page = _headed_page(("Bridge", "River", "Opened", "Span"))
    spans = [
        ("Old Mill", "Avon", "1821", "long stone arch"),
        ("Ferry Lane", "Severn", "1904", "iron"),
    ]
    spans += [("Castle Road", "Wye", "1968", "concrete")]
    for i, cells in enumerate(spans):
        _row(page, 130 + i * LINE, dict(enumerate(cells)))
    _row(page, 130 + 3 * LINE, {3: "beam, rebuilt"})  # a wrapped cell: no label on its line
    _rule(page, 130 + 3 * LINE + 6)
    [table] = _tables(_read(doc))
    assert _row_of(table, "Ferry Lane") == {0: "Ferry Lane", 1: "Severn", 2: "1904", 3: "iron"}
    assert _row_of(table, "Castle Road")[3] == "concrete beam, rebuilt"
    assert _row_of(table, "Old Mill")[1] == "Avon"


def test_rules_between_paragraphs_of_running_text_make_no_table() -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    text = (
        "The survey walked every footpath in the parish over two summers and noted where the "
        "way was blocked, where a stile had fallen and where the signs were missing."
    )
    for i in range(3):
        top = 100 + i * 90
        _rule(page, top)
        page.insert_textbox((LEFT, top + 8, RIGHT, top + 80), text, fontsize=10)
    _rule(page, 100 + 3 * 90)
    assert _tables(_read(doc)) == []


def test_narrow_rules_over_the_figure_columns_of_a_statement_make_no_table() -> None:
    """Rules as wide as two columns of figures (under their years, above their totals) rule the
    figures, not a table: the labels on their left lie outside them."""
    doc = pymupdf.open()
    page = doc.new_page()
    rows = [("Rent", "1,200", "1,150"), ("Rates", "310", "295"), ("Total", "1,510", "1,445")]
    for i, (label, this_year, last_year) in enumerate(rows):
        page.insert_text((LEFT, 130 + i * LINE), label, fontsize=9)
        page.insert_text((420, 130 + i * LINE), this_year, fontsize=9)
        page.insert_text((490, 130 + i * LINE), last_year, fontsize=9)
    page.insert_text((420, 112), "2024", fontsize=9)
    page.insert_text((490, 112), "2023", fontsize=9)
    for y in (118, 130 + LINE + 4, 130 + 2 * LINE + 4):
        _rule(page, y, x0=410)
    assert _tables(_read(doc)) == []


def _found(bbox: tuple[float, float, float, float]) -> FoundTable:
    return FoundTable(bbox=bbox, cells=[], rows=[], markdown="", html="")


def test_a_table_ruled_across_rows_replaces_unruled_runs_inside_it_and_yields_to_one_it_cuts() -> (
    None
):
    ruled = _found((70, 100, 540, 300))
    inside = _found((300, 150, 540, 200))  # a run of rows whose marks line up, inside the rules
    assert with_unruled([ruled], [inside]) == [ruled]
    statement = _found((70, 60, 540, 200))  # a statement whose headings lie above the top rule
    apart = _found((70, 400, 540, 500))
    assert with_unruled([ruled], [statement, apart]) == [statement, apart]


def _rule_tables(doc: pymupdf.Document) -> list[FoundTable]:
    """What the finder of tables ruled across rows alone makes of the first page."""
    page = pymupdf.open("pdf", doc.tobytes())[0]
    frame = PageFrame(page)
    return find_rule_tables(
        frame, read_words(page, frame, page.get_textpage()), page.get_cdrawings()
    )


def _statement(rule_from: float, *, ruled_over_years: bool = False) -> pymupdf.Document:
    """A statement of two years whose rules run under its subtotals, from `rule_from` rightwards."""
    doc = pymupdf.open()
    page = doc.new_page()
    if ruled_over_years:
        _rule(page, 100, rule_from)
    _row(page, 112, {2: "2024", 3: "2023"})
    _rule(page, 118, rule_from)
    lines = [("Fees", "410", "380"), ("Grants", "220", "240"), ("Income", "630", "620")]
    lines += [("Wages", "300", "290"), ("Rent", "120", "115"), ("Costs", "420", "405")]
    y = 130.0
    for i, (label, this_year, last_year) in enumerate(lines):
        page.insert_text((LEFT, y), label, fontsize=9)
        _row(page, y, {2: this_year, 3: last_year})
        y += LINE
        if i in (2, 5):
            _rule(page, y - 8, rule_from)
    return doc


def test_a_statement_ruled_under_its_subtotals_is_left_to_the_finder_of_figures() -> None:
    """Its first band holds rows of figures, not headings: no table of rules alone."""
    assert _rule_tables(_statement(LEFT)) == []


def test_rules_over_the_figures_alone_leave_the_rows_to_their_labels() -> None:
    """Rules that start right of the labels span part of the table: its rows go on beyond them."""
    assert _rule_tables(_statement(300.0, ruled_over_years=True)) == []
    assert len(_rule_tables(_statement(LEFT, ruled_over_years=True))) == 1


def test_a_group_of_rows_with_a_figure_on_each_line_reads_a_row_per_line() -> None:
    doc, page = _headed_page(("Ward", "Street", "Homes", "Built"))
    for i, (street, homes, built) in enumerate(
        [("Mill Lane", "42", "1931"), ("Kiln Row", "17", "1958")]
    ):
        _row(page, 130 + i * LINE, {1: street, 2: homes, 3: built})
    _row(page, 136, {0: "East"})  # the ward's name once, between its two streets
    _rule(page, 130 + LINE + 6)
    [table] = _rule_tables(doc)
    rows = {c.row for c in table.cells if c.text in ("Mill Lane", "Kiln Row")}
    assert len(rows) == 2


def test_a_label_over_rows_that_a_shorter_rule_parts_spans_them() -> None:
    """A rule that starts right of the first column parts the rows beside it, not the label."""
    doc, page = _headed_page(("Region", "Town", "Market day", "Stalls"))
    _row(page, 130, {0: "Uplands", 1: "Ashby", 2: "Tuesday", 3: "forty"})
    _row(page, 130 + LINE, {1: "Ashby", 2: "Saturday", 3: "sixty"})
    _rule(page, 130 + LINE + 6, x0=COLUMNS[1] - 4)
    _row(page, 130 + 2 * LINE + 6, {1: "Bourne", 2: "Friday", 3: "twelve"})
    _rule(page, 130 + 2 * LINE + 12)
    [table] = _rule_tables(doc)
    [label] = [c for c in table.cells if c.text == "Uplands"]
    assert label.row_span == 2
    assert _row_of(table, "Uplands")[1] == "Ashby Ashby"


def test_a_cell_wider_than_its_column_keeps_its_words_in_its_box() -> None:
    """One line of eight may cross a gutter (a long entry), so the column's edge cuts its words:
    the cell's box grows to hold them, and so its highlight does not clip them."""
    doc, page = _headed_page(("Bridge", "River", "Opened", "Built of"))
    names = ["Old Mill", "Ferry Lane", "Castle Road", "Weir Steps", "Kings Ford"]
    names += ["Tanner Row", "Abbey Walk", "Salt Quay"]
    for i, name in enumerate(names):
        _row(page, 130 + i * LINE, {0: name, 1: "Avon", 2: "1821"})
        built = "reinforced concrete" if i == 3 else "stone"
        page.insert_text((392.0 if i == 3 else COLUMNS[3], 130 + i * LINE), built, fontsize=9)
    _rule(page, 130 + 7 * LINE + 6)
    [table] = _tables(_read(doc))
    assert table.cells is not None
    [cell] = [c for c in table.cells if c.text == "reinforced concrete"]
    assert cell.bbox is not None and cell.bbox[0] <= 392.5


def test_rules_around_a_list_under_a_title_make_no_table() -> None:
    """A box of rules whose first band is a title (one cell) over two columns of names and their
    settings is no table: no row of the box heads its columns."""
    doc = pymupdf.open()
    page = doc.new_page()
    _rule(page, 100)
    page.insert_text((LEFT, 112), "Loader settings", fontsize=9)
    _rule(page, 118)
    settings = [("timeout", "thirty"), ("retries", "three"), ("folder", "inbox"), ("mode", "watch")]
    for i, (name, value) in enumerate(settings):
        _row(page, 130 + i * LINE, {0: name, 2: value})
    _rule(page, 130 + 3 * LINE + 6)
    assert _rule_tables(doc) == []
