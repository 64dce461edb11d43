"""Answers from tables: the cell where the question's measure (row) and period (column) meet,
written in words and cited to the cell's own box, never a raw markdown row."""

from __future__ import annotations

from functools import cache
from urllib.parse import parse_qsl, urlsplit

import pytest

from doubles.builders import one_line_block, one_page_document, rows_chunk, table_block
from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import BlockType, Document
from retrieval.answer import AnswerOptions, Lookups, extractive_answer
from retrieval.answer.cells import table_cells
from retrieval.answer.dates import periods
from retrieval.answer.page_layout import PageLayouts
from retrieval.index.embedder import SentenceTransformerEmbedder
from retrieval.links import highlight_of, parse_boxes
from retrieval.schema import Chunk, ScoredChunk

HEADER = ["", "2023", "2022", "2021"]
ROWS = [
    ["Commercial Airplanes", "33,901", "25,867", "19,493"],
    ["Boeing Capital", "199", "272", "261"],
    ["Total revenues", "77,794", "66,608", "62,286"],
]
X = (72.0, 260.0, 340.0, 420.0, 500.0)  # column edges
TOP, ROW_HEIGHT = 200.0, 14.0


def _table_document() -> Document:
    """One page: a caption naming the unit, then a 4-column table with a box for every cell."""
    caption = one_line_block(
        "p1-b0", BlockType.caption, (72, 180, 300, 192), "Table 2. Revenues (Dollars in millions)"
    )
    table = table_block("p1-b1", [HEADER, *ROWS], X, TOP, ROW_HEIGHT)
    return one_page_document([caption, table], doc_id="t" * 64, source="revenues.pdf")


DOCUMENT = _table_document()


def _table_chunk() -> Chunk:
    chunks = chunk_document(DOCUMENT, count_tokens=lambda t: len(t.split()))
    [table] = [c for c in chunks if c.kind.startswith("table")]
    return table


def _cell_box(row: int, col: int) -> tuple[float, float, float, float]:
    cell = next(c for c in DOCUMENT.pages[0].blocks[1].cells if (c.row, c.col) == (row, col))
    assert cell.bbox is not None
    return cell.bbox


OPTIONS = AnswerOptions(
    lookups=Lookups(layout=PageLayouts(lambda _doc_id, n: DOCUMENT.pages[n - 1]))
)


@cache
def _model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_rows_are_read_as_labelled_cells_with_their_column_and_unit() -> None:
    cells = table_cells(_table_chunk())
    assert [c.text for c in cells if c.label == "Total revenues"] == [
        "Total revenues, 2023: 77,794 (Dollars in millions)",
        "Total revenues, 2022: 66,608 (Dollars in millions)",
        "Total revenues, 2021: 62,286 (Dollars in millions)",
    ]
    assert not any(c.label == "" or "|" in c.text for c in cells)


@pytest.mark.parametrize(
    ("text", "years"),
    [
        ("Boeing's total revenue in 2022", {"2022"}),
        ("What is FY2023 adjusted EBITDA?", {"2023"}),
        ("capex in FY 22 and fiscal year 2021", {"2022", "2021"}),
        ("How many airplanes?", set()),
    ],
)
def test_periods_of_a_question(text: str, years: set[str]) -> None:
    assert periods(text) == years


@pytest.mark.parametrize("embedded", [False, True])
def test_the_cell_of_the_measure_and_period_is_the_answer_and_is_boxed(embedded: bool) -> None:
    hits = [ScoredChunk(chunk=_table_chunk(), score=0.9)]
    embedder = _model() if embedded else None
    answer = extractive_answer(
        "What was Boeing's total revenue in 2022?", hits, embedder=embedder, options=OPTIONS
    )
    assert answer.text is not None
    assert answer.text.startswith("Total revenues, 2022: 66,608 (Dollars in millions) [1]")
    first = answer.citations[0]
    assert first.quote == "Total revenues, 2022: 66,608 (Dollars in millions)"
    assert first.bbox == _cell_box(3, 2)  # the cell, not its row
    assert [r.bbox for r in first.regions] == [_cell_box(3, 2)]
    assert first.page == 1
    # the preview crop shows the row under the column headings two rows above, so that the label
    # and the heading say what the number is; it draws the cell
    assert _crop_parts(first.crop_url) == [(X[0], _cell_box(0, 1)[1], X[-1], _cell_box(3, 2)[3])]
    assert highlight_of(first.crop_url) == [_cell_box(3, 2)]


