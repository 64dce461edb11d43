"""Documents a question names: "3M's FY2018 capex", "Best Buy's gross margin", "MGM in FY2022".

A file's name is how people refer to it (`3M_2018_10K.pdf`, `BESTBUY_2023_10K.pdf`), so a question
that writes one of its name words as a name — capitalised, in capitals, or mixing letters and
digits, alone or run together ("Best Buy" for `BESTBUY`, "MGM" for `MGMRESORTS`) — is about that
file. Lower-case words never name a file ("user", "report"), nor do stopwords or words under three
letters. Of the files named, the best by the inverse frequency of their matched words among all
file names (years in both break ties) are the ones meant. Measured in docs/benchmarks.md.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import NamedTuple

from retrieval.text_terms import STOPWORDS

__all__ = ["NameMatch", "NamedDocuments", "name_words"]

_SPLIT = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[A-Za-z0-9]+(?:[&'’][A-Za-z0-9]+)*")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
_MAX_RUN = 3  # "Coca Cola Company": words run together to meet `COCACOLA`


def _mixed(word: str) -> bool:
    return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)


def name_words(source: str) -> frozenset[str]:
    """The words of a file name that can name it."""
    stem = PurePath(source).stem.lower()
    return frozenset(
        w
        for w in _SPLIT.split(stem)
        if w and not w.isdigit() and w not in STOPWORDS and (len(w) >= 3 or _mixed(w))
    )


def _norm(word: str) -> str:
    word = word.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") else word.replace("'", "").replace("&", "")


def _written_as_name(index: int, word: str) -> bool:
    return (index > 0 and word[0].isupper()) or word.isupper() or _mixed(word)


Span = tuple[int, int]


def _question_names(question: str) -> tuple[dict[str, Span], dict[str, Span]]:
    """(words and runs of words written as names, acronyms that may start a name word), each
    with the span of the question it covers."""
    found = list(_WORD.finditer(question))
    flags = [_written_as_name(i, m.group()) for i, m in enumerate(found)]
    names: dict[str, Span] = {}
    acronyms: dict[str, Span] = {}
    for i, match in enumerate(found):
        if not flags[i]:
            continue
        word, bare = match.group(), _norm(match.group())
        names.setdefault(bare, match.span())
        if word[: len(bare)].isupper() and len(bare) >= 3 and bare.isalpha():
            acronyms.setdefault(bare, match.span())
        run = bare
        for j in range(i + 1, min(len(found), i + _MAX_RUN)):
            if not flags[j]:
                break
            run += _norm(found[j].group())
            names.setdefault(run, (match.start(), found[j].end()))
    return names, acronyms


class NameMatch(NamedTuple):
    doc_ids: list[str]
    rest: str
    """The question without the names it matched (they no longer tell the named files' pages
    apart), for the lexical search inside those files."""


class _NameIndex(NamedTuple):
    words: dict[str, tuple[frozenset[str], frozenset[str]]]  # doc_id -> (name words, years)
    df: Counter[str]  # name word -> how many file names hold it

    @classmethod
    def of(cls, sources: Mapping[str, str]) -> _NameIndex:
        words = {
            d: (name_words(s), frozenset(_YEAR.findall(PurePath(s).stem)))
            for d, s in sources.items()
        }
        return cls(words, Counter(w for names, _ in words.values() for w in names))


class NamedDocuments:
    """Which indexed documents a question names, from `sources()`: doc_id -> file name."""

    def __init__(self, sources: Callable[[], Mapping[str, str]]) -> None:
        self._sources = sources
        self._lock = threading.Lock()
        self._seen: Mapping[str, str] = {}
        self._index = _NameIndex({}, Counter())

    def _current(self) -> _NameIndex:
        """The name index of the documents indexed now, rebuilt only when they changed."""
        current = self._sources()
        with self._lock:
            if current != self._seen:
                self._seen = dict(current)
                self._index = _NameIndex.of(current)
            return self._index

    def match(self, question: str) -> NameMatch:
        """The doc_ids the question names, best first (empty when it names none)."""
        index = self._current()
        names, acronyms = _question_names(question)
        years = set(_YEAR.findall(question))
        n = len(index.words)
        scores: dict[str, float] = {}
        spans: dict[str, list[Span]] = {}
        for doc_id, (words, doc_years) in index.words.items():
            hit = {w: names[w] for w in words if w in names}
            hit |= {w: span for w in words for a, span in acronyms.items() if w.startswith(a)}
            if hit:
                idf = sum(math.log(1 + n / index.df[w]) for w in hit)
                scores[doc_id] = idf + 0.5 * len(doc_years & years)
                spans[doc_id] = list(hit.values())
        if not scores:
            return NameMatch([], question)
        best = max(scores.values())
        chosen = sorted(d for d, s in scores.items() if s == best)
        return NameMatch(chosen, _without(question, [sp for d in chosen for sp in spans[d]]))


def _without(text: str, spans: list[Span]) -> str:
    kept, at = [], 0
    for start, end in sorted(spans):
        if start >= at:
            kept.append(text[at:start])
            at = end
        else:
            at = max(at, end)
    kept.append(text[at:])
    return " ".join("".join(kept).split())
