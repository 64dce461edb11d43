"""A spreadsheet cell's value written as its number format shows it (dates and times), so the
source's cell text is the rendered page's text."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

__all__ = ["shown_value"]

# quoted text, an escaped character, a date/time code, or any other character (kept as written)
_TOKEN = re.compile(
    r'"[^"]*"|\\.|am/pm|a/p|yyyy|yy|mmmmm|mmmm|mmm|mm|m|dddd|ddd|dd|d|hh|h|ss|s|.',
    re.IGNORECASE,
)
_BRACKETS = re.compile(r"\[[^\]]*\]")  # locale and colour codes: [$-409], [Red]


def shown_value(value: Any, number_format: str = "General") -> str:
    """The cell as a sheet shows it: dates and times in their number format, whole floats
    without ".0", the rest as written."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.date | dt.time) and number_format.lower() != "general":
        try:
            return _formatted(value, number_format)
        except (ValueError, IndexError):  # a format this reader does not know: as written
            return str(value)
    return str(value)


def _formatted(value: dt.date | dt.time, number_format: str) -> str:
    """`value` in an Excel date/time number format (its first section)."""
    fmt = _BRACKETS.sub("", number_format.split(";")[0])
    tokens = _TOKEN.findall(fmt)
    codes = [t.lower() for t in tokens]
    twelve = any(c in ("am/pm", "a/p") for c in codes)
    when = (
        value
        if isinstance(value, dt.datetime)
        else dt.datetime.combine(value, dt.time())
        if isinstance(value, dt.date)
        else dt.datetime.combine(dt.date(1899, 12, 31), value)
    )
    out: list[str] = []
    last = ""  # the last date/time code, for "m": minutes after an hour or before seconds
    for i, (token, code) in enumerate(zip(tokens, codes, strict=True)):
        if token.startswith('"'):
            out.append(token[1:-1])
            continue
        if token.startswith("\\"):
            out.append(token[1:])
            continue
        if code in ("mm", "m"):
            ahead = next((c for c in codes[i + 1 :] if c[0] in "ymdhs"), "")
            number = when.minute if last.startswith("h") or ahead.startswith("s") else when.month
            out.append(f"{number:02d}" if code == "mm" else str(number))
        elif code[0] in "ymdhsa" and code in _WRITERS:
            out.append(_WRITERS[code](when, twelve))
        else:
            out.append(token)
            continue
        last = code
    return "".join(out)


def _hour(when: dt.datetime, twelve: bool) -> int:
    return (when.hour % 12 or 12) if twelve else when.hour


_WRITERS = {
    "yyyy": lambda w, t: f"{w.year:04d}",
    "yy": lambda w, t: f"{w.year % 100:02d}",
    "mmmmm": lambda w, t: w.strftime("%B")[0],
    "mmmm": lambda w, t: w.strftime("%B"),
    "mmm": lambda w, t: w.strftime("%b"),
    "dddd": lambda w, t: w.strftime("%A"),
    "ddd": lambda w, t: w.strftime("%a"),
    "dd": lambda w, t: f"{w.day:02d}",
    "d": lambda w, t: str(w.day),
    "hh": lambda w, t: f"{_hour(w, t):02d}",
    "h": lambda w, t: str(_hour(w, t)),
    "ss": lambda w, t: f"{w.second:02d}",
    "s": lambda w, t: str(w.second),
    "am/pm": lambda w, t: "AM" if w.hour < 12 else "PM",
    "a/p": lambda w, t: "A" if w.hour < 12 else "P",
}
