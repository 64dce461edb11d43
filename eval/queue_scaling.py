"""Ingest pages/s of one coordinator with 0 (the embedded pipeline), 1, 2 and 4 `folio worker`
processes on a real redis-server, the same files in the same run, and the queue's cost per unit.

    python -m eval.queue_scaling [--data ../shared/data] [--files 4] [--workers 1,2,4]

The hashing embedder stands in for the model, so the figures are of page reading and the queue,
not of embedding (which bounds a real ingest on these cores; see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from ocr_engine.options import OcrMode
from server.services import build_services
from server.settings import Settings

FOLIO = str(Path(sys.executable).parent / "folio")


def _redis(port: int, cwd: Path) -> subprocess.Popen[bytes]:
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("skipped: redis-server is not installed (`make test` installs it)")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        ping = subprocess.run(
            ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True
        )
        if ping.stdout.strip() == "PONG":
            return proc
        if time.monotonic() > deadline:
            raise SystemExit("redis-server did not start")
        time.sleep(0.1)


def _run(pdfs: list[Path], data: Path, workers: int, url: str | None) -> tuple[int, float, int]:
    """(pages, seconds, units sent) of one ingest of `pdfs` into a new data directory."""
    more: dict[str, object] = {"broker_url": url} if workers else {}
    settings = Settings.model_validate({"data_dir": data, "ocr": OcrMode.never, **more})
    services = build_services(settings, embedder=HashEmbedder(64))
    env = {**os.environ, "FOLIO_BROKER_URL": url or "", "HF_HUB_OFFLINE": "1"}
    procs = [
        subprocess.Popen(
            [FOLIO, "worker", "--data-dir", str(data)], env=env, stderr=subprocess.DEVNULL
        )
        for _ in range(workers)
    ]
    try:
        started = time.perf_counter()
        results = services.sync.ingest_paths(pdfs)
        seconds = time.perf_counter() - started
        sent = int(getattr(services.ingestor.extractor, "sent", 0))
    finally:
        services.close()
        for proc in procs:
            proc.terminate()
            proc.wait(30)
    return sum(r.pages for r in results), seconds, sent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args(argv)
    folder = args.data / "docugami_sec10q" / "docs"
    if not folder.exists():
        print(f"skipped: {folder} not found (the benchmark reads ../shared/data in place)")
        return 0
    pdfs = sorted(folder.glob("*.pdf"))[: args.files]
    counts = [0] + [int(n) for n in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="folio-queue-") as work:
        port = free_port()
        redis = _redis(port, Path(work))
        url = f"redis://127.0.0.1:{port}/0"
        rows = []
        try:
            for n in counts:
                pages, seconds, sent = _run(pdfs, Path(work) / f"w{n}", n, url if n else None)
                rows.append((n, pages, seconds, sent))
        finally:
            redis.kill()
            redis.wait(10)
    base = rows[0][2]
    print(f"{len(pdfs)} files of {folder}, hashing embedder, load avg {os.getloadavg()[0]:.1f}")
    print("| workers | pages | seconds | pages/s | units | vs embedded |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, pages, seconds, sent in rows:
        label = "0 (embedded)" if n == 0 else str(n)
        units = str(sent) if n else "—"
        print(
            f"| {label} | {pages} | {seconds:.1f} | {pages / seconds:.2f} | {units} | "
            f"{base / seconds:.2f}x |"
        )
    one = next((r for r in rows if r[0] == 1), None)
    if one is not None and one[3]:
        print(f"queue cost per unit (1 worker against embedded): {(one[2] - base) / one[3]:.3f} s")
    print("command: python -m eval.queue_scaling " + " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
