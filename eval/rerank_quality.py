"""What the cross-encoder re-rank (FOLIO_RERANK) does to page recall, evidence boxes and latency.

    python -m eval rerank_quality --dataset mmlongbench \
        --folio-index .bench/retrieval/mmlongbench-301bd70de94e [--candidates 20] [--limit N]

Opens a finished retrieval-benchmark index (nothing is rebuilt) and asks every dev question as
`POST /query` asks it (top_k 5, the services' retriever), once with re-ranking off and once with
the local cross-encoder, on the questions of text-layer documents (image-only ones have no
text without OCR), the two alternated question by question so that both see the same load
on the shared cores. Reports page R@1 and R@5 (from the response's hits), the MMDocIR evidence-box
table (MMLongBench-Doc) or answer in the first citation (FinanceBench), and the p50/p90 of the
in-process query time of each setting with their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from eval.retrieval_data import load_corpus
from eval.retrieval_metrics import answer_in, score, stated_amounts

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclass
class Timed:
    """A retriever whose `query` answers from responses asked beforehand (by question)."""

    responses: dict[str, Any]
    times_ms: list[float] = field(default_factory=list)

    def query(self, req: Any) -> Any:
        return self.responses[req.question]


def _ask_all(
    retrievers: dict[str, Any], questions: list[str]
) -> dict[str, tuple[dict[str, Any], list[float]]]:
    from retrieval.schema import QueryRequest

    out: dict[str, tuple[dict[str, Any], list[float]]] = {k: ({}, []) for k in retrievers}
    for i, question in enumerate(questions):
        names = list(retrievers) if i % 2 == 0 else list(reversed(retrievers))
        for name in names:
            started = time.perf_counter()
            response = retrievers[name].query(QueryRequest(question=question))
            out[name][1].append(1e3 * (time.perf_counter() - started))
            out[name][0][question] = response
        if (i + 1) % 10 == 0:
            print(f"{i + 1}/{len(questions)} questions", file=sys.stderr, flush=True)
    return out


def _pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("mmlongbench", "financebench"), required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--folio-index", type=Path, required=True)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument(
        "--limit", type=int, default=0, help="N questions spread evenly over the text-layer ones"
    )
    args = parser.parse_args(argv)

    from eval.evidence_boxes import box_figures, load_box_cases
    from eval.retrieval_index import open_folio
    from eval.retrieval_metrics import image_only_docs
    from retrieval.answer.retriever import Retriever
    from retrieval.search.rerank import OnnxReranker
    from server.services import build_retriever

    corpus = load_corpus(args.dataset, args.data)
    index = open_folio(corpus.name, corpus.pdfs, args.work, existing=args.folio_index)
    services = index.services
    try:
        plain = build_retriever(services.settings, services.embedder, services.store,
                                services.ledger, services.files)  # fmt: skip
        reranked = Retriever(
            plain.embedder,
            plain.store,
            names=plain.names,
            dense_sentences=plain.dense_sentences,
            layout=plain.layout,
            reranker=OnnxReranker(max_length=args.max_length),
            rerank_candidates=args.candidates,
        )
        retrievers = {"off": plain, f"local ({args.candidates} chunks)": reranked}
        image_only = image_only_docs(corpus.pdfs)
        cases = [c for c in corpus.cases if not c.docs & image_only]  # the cross-encoder reads text
        if args.limit and args.limit < len(cases):  # spread over the documents and question kinds
            cases = [cases[i * len(cases) // args.limit] for i in range(args.limit)]
        boxes = load_box_cases(args.data, corpus.pdfs) if args.dataset == "mmlongbench" else []
        boxes = [b for b in boxes if not args.limit or b.question in {c.question for c in cases}]
        questions = list(dict.fromkeys([c.question for c in cases] + [b.question for b in boxes]))
        asked = _ask_all(retrievers, questions)
        unanswerable = {c.question for c in corpus.cases if c.answer == "Not answerable"}
        print(f"{args.dataset}: {len(questions)} questions, index {args.folio_index}\n")
        times = {}
        for name, (responses, ms) in asked.items():
            ranked = [
                [(Path(h.source).stem, h.page) for h in responses[c.question].hits] for c in cases
            ]
            s = score(ranked, cases, ks=(1, 5))
            times[name] = ms
            print(
                f"## FOLIO_RERANK {name}\npage R@1 {s.page_recall[1]:.3f}, "
                f"R@5 {s.page_recall[5]:.3f} (n={s.n}); query p50 {statistics.median(ms):.0f} ms, "
                f"p90 {_pct(ms, 90):.0f} ms"
            )
            if boxes:
                view = SimpleNamespace(
                    retriever=Timed(responses), ledger=services.ledger, files=services.files
                )
                print(box_figures(view, boxes, unanswerable, image_only))
            else:
                evidence = {c.question: "\n".join(t for _, t in c.evidence) for c in cases}
                stated = [
                    (c, a) for c in cases if (a := stated_amounts(c.answer, evidence[c.question]))
                ]
                hit = sum(
                    bool(responses[c.question].citations)
                    and answer_in(a, responses[c.question].citations[0].quote)
                    for c, a in stated
                )
                print(f"answer in the first citation: {hit}/{len(stated)}")
            print()
        (off, on) = times.values()
        print(
            "latency ratio (same run, alternated): p50 "
            f"{statistics.median(on) / statistics.median(off):.1f}x"
        )
    finally:
        services.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
