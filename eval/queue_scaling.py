"""Ingest pages/s of one coordinator with 0 (the embedded pipeline), 1, 2 and 4 `folio worker`
processes on a real redis-server, the same files in the same run, and the queue's cost per unit;
the workers read the documents from shared storage (`--data-dir`, `shared`) or, started in empty
directories, fetch them over HTTP from the coordinator's API on loopback (`http`): bytes moved
per page and the workers' cache hit rate.

    python -m eval.queue_scaling [--data ../shared/data] [--files 4] [--workers 1,2,4]
        [--modes shared,http]

The hashing embedder stands in for the model, so the figures are of page reading and the queue,
not of embedding (which bounds a real ingest on these cores; see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from doubles.fakes import HashEmbedder
from doubles.loopback import ThreadedServer, free_port
from ocr_engine.options import OcrMode
from server.serve.app import create_app
from server.services import Services, build_services
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


class _Served(ThreadedServer):
    name = "coordinator"

    def __init__(self, services: Services, sock: socket.socket) -> None:
        self._listen(create_app(services, watch=False), sock)


# workers, mode, pages, seconds, units sent, (cache hits, misses, bytes fetched)
_Row = tuple[int, str, int, float, int, tuple[int, int, int]]
_CACHE_LINE = re.compile(r"cache: (\d+) hits, (\d+) misses .*?, (\d+) bytes fetched")


def _cache(logs: list[Path]) -> tuple[int, int, int]:
    """(hits, misses, bytes fetched) over the workers' closing log lines."""
    hits = misses = fetched = 0
    for log in logs:
        for found in _CACHE_LINE.finditer(log.read_text(errors="replace")):
            hits, misses, fetched = (
                hits + int(found[1]),
                misses + int(found[2]),
                fetched + int(found[3]),
            )
    return hits, misses, fetched


def _run(
    pdfs: list[Path], data: Path, workers: int, url: str | None, mode: str
) -> tuple[int, float, int, tuple[int, int, int]]:
    """(pages, seconds, units sent, (cache hits, misses, bytes fetched)) of one ingest of `pdfs`
    into a new data directory."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    more: dict[str, object] = {"broker_url": url} if workers else {}
    if workers and mode == "http":
        more["public_url"] = f"http://127.0.0.1:{sock.getsockname()[1]}"
    settings = Settings.model_validate({"data_dir": data, "ocr": OcrMode.never, **more})
    services = build_services(settings, embedder=HashEmbedder(64))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")},
        "FOLIO_BROKER_URL": url or "",
        "HF_HUB_OFFLINE": "1",
    }
    logs = [data.parent / f"{data.name}-worker{i}.log" for i in range(workers)]
    procs = []
    for i, log in enumerate(logs):
        args = [FOLIO, "worker"] + (["--data-dir", str(data)] if mode == "shared" else [])
        home = data.parent / f"{data.name}-worker{i}"
        home.mkdir()
        with log.open("wb") as out:
            procs.append(subprocess.Popen(args, env=env, cwd=home, stderr=out))
    server = _Served(services, sock) if workers and mode == "http" else None
    try:
        if server is not None:
            server.__enter__()
        started = time.perf_counter()
        results = services.sync.ingest_paths(pdfs)
        seconds = time.perf_counter() - started
        sent = int(getattr(services.ingestor.extractor, "sent", 0))
    finally:
        if server is not None:
            server.__exit__()
        services.close()
        for proc in procs:
            proc.terminate()
            proc.wait(30)
    return sum(r.pages for r in results), seconds, sent, _cache(logs)


def _record(rows: list[_Row], corpus: str, argv: list[str] | None) -> None:
    """Record every run's pages/s, and the http runs' bytes fetched per page and cache hit rate."""
    from eval.bench_results import BenchRow, record

    base = rows[0][3]
    out = []
    for n, mode, pages, seconds, _sent, _cache in rows:
        speed = f"pages/s, {n or 'no'} worker(s), documents from {mode}"
        out.append(
            BenchRow(
                set=corpus,
                figure=speed,
                value=f"{pages / seconds:.2f}",
                baseline=f"{base / seconds:.2f}x embedded",
            )
        )
    for n, mode, pages, _seconds, _sent, (hits, misses, fetched) in rows:
        if mode != "http" or not n:
            continue
        out.append(
            BenchRow(
                set=corpus,
                figure=f"bytes fetched per page, {n} worker(s), http",
                value=f"{fetched / pages:,.0f}" if pages else "—",
            )
        )
        asked = hits + misses
        out.append(
            BenchRow(
                set=corpus,
                figure=f"cache hit rate, {n} worker(s), http",
                value=f"{hits / asked:.0%} of {asked} units" if asked else "—",
            )
        )
    command = "python -m eval queue_scaling " + " ".join(argv or sys.argv[1:])
    record("queue-scaling", "Scale-out", command, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--modes", default="shared,http", help="shared, http or both")
    args = parser.parse_args(argv)
    folder = args.data / "docugami_sec10q" / "docs"
    if not folder.exists():
        print(f"skipped: {folder} not found (the benchmark reads ../shared/data in place)")
        return 0
    pdfs = sorted(folder.glob("*.pdf"))[: args.files]
    runs = [(0, "embedded")] + [
        (int(n), mode) for mode in args.modes.split(",") for n in args.workers.split(",")
    ]
    with tempfile.TemporaryDirectory(prefix="folio-queue-") as work:
        port = free_port()
        redis = _redis(port, Path(work))
        url = f"redis://127.0.0.1:{port}/0"
        rows: list[_Row] = []
        try:
            for n, mode in runs:
                data = Path(work) / f"w{n}-{mode}"
                pages, seconds, sent, cache = _run(pdfs, data, n, url if n else None, mode)
                rows.append((n, mode, pages, seconds, sent, cache))
        finally:
            redis.kill()
            redis.wait(10)
    base = rows[0][3]
    print(f"{len(pdfs)} files of {folder}, hashing embedder, load avg {os.getloadavg()[0]:.1f}")
    print(
        "| workers | documents from | pages | seconds | pages/s | units | vs embedded | "
        "bytes fetched per page | cache hit rate |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n, mode, pages, seconds, sent, (hits, misses, fetched) in rows:
        label = "0 (embedded)" if n == 0 else str(n)
        units = str(sent) if n else "—"
        asked = hits + misses
        rate = f"{hits / asked:.0%}" if asked else "—"
        moved = f"{fetched / pages:,.0f}" if mode == "http" and pages else "—"
        print(
            f"| {label} | {mode} | {pages} | {seconds:.1f} | {pages / seconds:.2f} | {units} | "
            f"{base / seconds:.2f}x | {moved} | {rate} |"
        )
    _record(rows, f"{len(pdfs)} Docugami filings, hashing embedder", argv)
    one = next((r for r in rows if r[0] == 1 and r[1] == "shared"), None)
    if one is not None and one[4]:
        print(f"queue cost per unit (1 worker against embedded): {(one[3] - base) / one[4]:.3f} s")
    print("command: python -m eval.queue_scaling " + " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
