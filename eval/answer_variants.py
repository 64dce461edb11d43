"""Variants `python -m eval answers` can be asked with beside the product's defaults (issue 35 §2):
the chunk embedder an index is built with, and the shipped cross-encoder re-ranking the fused
candidates, alone or as one vote beside the fused rank. A run with any variant is not recorded
in the report; its results file is named after it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

from eval.retrieval_index import EMBEDDERS

__all__ = ["RankBlend", "add_arguments", "apply", "label", "suffix"]

_RRF_K = 10  # the reciprocal-rank constant of the blend: a few candidates, so a small one


class RankBlend:
    """A re-ranker whose order is the reciprocal-rank fusion of the fused order (the order the
    passages come in) and the inner re-ranker's order; scores rescaled into (0, 1) as logits."""

    def __init__(self, inner: Any, k: int = _RRF_K) -> None:
        self.inner = inner
        self.k = k

    @property
    def name(self) -> str:
        return f"{self.inner.name}, ranks fused with the search's (k={self.k})"

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        logits = self.inner.score(question, passages)
        by_model = sorted(range(len(logits)), key=lambda i: -logits[i])
        model_rank = {i: r for r, i in enumerate(by_model)}
        k = self.k + 1
        votes = [1 / (k + i) + 1 / (k + model_rank[i]) for i in range(len(logits))]
        top = max(votes, default=1.0)
        shares = [0.01 + 0.98 * v / top for v in votes]
        return [math.log(s / (1 - s)) for s in shares]  # rerank() takes the logistic of these


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The variant options of `eval answers`."""
    parser.add_argument(
        "--embedder",
        choices=tuple(EMBEDDERS),
        default=next(iter(EMBEDDERS)),
        help="the chunk embedder the indexes are built and queried with (default: the product's)",
    )
    parser.add_argument("--rerank", choices=("off", "local"), default="off")
    parser.add_argument("--rerank-candidates", type=int, default=20)
    parser.add_argument("--rerank-max-length", type=int, default=256, help="tokens a pair")
    parser.add_argument(
        "--rerank-blend",
        choices=("replace", "ranks"),
        default="replace",
        help="the cross-encoder's order alone (FOLIO_RERANK=local), or fused with the search's",
    )
    parser.add_argument(
        "--rank-prior", type=float, help="the answer's weight on a re-ranked hit's rank (default 1)"
    )


def label(args: argparse.Namespace) -> str:
    """The command-line options of the variant asked ("" for the product's defaults)."""
    parts = []
    if args.embedder != next(iter(EMBEDDERS)):
        parts.append(f"--embedder {args.embedder}")
    if args.rerank != "off":
        parts.append(
            f"--rerank {args.rerank} --rerank-candidates {args.rerank_candidates} "
            f"--rerank-max-length {args.rerank_max_length} --rerank-blend {args.rerank_blend}"
        )
    if args.rank_prior is not None:
        parts.append(f"--rank-prior {args.rank_prior:g}")
    return " ".join(parts)


def suffix(args: argparse.Namespace) -> str:
    """The results file's suffix for the variant ("" for the defaults)."""
    if not label(args):
        return ""
    parts = [args.embedder] if args.embedder != next(iter(EMBEDDERS)) else []
    if args.rerank != "off":
        parts.append(f"rerank{args.rerank_candidates}x{args.rerank_max_length}{args.rerank_blend}")
    if args.rank_prior is not None:
        parts.append(f"prior{args.rank_prior:g}")
    return "-" + "-".join(parts)


def apply(services: Any, args: argparse.Namespace) -> None:
    """Give the services' retriever the variant's re-ranker."""
    if args.rank_prior is not None:
        services.retriever.rank_prior = args.rank_prior
    if args.rerank == "off":
        return
    from retrieval.search.rerank import OnnxReranker

    reranker: Any = OnnxReranker(max_length=args.rerank_max_length)
    if args.rerank_blend == "ranks":
        reranker = RankBlend(reranker)
    services.retriever.reranker = reranker
    services.retriever.rerank_candidates = args.rerank_candidates
