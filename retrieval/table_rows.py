"""The text a table chunk is written in: one markdown row a line (`| a | b |`), as the chunker
writes it and the answer reads it."""

from __future__ import annotations

import re

from retrieval.table_units import is_unit_statement
from retrieval.text_terms import said

__all__ = [
    "dates_columns",
    "heads_rows",
    "holds_a_period_alone",
    "is_period_row",
    "is_table_row",
    "split_row",
]

_YEAR = r"(?:19|20)\d{2}"
_FISCAL_YEAR = rf"(?i:FY\s?|fiscal\s(?:year\s)?)?{_YEAR}"
_MONTH_DAY = r"[A-Z][a-z]{2,8}\.?\s+\d{1,2},?"
_ENDED = r"(?:[\w-]+\s+){1,3}(?i:ended|ending)\s+"  # "Three Months Ended ", "Year ended "
_LONE_PERIOD = re.compile(rf"^(?:{_ENDED})?(?:{_MONTH_DAY}\s+)?{_FISCAL_YEAR}$")
_DATE_CELL = re.compile(rf"^(?:{_FISCAL_YEAR}|(?:{_MONTH_DAY}\s+)?{_YEAR}|{_MONTH_DAY})$")


def is_table_row(text: str) -> bool:
    """Whether a line is a markdown table row."""
    stripped = text.strip()
    return len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|")


def split_row(row: str) -> list[str]:
    """A markdown row's cells, as an answer says them (an escaped `\\|` inside a cell kept)."""
    body = row.strip()[1:-1]
    return [said(c.replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", body)]


def is_period_row(text: str) -> bool:
    """A markdown row holding only a period, in its first cell: it dates the rows that follow."""
    return is_table_row(text) and holds_a_period_alone(split_row(text))


def heads_rows(text: str) -> bool:
    """A markdown row holding only its first cell, a period or a label ("2016", "Cost of
    sales:"): it dates or names the rows that follow."""
    if not is_table_row(text):
        return False
    cells = split_row(text)
    return len(cells) > 1 and bool(cells[0]) and not any(cells[1:])


def holds_a_period_alone(cells: list[str]) -> bool:
    """A row's cells hold a period in the first ("2016", "Three Months Ended December 31, 2022")
    and nothing else."""
    return len(cells) > 1 and bool(_LONE_PERIOD.match(cells[0])) and not any(cells[1:])


def dates_columns(text: str) -> bool:
    """A markdown row with only years or dates past its first cell, which is empty or states the
    table's unit: the columns' "| | 2022 | 2021 |" or "| (In millions) | 2022 | 2021 |" under a
    spanning heading."""
    cells = split_row(text) if is_table_row(text) else []
    filled = [c for c in cells[1:] if c]
    return (
        len(cells) > 2
        and (not cells[0] or is_unit_statement(cells[0]))
        and bool(filled)
        and all(map(_DATE_CELL.match, filled))
    )
