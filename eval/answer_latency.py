"""Where a query's time goes: the search and the extractive answer, in-process, per setting.

    python -m eval answer_latency --dataset financebench \
        --folio-index .bench/retrieval/financebench-2d3633cca85d [--rounds 2]

Opens a retrieval-benchmark index, finished or not (nothing is rebuilt), with the shipped
model (not the benchmark's cached one), and answers every dev question as `POST /query` does
(top_k 5) under each setting, alternated question by question so that all see the same load on
the shared cores: the sentence re-rank without memory (as before), the default (the services'
retriever: sentence vectors remembered, here in a new empty cache file, and the last questions'
vectors), the default reading its hits alone (without the other chunks of their pages that the
search fetched, `Ranked.mates`, as before 2026-12-06), and terms alone. Reports, per round,
p50/p90/p99 of the search and the answer and the ratio to the first setting; round 1 is cold,
`--rounds 2` asks every question again (warm).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


_HITS_ALONE = "default, the hits alone (no page mates: before)"


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 2 else max(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("mmlongbench", "financebench"), required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--folio-index", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args(argv)

    from eval.retrieval_data import load_corpus
    from retrieval.answer import extractive_answer
    from retrieval.answer.retriever import Retriever
    from retrieval.index.embedder import SentenceTransformerEmbedder
    from retrieval.schema import QueryRequest
    from retrieval.search.search import search_filter
    from server.services import build_retriever, build_services
    from server.settings import Settings

    corpus = load_corpus(args.dataset, args.data)
    embedder = SentenceTransformerEmbedder()
    settings = Settings(data_dir=args.folio_index, ocr="never")  # type: ignore[arg-type]
    services = build_services(settings, embedder=embedder)  # finished or not
    try:

        def remembering() -> Retriever:  # the services' retriever, with a memory of its own
            scratch = Settings(data_dir=Path(tempfile.mkdtemp(prefix="folio-cache-")))
            return build_retriever(scratch, embedder, services.store, services.ledger,
                                   services.files)  # fmt: skip

        default = remembering()

        def variant(**changes: Any) -> Retriever:
            kept: dict[str, Any] = {"names": default.names, "layout": default.layout}
            kept["dense_sentences"] = default.dense_sentences
            kept.update(changes)
            return Retriever(embedder, services.store, **kept)

        variants = {
            f"sentence re-rank ({default.dense_sentences}), no memory (before)": variant(),
            "default: the same, remembered": default,
            _HITS_ALONE: remembering(),
            "terms alone (dense sentences 0), no memory": variant(dense_sentences=0),
        }
        questions = [c.question for c in corpus.cases]
        questions = questions[: args.limit] if args.limit else questions
        embedder.embed_query("warm up")
        times: dict[tuple[int, str], tuple[list[float], list[float]]] = {
            (r, k): ([], []) for r in range(args.rounds) for k in variants
        }
        answers: dict[tuple[int, str], list[Any]] = {k: [] for k in times}
        for round_ in range(args.rounds):
            for i, question in enumerate(questions):
                names = list(variants) if i % 2 == 0 else list(reversed(variants))
                for name in names:
                    retriever = variants[name]
                    req = QueryRequest(question=question)
                    t0 = time.perf_counter()
                    ranked = retriever.ranked(question, req.top_k, search_filter(req))
                    t1 = time.perf_counter()
                    options = retriever.answer_options(req, ranked)
                    if name == _HITS_ALONE:
                        options = replace(options, page_mates=())
                    answer = extractive_answer(
                        question, ranked.hits, embedder=retriever.embedder, options=options
                    )
                    t2 = time.perf_counter()
                    answers[round_, name].append(
                        (answer.text, [(c.page, c.bbox) for c in answer.citations])
                    )
                    times[round_, name][0].append(1e3 * (t1 - t0))
                    times[round_, name][1].append(1e3 * (t2 - t1))
        print(f"{args.dataset}: {len(questions)} questions x {args.rounds} round(s), in-process\n")
        print(
            "| round | setting | search p50 | answer p50 | answer p90 | total p50 | total p99 "
            "| ratio |\n|---|---|---:|---:|---:|---:|---:|---:|"
        )
        base = 0.0
        for (round_, name), (search, answering) in times.items():
            total = [a + b for a, b in zip(search, answering, strict=True)]
            p50 = statistics.median(total)
            base = p50 if name == next(iter(variants)) else base
            print(
                f"| {round_ + 1} | {name} | {statistics.median(search):.1f} "
                f"| {statistics.median(answering):.1f} "
                f"| {_pct(answering, 90):.1f} | {p50:.1f} | {_pct(total, 99):.1f} "
                f"| {p50 / base:.2f} |"
            )
        before, after = list(variants)[:2]
        for round_ in range(args.rounds):
            same = sum(
                x == y for x, y in zip(answers[round_, before], answers[round_, after], strict=True)
            )
            print(f"\nround {round_ + 1}: {after!r} gives the same answer and citation boxes as "
                  f"{before!r} for {same} of {len(questions)} questions")  # fmt: skip
    finally:
        services.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
