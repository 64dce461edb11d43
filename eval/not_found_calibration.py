"""Where "not found" should be drawn: the answer's support for questions that have an answer and
for those that do not, on one split's index, with the threshold off.

    python -m eval.not_found_calibration --dataset mmlongbench --split tune --index DIR
        [--data ../shared/data] [--thresholds 0.3 0.35 0.4 0.5]

Each question of the split whose documents the index holds is asked twice as `/query` asks it
(top 5, the defaults, `min_support` off): of the whole index, and restricted to one other document
of it chosen at random (seed 7). Reported per threshold: the share of answerable questions whose
support is below it (withheld), of MMLongBench-Doc's "Not answerable" ones (answered not found),
and of the questions asked of another document (answered not found). Calibrate on `tune` only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
from pathlib import Path

from eval.retrieval_data import DATASETS, load_corpus
from eval.splits import SPLITS, split_of

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_UNANSWERABLE = "Not answerable"


def _share(values: list[float], threshold: float) -> str:
    return f"{sum(v < threshold for v in values) / len(values):.2f}" if values else "—"


def main(argv: list[str] | None = None) -> int:
    """Print the withheld / not-found shares at each threshold."""
    parser = argparse.ArgumentParser(prog="python -m eval.not_found_calibration")
    parser.add_argument("--dataset", choices=DATASETS, required=True)
    parser.add_argument("--split", choices=SPLITS, default="tune")
    parser.add_argument("--index", type=Path, required=True, help="a finished benchmark index")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.3, 0.35, 0.4, 0.5])
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no shared data at {args.data}: nothing to calibrate")
        return 0
    from eval.answer_sets import doc_ids_by_stem
    from eval.retrieval_index import open_folio
    from retrieval.answer import extractive_answer
    from retrieval.schema import QueryRequest
    from retrieval.search.search import search_filter

    corpus = load_corpus(args.dataset, args.data)
    index = open_folio(args.index.name, [], args.index.parent, existing=args.index)
    services = index.services
    try:
        ids = doc_ids_by_stem(services)
        retriever = services.retriever
        rng = random.Random(7)
        answerable: list[float] = []
        unanswerable: list[float] = []
        elsewhere: list[float] = []
        for case in corpus.cases:
            if not all(d in ids and split_of(args.dataset, d) == args.split for d in case.docs):
                continue
            others = sorted(s for s in ids if s not in case.docs)
            asks = [(QueryRequest(question=case.question, top_k=5), False)]
            if others:
                other = ids[rng.choice(others)]
                asks.append((QueryRequest(question=case.question, top_k=5, doc_ids=[other]), True))
            for request, wrong in asks:
                ranked = retriever.ranked(request.question, request.top_k, search_filter(request))
                options = retriever.answer_options(request, ranked)
                options = dataclasses.replace(options, min_support=float("-inf"))
                answer = extractive_answer(
                    request.question, ranked.hits, embedder=retriever.embedder, options=options
                )
                support = answer.support if answer.support is not None else 0.0
                if wrong:
                    elsewhere.append(support)
                elif case.answer == _UNANSWERABLE:
                    unanswerable.append(support)
                else:
                    answerable.append(support)
    finally:
        services.close()
    print(
        f"{args.dataset} {args.split}: {len(answerable)} answerable, {len(unanswerable)} "
        f"unanswerable, {len(elsewhere)} asked of another document"
    )
    print("| threshold | withheld | unanswerable: not found | other document: not found |")
    print("|---:|---:|---:|---:|")
    for t in args.thresholds:
        row = [_share(answerable, t), _share(unanswerable, t), _share(elsewhere, t)]
        print(f"| {t:g} | {' | '.join(row)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
