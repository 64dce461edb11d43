"""What the LLM stub says: answers written from the numbered sources in the prompt, each sentence
planted with a known label, so the citation check can be scored against the truth.

Sentence kinds (`Kind`) and the verdict a correct checker gives them:
- `faithful`: a source sentence copied, with its source's marker (supported);
- `paraphrase`: the same, lightly reworded (a lead-in, a few words swapped; supported);
- `miscite`: a source sentence with another source's marker, one that shares few of its words
  (unsupported);
- `fabricate`: a source sentence with its marker and one number changed to a number no source
  holds (unsupported);
- `out_of_range`: a source sentence marked with a number past the last source (invalid);
- `swap_number`: a source sentence with its marker and one number replaced by another number of
  the same source (wrong, so unsupported; a check that looks for the numbers in the source
  cannot see it, and the benchmark reports how often it is missed).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from enum import StrEnum

from retrieval.text_terms import sentence_spans, terms

__all__ = ["EXPECTED", "Kind", "Planted", "StubAnswer", "compose", "parse_prompt"]


class Kind(StrEnum):
    faithful = "faithful"
    paraphrase = "paraphrase"
    miscite = "miscite"
    fabricate = "fabricate"
    out_of_range = "out_of_range"
    swap_number = "swap_number"


EXPECTED = {
    Kind.faithful: "supported",
    Kind.paraphrase: "supported",
    Kind.miscite: "unsupported",
    Kind.fabricate: "unsupported",
    Kind.out_of_range: "invalid",
    Kind.swap_number: "unsupported",
}

_SOURCE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SWAPS = {
    "increased": "rose",
    "decreased": "fell",
    "company": "firm",
    "approximately": "about",
    "total": "overall",
    "revenue": "revenues",
}


@dataclass(frozen=True)
class Planted:
    kind: Kind
    marker: int
    """The number in the sentence's marker."""
    source: int
    """The source the sentence was taken from."""


@dataclass
class StubAnswer:
    text: str
    planted: list[Planted] = field(default_factory=list)


def parse_prompt(content: str) -> tuple[list[str], str]:
    """(numbered sources, question) of the user message `retrieval.answer.llm.build_messages`
    writes."""
    question = content.rsplit("Question:", 1)[-1].strip() if "Question:" in content else ""
    return [m.group(2) for m in _SOURCE.finditer(content)], question


def _sentences(source: str) -> list[str]:
    out = []
    for start, end in sentence_spans(source):
        text = source[start:end].strip()
        if len(terms(text)) >= 4 and len(text) <= 400:
            out.append(text.rstrip(".;:"))
    return out


def _best(sentences: list[str], question: str) -> str:
    wanted = set(terms(question))
    return max(sentences, key=lambda s: len(wanted & set(terms(s))))


def _paraphrase(sentence: str) -> str:
    words = [_SWAPS.get(w.lower(), w) for w in sentence.split()]
    body = " ".join(words)
    return f"According to the source, {body[0].lower()}{body[1:]}"


def _fabricate(sentence: str, sources: list[str], rng: random.Random) -> str:
    known = {t for s in sources for t in terms(s) if t[0].isdigit()}
    fake = f"{rng.randint(11, 9899)}.{rng.randint(1, 9)}"
    while fake in known:
        fake = f"{rng.randint(11, 9899)}.{rng.randint(1, 9)}"
    match = _NUMBER.search(sentence)
    if match is None:
        return f"{sentence}, a change of {fake}%"
    return sentence[: match.start()] + fake + sentence[match.end() :]


def _swap_number(sentence: str, source: str, rng: random.Random) -> str | None:
    match = _NUMBER.search(sentence)
    if match is None:
        return None
    own = terms(match.group())
    others = sorted(
        {m.group() for m in _NUMBER.finditer(source) if terms(m.group()) != own}
        - set(_NUMBER.findall(sentence))
    )
    if not others:
        return None
    return sentence[: match.start()] + rng.choice(others) + sentence[match.end() :]


def _overlap(sentence: str, source: str) -> float:
    words = set(terms(sentence))
    return len(words & set(terms(source))) / len(words) if words else 1.0


def compose(sources: list[str], question: str, kinds: list[Kind], seed: int = 0) -> StubAnswer:
    """An answer of one sentence per kind (sources taken in turn); a kind that cannot be planted
    (no other source to miscite to, or every other source shares the sentence; no other number
    to swap in) is written faithful instead."""
    rng = random.Random(seed)
    usable = [(n, s) for n, s in enumerate((_sentences(src) for src in sources), 1) if s]
    if not usable:
        return StubAnswer("The sources do not say.")
    answer = StubAnswer("")
    parts = []
    for i, kind in enumerate(kinds):
        n, options = usable[i % len(usable)]
        sentence = _best(options, question) if i < len(usable) else rng.choice(options)
        marker = n
        if kind is Kind.miscite:
            others = [m for m in range(1, len(sources) + 1) if m != n]
            scored = sorted(others, key=lambda m: _overlap(sentence, sources[m - 1]))
            if not scored or _overlap(sentence, sources[scored[0] - 1]) > 0.3:
                kind = Kind.faithful
            else:
                marker = scored[0]
        elif kind is Kind.fabricate:
            sentence = _fabricate(sentence, sources, rng)
        elif kind is Kind.swap_number:
            swapped = _swap_number(sentence, sources[n - 1], rng)
            kind, sentence = (kind, swapped) if swapped else (Kind.faithful, sentence)
        elif kind is Kind.paraphrase:
            sentence = _paraphrase(sentence)
        elif kind is Kind.out_of_range:
            marker = len(sources) + rng.randint(1, 3)
        parts.append(f"{sentence} [{marker}].")
        answer.planted.append(Planted(kind, marker, n))
    answer.text = " ".join(parts)
    return answer
