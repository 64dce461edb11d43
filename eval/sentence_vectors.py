"""Answer sentences embedded ahead into an existing index's sentence cache, as ingest now does.

    python -m eval sentence_vectors --data-dir .bench/load/index-50000

For an index built before ingest embedded them (or assembled from other indexes' points, as the
load index is): the answer texts of every indexed chunk (`retrieval.sentence_cache.answer_texts`)
embedded with the shipped model into DATA_DIR/sentence_cache.sqlite3, those already there
skipped. Prints the chunks, the texts embedded, the seconds and texts/s.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

__all__ = ["main"]

log = logging.getLogger(__name__)

_GROUP = 64  # chunks whose texts are embedded together


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if not (args.data_dir / "index").is_dir():
        print(f"skipped: no index in {args.data_dir}")
        return 0
    from ingest.embed_cache import EmbeddingCache
    from retrieval.embedder import SentenceTransformerEmbedder
    from retrieval.sentence_cache import remember_answer_texts
    from server.datadir import DataDirLock
    from server.services import SENTENCE_CACHE_FILE, open_store
    from server.settings import Settings

    embedder = SentenceTransformerEmbedder()
    lock = DataDirLock(args.data_dir, "sentence_vectors").acquire()
    try:
        store = open_store(Settings(data_dir=args.data_dir), embedder.dim, model=embedder.name)
        cache = EmbeddingCache(args.data_dir / SENTENCE_CACHE_FILE)
        embedder.embed_query("warm up")
        chunks = embedded = 0
        began = time.perf_counter()
        try:
            for n, doc_id in enumerate(sorted(store.doc_ids()), 1):
                found = store.chunks(doc_id)
                for start in range(0, len(found), _GROUP):
                    group = found[start : start + _GROUP]
                    embedded += remember_answer_texts(group, embedder, cache)
                chunks += len(found)
                log.info("%d documents, %d chunks, %d texts embedded", n, chunks, embedded)
        finally:
            cache.close()
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
