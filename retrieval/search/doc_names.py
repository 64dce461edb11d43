"""Documents a question names: "3M's FY2018 capex", "Best Buy's gross margin", "MGM in FY2022".

A document is named by what it is — its card's aliases (`retrieval/doc_card.py`: its
organisation's words, alone, run together and as initials, and its title's, less the words its
own text writes in lower case; an organisation written as a web domain, "Amazon.com, Inc.",
also by the label before it) — and by its file name's words (`3M_2018_10K.pdf`), one signal
among these. A question that writes one of them as a name — capitalised, in capitals, or mixing
letters and digits, alone or run together ("Best Buy" for `bestbuy`, "MGM" for `mgmresorts`) — is
about that document. Lower-case words never name one ("user", "report"), nor do stopwords, words
under three letters, words that say what kind of file it is ("Report", "Safety Data Sheet":
`GENERIC_WORDS`), or words more than half of the documents share. Of the documents named, the
best by the inverse frequency of their matched words (years of their names and cards break ties)
are the ones meant. Measured in docs/benchmarks.md.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from pathlib import PurePath
from typing import NamedTuple

from retrieval.doc_card import GENERIC_WORDS, DocumentCard
from retrieval.text_terms import STOPWORDS

__all__ = ["NameMatch", "Named", "NamedDocuments", "name_words", "possessors"]

_SPLIT = re.compile(r"[^a-z0-9]+")
_WORD = re.compile(r"[A-Za-z0-9]+(?:[&'’][A-Za-z0-9]+)*")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
_VERSION = re.compile(r"v\d+|rev\d+|draft\d*")  # `report final v2.pdf`: which copy, not which file
_ORDINALS = ["first", "second", "third", "fourth"]
_FISCAL_YEAR = r"(?:fiscal\s+(?:year\s+)?|FY\s?)?"  # "fiscal year 2024", "fiscal 2024", "FY2024"
_QUARTER = re.compile(
    rf"\bQ(?P<q>[1-4])\s?(?:of\s+)?{_FISCAL_YEAR}(?P<y>(?:19|20)\d\d)(?!\d)"
    r"|(?<!\d)(?P<y2>(?:19|20)\d\d)\s?Q(?P<q2>[1-4])\b"
    r"|\b(?P<word>first|second|third|fourth)\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?"
    rf"{_FISCAL_YEAR}(?P<y3>(?:19|20)\d\d)(?!\d)",
    re.I,
)
_FORMS = {r"\b10-?K\b|\bannual report": "annual", r"\b10-?Q\b|\bquarterly report": "quarterly"}
_POSSESSIVE = re.compile(r"['’]s$")
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


_DOMAIN = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z0-9-]*)\.[a-z]{2,}\b")


def domain_names(organisation: str) -> frozenset[str]:
    """The names an organisation written as a web domain goes by: its label before the domain
    ("Amazon.com, Inc." is called "Amazon"), unless that is a word too common to name anything."""
    found = (m.group(1).lower() for m in _DOMAIN.finditer(organisation))
    return frozenset(
        w for w in found if len(w) >= 3 and w not in STOPWORDS and w not in GENERIC_WORDS
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
    """The question without the names it matched: the words the answer gives no support, since
    every page of the named files carries them."""
    said: tuple[str, ...] = ()
    """The question's words that named them, as it writes them ("3M", "Best Buy")."""


class Named(NamedTuple):
    """An indexed document as questions may name it: its file name and its card, if any."""

    source: str
    card: DocumentCard | None = None


def _periods(text: str) -> set[str]:
    """The years a text names ("FY2022"), its quarters as "2023q2" ("Q2 of FY2023", "Q22023",
    "second quarter of 2023", `2023Q2`) and the SEC forms it names as kinds ("10-K": "annual")."""
    found = set(_YEAR.findall(text))
    for match in _QUARTER.finditer(text):
        quarter = match["q"] or match["q2"] or str(_ORDINALS.index(match["word"].lower()) + 1)
        year = match["y"] or match["y2"] or match["y3"]
        found |= {year, f"{year}q{quarter}"}
    found |= {kind for form, kind in _FORMS.items() if re.search(form, text, re.I)}
    return found


def _names(named: str | Named) -> tuple[frozenset[str], frozenset[str]]:
    """(words that name the document, its periods: years, quarters, kinds)."""
    doc = Named(named) if isinstance(named, str) else named
    years = _periods(PurePath(doc.source).stem.replace("_", " "))
    words = {w for w in name_words(doc.source) if not _VERSION.fullmatch(w)} - GENERIC_WORDS
    if doc.card is not None:
        words = words - set(doc.card.common_words) | set(doc.card.aliases)
        words |= domain_names(doc.card.organisation or "")
        years |= doc.card.years
        if doc.card.quarter and doc.card.year:
            years.add(f"{doc.card.year}q{doc.card.quarter}")
        years |= {kind for kind in _FORMS.values() if doc.card.kind.startswith(kind)}
    return frozenset(words), frozenset(years)


