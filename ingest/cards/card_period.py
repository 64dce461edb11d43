"""The period a document covers, from its first pages' text: "fiscal year ended", "quarterly
period ended" (the quarter from its longest year-to-date column, the fiscal year from the quarters
left), "Date of Report", a release's "fourth quarter 2022" / "4Q 2023", "year ended", an arXiv
stamp, else the year the first page prints most."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date, datetime
from typing import NamedTuple

__all__ = ["MONTH", "Period", "PeriodText", "read_period"]

MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_DATE = rf"({MONTH}\s+\d{{1,2}}\s*,?\s*(?:19|20)\d\d)"
_FISCAL_ENDED = re.compile(rf"fiscal\s+year\s+ended\s*:?\s*{_DATE}", re.I)
_QUARTER_ENDED = re.compile(rf"quarterly\s+period\s+ended\s*:?\s*{_DATE}", re.I)
_YEAR_ENDED = re.compile(rf"\byear\s+ended\s*:?\s*{_DATE}", re.I)
_REPORT_DATE = re.compile(rf"date\s+of\s+report[^:]{{0,60}}:\s*{_DATE}", re.I)
_ORDINAL = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
}
_QUARTER_YEAR = re.compile(
    r"\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+quarter\b(?:\s+(?:and|&)\s+"
    r"(?:full|fiscal)[\s-]+year)?\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?)?((?:19|20)\d\d)",
    re.I,
)
_SHORT_QUARTER = re.compile(r"\b(?:([1-4])Q|Q([1-4]))\s?(?:FY\s?)?'?((?:19|20)\d\d|\d\d)\b")
_YEAR_TO_DATE = [
    (3, re.compile(r"\bnine\s+months\s+ended|\b(?:39|thirty-nine)\s+weeks\s+ended", re.I)),
    (2, re.compile(r"\bsix\s+months\s+ended|\b(?:26|twenty-six)\s+weeks\s+ended", re.I)),
    (1, re.compile(r"\bthree\s+months\s+ended|\b(?:13|thirteen)\s+weeks\s+ended", re.I)),
]
_FISCAL_YEAR = re.compile(r"\b(?:fiscal\s+(?:year\s+)?|FY\s?)((?:19|20)\d\d)\b", re.I)
_YEAR = re.compile(r"(?<![\d.,$-])((?:19|20)\d\d)(?![\d,.]\d)")
_ARXIV = re.compile(rf"^arXiv:\S+\s+\[[^]]*\]\s+\d{{1,2}}\s+{MONTH}\s+((?:19|20)\d\d)")


Period = tuple[int | None, int | None, date | None]
"""(the (fiscal) year, the quarter, the date the period ends)."""


class PeriodText(NamedTuple):
    cover: str  # the metadata title and the first three pages
    whole: str  # the pages read
    first_page: str
    blocks: list[str]


def read_period(text: PeriodText, *, dated: bool) -> Period:
    """The period; `dated`: a filing or an earnings release, whose date is the period."""
    cover = text.cover
    if match := _FISCAL_ENDED.search(cover):
        end = _date(match.group(1))
        return (end.year if end else None), None, end
    if match := _QUARTER_ENDED.search(cover):
        end = _date(match.group(1))
        quarter = _quarter(cover, text.whole)
        if end is None:
            return None, quarter, None
        # the fiscal year ends (4 - quarter) quarters after this one (52/53-week years: a
        # fortnight's slack), so a December quarter can be the second of the next year
        months = end.month + 3 * (4 - (quarter or 4))
        year = end.year + (months - 1) // 12
        if (months - 1) % 12 + 1 == 1 and end.day < 15:
            year -= 1
        return year, quarter, end
    if dated:
        report = _REPORT_DATE.search(cover)
        end = _date(report.group(1)) if report else None
        found = _quarter_years(cover)
        if found:
            (quarter, year), _ = found.most_common(1)[0]
            return year, quarter, end
        fiscal = _FISCAL_YEAR.search(cover)
        if fiscal:
            return int(fiscal.group(1)), None, end
        return (end.year if end else None), None, end
    if match := _YEAR_ENDED.search(cover):
        end = _date(match.group(1))
        return (end.year if end else None), None, end
    stamp = [m for block in text.blocks if (m := _ARXIV.search(block))]
    if stamp:
        return int(stamp[0].group(1)), None, None
    years = Counter(int(y) for y in _YEAR.findall(text.first_page) if 1950 <= int(y) <= 2035)
    return (years.most_common(1)[0][0] if years else None), None, None


def _quarter(cover: str, whole: str) -> int | None:
    """Which quarter a quarterly report covers: named, else its longest year-to-date column."""
    found = _quarter_years(cover)
    if found:
        return found.most_common(1)[0][0][0]
    for quarter, pattern in _YEAR_TO_DATE:
        if pattern.search(whole):
            return quarter
    return None


def _date(text: str) -> date | None:
    cleaned = re.sub(r"\s+", " ", text.replace(",", " ").replace(".", " ")).strip()
    month, day, year = cleaned.split(" ")
    for fmt in ("%B", "%b"):
        try:
            return datetime.strptime(
                f"{month[:3] if fmt == '%b' else month} {day} {year}", f"{fmt} %d %Y"
            ).date()
        except ValueError:
            continue
    return None


def _quarter_years(text: str) -> Counter[tuple[int, int]]:
    """(quarter, year) pairs a text names: "fourth quarter 2022", "4Q 2023", "Q2 FY24"."""
    found = Counter((_ORDINAL[q.lower()], int(y)) for q, y in _QUARTER_YEAR.findall(text))
    for a, b, year in _SHORT_QUARTER.findall(text):
        found[(int(a or b), int(year) if len(year) == 4 else 2000 + int(year))] += 1
    return found
