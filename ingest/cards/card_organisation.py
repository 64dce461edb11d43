"""How a card reads a document's organisation (`ingest.cards.cards`): the registrant's name on a
filing's cover, else names ending in Inc., Corporation, Ltd, plc, University, Center... weighed by
font size and how often the first pages and running headers write them, else the PDF's author."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable

from ingest.cards.card_reading import _TOKEN, CardReading, _bare, _size
from retrieval.text_terms import STOPWORDS

__all__ = ["OrganisationReading"]

_SUFFIXES = """Inc Incorporated Corporation Corp Company Co Ltd Limited LLC L.P LP N.V S.A SA AG SE
Group Holdings Bank University Institute Center Centre Foundation Association Agency Council
Organization Organisation Ministry Department International"""
_SUFFIX = (
    "(?:plc|"
    + "|".join(re.escape(form) for word in _SUFFIXES.split() for form in {word, word.upper()})
    + ")"
)
_CAPITAL = r"(?:[A-Z][\w&'’.-]*|\d+(?!st|nd|rd|th)[A-Za-z][\w&'’.-]*)"  # Word, or 3M
_SECOND_SUFFIX = r"(?:Ltd|LTD|Limited|LIMITED|Inc|INC|LLC|Corp|CORP|plc|PLC)"  # "Co., Ltd."
_ORG = re.compile(
    rf"\b({_CAPITAL}\s+(?:(?:{_CAPITAL}|of|and|for|the|&)[ \t]+){{0,5}}{_SUFFIX}"
    rf"(?:\.?,?[ \t]+{_SECOND_SUFFIX}\b)?)\b\.?"
)
_LEAD = re.compile(r"^(?:(?:copyright|citation|©|\(c\)|\d+\.?)\s+)+", re.I)
_ORG_STOP = re.compile(
    r"securities and exchange commission|edgar|donnelley|workiva|microsoft word|adobe acrobat|"
    r"^the company$|\bof the (?:company|corporation|group)$|^documents incorporated|"
    r"emerging growth|smaller reporting|accelerated filer|"
    r"shell company|"
    r"^(?:our|this|each|such|other|any|all|registrant|parent|if|in|as|at|by|on|for|to|when|"
    r"while|with|from|a|an|its|their|and|or|of) ",
    re.I,
)
_NOT_A_NAME = re.compile(
    r"commission|file\s+number|transition|pursuant|registrant|\d{3}|^\(|^(?:Delaware|Nevada|"
    r"New York|Jersey|Ireland|Washington|Minnesota|California|Maryland|Pennsylvania)$",
    re.I,
)
# a word closing a sentence ("Edinburgh, Scotland, UK. Association for ...") ends any name before it
_SENTENCE_END = re.compile(r"\b(?!(?:St|Mt|Dr|Jr|Sr|No|Co|Corp|Inc|Ltd|Bros)\.)[A-Za-z]{2,}\.\s")
_REGISTRANT = re.compile(r"exact\s+name\s+of\s+registrant", re.I)


def _registrant_name(text: str) -> str:
    """The last line of a block above "(Exact name of registrant ...)", when it can be a name."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    if _NOT_A_NAME.search(line) or len(text.split()) > 10 or not re.search("[A-Za-z]{3}", line):
        return ""
    return line


_TITLE_CASED = frozenset({"THE", "AND", "OF", "FOR", "INC", "CO", "LTD", "PLC", "LLC"})


def _clean_org(name: str) -> str:
    name = _LEAD.sub("", re.sub(r"^Form\s+\S+\s+for\s+", "", name.strip()))
    name = re.sub(r"\b([A-Z]) ([A-Z]{2,})\b", r"\1\2", re.sub(r"\s+", " ", name)).strip(" ,.;:")
    if name.isupper():
        name = " ".join(
            w if len(w) <= 3 and w.strip(".,").upper() not in _TITLE_CASED else w.title()
            for w in name.split()
        )
        name = re.sub(r"\bAnd\b", "and", name)
    return name


