"""The shipped cross-encoder as the judge of answer candidates, against the default answer, on a
split's finished indexes; and where each one's "not found" threshold falls:

    python -m eval answer_judge --split tune --index .bench/retrieval/mmlongbench-tune-KEY \
        [--index ...]

Every question of the indexes' sets (FinanceBench and its wrong-document asks, MMLongBench-Doc,
the user questions) is searched once as `POST /query` searches it; from the same hits each
variant (the default answer; the same with the shipped cross-encoder as its judge,
FOLIO_ANSWER_JUDGE=local) draws its extractive answer with no threshold and records its support
(the embedder's best cosine, which decides "not found" in both). Answers are judged
by `eval.answers`' rules; then, for a sweep of thresholds, the share of answerable questions
withheld and of questions no document answers (MMLongBench-Doc's "Not answerable", FinanceBench
asked of the other documents) answered `not_found`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

log = logging.getLogger(__name__)

_SETS = ("financebench", "mmlongbench", "docugami")


def _questions(dataset: str, split: str, data: Path, services: Any, users: list[Any]) -> list[Any]:
    from eval.answer_sets import (
        Asked,
        doc_ids_by_stem,
        financebench_questions,
        mmlongbench_questions,
        user_questions,
    )
    from eval.retrieval_data import load_corpus

    stems = set(doc_ids_by_stem(services))
    if dataset == "financebench":
        corpus = load_corpus(dataset, data)
        asked = financebench_questions(corpus, stems, split)
        wrong = [Asked("wrong:financebench", split, a.question, a.doc, a.gold) for a in asked]
        asked = [*asked, *wrong]
    elif dataset == "mmlongbench":
        asked = mmlongbench_questions(data, stems, split)
    else:
        asked = []
    return [*asked, *user_questions(users, dataset, stems, split)]


def _record(answer: Any, pdfs: dict[str, Path]) -> dict[str, Any]:
    from eval.answer_sets import first_citation

    first = first_citation(answer.citations, pdfs)
    return {"answer": answer.text, "support": answer.support, "first": first}


def _right(asked: Any, rec: dict[str, Any], boxes: dict[str, Any]) -> dict[str, Any]:
    """Whether the answer (no threshold) is right, and its first citation's quote holds the
    number (FinanceBench) or lies in a gold box (MMDocIR)."""
    from eval.answer_figures import right
    from eval.answer_match import numbers_in, stated_numbers
    from eval.evidence_boxes import in_gold_box

    a = replace(asked, answer=rec["answer"], mode="extractive", first=rec["first"])
    judged = {"right": right(a) if asked.answer_format != "None" else False}
    first = rec["first"] or {}
    if asked.dataset == "financebench":
        stated = stated_numbers(asked.gold, asked.evidence)
        judged["stated"] = bool(stated)
        judged["quote"] = bool(stated) and numbers_in(stated, first.get("quote"))
    case = boxes.get(asked.question)
    if asked.dataset == "mmlongbench" and case is not None:
        c = (first["stem"], first["page"], tuple(first["bbox"])) if first else None
        judged["box"] = c is not None and in_gold_box(case, c)
    return judged


def run_index(directory: Path, split: str, data: Path, variants: dict[str, dict[str, Any]],
              users: list[Any]) -> list[dict[str, Any]]:  # fmt: skip
    """Every question of the index's set, answered by each variant from the same hits."""
    from eval.answer_sets import wrong_doc_requests
    from eval.evidence_boxes import load_box_cases
    from eval.retrieval_data import load_corpus
    from eval.retrieval_index import open_folio
    from retrieval.answer import extractive_answer
    from retrieval.schema import QueryRequest
    from retrieval.search.search import search_filter

    dataset = next(s for s in _SETS if directory.name.startswith(s))
    index = open_folio(directory.name, [], directory.parent, existing=directory)
    services = index.services
    retriever = services.retriever
    try:
        corpus = load_corpus(dataset, data)
        pdfs = {p.stem: p for p in corpus.pdfs}
        boxes = {}
        if dataset == "mmlongbench":
            boxes = {c.question: c for c in load_box_cases(data, list(pdfs.values()))}
        rows = []
        questions = _questions(dataset, split, data, services, users)
        filters = wrong_doc_requests(services, questions)
        for asked, others in zip(questions, filters, strict=True):
            wrong = asked.dataset.startswith("wrong:")
            if wrong and others is None:  # no other document to ask it of
                continue
            ids = others if wrong else None
            req = QueryRequest(question=asked.question, top_k=5, doc_ids=ids)
            ranked = retriever.ranked(req.question, req.top_k, search_filter(req))
            options = retriever.answer_options(req, ranked)
            row: dict[str, Any] = {
                "dataset": asked.dataset,
                "question": asked.question,
                "format": asked.answer_format,
                "gold": asked.gold,
                "page5": any(
                    Path(h.chunk.source).stem == asked.doc and h.chunk.page in asked.pages
                    for h in ranked.hits
                ),
            }
            for name, change in variants.items():
                started = time.perf_counter()
                answer = extractive_answer(
                    asked.question,
                    ranked.hits,
                    embedder=retriever.embedder,
                    options=replace(options, min_support=0.0, **change),
                )
                rec = _record(answer, pdfs)
                rec["ms"] = 1e3 * (time.perf_counter() - started)
                rec.update(_right(asked, rec, boxes))
                row[name] = rec
            rows.append(row)
        return rows
    finally:
        services.close()


