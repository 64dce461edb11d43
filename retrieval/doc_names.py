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

from retrieval.text_terms import STOPWORDS

__all__ = ["NamedDocuments", "name_words"]

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


def _question_names(question: str) -> tuple[set[str], set[str]]:
    """(words and runs of words written as names, acronyms that may start a name word)."""
    words = [m.group() for m in _WORD.finditer(question)]
    flags = [_written_as_name(i, w) for i, w in enumerate(words)]
    names: set[str] = set()
    acronyms: set[str] = set()
    for i, word in enumerate(words):
        if not flags[i]:
            continue
        names.add(_norm(word))
        bare = _norm(word)
        if word[: len(bare)].isupper() and len(bare) >= 3 and bare.isalpha():
            acronyms.add(bare)
        run = _norm(word)
        for j in range(i + 1, min(len(words), i + _MAX_RUN)):
            if not flags[j]:
                break
            run += _norm(words[j])
            names.add(run)
    return names, acronyms


class NamedDocuments:
    """Which indexed documents a question names, from `sources()`: doc_id -> file name."""

    def __init__(self, sources: Callable[[], Mapping[str, str]]) -> None:
        self._sources = sources
        self._lock = threading.Lock()
        self._words: dict[str, tuple[str, frozenset[str], frozenset[str]]] = {}
        self._df: Counter[str] = Counter()

    def _refresh(self) -> None:
        current = self._sources()
        with self._lock:
            if len(current) == len(self._words) and all(
                self._words.get(d, ("",))[0] == s for d, s in current.items()
            ):
                return
            self._words = {
                d: (s, name_words(s), frozenset(_YEAR.findall(PurePath(s).stem)))
                for d, s in current.items()
            }
            self._df = Counter(w for _, words, _ in self._words.values() for w in words)

    def match(self, question: str) -> list[str]:
        """The doc_ids the question names, best first; empty when it names none."""
        self._refresh()
        names, acronyms = _question_names(question)
        if not names:
            return []
        years = set(_YEAR.findall(question))
        n = len(self._words)
        scores: dict[str, float] = {}
        for doc_id, (_, words, doc_years) in self._words.items():
            hit = [w for w in words if w in names or any(w.startswith(a) for a in acronyms)]
            if hit:
                idf = sum(math.log(1 + n / self._df[w]) for w in hit)
                scores[doc_id] = idf + 0.5 * len(doc_years & years)
        if not scores:
            return []
        best = max(scores.values())
        return sorted(d for d, s in scores.items() if s == best)