class _Votes:
    """The names voted for as the organisation's, by key (the name case-folded, less "the ")."""

    def __init__(self, common: Callable[[str], bool]) -> None:
        self.common = common  # whether the text writes a word in lower case
        self.scores: dict[str, float] = {}
        self.names: dict[str, str] = {}
        self.written: set[str] = set()  # names seen in mixed case, not only in capitals
        self.seen: Counter[str] = Counter()  # times each name is written
        self.texty: set[str] = set()  # names read from a text layer, a header or the metadata

    def vote(
        self,
        name: str,
        weight: float,
        *,
        registrant: bool = False,
        ocr: bool = False,
        times: int = 1,
    ) -> None:
        capitals = name.isupper()
        name = _clean_org(name)
        if len(name) < 2 or len(name) > 80 or _ORG_STOP.search(name):
            return
        if _SENTENCE_END.search(name + " "):
            return
        stem = [w for w in name.split()[:-1] if w.lower() not in ("the", "of", "and", "&")]
        if sum(c.isalnum() for c in "".join(stem)) < 2:
            return
        lead = _bare(
            name.split()[1] if name.lower().startswith("the ") and " " in name else name.split()[0]
        )
        if not registrant and (lead in STOPWORDS or self.common(lead)):
            return
        key = name.casefold().removeprefix("the ")
        if not capitals and key not in self.written:  # as the text spells it, not as in capitals
            self.names[key] = name
            self.written.add(key)
        self.names.setdefault(key, name)
        self.scores[key] = self.scores.get(key, 0.0) + weight
        self.seen[key] += times
        if not ocr:
            self.texty.add(key)

    def winner(self, title: str | None) -> str | None:
        """The key with the most votes, of those a text layer read, read twice or in the title."""
        titled = (title or "").casefold()
        scores, texty, seen = self.scores, self.texty, self.seen
        for key in [k for k in scores if k not in texty and seen[k] < 2 and k not in titled]:
            del scores[key]  # read once by OCR, nowhere else: noise as likely as a name
        if not scores:
            return None
        key, _ = max(scores.items(), key=lambda kv: (kv[1], -len(kv[0])))
        return key


class OrganisationReading(CardReading):
    """The first pages read for the organisation's name."""

    def _organisation(self, title: str | None) -> str | None:
        """The organisation's name; one read only by OCR needs what a text-layer name gets by
        being there: to be written twice, or in the title."""
        votes = _Votes(self._common)
        self._vote_registrant(votes)
        self._vote_names(votes)
        key = votes.winner(title)
        if key is None:
            return None
        names = votes.names
        return names[key] if key in votes.written else self._as_written(names[key])

    def _vote_registrant(self, votes: _Votes) -> None:
        """The name above "(Exact name of registrant ...)" on the first page, if any."""
        first = self.pages[0].number
        for i, (n, block) in enumerate(self.body):
            if n == first and _REGISTRANT.search(block.text):
                before = [b for m, b in self.body[max(0, i - 3) : i] if m == first]
                named = [b for b in before if _registrant_name(b.text)]
                if named:
                    chosen = max(reversed(named), key=_size)
                    votes.vote(
                        _registrant_name(chosen.text),
                        50.0,
                        registrant=True,
                        ocr=id(chosen) in self.ocr,
                    )

    def _vote_names(self, votes: _Votes) -> None:
        """Names ending in a suffix: on the first page by their type's size, on the others by how
        often they are written, and in the running headers and the PDF's author and title."""
        first = self.pages[0].number
        sizes = [_size(b) for _, b in self.body] or [1.0]
        body_size = statistics.median(sizes)
        inside: Counter[tuple[str, bool]] = Counter()
        for n, block in self.body:
            ocr = id(block) in self.ocr
            for match in _ORG.finditer(block.text):
                if n == first:
                    votes.vote(
                        match.group(1), 5.0 * max(1.0, _size(block) / body_size) ** 2, ocr=ocr
                    )
                else:
                    inside[match.group(1), ocr] += 1
        for (name, ocr), count in inside.items():
            votes.vote(name, 0.5 * min(count, 20), ocr=ocr, times=count)
        for header in self.headers:
            for match in _ORG.finditer(header):
                votes.vote(match.group(1), 1.0)
        for match in _ORG.finditer(self.metadata.get("author", "")):
            votes.vote(match.group(1), 3.0)
        for match in _ORG.finditer(self.metadata.get("title", "")):
            votes.vote(match.group(1), 3.0)

    def _as_written(self, name: str) -> str:
        """A name read in capitals as the text spells it in mixed case, when it does ("BEST BUY
        CO., INC." is "Best Buy Co., Inc"), the name guessed from its capitals when it does not."""
        words = _TOKEN.findall(name)
        if not words:
            return name
        spelling = re.compile(r"\b" + r"\W{1,3}".join(map(re.escape, words)) + r"\b", re.I)
        spelt = Counter(
            re.sub(r"\s+", " ", found.group(0))
            for _, block in self.body
            for found in spelling.finditer(block.text)
            if not found.group(0).isupper()
        )
        return spelt.most_common(1)[0][0] if spelt else name
