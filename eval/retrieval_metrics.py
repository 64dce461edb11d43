"""Retrieval metrics over ranked (document stem, page) lists, and the citation-region check."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.retrieval_data import Case

__all__ = [
    "Ranked",
    "Scores",
    "boxed_text",
    "evidence_overlap",
    "image_only_docs",
    "score",
]

Ranked = list[tuple[str, int]]
"""The hits of one question, best first, as (PDF stem, 1-based page)."""


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
