"""What a table's figures count, said for a cell exactly where the table states it.

A unit is stated in a parenthesis that names a scale or a measure ("(in millions)", "(Dollars in
thousands)", "($M)", "(%)", "(in percent)"), on a line or in a cell that is nothing but a scale
("In millions, except per share data"), or in a Chinese table's "单位：万元". A table's unit
(its caption, the lead-in before it, the stub header over the labels, a header row that only
states a unit) is said for its cells; a column whose header states its own unit says that one;
a row that names its own measure (a percentage, a ratio, a per-share figure, or a parenthesis of
its own) or a value that carries one ("38.5%") takes none of the table's, nor does a row the
table's unit excepts ("except per share data" leaves "Diluted earnings per share" unscaled).
"""

from __future__ import annotations

import re

__all__ = ["is_unit_statement", "names_own_measure", "stated_unit", "unit_for_row"]

_SCALE = r"(?:millions?|thousands?|billions?|mn|bn)"
_PAREN_UNIT = re.compile(
    rf"\(([^()]*\b(?:{_SCALE}|percent(?:age)?s?)\b[^()]*"
    r"|\s*(?:in\s+)?(?:U\.?S\.?\s?)?[$€£¥]\s?(?:[MBK]|mm|000'?s?)\s*"
    r"|\s*(?:in\s+)?'?000'?s?\s*"
    r"|\s*%\s*)\)",
    re.I,
)
_BARE_UNIT = re.compile(
    rf"^\s*((?:(?:U\.?S\.?\s)?[$€£]|(?:U\.?S\.?\s)?dollars|amounts|figures)?\s*in\s+{_SCALE}\b[^|]*?)"
    r"\s*$",
    re.I,
)
_CJK_UNIT = re.compile(r"单位\s*[:：]\s*((?:人民币)?[^\s,，。;；)）|]{1,6})")
_OWN_MEASURE = re.compile(r"%|\b(?:percent(?:age)?s?|per\s+share|ratios?|basis\s+points)\b", re.I)
_EXCEPT = re.compile(r"\bexcept(?:\s+for)?\s+([^;]+)", re.I)  # "…; Unaudited" ends it
_EXCEPT_PHRASES = re.compile(r",|\band\b|\bor\b", re.I)
_FILLER = frozenset(
    {"data", "amounts", "amount", "information", "figures", "the", "as", "where", "number", "of"}
)
_NOT_A_ROW = re.compile(r"\b(?:noted|indicated|otherwise|stated)\b", re.I)
_WORD = re.compile(r"[a-z]+")


def stated_unit(text: str) -> str:
    """The first unit `text` states: a parenthesis naming one ("$ in millions"), else a line
    that is only a scale ("In millions, except per share data"), else a Chinese table's
    "单位：万元" ("万元"); "" when it states none."""
    found = _PAREN_UNIT.search(text)
    if found:
        return found.group(1).strip()
    for line in text.splitlines():
        bare = _BARE_UNIT.match(line)
        if bare:
            return bare.group(1).strip()
    cjk = _CJK_UNIT.search(text)
    return cjk.group(1).strip() if cjk else ""


def is_unit_statement(text: str) -> bool:
    """Whether a header cell or line says nothing but a unit ("(in thousands)", "In millions")."""
    if _BARE_UNIT.match(text) or (_CJK_UNIT.search(text) and len(text) < 20):
        return True
    rest = _PAREN_UNIT.sub("", text)
    return rest != text and not re.search(r"\w", rest)


def names_own_measure(text: str) -> bool:
    """Whether a row label or column header says what its figures are ("Gross margin (%)",
    "Earnings per share", "Current ratio"), so that no unit of the table's is theirs."""
    return bool(_OWN_MEASURE.search(text) or _PAREN_UNIT.search(text))


def unit_for_row(label: str, value: str, unit: str) -> str:
    """`unit` as said for a cell of the row `label`: "" where the value or the row names its own
    measure, or where the unit excepts the row."""
    if not unit or "%" in value or names_own_measure(label):
        return ""
    return "" if _excepts(unit, label) else unit


def _excepts(unit: str, label: str) -> bool:
    """Whether "…, except per share data" (or any "except …" in the unit) names this row."""
    found = _EXCEPT.search(unit)
    if not found or _NOT_A_ROW.search(found.group(1)):
        return False
    words = set(_WORD.findall(label.lower()))
    for phrase in _EXCEPT_PHRASES.split(found.group(1).lower()):
        wanted = {_singular(w) for w in _WORD.findall(phrase) if w not in _FILLER}
        if wanted and wanted <= {_singular(w) for w in words}:
            return True
    return False


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
