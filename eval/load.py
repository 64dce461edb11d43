"""`/query` under load: N concurrent clients for a bounded time against `folio serve` on loopback.

    python -m eval load [--clients 1,8,32] [--seconds 30] [--min-chunks 50000]

Builds (once, under `.bench/load/`) an index of at least `--min-chunks` chunks from the cached
retrieval-benchmark indexes (see `eval.load_index`), starts the server on it in a subprocess,
waits for `/health`, then for each concurrency level runs that many asyncio clients, each sending
real benchmark questions one after another until the time is up. Prints a markdown table of
throughput, p50, p99 and errors per level, with the load average of the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from eval.load_index import build_load_index, source_indexes
from eval.retrieval_data import DATASETS, load_corpus
from eval.serving import folio_server

__all__ = ["LevelResult", "benchmark_questions", "main", "run_level"]

log = logging.getLogger(__name__)


@dataclass
class LevelResult:
    clients: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]
    load_avg: float

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: int) -> float:
        if len(self.latencies_ms) < 2:
            return self.latencies_ms[0] if self.latencies_ms else float("nan")
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[q - 1]


async def run_level(
    base_url: str,
    questions: list[str],
    clients: int,
    seconds: float,
    *,
    top_k: int = 5,
    headers: dict[str, str] | None = None,
    asked: Iterator[int] | None = None,
) -> LevelResult:
    """`clients` concurrent loops posting `/query` until `seconds` have passed; `asked` numbers
    the questions (shared across calls, a level goes on from the questions of the one before,
    so a question the warm-up asked is not asked again until the list comes round)."""
    counter = asked if asked is not None else itertools.count()
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(
        base_url=base_url, timeout=120, limits=limits, headers=headers
    ) as client:
        deadline = time.perf_counter() + seconds

        async def one_client() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                question = questions[next(counter) % len(questions)]
                began = time.perf_counter()
                try:
                    response = await client.post(
                        "/query", json={"question": question, "top_k": top_k}
                    )
                    ok = response.status_code == 200
                except httpx.HTTPError as exc:
                    log.warning("request failed: %s", exc)
                    ok = False
                latencies.append((time.perf_counter() - began) * 1000)
                errors += not ok

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return LevelResult(clients, len(latencies), errors, elapsed, latencies, os.getloadavg()[0])


def benchmark_questions(data: Path) -> list[str]:
    """Every question of the three retrieval data sets, interleaved so each level mixes them."""
    sets = [[c.question for c in load_corpus(name, data).cases] for name in DATASETS]
    mixed = [q for group in itertools.zip_longest(*sets) for q in group if q]
    return list(dict.fromkeys(mixed))


def _table(results: list[LevelResult]) -> str:
    rows = [
        "| clients | requests | throughput (req/s) | p50 (ms) | p99 (ms) | errors "
        "| load avg (1 min) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(
            f"| {r.clients} | {r.requests} | {r.throughput:.1f} | {r.percentile(50):.0f} "
            f"| {r.percentile(99):.0f} | {r.errors} | {r.load_avg:.1f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval load", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--bench", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--work", type=Path, default=Path(".bench/load"))
    parser.add_argument("--min-chunks", type=int, default=50_000)
    parser.add_argument("--clients", default="1,8,32", help="comma-separated concurrency levels")
    parser.add_argument("--seconds", type=float, default=30.0, help="per level")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds at 1 client first")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--api-key", default="load-bench", help="run with auth on ('' for off)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if not args.data.is_dir() or not source_indexes(args.bench):
        print(f"skipped: need the shared data ({args.data}) and cached indexes in {args.bench}")
        print("(build them with `python -m eval retrieval`)")
        return 0
    questions = benchmark_questions(args.data)
    target = args.work / f"index-{args.min_chunks}"
    index = build_load_index(args.bench, target, args.min_chunks)
    if index is None:
        print(f"skipped: no indexed chunks in {args.bench}")
        return 0
    levels = [int(n) for n in args.clients.split(",") if n.strip()]
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else None
    results = []
    server = folio_server(
        index.directory,
        env={"FOLIO_API_KEY": args.api_key or ""},
        log_file=args.work / "server.log",
        start_timeout_s=600,
    )
    with server as base:
        points = httpx.get(f"{base}/health", timeout=30).json()["points"]
        asked = itertools.count()

        def level(clients: int, seconds: float) -> LevelResult:
            return asyncio.run(
                run_level(
                    base,
                    questions,
                    clients,
                    seconds,
                    top_k=args.top_k,
                    headers=headers,
                    asked=asked,
                )
            )

        level(1, args.warmup)
        for clients in levels:
            result = level(clients, args.seconds)
            log.info("%d clients: %d requests, %d errors", clients, result.requests, result.errors)
            results.append(result)
    print(
        f"\n/query on {points} points ({index.real_chunks} distinct real chunks, "
        f"every document {index.copies + 1} times), {len(questions)} questions, "
        f"top_k={args.top_k}, {args.seconds:.0f} s per level, {os.cpu_count()} CPUs\n"
    )
    print(_table(results))
    return 1 if any(r.errors for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
