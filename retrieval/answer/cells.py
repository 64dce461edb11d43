"""Table cells as answer candidates: a chunk's markdown rows read as a row label, the column's
headers and a value, written in words ("Net sales, 2023: 14,694 (in millions)"), and the box of
each cell in the document JSON.

A chunk line that is a markdown row (`| a | b |`) is a table row; rows before a separator row
(`| --- |`) are its header (without one, the leading rows whose numbers are all dates or
periods: a table whose first row is already figures has no header; of more than four, those
above the four that end with the lowest row of headings are its title, a row stating only the
unit or a label alone under the headings being no row of headings). A body row's
first non-numeric cell is its label, without footnote marks (with the label of a figureless row
before it, when it starts in lower case: a label wrapped onto the next line; after the label of a
figureless row that ends in a colon, "Net sales:", the rows below it down to the one that totals
it, whose label holds its words, are read as "Net sales, Services"; a day's date among its
figures joins its label, as it names the row: "Widget C, 2024-01-04, Revenue"); each of its
other cells holding a digit is a candidate, and in a row of figures each cell of words too,
with the header texts of its column (an empty cell of an upper header row takes the nearest
header on its left, as a spanning header is written in its first column, or the one heading
over its group where a header row below repeats a run of headings, unless the row heads half the
columns or more, or the header stands right beside another: then it is a wrapped line of the
headings, "United" over "States"; a column that names
no year takes the year of the heading over the labels, or of the last row below the header
that holds nothing but a year: a quarterly table's "2016" over that year's rows). A cell's unit
is its column header's, else the table's (its caption lines, its stub header, a header row that
only states a unit), as `retrieval.table_units` says it for the cell's row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ocr_engine.numbering import numbers_a_name
from retrieval.answer.dates import DAY_OF_MONTH, periods
from retrieval.schema import Chunk
from retrieval.table_rows import holds_a_period_alone, is_period_row, is_table_row, split_row
from retrieval.table_units import (
    is_unit_statement,
    names_own_measure,
    stated_unit,
    unit_for_row,
)
from retrieval.text_terms import stems

__all__ = ["TableCellText", "period_row_above", "row_words", "table_cells"]

_SEPARATOR = re.compile(r"^:?-{2,}:?$")
_CURRENCY_SIGN = re.compile(r"^(?:US)?[$€£¥]$")
_NUMERIC = re.compile(r"^[\s$€£(+\-–—]*\d[\d.,]*\s*%?\)?\s*$")
_PERIOD_NUMBERS = re.compile(
    r"(?<!\d)(?:19|20)\d{2}(?!\d)|\bQ[1-4]\b|\b(?:FY|H[12])\s?'?\d{2}\b"
    rf"|{DAY_OF_MONTH}"
    r"|\b(?:three|six|nine|twelve|3|6|9|12|13|26|39|52|53)\s+(?:months|weeks)\b",
    re.I,
)
_CALENDAR_DATE = re.compile(  # a day's date, a time of day after it allowed: it names a row's when
    r"^(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}"
    r"|[A-Z][a-z]{2,8}\.?\s+\d{1,2},?\s+\d{4}|\d{1,2}\s+[A-Z][a-z]{2,8}\.?\s+\d{4})"
    r"(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?$"
)
_MAX_HEADER_ROWS = 4
_MAX_VALUE_WORDS = 12  # a value in a table of words is a few words; a longer cell is prose
_MAX_LEADING_ROWS = 8  # rows without figures above the headings: the table's title lines
_NOTE_MARK = re.compile(r"(?:\s*(?:\((?:\d{1,2}|[a-z])\)|\*{1,3}))+$")  # "Aria (4)", "Other (a)*"


def _worded(cell: str) -> bool:
    """A cell of words (a remark, a name), not a sign, a dash or a mark."""
    return sum(ch.isalpha() for ch in cell) >= 3


def _is_separator(cells: list[str]) -> bool:
    """The markdown row under the headers ("|---|:--:|"); a row of empty cells is a blank row."""
    return any(cells) and all(_SEPARATOR.match(c) for c in cells if c)


def _is_header_row(cells: list[str]) -> bool:
    """No figure but dates, periods and names' numbers: a row of column headings ("2-hop",
    "GPT-4", "Rung 1" are names)."""
    for cell in cells:
        words = _PERIOD_NUMBERS.sub("", cell).split()
        if any(_NUMERIC.match(t) and not numbers_a_name(words, i) for i, t in enumerate(words)):
            return False
    return True


@dataclass(frozen=True)
class TableCellText:
    """A table cell read as an answer: which chunk line (row) and column it is, and its words."""

    line: int
    col: int
    label: str
    header: str
    value: str
    unit: str
    column_measure: bool = False  # the column's header says what its figures are ("% of total")
    section: str = ""  # the label of the rows this one is under, which `label` starts with

    @property
    def text(self) -> str:
        header = self.header
        # said once, after the value, not amid the headings; a percent takes no scale at all
        said = self.unit or (stated_unit(header) if "%" in self.value else "")
        if said and "(" in header:
            header = header.replace(f"({said})", "").replace(", ,", ",").strip(" ,")
        header = header.rstrip(" ,;:")  # "December 31,: $ 3,642" reads badly
        head = f"{self.label}, {header}" if header else self.label
        unit = f" ({self.unit})" if self.unit else ""
        return f"{head}: {self.value}{unit}"


def row_words(row: str) -> str:
    """A table row's words as a quote says them: its cells that hold any, ", " apart, without a
    cell's closing full stop or semicolon, which would end the quote's sentence inside the table
    ("" for the rule under a header); rows are "; " apart."""
    cells = (c.rstrip(".;").rstrip() for c in split_row(row) if c and not _SEPARATOR.match(c))
    return ", ".join(c for c in cells if c)


def _headers(rows: list[list[str]], n_cols: int) -> list[str]:
    """The header text of each column: its header cells top to bottom, the spans of upper
    rows carried right. An upper row with a heading over half the columns or fewer spans
    ("Year ended December 31, 2018" over five columns; "Three Months Ended" and "Six Months
    Ended" over two each); a fuller one is a heading's wrapped line
    ("United | Asia | Middle East" over "States | Pacific | & Africa") and carries nothing, as
    a heading right beside another does not ("Europe, | Latin": two wrapped first lines), nor
    one over the labels below the first row ("Assets" under the dates names a section of rows;
    a first row's is the table's title)."""
    per_col: list[list[str]] = [[] for _ in range(n_cols)]
    for depth, row in enumerate(rows):
        carried = ""
        spans = depth < len(rows) - 1 and 2 * sum(1 for c in row[1:] if c) <= n_cols - 1
        width = _group_width(rows[depth + 1 :], n_cols) if spans else 0
        for col in range(n_cols):
            text = row[col] if col < len(row) else ""
            if text:
                beside = col > 1 and col - 1 < len(row) and bool(row[col - 1])
                carried = "" if beside or (col == 0 and depth > 0) else text
            elif spans and col > 0 and width:
                text = _heading_of_group(row, col, width)
            elif spans and col > 0:
                text = carried
            if text and text not in per_col[col]:
                per_col[col].append(text)
    return [_joined(parts) for parts in per_col]


def _group_width(rows: list[list[str]], n_cols: int) -> int:
    """How many columns a group spans when a header row below repeats its run of headings over
    the figure columns ("July 1, | June 25, | Change" twice): a heading over a group heads the
    whole group, wherever in it it is centred; 0 when no row repeats."""
    for row in rows:
        cells = [row[c] if c < len(row) else "" for c in range(1, n_cols)]
        for width in range(1, len(cells) // 2 + 1):
            repeats = all(cells[i] == cells[i % width] for i in range(len(cells)))
            if len(cells) % width == 0 and any(cells[:width]) and repeats:
                return width
    return 0


def _heading_of_group(row: list[str], col: int, width: int) -> str:
    """The one heading of the row over the group of figure columns that holds `col`."""
    start = 1 + (col - 1) // width * width
    found = [row[c] for c in range(start, min(start + width, len(row))) if row[c]]
    return found[0] if len(found) == 1 else ""


def _with_sign_columns(headers: list[str], rows: list[list[str]]) -> list[str]:
    """The headers, a column where a currency sign stands alone before its figure ("| $ |
    21.1 |") joined with the column right of it: rows without the sign set their figure in the
    sign's column, so the two are one column of figures under the figure's header (the sign's
    may be carried from the column group to its left: "October 30, | $ | January 30,")."""
    signs = {
        col
        for cells in rows
        for col in range(min(len(cells), len(headers)) - 1)
        if _CURRENCY_SIGN.match(cells[col]) and _NUMERIC.match(cells[col + 1])
    }
    out = list(headers)
    for col in signs:
        left, right = headers[col : col + 2]
        out[col] = out[col + 1] = right or left  # the figure's own header, else the sign's
    return out


def _joined(parts: list[str]) -> str:
    """Header texts top to bottom, a comma between them unless the upper one ends in one."""
    text = ""
    for part in parts:
        text += (" " if text.endswith(",") else ", ") + part if text else part
    return text


def _dated_by_stub(headers: list[str]) -> list[str]:
    """The headers, each column that names no year dated by the stub's year when the stub (the
    header over the labels) names one: "December 31, 2017 | Carrying Value | Percentage"."""
    if not headers or not periods(headers[0]):
        return headers
    stub = headers[0]
    return [stub] + [h if periods(h) else ", ".join(filter(None, (h, stub))) for h in headers[1:]]


def table_cells(chunk: Chunk) -> list[TableCellText]:
    """The value cells of the markdown rows among the chunk's lines."""
    rows, other = _rows_of(chunk)
    if not rows:
        return []
    n_cols = max(len(cells) for _, cells in rows)
    n_header, separated = _header_count(rows)
    first = _title_rows(rows[:n_header])  # the rows above the headings are its title
    other += [" ".join(filter(None, cells)) for _, cells in rows[:first]]
    header_rows = [cells for _, cells in rows[first:n_header]]
    undated = _with_sign_columns(_headers(header_rows, n_cols), [cells for _, cells in rows])
    headers = _dated_by_stub(undated)
    units = _units(other, header_rows, undated)
    body = rows[n_header + separated :]
    of_words = _of_words([cells for _, cells in body])
    out = []
    wrapped = ""  # the label of the row before, when it holds no figure: it may go on
    section = before = ""  # the rows below a label alone belong to it; the section before it
    percent: set[int] | None = None  # columns whose group's first row of figures prints "%"
    for index, cells in [*_section_rows(rows[first + 1 : n_header]), *body]:
        if holds_a_period_alone(cells):  # "2016" over the rows of 2016
            headers = _dated_by_stub([cells[0], *undated[1:]])
            wrapped = ""
            continue
        named = next((c for c in cells if c and not _NUMERIC.match(c)), "")
        label = _NOTE_MARK.sub("", named) or named
        if not label:
            wrapped = ""
            continue
        start = cells.index(named) + 1
        values = [c for c in range(start, len(cells)) if any(ch.isdigit() for ch in cells[c])]
        label, values = _named_by_dates(label, cells, values)
        going_on = bool(wrapped) and label[0].islower()
        shown = f"{wrapped} {label}" if going_on else label
        if going_on:
            section = before
        words = [c for c in range(start, len(cells)) if c not in values and _worded(cells[c])]
        worded = not values and of_words and bool(words)  # each cell says something of the label
        if worded:
            words = [c for c in words if len(cells[c].split()) <= _MAX_VALUE_WORDS]
        elif not values:
            before, section = section, _section_name(shown) if shown.endswith(":") else ""
            percent = None  # a new group: its first row of figures says its signs
        elif section and _label_stems(section) <= set(stems(shown)):  # the row that totals it
            section = ""
        elif section:
            shown = f"{section}, {shown}"
        if values and percent is None:  # statements print a group's sign on its first row alone
            percent = {c for c in values if cells[c].rstrip().endswith("%")}
        row = _Row(index, shown, section, cells)
        out += [_figure(row, col, headers[col], units, col in (percent or ())) for col in values]
        if values or worded:  # a row of figures' cells of words say what they are about too
            out += [
                TableCellText(index, c, shown, headers[c], cells[c], "", True, section)
                for c in words
            ]
        wrapped = label if not values and not worded else ""
    return out


@dataclass(frozen=True, slots=True)
class _Row:
    """A body row as its cells are said: its chunk line, label, section and cells."""

    line: int
    label: str
    section: str
    cells: list[str]


def _figure(
    row: _Row, col: int, header: str, units: tuple[str, list[str | None]], percent: bool
) -> TableCellText:
    """A figure of `row` said with its unit: its column's, else the table's (`units`); none where
    it is a percent of a group whose first row prints "%" (it is said with the sign)."""
    table_unit, column_units = units
    own, value = column_units[col], row.cells[col]
    if percent and "%" not in value:
        value = f"{value} %"
    unit = unit_for_row(row.label, value, table_unit if own is None else own)
    return TableCellText(
        row.line, col, row.label, header, value, unit, own == "" or percent, row.section
    )


def _rows_of(chunk: Chunk) -> tuple[list[tuple[int, list[str]]], list[str]]:
    """The chunk's markdown rows (with their line's index, split into cells) and its other lines."""
    rows: list[tuple[int, list[str]]] = []
    other: list[str] = []
    for index, line in enumerate(chunk.lines):
        text = chunk.text[line.start : line.end]
        if is_table_row(text):
            rows.append((index, split_row(text)))
        else:
            other.append(text)
    return rows, other


def _of_words(body: list[list[str]]) -> bool:
    """Whether a table's rows hold no figure past their labels (their first cell of words)."""
    for cells in body:
        filled = [c for c in cells if c]
        if any(ch.isdigit() for c in filled[1:] for ch in c):
            return False
    return True


def _header_count(rows: list[tuple[int, list[str]]]) -> tuple[int, bool]:
    """How many leading rows are the header, and whether a separator row follows them."""
    separator = next((k for k, (_, cells) in enumerate(rows) if _is_separator(cells)), None)
    if separator is not None:
        return separator, True
    if all(_is_header_row(cells) for _, cells in rows):  # a table of words: one row heads it
        return 1, False
    leading = [_is_header_row(cells) for _, cells in rows[:_MAX_LEADING_ROWS]]
    n_header = leading.index(False) if False in leading else len(leading)
    return min(n_header, len(rows) - 1), False


def _named_by_dates(label: str, cells: list[str], values: list[int]) -> tuple[str, list[int]]:
    """The row's label and value columns, a day's date among its figures moved to the label: a
    sale's date names the sale, as its product does (a date that is the only figure stays)."""
    dates = [c for c in values if _CALENDAR_DATE.match(cells[c])]
    if not dates or len(dates) == len(values):
        return label, values
    return ", ".join([label, *(cells[c] for c in dates)]), [c for c in values if c not in dates]


@lru_cache(maxsize=256)
def _label_stems(label: str) -> frozenset[str]:
    """A section label's stems, worked out once for the rows under it."""
    return frozenset(stems(label))


def _section_name(label: str) -> str:
    """A row label that stands alone over rows, as their section ("Net sales:" is "Net sales")."""
    return label.rstrip(" :")


def _title_rows(header_rows: list[tuple[int, list[str]]]) -> int:
    """How many of the header rows are the table's title: those above the `_MAX_HEADER_ROWS`
    rows that end with its lowest row of headings, down to the first heading among them. A row
    that only states the unit ("($ in millions)") or a label alone over the labels ("Revenue:")
    below the headings heads no column: it leaves the top headings in ("Six Months Ended")."""
    if len(header_rows) <= _MAX_HEADER_ROWS:
        return 0
    levels = [
        k for k, (_, cells) in enumerate(header_rows) if any(cells[1:]) and not _states_unit(cells)
    ]
    if not levels:
        return len(header_rows) - _MAX_HEADER_ROWS
    top = levels[-1] + 1 - _MAX_HEADER_ROWS
    return next(k for k in levels if k >= top)


def _states_unit(cells: list[str]) -> bool:
    """Whether a row says nothing but the table's unit ("($ in millions)")."""
    return any(cells) and all(is_unit_statement(c) for c in cells if c)


def _section_rows(header_rows: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]]:
    """The header rows below the first that hold a label over the rows and nothing else ("Net
    sales:" under the dates): read as the body's figureless rows are, they may be its sections."""
    return [
        (index, cells)
        for index, cells in header_rows
        if cells and cells[0] and not any(cells[1:]) and not holds_a_period_alone(cells)
    ]


