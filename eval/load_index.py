"""The index for the load benchmark, built from points already embedded by the retrieval benchmark.

Embedding 50,000 chunks on a small CPU takes hours, so the load index is assembled from the cached
retrieval indexes under `.bench/retrieval/` (FinanceBench, MMLongBench-Doc, Docugami: real chunks
with their real vectors). When they hold fewer chunks than asked for, whole documents are copied
again under new document ids (sha256 of `{doc_id}/copy{n}`, source `NAME (copy n)`) until the
index reaches the target: the copies are real text and real vectors, but duplicates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval.retrieval_cache import edge_points
from eval.retrieval_index import default_embedder_indexes

__all__ = ["LoadIndex", "build_load_index", "source_indexes"]

log = logging.getLogger(__name__)

CORPORA = ("financebench", "mmlongbench", "docugami")
_DONE = "load-index.json"
_BATCH = 256


@dataclass
class LoadIndex:
    directory: Path
    chunks: int
    real_chunks: int
    documents: int
    copies: int
    sources: list[str]


def _indexed_chunks(data_dir: Path) -> int:
    with sqlite3.connect(f"file:{data_dir / 'ledger.sqlite3'}?mode=ro", uri=True) as db:
        row = db.execute(
            "SELECT coalesce(sum(chunks), 0) FROM documents WHERE status IN ('ok', 'partial')"
        ).fetchone()
    return int(row[0])


def source_indexes(bench: Path) -> list[Path]:
    """Per corpus, the cached folio index (data dir) holding the most chunks."""
    found = []
    for corpus in CORPORA:
        dirs = [
            d
            for d in default_embedder_indexes(sorted(bench.glob(f"{corpus}-*")))
            if (d / "index").is_dir() and (d / "ledger.sqlite3").is_file()
        ]
        if dirs:
            found.append(max(dirs, key=_indexed_chunks))
    return found


def _documents(data_dir: Path) -> dict[str, tuple[str, int, int]]:
    """doc_id -> (source, size, pages) of the indexed documents of a data dir."""
    with sqlite3.connect(f"file:{data_dir / 'ledger.sqlite3'}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT doc_id, source, size, pages FROM documents WHERE status IN ('ok', 'partial')"
        ).fetchall()
    return {r[0]: (r[1], int(r[2]), int(r[3])) for r in rows}


def _read_points(index_dir: Path) -> dict[str, list[tuple[Any, list[float]]]]:
    """Every point of a Qdrant Edge index as (chunk, dense vector), grouped by document."""
    by_doc: dict[str, list[tuple[Any, list[float]]]] = defaultdict(list)
    for points in edge_points(index_dir):
        for chunk, vector in points:
            by_doc[chunk.doc_id].append((chunk, vector))
    return by_doc


def _copy_id(doc_id: str, n: int) -> str:
    return doc_id if n == 0 else hashlib.sha256(f"{doc_id}/copy{n}".encode()).hexdigest()


def build_load_index(bench: Path, target: Path, min_chunks: int) -> LoadIndex | None:
    """A folio data dir under `target` with at least `min_chunks` points; reused when built."""
    done = target / _DONE
    if done.is_file():
        info = json.loads(done.read_text())
        return LoadIndex(directory=target, **info)
    sources = source_indexes(bench)
    if not sources:
        return None
    from ingest.ledger.ledger import Ledger
    from ingest.ledger.records import DocStatus, Timings, Versions
    from retrieval.index.edge_store import EdgeStore

    docs: list[tuple[str, int, int, list[tuple[Any, list[float]]]]] = []
    seen: set[str] = set()
    for data_dir in sources:
        known = _documents(data_dir)
        for doc_id, points in _read_points(data_dir / "index").items():
            if doc_id in known and doc_id not in seen:  # a PDF can be in two data sets
                seen.add(doc_id)
                source, size, pages = known[doc_id]
                docs.append((source, size, pages, sorted(points, key=lambda p: p[0].chunk_id)))
        log.info("read %s", data_dir)
    real = sum(len(d[3]) for d in docs)
    if real == 0:
        return None
    copies = -(-min_chunks // real)  # ceil: every document the same number of times
    dim = len(docs[0][3][0][1])
    target.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(target)
    store = EdgeStore(target / "index", dim=dim)
    total = 0
    try:
        for n in range(copies):
            for source, size, pages, points in docs:
                doc_id = _copy_id(points[0][0].doc_id, n)
                name = source if n == 0 else f"{Path(source).stem} (copy {n}).pdf"
                chunks = [
                    c.model_copy(update={"doc_id": doc_id, "source": name}) for c, _ in points
                ]
                vectors = np.asarray([v for _, v in points], dtype=np.float32)
                for start in range(0, len(chunks), _BATCH):
                    end = start + _BATCH
                    store.upsert(chunks[start:end], vectors[start:end])
                ledger.add(doc_id, name, size, uploaded=True)
                ledger.start(doc_id)
                ledger.finish(
                    doc_id,
                    DocStatus.ok,
                    pages=pages,
                    chunks=len(chunks),
                    errors=[],
                    timings=Timings(),
                    versions=Versions(),
                )
                total += len(chunks)
            log.info("copy %d of %d written: %d chunks so far", n + 1, copies, total)
    finally:
        store.close()
        ledger.close()
    info = {
        "chunks": total,
        "real_chunks": real,
        "documents": len(docs) * copies,
        "copies": copies - 1,
        "sources": [str(s) for s in sources],
    }
    done.write_text(json.dumps(info, indent=1))
    return LoadIndex(directory=target, **info)
