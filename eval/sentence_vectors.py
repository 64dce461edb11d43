"""Answer sentences embedded ahead into an existing index's sentence cache, as ingest now does.

    python -m eval sentence_vectors --data-dir .bench/load/index-50000 [--questions load]

For an index built before ingest embedded them (or assembled from other indexes' points, as the
load index is): the answer texts of every indexed chunk
(`retrieval.answer.sentence_cache.answer_texts`) embedded with the shipped model into
DATA_DIR/sentence_cache.sqlite3, those already there skipped. Prints the chunks, the texts embedded,
the seconds and texts/s.

With `--questions load` (or `mmlongbench`), only the chunks that `python -m eval load`'s questions
(or MMLongBench-Doc's, which `eval.first_citation` asks) find, their top 5 hits searched as
`folio serve` searches, each with all its answer texts: for a run of those questions, the same
cache hits as after a full fill (an hour of 2 shared CPU cores for the load index's 156,000 texts),
in minutes; what other questions would find stays unembedded.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval.answer.retriever import Retriever
    from retrieval.schema import Chunk

__all__ = ["main"]

log = logging.getLogger(__name__)

_GROUP = 64  # chunks whose texts are embedded together


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--questions", choices=("load", "mmlongbench"), help="their hits only")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"), help="the questions")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if not (args.data_dir / "index").is_dir():
        print(f"skipped: no index in {args.data_dir}")
        return 0
    from ingest.ledger.ledger import Ledger
    from ingest.pipeline.embed_cache import EmbeddingCache
    from retrieval.answer.sentence_cache import remember_answer_texts
    from retrieval.index.embedder import SentenceTransformerEmbedder
    from server.datadir import DataDirLock
    from server.services import SENTENCE_CACHE_FILE, build_retriever, open_store
    from server.settings import Settings

    embedder = SentenceTransformerEmbedder()
    lock = DataDirLock(args.data_dir, "sentence_vectors").acquire()
    try:
        settings = Settings(data_dir=args.data_dir)
        store = open_store(settings, embedder.dim, model=embedder.name)
        cache = EmbeddingCache(args.data_dir / SENTENCE_CACHE_FILE)
        ledger = Ledger(args.data_dir)
        embedder.embed_query("warm up")
        chunks = embedded = 0
        began = time.perf_counter()
        try:
            groups: Iterable[list[Chunk]]
            if args.questions:
                retriever = build_retriever(settings, embedder, store, ledger)
                groups = [_found(retriever, _questions(args.questions, args.data))]
            else:
                groups = (store.chunks(doc_id) for doc_id in sorted(store.doc_ids()))
            for n, found in enumerate(groups, 1):
                for start in range(0, len(found), _GROUP):
                    group = found[start : start + _GROUP]
                    embedded += remember_answer_texts(group, embedder, cache)
                chunks += len(found)
                log.info("%d groups, %d chunks, %d texts embedded", n, chunks, embedded)
        finally:
            cache.close()
            ledger.close()
            store.close()
    finally:
        lock.release()
    seconds = time.perf_counter() - began
    print(
        f"{args.data_dir}: {chunks} chunks, {embedded} answer texts embedded in {seconds:.0f} s "
        f"({embedded / seconds if seconds else 0:.0f} texts/s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def _questions(name: str, data: Path) -> list[str]:
    """`python -m eval load`'s questions, or MMLongBench-Doc's (with MMDocIR's on its files)."""
    from eval.evidence_boxes import load_box_cases
    from eval.load import benchmark_questions
    from eval.retrieval_data import load_corpus

    if name == "load":
        return benchmark_questions(data)
    corpus = load_corpus(name, data)
    boxed = load_box_cases(data, corpus.pdfs)
    return list(dict.fromkeys([*(c.question for c in corpus.cases), *(b.question for b in boxed)]))


def _found(retriever: Retriever, questions: list[str]) -> list[Chunk]:
    """The distinct chunks among the top 5 hits of the questions."""
    found: dict[tuple[str, str], Chunk] = {}
    for question in questions:
        for hit in retriever.search(question, 5):
            found.setdefault((hit.chunk.doc_id, hit.chunk.chunk_id), hit.chunk)
    return list(found.values())