def _units(
    other: list[str], header_rows: list[list[str]], headers: list[str]
) -> tuple[str, list[str | None]]:
    """The table's unit (its lines that are no rows, a header row that only states a unit, the
    stub header over the labels) and each column's own: its header's, "" where the header names
    its own measure ("% of total"), None where it states none and the table's holds."""
    stub_unit = stated_unit(headers[0]) if headers else ""
    unit_rows = [" ".join(c for c in row if c) for row in header_rows if _states_unit(row)]
    table_unit = stated_unit("\n".join(other)) or stated_unit("\n".join(unit_rows)) or stub_unit
    stated_alone = {c for row in header_rows for c in row if c and is_unit_statement(c)}
    columns: list[str | None] = [None]
    for header in headers[1:]:
        own = ", ".join(p for p in header.split(", ") if p not in stated_alone)
        columns.append(stated_unit(own) or ("" if names_own_measure(own) else None))
    return table_unit, columns


def period_row_above(chunk: Chunk, line: int) -> int | None:
    """The chunk line of the row holding only a year ("2016") that dates table row `line`: the
    nearest above it in its table, if any."""
    for index in range(line - 1, -1, -1):
        text = chunk.text[chunk.lines[index].start : chunk.lines[index].end]
        if not is_table_row(text):
            return None
        if is_period_row(text):
            return index
    return None
