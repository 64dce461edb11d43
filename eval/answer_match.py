"""Whether an answer text says the gold answer, judged without an LLM (pure functions).

FinanceBench: the gold answer's numbers (`gold_numbers`) found in a text (`numbers_in`), each
number normalised (`1,577` = `1577.0` = `$1,577`), its scale word and unit recorded, and equal
when the same after normalisation, at another scale (`$1.577 billion` is `1,577 million`; a bare
number, as in a table, may count in ones, thousands or millions), or once rounded to the decimals
the gold is written with. MMLongBench-Doc: its short answers by `answer_format`, as its
`eval/eval_score.py` judges an extracted answer, applied to what the answer text contains
(`format_in`): `Int` an integer of the text equal to the gold; `Float` a number within 1%
relative (or equal at the precision of the two, the gold also read as a share or a percentage);
`Str` the cleaned gold's words inside the text, or a window of as many words with ANLS above 0.5
(the gold's own exact-match kinds, such as URLs, dates and phone numbers, by containment only);
`List` every element so. `None` ("Not answerable") is judged by the caller: `not_found`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from math import isclose

__all__ = [
    "FORMATS",
    "Quantity",
    "anls",
    "clean_string",
    "float_in",
    "format_in",
    "gold_numbers",
    "int_in",
    "list_in",
    "numbers_in",
    "quantities",
    "same_number",
    "str_in",
]

FORMATS = ("Str", "Int", "Float", "List", "None")
ANLS_THRESHOLD = 0.5
"""MMLongBench-Doc's: a string whose ANLS is at most this scores 0."""
FLOAT_REL_TOL = 0.01
"""MMLongBench-Doc's `isclose(..., rel_tol=0.01)` for Float answers."""

_NUMBER = re.compile(
    r"(?P<cur>(?:US)?\$\s*|USD\s*|€\s*|£\s*)?"
    r"(?<![\w.])(?P<whole>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?![\d.,]\d)"
    r"(?:\s*(?P<pct>%|percent\b|per\s+cent\b))?"
    r"(?:\s*(?P<word>thousand|million|billion|trillion|mn|bn)\b|(?P<short>[kmb])(?![\w]))?",
    re.IGNORECASE,
)
_MARKER = re.compile(r"\[\d+\]")
"""An answer's citation marker ("[2]"), not a number of the answer."""
_SCALES = {"thousand": 3, "k": 3, "million": 6, "mn": 6, "m": 6}
_SCALES.update({"billion": 9, "bn": 9, "b": 9, "trillion": 12})
_BARE_UNITS = (0, 3, 6)
"""What a number without a scale word may count in: ones, thousands or millions (tables)."""
_SMALL_NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve thirteen"
_SMALL_NUMBERS += " fourteen fifteen sixteen seventeen eighteen nineteen twenty"
_NUMBER_WORDS = {w: i for i, w in enumerate(_SMALL_NUMBERS.split())}


@dataclass(frozen=True)
class Quantity:
    """A number as written: its value without sign, currency, % or thousands commas; its
    decimals as written (`1577.00`: 2); the power of ten of its scale word (`2.5bn`: 9); and its
    unit, `%`, `$` or none."""

    value: Decimal
    places: int = 0
    scale: int = 0
    unit: str = ""


def quantities(text: str) -> list[Quantity]:
    """The numbers of `text` ("$1,577.00", "(0.02)", "24.6%", "$2,018mn", "1.8 bn", "3 percent"),
    citation markers ("[2]") left out."""
    found = []
    for m in _NUMBER.finditer(_MARKER.sub(" ", text)):
        fraction = m.group("frac") or ""
        scale_word = (m.group("word") or m.group("short") or "").lower()
        unit = "%" if m.group("pct") else "$" if m.group("cur") else ""
        found.append(
            Quantity(
                Decimal(m.group("whole").replace(",", "") + fraction),
                max(len(fraction) - 1, 0),
                _SCALES.get(scale_word, 0),
                unit,
            )
        )
    return found


def _weak(q: Quantity) -> bool:
    """A year (1990-2030) or a bare single digit: too common in any text to be the answer."""
    bare = q.places == 0 and q.scale == 0 and not q.unit
    return bare and (q.value < 10 or 1990 <= q.value <= 2030)