def _crop_parts(url: str) -> list[tuple[float, float, float, float]]:
    return parse_boxes(dict(parse_qsl(urlsplit(url).query))["bbox"])


def test_a_row_far_below_its_headings_is_previewed_under_them() -> None:
    """The rows between are left out of the crop: the headings, then the cited row."""
    filler = [[f"Line item {i}", str(i), str(i + 1), str(i + 2)] for i in range(20)]
    table = table_block("p1-b1", [HEADER, *filler, *ROWS], X, TOP, ROW_HEIGHT)
    document = one_page_document([table], doc_id="u" * 64, source="long.pdf")
    chunks = chunk_document(document, count_tokens=lambda t: len(t.split()))
    hits = [ScoredChunk(chunk=c, score=0.9) for c in chunks if c.kind.startswith("table")]
    options = AnswerOptions(
        lookups=Lookups(layout=PageLayouts(lambda _doc_id, n: document.pages[n - 1]))
    )
    answer = extractive_answer("Total revenues in 2022", hits, options=options)
    first = answer.citations[0]
    assert first.quote.startswith("Total revenues, 2022: 66,608")
    heads = next(c.bbox for c in table.cells if (c.row, c.col) == (0, 1))
    row = next(c.bbox for c in table.cells if c.text == "66,608")
    assert heads is not None and row is not None
    assert _crop_parts(first.crop_url) == [
        (X[0], heads[1], X[-1], heads[3]),
        (X[0] + 2, row[1], X[-1] - 2, row[3]),
    ]
    assert first.bbox == row  # the citation is still the cell alone


def test_a_row_dated_by_a_year_row_is_previewed_under_its_headings_and_that_year() -> None:
    """A quarterly table's columns name no year; the row of "2016" above the cited row does:
    the crop shows the headings, that row and the cited row, one under the other."""
    quarters = ["", "December 31", "September 30", "June 30"]
    filler = [[f"Line item {i}", str(i), str(i + 1), str(i + 2)] for i in range(8)]
    rows = [quarters, ["2017", "", "", ""], *filler, ["2016", "", "", ""], *filler, ROWS[2]]
    table = table_block("p1-b1", rows, X, TOP, ROW_HEIGHT)
    document = one_page_document([table], doc_id="q" * 64, source="quarters.pdf")
    chunks = chunk_document(document, count_tokens=lambda t: len(t.split()))
    hits = [ScoredChunk(chunk=c, score=0.9) for c in chunks if c.kind.startswith("table")]
    options = AnswerOptions(
        lookups=Lookups(layout=PageLayouts(lambda _doc_id, n: document.pages[n - 1]))
    )
    answer = extractive_answer("Total revenues, September 30, 2016", hits, options=options)
    first = answer.citations[0]
    assert first.quote == "Total revenues, September 30, 2016: 66,608"
    heads = next(c.bbox for c in table.cells if (c.row, c.col) == (0, 1))
    year = next(c.bbox for c in table.cells if c.text == "2016")
    row = next(c.bbox for c in table.cells if c.text == "66,608")
    assert heads is not None and year is not None and row is not None
    parts = _crop_parts(first.crop_url)
    assert len(parts) == 3 and parts[0][1] == heads[1] and parts[2][3] == row[3]
    assert parts[1][1] <= year[1] and parts[1][3] >= year[3]  # the year's row in the middle


def test_answers_never_hold_a_raw_markdown_row() -> None:
    hits = [ScoredChunk(chunk=_table_chunk(), score=0.9)]
    for question in ("Boeing Capital revenues", "commercial airplanes", "revenues 2021 2023"):
        answer = extractive_answer(question, hits, embedder=_model(), options=OPTIONS)
        assert answer.text is not None and "|" not in answer.text
        assert all("|" not in c.quote for c in answer.citations)


