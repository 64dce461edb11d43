"""What the answer's signals can choose: every candidate of the top hits scored by each signal,
on a split's finished indexes, and the share of questions each signal's best candidate answers:

    python -m eval answer_signals --split tune --index .bench/retrieval/mmlongbench-tune-KEY \
        [--index ...] [--fit-on tune]

Each question is searched as `POST /query` searches it. Its candidates (sentences and table
cells of the top five hits, as the extractive answer draws them) are scored by the answer's
own score, by the embedder's similarity alone (every candidate, not only those the question's
terms pool), and by the shipped cross-encoder (the 20 best by the answer's score). A candidate is
judged by itself: said as the answer says it, right by `eval.answers`' rules (MMLongBench-Doc),
holding the gold number in its quote (FinanceBench, where the evidence states it), cited in an
MMDocIR gold box. "Any candidate" is the ceiling of a choice among them. With `--fit-on FILE`
(this command's `--save` of another split), a logistic regression over the signals is fitted
on that split's candidates and its best candidate judged on this one.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_JUDGED = 20  # candidates the cross-encoder reads, best first by the answer's score


def _candidates(
    asked: Any, retriever: Any, judge: Any, boxes: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every candidate of the question's top hits with its signals and how it is judged."""
    from eval.answer_figures import right
    from eval.answer_match import numbers_in, stated_numbers
    from eval.evidence_boxes import in_gold_box
    from retrieval.answer.candidates import _candidates, _in_context, _with_table_rest
    from retrieval.answer.citing import _cite_sentence
    from retrieval.answer.meet import _meet
    from retrieval.answer.said import _said
    from retrieval.answer.scores import _dense, _rank
    from retrieval.schema import QueryRequest
    from retrieval.search.search import search_filter

    req = QueryRequest(question=asked.question, top_k=5)
    ranked = retriever.ranked(req.question, req.top_k, search_filter(req))
    options = retriever.answer_options(req, ranked)
    top, ranks = _with_table_rest(list(ranked.hits[: options.max_hits]), options.lookups.table_rest)
    found = _candidates(top, options.scope.pages) or _candidates(top)
    if not found:
        return []
    names = options.scope.name_terms
    meet = _meet(asked.question, found, top, names, options.lookups.card_of)
    terms = [v * m for v, m in zip(_rank(asked.question, top, found, names), meet, strict=True)]
    pooled, _ = _dense(
        asked.question, top, found, terms, retriever.embedder, options.dense_pool, meet
    )
    own = [v * m for v, m in zip(pooled, meet, strict=True)]
    texts = [_in_context(top[s.hit].chunk, s.text) for s in found]
    embedder = retriever.embedder
    similarity = embedder.embed_documents(texts) @ embedder.embed_query(asked.question)
    judged: list[float | None] = [None] * len(found)
    order = sorted(range(len(found)), key=lambda i: -own[i])[:_JUDGED]
    for i, logit in zip(order, judge.score(asked.question, [texts[i] for i in order]), strict=True):
        judged[i] = logit
    stated = stated_numbers(asked.gold, asked.evidence) if asked.dataset == "financebench" else []
    case = boxes.get(asked.question)
    out = []
    for i, sentence in enumerate(found):
        citation = _cite_sentence(1, sentence, top, options)
        said = _said(sentence, citation)
        stem = Path(top[sentence.hit].chunk.source).stem
        out.append(
            {
                "own": own[i],
                "similarity": float(similarity[i]),
                "judge": judged[i],
                "meet": meet[i],
                "rank": ranks[sentence.hit],
                "cell": sentence.cell is not None,
                "right": asked.answer_format != "None"
                and right(replace(asked, answer=said, mode="extractive")),
                "quote": bool(stated) and numbers_in(stated, citation.quote),
                "box": case is not None and in_gold_box(case, (stem, citation.page, citation.bbox)),
            }
        )
    return out


def collect(directories: list[Path], split: str, data: Path) -> list[dict[str, Any]]:
    """One row a question: its set, what it can be judged on and its candidates."""
    from eval.answer_judge import _questions
    from eval.answer_sets import load_user_questions
    from eval.evidence_boxes import load_box_cases
    from eval.retrieval_data import load_corpus
    from eval.retrieval_index import open_folio
    from retrieval.search.rerank import OnnxReranker

    judge = OnnxReranker()
    users = load_user_questions(Path(__file__).with_name("user_questions.jsonl"))
    rows = []
    for directory in directories:
        dataset = next(
            s for s in ("financebench", "mmlongbench", "docugami") if directory.name.startswith(s)
        )
        index = open_folio(directory.name, [], directory.parent, existing=directory)
        try:
            pdfs = list(load_corpus(dataset, data).pdfs)
            boxes = (
                {c.question: c for c in load_box_cases(data, pdfs)}
                if dataset == "mmlongbench"
                else {}
            )
            for asked in _questions(dataset, split, data, index.services, users):
                if asked.dataset.startswith("wrong:") or asked.answer_format == "None":
                    continue
                cands = _candidates(asked, index.services.retriever, judge, boxes)
                rows.append(
                    {
                        "dataset": asked.dataset,
                        "boxed": asked.question in boxes,
                        "stated": _states(asked),
                        "cands": cands,
                    }
                )
        finally:
            index.services.close()
    return rows


