"""The dates a text names, as the answer compares a question's with a table's: its years
("2023", "FY2023", "FY 23", "fiscal 2023") and its days of a month ("October 30", "30 October")."""

from __future__ import annotations

import re

__all__ = ["DAY_OF_MONTH", "MONTH_NAME", "days_of_month", "periods"]

_YEAR = re.compile(r"(?<!\d)(?:FY\s?|fiscal\s(?:year\s)?)?((?:19|20)\d{2})(?!\d)", re.I)
_SHORT_FY = re.compile(r"\bFY\s?'?(\d{2})\b", re.I)
MONTH_NAME = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"  # written with re.I
DAY_OF_MONTH = (  # "October 30", "Oct. 30", "30 October"
    rf"\b(?P<month>{MONTH_NAME})\.?\s+(?P<day>\d{{1,2}})\b"
    rf"|\b(?P<day_first>\d{{1,2}})\s+(?P<month_after>{MONTH_NAME})\b"
)
_DAYS = re.compile(DAY_OF_MONTH, re.I)


def days_of_month(text: str) -> set[tuple[str, int]]:
    """The days of a month a text names, as (month, day): "October 30, 2022" gives (oct, 30)."""
    return {
        ((m["month"] or m["month_after"])[:3].lower(), int(m["day"] or m["day_first"]))
        for m in _DAYS.finditer(text)
    }


def periods(text: str) -> set[str]:
    """The years a text names: `2023`, `FY2023`, `FY 23` and `fiscal 2023` all give 2023."""
    found = {m.group(1) for m in _YEAR.finditer(text)}
    found |= {f"20{m.group(1)}" for m in _SHORT_FY.finditer(text)}
    return found