def test_without_the_document_a_cell_is_boxed_by_its_row() -> None:
    chunk = _table_chunk()
    hits = [ScoredChunk(chunk=chunk, score=0.9)]
    answer = extractive_answer("total revenues 2022", hits)
    row = next(ln for ln in chunk.lines if "66,608" in chunk.text[ln.start : ln.end])
    assert answer.citations[0].bbox == row.bbox
    assert answer.citations[0].quote == "Total revenues, 2022: 66,608 (Dollars in millions)"


def test_a_table_whose_first_row_is_figures_has_no_header() -> None:
    """The first row of a table is its header only when its numbers are dates or periods: a
    row of figures is read as a row, and lends no '$ 542' heading to the rows below it."""
    chunk = rows_chunk(
        [
            "| Net sales - external | $ 542 | $ 600 |",
            "| Net sales - to subsidiaries | 3 | 4 |",
            "| Total net sales | 545 | 604 |",
        ]
    )
    texts = [c.text for c in table_cells(chunk)]
    assert "Net sales - external: $ 542" in texts
    assert "Total net sales: 545" in texts and "Total net sales: 604" in texts
    assert not any("542" in t and "Total" in t for t in texts)
    headed = rows_chunk(["| | Q2 2023 | June 30, 2022 |", "| Total net sales | 545 | 604 |"])
    assert [c.text for c in table_cells(headed)] == [
        "Total net sales, Q2 2023: 545",
        "Total net sales, June 30, 2022: 604",
    ]


def test_headings_that_number_what_they_name_head_their_columns() -> None:
    """A number right after a word names a column ("Rung 1", "Layer 2"); a row whose figures
    stand in cells of their own ("| Apples | 12 |") is still a row."""
    chunk = rows_chunk(
        [
            "| | Total | Rung 1 | Rung 2 |",
            "| Samples | 10,560 | 3,288 | 3,984 |",
            "| Nodes per graph | 3.54 | 3.41 | 3.55 |",
        ]
    )
    texts = [c.text for c in table_cells(chunk)]
    assert "Samples, Rung 1: 3,288" in texts
    assert "Nodes per graph, Total: 3.54" in texts
    fruit = rows_chunk(["| Apples | 12 | 14 |", "| Pears | 7 | 9 |"])
    assert "Apples: 12" in [c.text for c in table_cells(fruit)]


def test_a_blank_row_is_no_header_separator() -> None:
    """A row of empty cells (a spacer between a statement's blocks) is a blank row: the rows
    above it stay rows with their own labels, not headings over the rows below it."""
    chunk = rows_chunk(
        [
            "| | 2022 | 2021 |",
            "| Income before income taxes | 903 | 1,461 |",
            "| Net income attributable to the company | 1,473 | 1,254 |",
            "| | | |",
            "| Earnings per share | | |",
            "| Basic | 3.52 | 2.44 |",
        ]
    )
    texts = [c.text for c in table_cells(chunk)]
    assert "Net income attributable to the company, 2022: 1,473" in texts
    assert "Basic, 2021: 2.44" in texts
    assert not any("903" in t and "Basic" in t for t in texts), texts


def test_a_row_labels_footnote_marks_are_left_out() -> None:
    """A row label's footnote mark, "Non-U.S. customers (1)", is no part of its name."""
    chunk = rows_chunk(
        [
            "| | 2022 | 2021 |",
            "| Non-U.S. customers (1) | 16 | 18 |",
            "| Aria (4)* | 5,497 | 5,495 |",
            "| Other (a) | 3 | 4 |",
        ]
    )
    labels = [c.label for c in table_cells(chunk)]
    assert labels == ["Non-U.S. customers"] * 2 + ["Aria"] * 2 + ["Other"] * 2