class _NameIndex(NamedTuple):
    words: dict[str, tuple[frozenset[str], frozenset[str]]]  # doc_id -> (name words, years)
    df: Counter[str]  # name word -> how many documents it names

    @classmethod
    def of(cls, sources: Mapping[str, str | Named]) -> _NameIndex:
        words = {d: _names(s) for d, s in sources.items()}
        df = Counter(w for names, _ in words.values() for w in names)
        if len(words) >= 3:  # a word most documents share tells none apart
            shared = {w for w, n in df.items() if n > len(words) / 2 and n >= 3}
            words = {d: (names - shared, years) for d, (names, years) in words.items()}
        return cls(words, df)


class NamedDocuments:
    """Which indexed documents a question names, from `sources()`: doc_id -> file name, or
    file name and card (`Named`)."""

    def __init__(self, sources: Callable[[], Mapping[str, str | Named]]) -> None:
        self._sources = sources
        self._lock = threading.Lock()
        self._seen: Mapping[str, str | Named] = {}
        self._index = _NameIndex({}, Counter())

    def _current(self) -> _NameIndex:
        """The name index of the documents indexed now, rebuilt only when they changed."""
        current = self._sources()
        with self._lock:
            if current != self._seen:
                self._seen = dict(current)
                self._index = _NameIndex.of(current)
            return self._index

    def card(self, doc_id: str) -> DocumentCard | None:
        """The card of an indexed document (None without one), as of the last `match` unless
        the document is newer."""
        with self._lock:
            known = doc_id in self._seen
        if not known:
            self._current()
        with self._lock:
            named = self._seen.get(doc_id)
        return named.card if isinstance(named, Named) else None

    def unknown_subjects(self, question: str) -> tuple[str, ...]:
        """The names the question writes as owners of what it asks that name no indexed
        document ("Apple's" asked of Best Buy's filings)."""
        # matched after a word: a question's first word is capitalised whatever it is
        return tuple(n for n in possessors(question) if not self.match(f"of {n}").doc_ids)

    def match(self, question: str) -> NameMatch:
        """The doc_ids the question names, best first (empty when it names none)."""
        index = self._current()
        names, acronyms = _question_names(question)
        years = _periods(question)
        n = len(index.words)
        scores: dict[str, float] = {}
        spans: dict[str, list[Span]] = {}
        for doc_id, (words, doc_years) in index.words.items():
            hit = {w: names[w] for w in words if w in names}
            hit |= {w: span for w in words for a, span in acronyms.items() if w.startswith(a)}
            if hit:
                idf = math.fsum(math.log(1 + n / index.df[w]) for w in hit)
                scores[doc_id] = idf + 0.5 * len(doc_years & years)
                spans[doc_id] = list(hit.values())
        if not scores:
            return NameMatch([], question)
        best = max(scores.values())
        chosen = sorted(d for d, s in scores.items() if s == best)
        matched = sorted({sp for d in chosen for sp in spans[d]})
        said = tuple(dict.fromkeys(_POSSESSIVE.sub("", question[a:b]) for a, b in matched))
        return NameMatch(chosen, _without(question, matched), said)

    def named_outside(self, question: str, chosen: Collection[str]) -> tuple[str, ...]:
        """The names the question writes of indexed documents when none of the documents they
        name is `chosen` (a request's own doc_ids): it asks about other documents, so an answer
        from the chosen ones must write one of these names ("3M's capex" asked of Best Buy's
        filing); empty when it names none, or one that is chosen."""
        named = self.match(question)
        if not named.doc_ids or set(named.doc_ids) & set(chosen):
            return ()
        return named.said


_POSSESSOR = re.compile(r"((?:[A-Z][\w&.-]*\s+){0,3}[A-Z][\w&.-]*[A-Za-z0-9])['’]s\b")


def possessors(question: str) -> list[str]:
    """The names a question writes as owners of what it asks ("Apple's iPhone revenue"): runs
    of capitalised words before 's, less the words that say what kind of file a document is
    ("the Report's") and a lone word opening the question, capitalised as any first word is."""
    found = []
    for match in _POSSESSOR.finditer(question):
        words = [w for w in match.group(1).split() if w.lower() not in GENERIC_WORDS]
        while words and words[0].lower() in STOPWORDS:  # "The Company's" is no name
            words = words[1:]
        opening = match.start() == 0 and len(words) == 1 and not words[0].isupper()
        if words and len("".join(words)) >= 3 and not opening:  # "Today's", "Let's": any word
            found.append(" ".join(words))
    return found


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
