"""A cell's unit is said exactly where its table states one for its row or column (issue 36,
item 6): a column's own unit over the table's, none for a row or value that names its own
measure or that the table's unit excepts, and units written without a parenthesis."""

from __future__ import annotations

from doubles.builders import rows_chunk
from retrieval.answer.cells import table_cells
from retrieval.table_units import is_unit_statement, stated_unit, unit_for_row


def _texts(rows: list[str]) -> list[str]:
    return [c.text for c in table_cells(rows_chunk(rows))]


def test_a_percentage_row_takes_no_unit_of_the_tables() -> None:
    assert _texts(
        [
            "($ in millions)",
            "| | 2024 | 2023 |",
            "| Net revenue | 19,050 | 17,410 |",
            "| Gross margin percentage | 41.2 | 39.8 |",
            "| Operating margin | 12.5% | 11.0% |",
        ]
    ) == [
        "Net revenue, 2024: 19,050 ($ in millions)",
        "Net revenue, 2023: 17,410 ($ in millions)",
        "Gross margin percentage, 2024: 41.2",
        "Gross margin percentage, 2023: 39.8",
        "Operating margin, 2024: 12.5%",
        "Operating margin, 2023: 11.0%",
    ]


def test_a_column_says_its_own_unit_and_not_another_columns() -> None:
    assert _texts(
        [
            "| Segment | Revenue ($M) | Share of total (%) | Stores |",
            "| --- | --- | --- | --- |",
            "| Retail | 5,651 | 62.0 | 1,052 |",
        ]
    ) == [
        "Retail, Revenue: 5,651 ($M)",
        "Retail, Share of total: 62.0 (%)",
        "Retail, Stores: 1,052",
    ]


def test_a_unit_in_the_stub_header_without_parenthesis_is_the_tables() -> None:
    assert _texts(
        [
            "| In thousands, except per share data | 2024 | 2023 |",
            "| --- | --- | --- |",
            "| Net income | 1,052,778 | 998,100 |",
            "| Diluted earnings per share | 2.41 | 2.20 |",
        ]
    ) == [
        "Net income, 2024: 1,052,778 (In thousands, except per share data)",
        "Net income, 2023: 998,100 (In thousands, except per share data)",
        "Diluted earnings per share, 2024: 2.41",
        "Diluted earnings per share, 2023: 2.20",
    ]


def test_an_except_clause_leaves_the_rows_it_names_unscaled() -> None:
    unit = "in millions, except number of employees and store counts"
    assert unit_for_row("Employees", "12,400", unit) == ""
    assert unit_for_row("Store count", "310", unit) == ""
    assert unit_for_row("Net sales", "4,100", unit) == unit
    assert unit_for_row("Net sales", "4,100", "in millions, except where noted") != ""
    semicolon = "In Millions, Except Employees; Unaudited"
    assert unit_for_row("Employees", "124,800", semicolon) == ""
    assert unit_for_row("Net revenue", "12,949", semicolon) == semicolon


def test_units_are_read_in_their_usual_notations() -> None:
    assert stated_unit("Revenue (US$ M)") == "US$ M"
    assert stated_unit("Headcount ('000s)") == "'000s"
    assert stated_unit("Table 4\nDollars in millions") == "Dollars in millions"
    assert stated_unit("单位：万元") == "万元"
    assert stated_unit("Revenue grew in 2024 (see note 3)") == ""
    assert stated_unit("Sales rose in millions of homes") == ""
    assert is_unit_statement("(in thousands)")
    assert is_unit_statement("In millions, except per share amounts")
    assert not is_unit_statement("Revenue (in thousands)")


def test_a_lead_in_unit_reaches_a_cell_only_where_its_column_names_no_measure() -> None:
    from retrieval.answer.candidates import _Sentence
    from retrieval.answer.said import _with_unit
    from retrieval.schema import ScoredChunk

    rows = ["| | Sales | % of total |", "| --- | --- | --- |", "| Retail | 900 | 45.0 |"]
    chunk = rows_chunk(rows)
    hits = [ScoredChunk(chunk=chunk, score=1.0)]
    said = []
    for cell in table_cells(chunk):
        sentence = _Sentence(0, 0, 0, cell.text, frozenset(), cell=cell)
        said.append(_with_unit(sentence, hits, lambda _chunk: "in millions").text)
    assert said == ["Retail, Sales: 900 (in millions)", "Retail, % of total: 45.0"]