def test_the_heading_over_the_labels_dates_the_columns_that_name_no_year() -> None:
    """A filing's "December 31, 2017" stands over the labels, the columns say what they hold."""
    chunk = rows_chunk(
        [
            "| | Carrying | Percentage |",
            "| December 31, 2017 | Value | of Total Assets |",
            "| Equity method investments | $ 20,856 | 24 % |",
        ]
    )
    assert [c.text for c in table_cells(chunk)] == [
        "Equity method investments, Carrying, Value, December 31, 2017: $ 20,856",
        "Equity method investments, Percentage, of Total Assets, December 31, 2017: 24 %",
    ]
    wrapped = rows_chunk(
        ["| | May 26, | May 27, |", "| | 2019 | 2018 |", "| Inventories | 1,559.3 | 1,642.2 |"]
    )
    assert [c.header for c in table_cells(wrapped)] == ["May 26, 2019", "May 27, 2018"]
    dated = rows_chunk(["| Years ended | 2022 | 2021 |", "| Asia | $8,393 | $5,845 |"])
    assert [c.header for c in table_cells(dated)] == ["2022", "2021"]


def test_a_section_row_over_the_labels_heads_no_column() -> None:
    """A balance sheet's "Assets" and "Current assets" rows stand over the labels before the
    first figures: they name sections of rows, not what the date columns hold (the liabilities
    below were "Accounts payable, July 29, 2023, Assets")."""
    chunk = rows_chunk(
        [
            "| | July 29, 2023 | January 28, 2023 |",
            "| Liabilities | | |",
            "| Current liabilities: | | |",
            "| Accounts payable | $ 5,471 | $ 5,687 |",
        ]
    )
    assert [c.text for c in table_cells(chunk)] == [
        "Current liabilities, Accounts payable, July 29, 2023: $ 5,471",
        "Current liabilities, Accounts payable, January 28, 2023: $ 5,687",
    ]


SECTIONED = [
    "| | Year Ended | |",
    "| | 2024 | 2023 |",
    "| Revenue: | | |",
    "| Hardware | $ 410 | $ 380 |",
    "| Subscriptions | 265 | 198 |",
    "| Total revenue | 675 | 578 |",
    "| Costs: | | |",
    "| Hosting | 91 | 77 |",
    "| Field support | 40 | 38 |",
    "| Total costs | 131 | 115 |",
    "| Interest income | 12 | 9 |",
]


def test_a_label_alone_heads_the_rows_below_it_down_to_the_row_that_totals_it() -> None:
    """A row holding a label ending in a colon and no figure names a section of the rows under it
    ("Revenue:" over "Subscriptions"), down to its total ("Total revenue"); a row after the total
    is in none, nor are the rows under a figureless label without a colon (a wrapped label or a
    title). A lower-case label after a figureless row goes on that row's label, not under it."""
    labels = {c.label for c in table_cells(rows_chunk(SECTIONED))}
    assert labels == {
        "Revenue, Hardware",
        "Revenue, Subscriptions",
        "Total revenue",
        "Costs, Hosting",
        "Costs, Field support",
        "Total costs",
        "Interest income",
    }
    wrapped = rows_chunk(
        [
            "| | 2024 | 2023 |",
            "| Revenue: | | |",
            "| Proceeds from the sale of | | |",
            "| equipment | 14 | 11 |",
            "| Licences | 20 | 18 |",
        ]
    )
    assert [c.label for c in table_cells(wrapped)][::2] == [
        "Revenue, Proceeds from the sale of equipment",
        "Revenue, Licences",
    ]
    untitled = rows_chunk(["| | 2024 | 2023 |", "| Segment results | | |", "| Retail | 7 | 6 |"])
    assert {c.label for c in table_cells(untitled)} == {"Retail"}


@pytest.mark.parametrize("embedded", [False, True])
def test_a_row_named_by_its_section_and_its_own_label_answers(embedded: bool) -> None:
    """Asked for subscriptions revenue, the answer is the Subscriptions row of the Revenue
    section, not the Total revenue row, which holds more of the question's words on its own."""
    hits = [ScoredChunk(chunk=rows_chunk(SECTIONED), score=0.9)]
    answer = extractive_answer(
        "What was the subscriptions revenue in 2024?",
        hits,
        embedder=_model() if embedded else None,
    )
    assert answer.text is not None
    assert answer.text.startswith("Revenue, Subscriptions, Year Ended, 2024: 265 [1]")