def gold_numbers(answer: str) -> list[Quantity]:
    """The numbers of a gold answer that can stand for it (no years, no bare single digits)."""
    return [q for q in quantities(answer) if not _weak(q)]


def stated_numbers(gold: str, evidence: str | None) -> list[Quantity]:
    """The gold answer's numbers that its evidence states (FinanceBench's "where the evidence
    states it")."""
    return [g for g in gold_numbers(gold) if numbers_in([g], evidence)]


def _significant(q: Quantity) -> int:
    return len(q.value.normalize().as_tuple().digits)


def _scale_pairs(gold: Quantity, found: Quantity) -> list[tuple[int, int]]:
    """(found's scale, gold's scale) pairs to compare in: a number with a scale word against a
    bare one may be a table's figure in ones, thousands or millions; percentages do not scale."""
    if "%" in (gold.unit, found.unit):
        return [(0, 0)]
    if gold.scale and not found.scale:
        return [(unit, gold.scale) for unit in _BARE_UNITS]
    if found.scale and not gold.scale:
        return [(found.scale, unit) for unit in _BARE_UNITS]
    return [(found.scale, gold.scale)]


def same_number(gold: Quantity, found: Quantity) -> bool:
    """Whether `found` states `gold`: units agree where both have one, and the values are equal
    in a common scale, or `found` rounded (half up) to `gold`'s written decimals is `gold` (a
    gold of two or more significant digits: "2%" is not stated by "1.6%")."""
    if gold.unit and found.unit and gold.unit != found.unit:
        return False
    step = Decimal(1).scaleb(-gold.places)
    for found_scale, gold_scale in _scale_pairs(gold, found):
        value = found.value.scaleb(found_scale - gold_scale)
        if value == gold.value:
            return True
        if _significant(gold) >= 2 and value.quantize(step, ROUND_HALF_UP) == gold.value:
            return True
    return False


def numbers_in(golds: Sequence[Quantity], text: str | None, *, every: bool = False) -> bool:
    """Whether `text` states any of `golds` (with `every`, all of them); False for no text."""
    if not golds or not text:
        return False
    found = quantities(text)
    hits = [any(same_number(g, f) for f in found) for g in golds]
    return all(hits) if every else any(hits)


# MMLongBench-Doc's short answers


def clean_string(s: str) -> str:
    """MMLongBench-Doc's `get_clean_string`: lower case, no parenthesised part, no surrounding
    quotes, no leading `$` or trailing `%`."""
    s = str(s).lower().strip()
    s = re.sub(r"\s*\([^)]*\)", "", s).strip()
    s = re.sub(r"^['\"]|['\"]$", "", s).strip()
    return s.lstrip("$").strip().rstrip("%").strip()