def _none_asked(row: dict[str, Any]) -> bool:
    return row["format"] == "None" or row["dataset"].startswith("wrong:")


def _held(row: dict[str, Any], name: str, threshold: float) -> bool:
    return row[name]["answer"] is None or (row[name]["support"] or 0.0) < threshold


def _line(ds: str, rows: list[dict[str, Any]], name: str) -> str:
    right = sum(r[name]["right"] for r in rows)
    line = f"- {ds}: right {right}/{len(rows)}"
    stated = [r for r in rows if r[name].get("stated")]
    if stated:
        line += f"; number in 1st quote {sum(r[name]['quote'] for r in stated)}/{len(stated)}"
    boxed = [r for r in rows if "box" in r[name]]
    if boxed:
        line += f"; 1st citation in a gold box {sum(r[name]['box'] for r in boxed)}/{len(boxed)}"
    return line


def summary(rows: list[dict[str, Any]], variants: list[str], thresholds: list[float]) -> str:
    """A section per variant: right (no threshold), first-citation figures, latency, and the
    not-found sweep."""
    out = []
    sets = ("financebench", "mmlongbench", "user:financebench", "user:mmlongbench", "user:docugami")
    answerable = [r for r in rows if not _none_asked(r)]
    na = [r for r in rows if r["format"] == "None"]
    wrong = [r for r in rows if r["dataset"].startswith("wrong:")]
    for name in variants:
        out.append(f"\n## {name}")
        for ds in sets:
            mine = [r for r in rows if r["dataset"] == ds and r["format"] != "None"]
            if mine:
                out.append(_line(ds, mine, name))
        ms = sorted(r[name]["ms"] for r in rows)
        p50, p90 = ms[len(ms) // 2], ms[int(len(ms) * 0.9)]
        out.append(f"- answer stage ms p50 {p50:.0f}, p90 {p90:.0f}")
        out.append("\n| threshold | answerable withheld | right kept | not answerable: not_found "
                   "| wrong doc: not_found |")  # fmt: skip
        out.append("|---:|---:|---:|---:|---:|")
        for t in thresholds:
            withheld = sum(_held(r, name, t) for r in answerable)
            kept = sum(r[name]["right"] and not _held(r, name, t) for r in answerable)
            nf = sum(_held(r, name, t) for r in na)
            wf = sum(_held(r, name, t) for r in wrong)
            out.append(
                f"| {t:.2f} | {withheld}/{len(answerable)} | {kept} | {nf}/{len(na)} "
                f"| {wf}/{len(wrong)} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from eval.answer_sets import load_user_questions
    from eval.answers import USER_QUESTIONS
    from retrieval.search.rerank import OnnxReranker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "check"), required=True)
    parser.add_argument("--index", type=Path, action="append", required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path(".bench/results/answer-judge.json"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    judge = OnnxReranker(threads=2, max_length=256)
    variants: dict[str, dict[str, Any]] = {"default": {}, "judge": {"judge": judge}}
    users = load_user_questions(USER_QUESTIONS)
    rows = []
    for directory in args.index:
        rows.extend(run_index(directory, args.split, args.data, variants, users))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False, default=str))
    thresholds = [0.0, 0.05, 0.1, 0.2, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    print(summary(rows, list(variants), thresholds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