def test_headings_over_half_the_columns_each_span_theirs() -> None:
    """A 10-Q's "Three Months Ended" and "Six Months Ended" each stand over two date columns:
    both dates of each name their span (the second date lost it, so the quarter a year ago and
    the six months a year ago read alike, "Revenue, July 30, 2022")."""
    chunk = rows_chunk(
        [
            "| | Three Months Ended | | Six Months Ended | |",
            "| | July 29, 2023 | July 30, 2022 | July 29, 2023 | July 30, 2022 |",
            "| Revenue | $ 9,583 | $ 10,329 | $ 19,050 | $ 20,976 |",
        ]
    )
    assert [c.header for c in table_cells(chunk)] == [
        "Three Months Ended, July 29, 2023",
        "Three Months Ended, July 30, 2022",
        "Six Months Ended, July 29, 2023",
        "Six Months Ended, July 30, 2022",
    ]


def test_a_row_holding_only_a_year_dates_the_rows_below_it() -> None:
    """A quarterly table sets each year's rows under a row holding only the year: the rows under
    "2016" are 2016's, though the heading over the labels said 2017 (they were cited as 2017)."""
    chunk = rows_chunk(
        [
            "| | December 31 | September 30 |",
            "| 2017 | | |",
            "| Total revenues | $ 3,285,755 | $ 2,984,859 |",
            "| 2016 | | |",
            "| Total revenues | $ 2,477,541 | $ 2,290,188 |",
        ]
    )
    assert [c.text for c in table_cells(chunk)] == [
        "Total revenues, December 31, 2017: $ 3,285,755",
        "Total revenues, September 30, 2017: $ 2,984,859",
        "Total revenues, December 31, 2016: $ 2,477,541",
        "Total revenues, September 30, 2016: $ 2,290,188",
    ]


def test_a_row_holding_only_a_period_dates_the_rows_below_it() -> None:
    """A row stating a whole period ("Year Ended June 30, 2023") over rows whose columns name
    none dates them as a lone year does; a label that only ends in a year stays a row."""
    chunk = rows_chunk(
        [
            "| | Amount | Share |",
            "| Year Ended June 30, 2023 | | |",
            "| Revenue | 410 | 60% |",
            "| Year Ended June 30, 2022 | | |",
            "| Revenue | 380 | 58% |",
            "| Notes due 2030 | | |",
            "| Interest | 12 | 2% |",
        ]
    )
    cells = [c.text for c in table_cells(chunk)]
    assert cells[:4] == [
        "Revenue, Amount, Year Ended June 30, 2023: 410",
        "Revenue, Share, Year Ended June 30, 2023: 60%",
        "Revenue, Amount, Year Ended June 30, 2022: 380",
        "Revenue, Share, Year Ended June 30, 2022: 58%",
    ]
    assert cells[4].startswith("Interest, Amount, Year Ended June 30, 2022")


def test_a_figure_in_a_currency_signs_column_is_read_under_the_figures_header() -> None:
    """A statement sets its "$" in a column of its own before the figure on some rows; on the
    rows without it the figure stands in the sign's column. Both are the year's figure."""
    chunk = rows_chunk(
        [
            "| Cash flows | | | 2022 | | | 2021 |",
            "| --- | --- | --- | --- | --- | --- | --- |",
            "| Operating activities | | $ | 21.1 | | $ | 14.6 |",
            "| Investing activities | | (33.7) | | | (10.5) | |",
            "| Net increase | | $ | 11.9 | | $ | (10.9) |",
        ]
    )
    assert [c.text for c in table_cells(chunk)] == [
        "Operating activities, 2022: 21.1",
        "Operating activities, 2021: 14.6",
        "Investing activities, 2022: (33.7)",
        "Investing activities, 2021: (10.5)",
        "Net increase, 2022: 11.9",
        "Net increase, 2021: (10.9)",
    ]


