"""How long `folio docs` and `folio query` take beside a running `folio serve` (issue 36 item 9).

    python -m eval cli_latency [--data ../shared/data] [-n 5]

Ingests two Docling test PDFs into a fresh data directory with `folio ingest`, starts `folio
serve` on it (the shipped model loaded), then runs each command `n` times as a user would, each
a new process that finds the server through the data directory's lock file, and reports the
median wall time; beside it, the floor: the same interpreter starting and importing nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eval.bench_results import BenchRow, record
from eval.serving import ServerDidNotStartError, folio_server

_PDFS = ("2305.03393v1-pg9.pdf", "amt_handbook_sample.pdf")
_QUESTION = "What does the table compare?"


def _folio() -> list[str]:
    """The `folio` command of this environment (its console script, else `python -m server`)."""
    script = Path(sys.executable).parent / "folio"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "server"]


def _timed(argv: list[str], n: int) -> tuple[float, str]:
    """The median wall seconds of `n` runs of `argv`, and the last run's output."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    times, out = [], ""
    for _ in range(n):
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-500:]}")
        out = done.stdout
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("-n", type=int, default=5)
    args = parser.parse_args(argv)
    pdfs = [args.data / "docling" / "pdf" / name for name in _PDFS]
    if not all(p.is_file() for p in pdfs):
        print(f"skipped: {args.data / 'docling' / 'pdf'} not found")
        return 0
    folio = _folio()
    with tempfile.TemporaryDirectory(prefix="folio-cli-") as tmp:
        data = Path(tmp) / "data"
        subprocess.run(
            [*folio, "ingest", *map(str, pdfs), "--data-dir", str(data)],
            check=True,
            capture_output=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        floor, _ = _timed([sys.executable, "-c", "pass"], args.n)
        try:
            with folio_server(data):
                docs, listed = _timed([*folio, "docs", "--data-dir", str(data)], args.n)
                query, answered = _timed(
                    [*folio, "query", _QUESTION, "--data-dir", str(data)], args.n
                )
        except ServerDidNotStartError:
            print("server did not start")
            return 1
    if not all(p.name in listed for p in pdfs) or not answered.strip():
        print(f"unexpected output:\n{listed}\n{answered}")
        return 1
    where = f"beside a running folio serve, 2 documents, median of {args.n} runs"
    rows = [
        BenchRow(set=where, figure="`folio docs` s", value=f"{docs:.2f}", baseline=f"{floor:.2f}"),
        BenchRow(
            set=where, figure="`folio query` s", value=f"{query:.2f}", baseline=f"{floor:.2f}"
        ),
    ]
    for row in rows:
        print(f"{row.figure}: {row.value} (python starting alone: {row.baseline})")
    record(
        "cli-latency",
        "CLI beside a server",
        f"python -m eval cli_latency -n {args.n}",
        rows,
        ["baseline: `python -c pass`, the interpreter starting alone, in the same run"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
