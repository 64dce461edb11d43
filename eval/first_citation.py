"""Where the first citation lands, by re-rank setting: MMDocIR's evidence boxes for the text-layer
MMLongBench-Doc dev questions, asked of a finished benchmark index as `POST /query` asks them.

    python -m eval.first_citation --folio-index .bench/retrieval/mmlongbench-301bd70de94e

Settings, each over every question in one run: `off` (the default), `local` (the shipped
cross-encoder re-orders the first `--candidates` fused chunks, and the answer cites its first page
first unless another is much better supported: `RANK_PRIOR`), `local, no rank prior` (the
re-ranked hits, the answer drawn as without a re-ranker), two cheaper sentence scorers, and
`off, rank prior` (no re-ranker, the answer's sentences weighed by their hit's rank as after
one), `off, titles boxed alone` (a cited chart title or caption boxed without the figure or table it
names: `retrieval.answer.page_layout`); with `--heading-leads`, `off` with other margins by which a
section heading must be more like the question than any sentence to lead the answer
(`retrieval.answer.HEADING_LEAD`; `inf`: never). Besides the box table: page R@1 (a gold page
is the first hit), where the first citation comes from, and the query time's p50 (the
question's vector is cached across settings, so `off` is cheaper here than in a cold `/query`).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from eval.evidence_boxes import (
    BoxCase,
    Cited,
    answerable_box_cases,
    box_report,
    line_boxes,
    score_boxes,
)
from eval.retrieval_data import load_corpus
from eval.retrieval_index import open_folio
from retrieval.answer import RANK_PRIOR

SETTINGS = (
    "off",
    "local",
    "local, no rank prior",
    "off, rank prior",
    "off, terms alone",
    "off, 4 sentences",
    "off, titles boxed alone",
)


class _TitlesAlone:
    """The page layout with cell boxes but no figure or table for a cited title (the ablation of
    `PageLayouts.titled`)."""

    def __init__(self, layout: Any) -> None:
        self.layout = layout

    def cell_box(self, *args: Any) -> Any:
        return self.layout.cell_box(*args)

    def titled(self, *_: Any) -> None:
        return None

    def column_heads(self, *args: Any) -> Any:
        return self.layout.column_heads(*args)

    def heading(self, *args: Any) -> Any:
        return self.layout.heading(*args)

    def headed(self, *args: Any) -> Any:
        return self.layout.headed(*args)


def _ask(
    retriever: Any, case: BoxCase, prior: float | None = None, lead: float | None = None
) -> tuple[Cited, float, str]:
    """The case asked as `POST /query` asks it: where it cites, seconds, the cited hit's rank."""
    from retrieval.answer import extractive_answer
    from retrieval.answer.retriever import extractive_response
    from retrieval.schema import QueryRequest

    started = time.perf_counter()
    req = QueryRequest(question=case.question)
    ranked = retriever.ranked(req.question, req.top_k)
    options = retriever.answer_options(req, ranked)
    if prior is not None:  # else as the retriever sets it (RANK_PRIOR after a re-rank)
        options = replace(options, rank_prior=prior)
    if lead is not None:  # else HEADING_LEAD
        options = replace(options, heading_lead=lead)
    answer = extractive_answer(
        req.question, ranked.hits, embedder=retriever.embedder, options=options
    )
    response = extractive_response(answer, ranked.hits)
    seconds = time.perf_counter() - started
    hits = [(Path(h.source).stem, h.page) for h in response.hits]
    cites = [(Path(c.source).stem, c.page, tuple(c.bbox)) for c in response.citations]
    rank = "no answer"
    if cites:
        at = [i for i, hit in enumerate(hits) if hit == cites[0][:2]]
        rank = str(at[0] + 1) if at else "another page of its chunk"
    return Cited(cites, hits), seconds, rank  # type: ignore[arg-type]


def _show(setting: str, case: BoxCase, cited: Cited) -> None:
    """A first citation that misses the gold boxes: where it is, and where they are."""
    from eval.evidence_boxes import in_gold_box

    if not cited.citations:
        print(f"[{setting}] no answer: {case.question[:120]}")
        return
    if in_gold_box(case, cited.citations[0]):
        return
    doc, page, box = cited.citations[0]
    golds = case.boxes.get(page, []) if doc == case.doc else []
    where = "gold page" if golds else "another page"
    print(f"[{setting}] {where}: {case.question[:120]} ({', '.join(case.sources)})")
    print(f"    cited {doc} p{page} {[round(v) for v in box]}; gold {case.doc} {case.boxes}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--folio-index", type=Path, required=True)
    parser.add_argument("--candidates", type=int, default=20, help="chunks the re-ranker orders")
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--show", action="store_true", help="list the first citations that miss")
    parser.add_argument(
        "--heading-leads",
        type=float,
        nargs="*",
        default=[],
        help="also `off` with these margins for a section heading to lead (inf: no heading)",
    )
    parser.add_argument(
        "--with-image-only",
        action="store_true",
        help="the image-only documents' questions too (for an index built with --ocr auto)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from retrieval.search.rerank import OnnxReranker

    corpus = load_corpus("mmlongbench", args.data)
    cases = answerable_box_cases(args.data, corpus, with_image_only=args.with_image_only)
    folio = open_folio("mmlongbench", corpus.pdfs, args.work, existing=args.folio_index)
    services = folio.services
    retriever = services.retriever
    lines = line_boxes(services)
    cross = OnnxReranker()
    dense = retriever.dense_sentences
    layout = retriever.layout
    rows = []
    notes = []
    leads = {f"off, heading lead {v:g}": v for v in args.heading_leads}
    for setting in [*args.settings, *leads]:
        retriever.reranker = None if setting.startswith("off") else cross
        retriever.rerank_candidates = args.candidates
        retriever.dense_sentences = {"off, terms alone": 0, "off, 4 sentences": 4}.get(
            setting, dense
        )
        retriever.layout = _TitlesAlone(layout) if setting == "off, titles boxed alone" else layout
        cited, times, ranks = [], [], Counter[str]()
        for case in cases:
            prior = {"local, no rank prior": 0.0, "off, rank prior": RANK_PRIOR}.get(setting)
            one, seconds, rank = _ask(retriever, case, prior, leads.get(setting))
            cited.append(one)
            if args.show:
                _show(setting, case, one)
            times.append(seconds)
            ranks[rank] += 1
        scores = score_boxes(cases, cited, lines)
        first_gold = sum(
            bool(c.hits) and c.hits[0][0] == case.doc and c.hits[0][1] in case.boxes
            for case, c in zip(cases, cited, strict=True)
        )
        rows.append((f"FOLIO_RERANK={setting}", scores))
        notes.append(
            f"- {setting}: page R@1 {first_gold / len(cases):.3f} ({first_gold}/{len(cases)}); "
            f"first citation from hit {sorted(ranks.items())}; "
            f"query p50 {1e3 * statistics.median(times):.0f} ms, "
            f"p90 {1e3 * statistics.quantiles(times, n=10)[-1]:.0f} ms"
        )
    print(
        f"{len(cases)} {'' if args.with_image_only else 'text-layer '}MMLongBench-Doc dev "
        "questions with MMDocIR boxes, index "
        f"{args.folio_index}, re-ranker over {args.candidates} chunks\n"
    )
    print(box_report(rows))
    print("\n" + "\n".join(notes))
    services.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