def test_a_signs_column_takes_the_header_of_its_figure_not_the_group_left_of_it() -> None:
    """A filing's two dates each over a "$ | figure" pair: the second pair's sign column is
    reached by the first date carried right, and the figure beside it is the second date's
    (NVIDIA's inventories at January 30 were read as "October 30, 2022, January 30, 2022")."""
    chunk = rows_chunk(
        [
            "| | | October 30, | | | January 30, |",
            "| | | 2022 | | | 2022 |",
            "| Raw materials | $ | 1,936 | | $ | 791 |",
            "| Total inventories | $ | 4,454 | | $ | 2,605 |",
        ]
    )
    assert [c.text for c in table_cells(chunk)] == [
        "Raw materials, October 30, 2022: 1,936",
        "Raw materials, January 30, 2022: 791",
        "Total inventories, October 30, 2022: 4,454",
        "Total inventories, January 30, 2022: 2,605",
    ]


def test_title_lines_over_the_headings_name_no_column_and_leave_the_dates_in_the_header() -> None:
    """A statement read with its title, unit and "(Unaudited)" as rows over the headings: the
    four rows nearest the figures head the columns, the lines above are the table's title (the
    dates had been pushed out of the header, and "Revenue" was read under the title alone)."""
    chunk = rows_chunk(
        [
            "| | CONDENSED CONSOLIDATED STATEMENTS OF INCOME | | | |",
            "| | (In millions) | | | |",
            "| | (Unaudited) | | | |",
            "| | Three Months Ended | | Nine Months Ended | |",
            "| | October 30, | October 31, | October 30, | October 31, |",
            "| | 2022 | 2021 | 2022 | 2021 |",
            "| Revenue | $ 5,931 | $ 7,103 | $ 20,923 | $ 19,271 |",
        ]
    )
    cells = table_cells(chunk)
    assert [(c.label, c.value) for c in cells][:2] == [
        ("Revenue", "$ 5,931"),
        ("Revenue", "$ 7,103"),
    ]
    assert cells[0].header.endswith("Three Months Ended, October 30, 2022")
    assert cells[3].header.endswith("Nine Months Ended, October 31, 2021")
    assert not any("CONDENSED" in c.header for c in cells)
    assert cells[0].unit.lower() == "in millions"


def test_a_sign_beside_a_figure_in_one_cell_joins_no_columns() -> None:
    chunk = rows_chunk(
        [
            "| | 2022 | 2021 |",
            "| --- | --- | --- |",
            "| Revenue | $ 410 | $ 380 |",
            "| Cost | 200 | 190 |",
        ]
    )
    assert [c.text for c in table_cells(chunk)] == [
        "Revenue, 2022: $ 410",
        "Revenue, 2021: $ 380",
        "Cost, 2022: 200",
        "Cost, 2021: 190",
    ]


def test_a_chinese_tables_unit_line_gives_its_cells_their_unit() -> None:
    """ "单位：万元" over a Chinese table says what its figures count, as "(in millions)" does."""
    chunk = rows_chunk(["单位：万元", "| 银行 | 授信总额 |", "| 工商银行 | 330,435.30 |"])
    assert [c.text for c in table_cells(chunk)] == ["工商银行, 授信总额: 330,435.30 (万元)"]


def test_a_header_left_open_by_a_comma_does_not_run_into_the_value() -> None:
    chunk = rows_chunk(["| | Three Months Ended December 31, |", "| Net sales | $ 3,642 |"])
    assert [c.text for c in table_cells(chunk)] == [
        "Net sales, Three Months Ended December 31: $ 3,642"
    ]


def test_the_unit_is_said_once_after_the_value() -> None:
    chunk = rows_chunk(
        [
            "| | December 31 | September 30 |",
            "| | | (in thousands, except for per share data) |",
            "| Total revenues | $ 3,285,755 | $ 2,984,859 |",
        ]
    )
    assert [c.text for c in table_cells(chunk)][1] == (
        "Total revenues, September 30: $ 2,984,859 (in thousands, except for per share data)"
    )