def _is_exact_kind(s: str) -> bool:
    """MMLongBench-Doc's `is_exact_match`: strings compared exactly, not by ANLS (URLs, code
    files, page references, phone numbers, times, dates, e-mail addresses)."""
    return (
        "https://" in s
        or s.endswith((".py", "ipynb"))
        or s.startswith("page")
        or bool(re.fullmatch(r"\b\d+(-\d+|\s\d+)?\b", s))
        or "a.m." in s
        or "p.m." in s
        or bool(re.fullmatch(r"\b\d{4}[-\s]\d{2}([-\s]\d{2})?\b", s))
        or bool(re.fullmatch(r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}", s))
    )


def _levenshtein(a: str, b: str) -> int:
    if len(a) > len(b):
        a, b = b, a
    row = list(range(len(a) + 1))
    for i, cb in enumerate(b, start=1):
        prev, row[0] = row[0], i
        for j, ca in enumerate(a, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def anls(gold: str, pred: str) -> float:
    """MMLongBench-Doc's `anls_compute`: 1 - edit distance / longer length, 0 at or below 0.5."""
    length = max(len(gold), len(pred))
    value = 1.0 - (_levenshtein(gold, pred) / length if length else 0.0)
    return value if value > ANLS_THRESHOLD else 0.0


def _words(s: str) -> list[str]:
    return re.findall(r"[^\W_]+(?:[.'’-][^\W_]+)*", s.lower())


def str_in(gold: str, text: str | None) -> bool:
    """Whether `text` says the Str answer `gold`: its cleaned words in a row in the text, or (a
    gold of two or more words, not of an exact kind) a window of as many words of the text with
    ANLS above 0.5. A one-word gold is not matched by ANLS: a near miss of a short word is
    found in almost any text."""
    if not text:
        return False
    g = clean_string(gold)
    if not g:
        return False
    if _is_exact_kind(g):
        return g in text.lower()
    want, have = _words(g), _words(text)
    if not want:
        return g in text.lower()
    n = len(want)
    windows = [have[i : i + n] for i in range(len(have) - n + 1)]
    if any(w == want for w in windows):
        return True
    if n < 2:
        return False
    joined = " ".join(want)
    return any(_near(joined, " ".join(w)) for w in windows)


def _near(gold: str, pred: str) -> bool:
    """ANLS above 0.5, skipping the edit distance where the lengths alone rule it out."""
    if abs(len(gold) - len(pred)) >= ANLS_THRESHOLD * max(len(gold), len(pred)):
        return False
    return anls(gold, pred) > 0


def _as_float(s: str) -> float | None:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def _decimals(x: float) -> int:
    """MMLongBench-Doc's `get_precision`: the digits after the point of `str(x)`, else 3."""
    return len(str(x).split(".")[-1]) if "." in str(x) else 3


def _float_equal(gold: float, pred: float) -> bool:
    """MMLongBench-Doc's `is_float_equal` with percentages and `is_close`: `gold`, `gold` / 100
    or `gold` * 100 within 1% relative of `pred`, or equal at the two's precision (2 at least)."""
    for item in (gold / 100, gold, gold * 100):
        if isclose(item, pred, rel_tol=FLOAT_REL_TOL):
            return True
        places = max(min(_decimals(pred), _decimals(item)), 2)
        if round(pred, places) == round(item, places):
            return True
    return False


def _text_numbers(text: str) -> list[float]:
    found = [float(q.value) for q in quantities(text)]
    found += [float(_NUMBER_WORDS[w]) for w in _words(text) if w in _NUMBER_WORDS]
    return found


def int_in(gold: str, text: str | None) -> bool:
    """Whether `text` holds the Int answer `gold` as a whole number (digits or "one".."twenty")."""
    value = _as_float(clean_string(gold))
    if value is None or not text:
        return False
    return any(f == int(value) for f in _text_numbers(text))


def float_in(gold: str, text: str | None) -> bool:
    """Whether `text` holds a number equal to the Float answer `gold` (`_float_equal`)."""
    value = _as_float(clean_string(gold))
    if value is None or not text:
        return False
    return any(_float_equal(value, f) for f in _text_numbers(text))


def _elements(gold: str) -> list[str]:
    """A List answer's elements ("['a', 'b']", "[16, 19]"); the whole when it is no list."""
    if gold.strip().startswith("["):
        try:
            parsed = ast.literal_eval(gold.strip())
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, (list, tuple)):
            return [str(e) for e in parsed]
    return [gold]


def list_in(gold: str, text: str | None) -> bool:
    """Whether `text` holds every element of the List answer `gold`, numbers as Float, the rest
    as Str."""
    items = _elements(gold)
    return bool(items) and all(
        float_in(e, text) if _as_float(clean_string(e)) is not None else str_in(e, text)
        for e in items
    )


def format_in(gold: str, answer_format: str, text: str | None) -> bool:
    """Whether `text` says `gold` by MMLongBench-Doc's rule for `answer_format`; "None" (not
    answerable) is never said by a text: the caller judges it by `not_found`. An Int or Float
    gold with words ("$1.5 million") is judged by its numbers, as FinanceBench's."""
    if answer_format in ("Int", "Float") and _as_float(clean_string(gold)) is None:
        return numbers_in(quantities(gold), text)  # "$1.5 million": as FinanceBench's numbers
    if answer_format == "Int":
        return int_in(gold, text)
    if answer_format == "Float":
        return float_in(gold, text)
    if answer_format == "List":
        return list_in(gold, text)
    if answer_format == "Str":
        return str_in(gold, text)
    return False
