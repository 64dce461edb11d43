"""Retrieval metrics over ranked (document stem, page) lists, the old citation word-overlap
check, and the numbers of an answer found in a text (answer in citation)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from eval.retrieval_data import Case

__all__ = [
    "Amount",
    "Ranked",
    "Scores",
    "amounts",
    "answer_in",
    "boxed_text",
    "evidence_overlap",
    "image_only_docs",
    "same_number",
    "score",
    "stated_amounts",
]

Ranked = list[tuple[str, int]]
"""The hits of one question, best first, as (PDF stem, 1-based page)."""


def share(k: int, n: int) -> str:
    """`k` of `n` as a share with its counts: "0.250 (1/4)", or "—" for none."""
    return f"{k / n:.3f} ({k}/{n})" if n else "—"


@dataclass
class Scores:
    n: int
    page_recall: dict[int, float | None]
    mrr10: float | None
    doc_recall5: float


def _page_hit(hit: tuple[str, int], case: Case) -> bool:
    return hit[0] in case.docs and hit[1] in case.pages


def score(
    ranked: Sequence[Ranked], cases: Sequence[Case], ks: Iterable[int] = (1, 5, 10)
) -> Scores:
    """Page recall@k and MRR@10 over the cases with evidence pages; document recall@5 over all."""
    paged = [(r, c) for r, c in zip(ranked, cases, strict=True) if c.pages]
    recall: dict[int, float | None] = {}
    for k in ks:
        found = sum(any(_page_hit(h, c) for h in r[:k]) for r, c in paged)
        recall[k] = found / len(paged) if paged else None
    mrr = None
    if paged:
        total = 0.0
        for r, c in paged:
            rank = next((i for i, h in enumerate(r[:10]) if _page_hit(h, c)), None)
            total += 1.0 / (rank + 1) if rank is not None else 0.0
        mrr = total / len(paged)
    docs = sum(any(h[0] in c.docs for h in r[:5]) for r, c in zip(ranked, cases, strict=True))
    return Scores(len(cases), recall, mrr, docs / len(cases) if cases else 0.0)


def boxed_text(pdf: Path, page: int, boxes: Sequence[tuple[float, float, float, float]]) -> str:
    """The words of a PDF page whose centre lies in any of `boxes` (PDF points, top-left)."""
    import pymupdf

    with pymupdf.open(pdf) as doc:
        words = doc[page - 1].get_text("words")
    inside = []
    for x0, y0, x1, y1, word, *_ in words:
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if any(b[0] - 1 <= cx <= b[2] + 1 and b[1] - 1 <= cy <= b[3] + 1 for b in boxes):
            inside.append(word)
    return " ".join(inside)


def evidence_overlap(boxed: str, evidence: str) -> bool:
    """True when at least half of the boxed terms occur in the gold evidence text. Words are
    compared with light plural stemming only (`terms`), not with the stems folio matches
    questions by, so the yardstick does not move when the matching changes."""
    from retrieval.text_terms import terms

    got = set(terms(boxed, keep_stopwords=True))
    gold = set(terms(evidence, keep_stopwords=True))
    return bool(got) and len(got & gold) >= 0.5 * len(got)


def image_only_docs(pdfs: Sequence[Path]) -> set[str]:
    """Stems of the PDFs most of whose pages have no text layer."""
    import pymupdf

    found = set()
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            empty = sum(1 for page in doc if len(page.get_text().strip()) < 20)
            if empty > doc.page_count / 2:
                found.add(pdf.stem)
    return found


_AMOUNT = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d.,]\d)"
    r"(\s*(?:%|percent))?(?:\s*(thousand|million|billion|trillion|mn|bn))?(?!\w)",
    re.IGNORECASE,
)
_SCALES = {"thousand": 3, "million": 6, "mn": 6, "billion": 9, "bn": 9, "trillion": 12}
_UNITS = (0, 3, 6)
"""What a number without a scale word may count in: ones, thousands or millions (tables)."""


@dataclass(frozen=True)
class Amount:
    """A number as written: its value without sign, $, % or thousands commas; its decimal
    places; and the power of ten of a scale word after it (`2.5bn`: 9; none: 0)."""

    value: Decimal
    places: int
    scale: int = 0
    percent: bool = False


def amounts(text: str) -> list[Amount]:
    """The numbers of `text` ("$1,577.00", "(0.02)", "24.6%", "$2,018mn", "1.8 bn")."""
    found = []
    for whole, fraction, percent, word in _AMOUNT.findall(text):
        digits = whole.replace(",", "") + fraction
        places = len(fraction) - 1 if fraction else 0
        scale = _SCALES.get(word.lower(), 0) if word else 0
        found.append(Amount(Decimal(digits), places, scale, bool(percent)))
    return found


def _significant(a: Amount) -> int:
    return len(a.value.normalize().as_tuple().digits)


def same_number(gold: Amount, found: Amount) -> bool:
    """Whether `found` states `gold`: equal, or equal once rounded to the decimals `gold` is
    written with (`gold` of two or more significant digits); trailing zeros do not count
    ("$8.70" is 8.7). When one side has a scale word and the other none, the bare number may
    count in ones, thousands or millions ("$1.6 billion" is stated by "1,577" in a table in
    millions); otherwise both are compared in their own scales."""
    places = len(str(gold.value.normalize()).partition(".")[2])
    if gold.scale and not found.scale:
        pairs = [(unit, gold.scale) for unit in _UNITS]
    elif found.scale and not gold.scale:
        pairs = [(found.scale, unit) for unit in _UNITS]
    else:
        pairs = [(found.scale, gold.scale)]
    for found_scale, gold_scale in pairs:
        value = found.value.scaleb(found_scale - gold_scale)
        if value == gold.value:
            return True
        if _significant(gold) >= 2 and round(value, places) == gold.value.normalize():
            return True
    return False


def _weak(a: Amount) -> bool:
    """A year (1990-2030) or a bare single digit (not a percentage): too common in any text
    to count as the answer."""
    whole = a.places == 0 and a.scale == 0 and not a.percent
    return whole and (a.value < 10 or 1990 <= a.value <= 2030)


def stated_amounts(answer: str, evidence: str) -> list[Amount]:
    """The numbers of a gold answer (years and single digits left out) that `evidence` states."""
    said = amounts(evidence)
    return [a for a in amounts(answer) if not _weak(a) and any(same_number(a, f) for f in said)]


def answer_in(stated: Sequence[Amount], text: str) -> bool:
    """Whether `text` (a citation's quote) states any of the numbers `stated`."""
    found = amounts(text)
    return any(same_number(a, f) for a in stated for f in found)