def test_a_heading_centred_over_a_group_of_columns_heads_the_whole_group() -> None:
    """A spanning heading is set over the middle of its columns; where the row under it repeats
    its run of headings ("July 1, | June 25, | Change" twice), each run is one heading's group,
    so the group's first column is not the heading on its left's."""
    chunk = rows_chunk(
        [
            "| | Three Months Ended | | | | Nine Months Ended | |",
            "| | July 1, 2023 | June 25, 2022 | Change | July 1, 2023 | June 25, 2022 | Change |",
            "| Tablets | 5,791 | 7,224 | (20)% | 21,857 | 22,118 | (1)% |",
        ]
    )
    texts = [c.text for c in table_cells(chunk)]
    assert "Tablets, Three Months Ended, July 1, 2023: 5,791" in texts
    assert "Tablets, Nine Months Ended, July 1, 2023: 21,857" in texts, texts
    assert "Tablets, Three Months Ended, Change: (20)%" in texts


def test_a_rows_date_names_the_row_and_its_words_are_cells_too() -> None:
    """In a ledger of sales a day's date names the row (which sale), as its product does, so the
    row's figures are said with it; the cells of words in a row of figures (a remark) are
    candidates too. A date that is a row's only figure stays its value."""
    chunk = rows_chunk(
        [
            "| Product | Date | Quantity | Remark |",
            "| --- | --- | --- | --- |",
            "| Widget C | 2024-01-04 00:00:00 | 12 | hail damaged the crates |",
            "| Widget C | March 7, 2024 | 3 | |",
            "| Founded | 12/03/2009 | | |",
        ]
    )
    texts = [c.text for c in table_cells(chunk)]
    assert "Widget C, 2024-01-04 00:00:00, Quantity: 12" in texts, texts
    assert "Widget C, March 7, 2024, Quantity: 3" in texts
    assert "Widget C, 2024-01-04 00:00:00, Remark: hail damaged the crates" in texts
    assert "Founded, Date: 12/03/2009" in texts
    assert not any(t.startswith("Widget C, Date") for t in texts)


def test_a_table_of_words_is_headed_by_its_first_row_and_each_cell_is_said_with_its_label() -> None:
    """A table with no figure past its labels (the chunk holds no separator row): its first row
    heads the columns and every other cell of words is a value of its row's label. A table with
    figures keeps its rows without figures out (their words are not what it is about)."""
    words = rows_chunk(
        [
            "Table 4. Ferries of the estuary",
            "| Ferry | Crossing | Runs in | Carries |",
            "| Skylark | Ness to Holm | summer only | foot passengers bicycles |",
            "| Marigold | Holm to Quay | all year | cars foot passengers |",
            "| Osprey | Quay to Ness | weekends | foot passengers |",
            "| Heron | Ness to Quay | never | "
            + "a description of the vessel that runs on well past what a value would say |",
        ]
    )
    texts = [c.text for c in table_cells(words)]
    assert not any("vessel" in t for t in texts)  # a cell of prose is no value
    assert "Marigold, Runs in: all year" in texts, texts
    assert "Skylark, Carries: foot passengers bicycles" in texts
    assert "Osprey, Crossing: Quay to Ness" in texts
    assert not any(t.startswith(("Ferry", "Marigold, Ferry")) for t in texts)
    figures = rows_chunk(
        [
            "| Ferry | Crossing | Trips |",
            "| Skylark | Ness to Holm | 12 |",
            "| Marigold | Holm to Quay | |",
        ]
    )
    assert [c.text for c in table_cells(figures)] == [
        "Skylark, Trips: 12",
        "Skylark, Crossing: Ness to Holm",
    ]


def test_headings_that_are_names_with_digits_head_the_columns() -> None:
    """ "2-hop" or "GPT-4" is a name, not a figure: a row of them heads the columns."""
    chunk = rows_chunk(
        [
            "| Model | 2-hop | 3-hop | Tokens |",
            "| Codex | 55.57 | 53.42 | 8,000 |",
            "| GPT-4 | 61.05 | 59.47 | 32,000 |",
        ]
    )
    texts = [c.text for c in table_cells(chunk)]
    assert "Codex, 3-hop: 53.42" in texts, texts
    assert "GPT-4, Tokens: 32,000" in texts
    assert not any(t.startswith("Model") for t in texts)


