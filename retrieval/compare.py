"""Superlative questions over parallel statements: "Which region had the worst topline
performance?" is answered by the region whose statement states the lowest change, not by the
first region's statement the search found.

Parallel statements are sentences written to one pattern under sibling sections of a report
("Net revenues of $3.8 billion in the current year compared to $3.4 billion in the prior year, an
increase of 12%" under "Regional Operations", "..., a decrease of 44%" under "MGM China"), which
compare by the percentage change each states; or the cells of one table column whose row labels
are written to one pattern ("Total cash provided by operating activities", "Total cash used in
financing activities"), which compare by their values.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["asked_extreme", "cell_value", "parallel", "parallel_labels", "signed_change"]

_WHICH = re.compile(r"\bwhich\b", re.I)
_HIGHEST = re.compile(r"\b(?:best|highest|largest|biggest|greatest|strongest|most|fastest)\b", re.I)
_LOWEST = re.compile(r"\b(?:worst|lowest|smallest|weakest|least|slowest)\b", re.I)
_PERCENT = r"(\d+(?:\.\d+)?)\s*(?:%|percent\b)"
_UP_NOUN = r"increase|growth|gain|rise|improvement"
_DOWN_NOUN = r"decrease|decline|drop|fall|loss|reduction"
_UP_VERB = r"increased|grew|rose|gained|improved|(?:was|were)\s+up"
_DOWN_VERB = r"decreased|declined|fell|dropped|(?:was|were)\s+down"
_CHANGE = re.compile(
    rf"\b(?:(?P<up_noun>{_UP_NOUN})\s+of|(?P<down_noun>{_DOWN_NOUN})\s+of"
    rf"|(?P<up_verb>{_UP_VERB})(?:\s+by)?|(?P<down_verb>{_DOWN_VERB})(?:\s+by)?)"
    rf"\s+(?:approximately\s+|about\s+)?{_PERCENT}",
    re.I,
)
_WORD = re.compile(r"[^\W\d_]+")
_ASIDE = re.compile(r"\([^()]*\)")
_VALUE = re.compile(r"^(\()?\s*([-−–])?\s*[$€£¥]?\s*(\d[\d,]*(?:\.\d+)?)\s*%?\s*(\))?$")
_SAME_OPENING = 2  # words that parallel statements open with alike ("Net revenues of ...")
_SAME_WORDS = 0.6  # the share of their words (Jaccard) that parallel statements share
_SPANS = frozenset(
    [
        "year",
        "years",
        "quarter",
        "quarters",
        "month",
        "months",
        "week",
        "weeks",
        "annual",
        "annually",
        "quarterly",
        "monthly",
        "weekly",
        "fiscal",
        "ytd",
    ]
)


def asked_extreme(question: str) -> int:
    """+1 when the question asks which of several things did best or most, -1 which did worst
    or least, 0 when it asks neither or both; an aside in parentheses restates, and does not
    count ("which brought in the most (or lost the least) cash" asks for the most)."""
    question = _ASIDE.sub(" ", question)
    if not _WHICH.search(question):
        return 0
    up, down = bool(_HIGHEST.search(question)), bool(_LOWEST.search(question))
    return 0 if up == down else (1 if up else -1)


def signed_change(text: str) -> Decimal | None:
    """The first percentage change `text` states, negative for a decrease ("a decrease of 44%"
    is -44); None when it states none."""
    found = _CHANGE.search(text)
    if found is None:
        return None
    try:
        value = Decimal(found.group(found.lastindex or 0))
    except InvalidOperation:
        return None
    return -value if found.group("down_noun") or found.group("down_verb") else value


def parallel(a: str, b: str) -> bool:
    """Whether two statements are written to one pattern: the same opening words, most of
    their words alike, numbers aside, and the same words of a span of time (a quarter's
    statement is not compared with a year's)."""
    words_a = [w.lower() for w in _WORD.findall(a)]
    words_b = [w.lower() for w in _WORD.findall(b)]
    if len(words_a) < _SAME_OPENING or words_a[:_SAME_OPENING] != words_b[:_SAME_OPENING]:
        return False
    set_a, set_b = set(words_a), set(words_b)
    if set_a & _SPANS != set_b & _SPANS:
        return False
    return len(set_a & set_b) / len(set_a | set_b) >= _SAME_WORDS


def parallel_labels(a: str, b: str) -> bool:
    """Whether two row labels are written to one pattern: the same two opening words and the
    same last word ("Total cash used in investing activities")."""
    words_a = [w.lower() for w in _WORD.findall(a)]
    words_b = [w.lower() for w in _WORD.findall(b)]
    if len(words_a) <= _SAME_OPENING or len(words_b) <= _SAME_OPENING:
        return False
    return words_a[:_SAME_OPENING] == words_b[:_SAME_OPENING] and words_a[-1] == words_b[-1]


def cell_value(value: str) -> Decimal | None:
    """A table cell's number, negative in parentheses or with a minus ("(1,806)" is -1806);
    None for a cell that is no single number ("—", "12 / 14")."""
    found = _VALUE.match(value.strip())
    if found is None:
        return None
    opened, minus, digits, closed = found.groups()
    if bool(opened) != bool(closed):
        return None
    number = Decimal(digits.replace(",", ""))
    return -number if opened or minus else number
