"""A folio ingest run for the crash test: `python -m doubles.crash_driver DATA_DIR FOLDER`.

The real services (ledger, Qdrant Edge, page cache, extraction worker process, sync) with the
hash embedder, so a run takes seconds and the test can kill it at any moment of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from doubles.fakes import HashEmbedder
from ingest.ledger.ledger import Ledger
from ingest.pipeline.pipeline import IngestOptions
from ocr_engine.options import ExtractOptions, OcrMode
from retrieval.index.edge_store import EdgeStore
from server.services import build_services
from server.settings import Settings


def snapshot(data_dir: Path, dim: int = 64) -> dict[str, Any]:
    """Ledger entries and point ids, per document, as a clean comparison can use them."""
    ledger = Ledger(data_dir)
    documents = {
        r.doc_id: (r.status.value, r.pages, r.chunks, sorted(r.paths), r.errors)
        for r in ledger.documents()
    }
    ledger.close()
    store = EdgeStore(data_dir / "index", dim=dim)
    try:
        points = {d: sorted(c.chunk_id for c in store.chunks(d)) for d in store.doc_ids()}
        total = store.count()
    finally:
        store.close()
    return {"documents": documents, "points": points, "total": total}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--delay", type=float, default=0.01, help="seconds per embedding call")
    parser.add_argument("--window", type=int, default=4)
    args = parser.parse_args(argv)
    options = IngestOptions(
        extract=ExtractOptions(ocr=OcrMode.never),
        extract_processes=args.processes,
        window=args.window,
        embed_slice=4,
    )
    services = build_services(
        Settings(data_dir=args.data_dir, ocr=OcrMode.never),
        embedder=HashEmbedder(delay_s=args.delay),
        options=options,
    )
    try:
        recovered = services.sync.recover()
        print("ready", flush=True)  # started up: the test times its kills from here
        results = services.sync.ingest_paths([args.folder])
    finally:
        services.close()
    summary = {
        "recovered": recovered.model_dump(),
        "results": {r.source: r.status.value for r in results},
    }
    json.dump(summary, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
