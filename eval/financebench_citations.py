"""FinanceBench citations from the answer `POST /query` gives: the gold number in the first
citation, and the old word-overlap check of the cited boxes against the gold evidence text."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.answer_sets import doc_ids_by_stem
from eval.retrieval_data import Case, Corpus
from eval.retrieval_metrics import answer_in, boxed_text, evidence_overlap, share, stated_amounts
from retrieval.links import highlight_of

log = logging.getLogger(__name__)


def _boxes(citation: Any, page: int) -> list[tuple[float, float, float, float]]:
    """The boxes a citation marks on `page`: those drawn by its highlight URL on its own page,
    its region on the other pages it spans."""
    drawn = highlight_of(citation.highlight_url)
    if page == citation.page and drawn:
        return drawn
    return [r.bbox for r in citation.regions if r.page == page]


def _cited_ok(citation: Any, case: Case, pdf: Path) -> bool | None:
    """Whether the citation's boxes on a gold page hold gold evidence; None when on none."""
    for region in citation.regions:
        if region.page not in case.pages:
            continue
        text = boxed_text(pdf, region.page, _boxes(citation, region.page))
        return any(evidence_overlap(text, ev) for p, ev in case.evidence if p == region.page)
    return None


@dataclass
class CitationFigures:
    """FinanceBench: the old word-overlap check and answer in citation, from `/query`'s path."""

    overlap_free: tuple[int, int]
    """(correct, cited on a gold page) after a free search."""
    overlap_held: tuple[int, int]
    """(correct, asked) with the search held to the gold page (localisation alone)."""
    answer_in: tuple[int, int]
    """(first citation's quote states the gold number, questions whose evidence states it)."""
    asked: int


def citation_accuracy(services: Any, corpus: Corpus, cases: Sequence[Case]) -> CitationFigures:
    """The citation figures of the services' retriever (what `POST /query` runs)."""
    from retrieval.schema import QueryRequest

    retriever = services.retriever
    pdfs = {p.stem: p for p in corpus.pdfs}
    ids = doc_ids_by_stem(services)
    free = [0, 0]
    held = [0, 0]
    inside = [0, 0]
    for case in cases:
        if not case.evidence:
            continue
        stem = next(iter(case.docs))
        response = retriever.query(QueryRequest(question=case.question, top_k=5))
        stated = stated_amounts(case.answer, "\n".join(text for _, text in case.evidence))
        if stated:
            first = response.citations[0].quote if response.citations else None
            found = first is not None and answer_in(stated, first)
            inside[1] += 1
            inside[0] += found
            log.info(
                "answer %s the first citation: %s | %r",
                "in" if found else "not in",
                case.question[:90],
                first,
            )
        for citation in response.citations:
            if Path(citation.source).stem not in case.docs:
                continue
            ok = _cited_ok(citation, case, pdfs[stem])
            if ok is not None:
                free[0] += ok
                free[1] += 1
                break
        if stem not in ids:
            continue
        page = case.evidence[0][0]
        request = QueryRequest(
            question=case.question, top_k=5, doc_ids=[ids[stem]], page_from=page, page_to=page
        )
        response = retriever.query(request)
        held[1] += 1
        if response.citations:
            held[0] += bool(_cited_ok(response.citations[0], case, pdfs[stem]))
    asked = sum(1 for c in cases if c.evidence)
    return CitationFigures((free[0], free[1]), (held[0], held[1]), (inside[0], inside[1]), asked)


def financebench_citations(services: Any, corpus: Corpus, label: str) -> str:
    """The report lines of the FinanceBench citation figures (`citation_accuracy`)."""
    f = citation_accuracy(services, corpus, corpus.cases)
    return (
        f"FinanceBench citations ({label}; the answer `POST /query` gives, top_k 5):\n"
        f"- answer in the first citation: {share(*f.answer_in)} of the questions whose gold "
        f"evidence states the gold answer's number; {share(f.answer_in[0], f.asked)} of all "
        "questions\n"
        f"- old word-overlap check (at least half of the boxed terms in the gold evidence text; "
        f"a random line of the gold page passes it about half the time): first citation on a "
        f"gold page after a free search {share(*f.overlap_free)}; held to the gold page "
        f"{share(*f.overlap_held)}"
    )