def _states(asked: Any) -> bool:
    from eval.answer_match import stated_numbers

    return asked.dataset == "financebench" and bool(stated_numbers(asked.gold, asked.evidence))


def features(cands: list[dict[str, Any]]) -> np.ndarray:
    """The signals of a question's candidates, each also against the question's best."""
    own = np.array([c["own"] for c in cands])
    sim = np.array([c["similarity"] for c in cands])
    judge = np.array([-12.0 if c["judge"] is None else c["judge"] for c in cands])
    meet = np.log(np.array([c["meet"] for c in cands]))
    rank = np.array([c["rank"] for c in cands], float)
    cell = np.array([c["cell"] for c in cands], float)
    read = np.array([c["judge"] is not None for c in cands], float)
    return np.stack(
        [
            own,
            own - own.max(),
            sim,
            sim - sim.max(),
            judge,
            judge - judge.max(),
            meet,
            rank,
            cell,
            read,
        ],
        1,
    )


def fit(rows: list[dict[str, Any]], steps: int = 3000, rate: float = 0.1) -> np.ndarray:
    """Logistic regression weights (bias last) for "right or in the gold box or the gold number in
    its quote", each question's candidates weighing one question in all, by gradient descent."""
    xs, ys, ws = [], [], []
    for row in rows:
        labels = [c["right"] or c["box"] or c["quote"] for c in row["cands"]]
        if not any(labels):
            continue
        xs.append(features(row["cands"]))
        ys += labels
        ws += [1.0 / len(labels)] * len(labels)
    x = np.concatenate(xs)
    mean, scale = x.mean(0), x.std(0) + 1e-9
    x = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    y, w = np.array(ys, float), np.array(ws) / sum(ws)
    weights = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-x @ weights))
        weights -= rate * (x.T @ (w * (p - y)))
    return np.concatenate(
        [weights[:-1] / scale, [weights[-1] - (weights[:-1] * mean / scale).sum()]]
    )


def judge_choice(rows: list[dict[str, Any]], score: Any) -> dict[str, tuple[int, int]]:
    """Each set's questions whose best candidate by `score` is right, cited in a gold box, or
    quotes the gold number (`score` None: whether any candidate is, the ceiling of a choice)."""
    tally: dict[str, list[int]] = {}
    for row in rows:
        cands = row["cands"]
        best = [cands[int(np.argmax(score(cands)))]] if cands and score else cands
        for name, asked, key in (
            (f"{row['dataset']} right", True, "right"),
            ("MMDocIR gold box", row["boxed"], "box"),
            ("FinanceBench number in the quote", row["stated"], "quote"),
        ):
            hit = any(c[key] for c in best)
            if asked:
                count = tally.setdefault(name, [0, 0])
                count[0] += bool(hit)
                count[1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(tally.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["tune", "check"], required=True)
    parser.add_argument("--index", type=Path, action="append", required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--save", type=Path, help="write the candidates' signals here")
    parser.add_argument(
        "--fit-on", type=Path, help="a --save of the split to fit the regression on"
    )
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no data at {args.data}: nothing measured")
        return 0
    rows = collect(args.index, args.split, args.data)
    if args.save:
        args.save.write_text(json.dumps(rows))
    signals = {
        "the answer's own score": lambda c: np.array([x["own"] for x in c]),
        "the embedder's similarity, every candidate": lambda c: np.array(
            [x["similarity"] for x in c]
        ),
        "the cross-encoder, its 20": lambda c: features(c)[:, 4],
        "any candidate (the ceiling of a choice)": None,
    }
    if args.fit_on:
        weights = fit(json.loads(args.fit_on.read_text()))
        signals[f"regression fitted on {args.fit_on.name}"] = lambda c: features(c) @ weights[:-1]
        print("weights:", np.round(weights, 3).tolist())
    print(
        f"| signal ({args.split}) | "
        + " | ".join(judge_choice(rows, signals["the answer's own score"]))
        + " |"
    )
    for name, score in signals.items():
        figures = judge_choice(rows, score)
        print(f"| {name} | " + " | ".join(f"{a}/{n}" for a, n in figures.values()) + " |")
    return 0
