"""A folio ingest run for the crash test: `python -m tests.crash_driver DATA_DIR FOLDER`.

The real services (ledger, Qdrant Edge, page cache, extraction worker process, sync) with the
hash embedder, so a run takes seconds and the test can kill it at any moment of it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ingest.pipeline import IngestOptions
from ocr_engine.options import ExtractOptions, OcrMode
from server.services import build_services
from server.settings import Settings
from tests.fakes import HashEmbedder


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