def test_a_unit_row_and_a_groups_label_are_no_level_of_the_headings() -> None:
    """Three rows of headings, then the unit and the rows' group on rows of their own (a 10-Q's
    notes): the top row's periods still head the columns. Counted as heading levels, the two
    pushed "Three Months Ended" and "Six Months Ended" out as a title, and a six months' figure
    read as the quarter's ("Revenue, Taiwan, July 30, 2023: 4,635")."""
    chunk = rows_chunk(
        [
            "| | Three Months Ended | | Six Months Ended | |",
            "| | July 30, | July 31, | July 30, | July 31, |",
            "| | 2023 | 2022 | 2023 | 2022 |",
            "| | (In millions) | | | |",
            "| Revenue: | | | | |",
            "| Taiwan | 2,839 | 1,204 | 4,635 | 3,981 |",
        ]
    )
    texts = [c.text for c in table_cells(chunk)]
    assert "Revenue, Taiwan, Three Months Ended, July 30, 2023: 2,839 (In millions)" in texts
    assert "Revenue, Taiwan, Six Months Ended, July 30, 2023: 4,635 (In millions)" in texts
    titled = rows_chunk(
        [
            "| Table 7: Revenue by region | | | | |",
            "| | Three Months Ended | | Six Months Ended | |",
            "| | July 30, | July 31, | July 30, | July 31, |",
            "| | 2023 | 2022 | 2023 | 2022 |",
            "| | Q2 | Q2 | H1 | H1 |",
            "| Taiwan | 2,839 | 1,204 | 4,635 | 3,981 |",
        ]
    )
    headers = [c.header for c in table_cells(titled)]
    assert headers[2] == "Six Months Ended, July 30, 2023, H1"  # a title row heads no column
    assert not any("Table 7" in h for h in headers)
    statement = rows_chunk(
        [
            "| | ACME HOLDINGS AND SUBSIDIARIES | |",
            "| | CONDENSED BALANCE SHEETS | |",
            "| | (In thousands) | |",
            "| (Unaudited) | | |",
            "| | March 31, | December 31, |",
            "| | 2031 | 2030 |",
            "| Assets | | |",
            "| Current assets | | |",
            "| Cash | $ 3,800 | $ 5,900 |",
        ]
    )
    cash = table_cells(statement)[0]
    assert cash.header == "March 31, 2031"  # the statement's title lines head no column
    assert cash.text == "Cash, March 31, 2031: $ 3,800 (In thousands)"


def test_a_groups_first_row_of_percents_makes_its_rows_percents() -> None:
    """Statements print a group's sign on its first row alone: under "Net sales mix:" the rows
    after "62 %" are percents too, not the table's millions; the group of amounts above keeps
    the unit, and a row printing "%" amid amounts makes no group of percents."""
    chunk = rows_chunk(
        [
            "| | Three Months Ended | |",
            "| | 2031 | 2030 |",
            "| | (in millions) | |",
            "| Net Sales: | | |",
            "| North region | $ 74,430 | $ 82,546 |",
            "| Cloud | 19,739 | 22,140 |",
            "| Margin | 31 % | 29 % |",
            "| Other | 1,200 | 1,100 |",
            "| Net sales mix: | | |",
            "| North region | 62 % | 61 % |",
            "| Cloud | 16 | 17 |",
        ]
    )
    cells = table_cells(chunk)
    texts = [c.text for c in cells]
    assert "Net sales mix, Cloud, Three Months Ended, 2031: 16 %" in texts
    assert "Net Sales, Cloud, Three Months Ended, 2031: 19,739 (in millions)" in texts
    assert "Net Sales, Other, Three Months Ended, 2031: 1,200 (in millions)" in texts
    mix = [c for c in cells if c.label == "Net sales mix, Cloud"]
    assert mix and all(c.column_measure for c in mix), "no unit of the table's neighbours either"
