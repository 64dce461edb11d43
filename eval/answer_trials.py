"""Changes to the search and the answer tried for the first citation and not kept, measured on
the MMDocIR boxes of the text-layer MMLongBench-Doc dev questions as `eval.first_citation`
measures the default, each as a stand-in around the shipped code:

    python -m eval.answer_trials --folio-index .bench/retrieval/mmlongbench-a801fc3253b1

- `document mass`: each fused candidate's score multiplied by its document's share of the
  first `window` candidates' scores (the sum of its best three), to a power, so that the
  document most of the search is about leads;
- `no answer format`: the question's sentences that only say how to write the answer ("Round
  your answer to two decimal places.", "Return me an integer.") left out of the search, of the
  answer, or of both;
- `hits N`: the answer drawn from the first N hits instead of five.
"""

from __future__ import annotations

import argparse
import logging
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from eval.evidence_boxes import BoxCase, answerable_box_cases, in_gold_box
from eval.retrieval_data import load_corpus
from eval.retrieval_index import open_folio

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])|(?<=\?)(?=[A-Z])")
_ANSWER_FORMAT = re.compile(
    r"^(?:please\s+)?(?:round|answer|write|give|return|format|represent|provide|express|state|"
    r"list|directly answer|the answer)\b.*\b(?:format|decimals?|integer|int|float|list|"
    r"percentage|percent|millions?|thousands?|billions?|yyyy|terms|'yes'|yes|number)\b",
    re.I,
)


def without_answer_format(question: str) -> str:
    """The question without its sentences that only say how to write the answer."""
    parts = [p for p in _SENTENCE_END.split(question.strip()) if p.strip()]
    kept = [p for p in parts if not _ANSWER_FORMAT.search(p.strip())]
    return " ".join(kept) if kept else question


def _by_document_mass(search: Callable[..., Any], power: float, window: int = 20) -> Any:
    """`search` with each candidate's score times its document's share of the best candidates'
    scores to `power` (a document filter's searches as they were)."""

    def searched(vector: Any, limit: int, flt: Any = None, *, text: str | None = None) -> Any:
        found = search(vector, limit, flt, text=text)
        if flt is not None and flt.doc_ids:
            return found
        scores: dict[str, list[float]] = defaultdict(list)
        for hit in found[:window]:
            scores[hit.chunk.doc_id].append(hit.score)
        mass = {d: sum(sorted(v, reverse=True)[:3]) for d, v in scores.items()}
        most = max(mass.values(), default=1.0) or 1.0
        share = {d: m / most for d, m in mass.items()}
        weighed = [
            type(hit)(chunk=hit.chunk, score=hit.score * share.get(hit.chunk.doc_id, 0.05) ** power)
            for hit in found
        ]
        return sorted(weighed, key=lambda h: (-h.score, h.chunk.doc_id, h.chunk.chunk_id))

    return searched


def _boxed(retriever: Any, cases: list[BoxCase], trial: str) -> tuple[int, int]:
    """(first citations in a gold box, on a gold page) under `trial`."""
    from retrieval.answer import extractive_answer
    from retrieval.schema import QueryRequest

    boxed = paged = 0
    for case in cases:
        asked = answered = case.question
        if trial in ("no answer format", "no answer format, search"):
            asked = without_answer_format(case.question)
        if trial in ("no answer format", "no answer format, answer"):
            answered = without_answer_format(case.question)
        hits = int(trial.split()[1]) if trial.startswith("hits ") else 0
        request = QueryRequest(question=asked, top_k=max(5, hits))
        ranked = retriever.ranked(request.question, request.top_k)
        options = retriever.answer_options(request, ranked)
        if hits:
            options = replace(options, max_hits=hits)
        answer = extractive_answer(
            answered, ranked.hits, embedder=retriever.embedder, options=options
        )
        if not answer.citations:
            continue
        cited = answer.citations[0]
        stem = Path(cited.source).stem
        paged += stem == case.doc and bool(case.boxes.get(cited.page))
        boxed += in_gold_box(case, (stem, cited.page, tuple(cited.bbox)))  # type: ignore[arg-type]
    return boxed, paged


TRIALS = (
    "default",
    "document mass 0.5",
    "document mass 1",
    "document mass 2",
    "no answer format",
    "no answer format, search",
    "no answer format, answer",
    "hits 3",
    "hits 4",
    "hits 6",
    "hits 8",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--folio-index", type=Path, required=True)
    parser.add_argument("--trials", nargs="+", choices=TRIALS, default=list(TRIALS))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    corpus = load_corpus("mmlongbench", args.data)
    cases = answerable_box_cases(args.data, corpus)
    folio = open_folio("mmlongbench", corpus.pdfs, args.work, existing=args.folio_index)
    retriever = folio.services.retriever
    retriever.reranker = None
    search = retriever.store.search
    print(f"{len(cases)} text-layer MMDocIR questions, index {args.folio_index}\n")
    print("| trial | 1st citation in a gold box | on a gold page |\n|---|---:|---:|")
    try:
        for trial in args.trials:
            if trial.startswith("document mass"):
                retriever.store.search = _by_document_mass(search, float(trial.split()[-1]))
            boxed, paged = _boxed(retriever, cases, trial)
            retriever.store.search = search
            print(f"| {trial} | {boxed} | {paged} |", flush=True)
    finally:
        folio.services.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
