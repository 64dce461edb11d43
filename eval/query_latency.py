"""`/query` latency of a running `folio serve` (model loaded) over an existing index, on loopback.

    python -m eval.query_latency [--data-dir DIR] [--data ../shared/data] [-n 200]

DIR defaults to the newest finished FinanceBench check index that `python -m eval answers
--split check` built with the default embedder (`.bench/retrieval/financebench-check-*`).

Starts the server as a subprocess with no answer sentence's vector kept (the index's sentence
cache is emptied first; FOLIO_ANSWER_SENTENCES=idle fills it only between queries), warms it up
with questions of its own (none of the measured ones, so no cache holds a measured question's
answer), then sends up to n FinanceBench questions one at a time, each once, and reports
p50/p90/p99 client-side latency and the error count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import httpx

from eval.bench_results import BenchRow, record
from eval.serving import ServerDidNotStartError, folio_server

# warm-up questions of no benchmark: they load the model and the index, and fill no cache that a
# measured question could hit
_WARM_UP = (
    "What does this document say about its subject?",
    "Which table lists the figures of the year?",
    "Who signed the report?",
)


def _check_index(work: Path = Path(".bench/retrieval")) -> Path | None:
    """The newest finished FinanceBench check index under `work`, if any."""
    from eval.retrieval_index import default_embedder_indexes

    built = [p.parent for p in work.glob("financebench-check-*/bench-ingest.json")]
    done = sorted(default_embedder_indexes(built), key=lambda p: p.stat().st_mtime)
    return done[-1] if done else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=5)
    args = parser.parse_args(argv)
    questions_file = args.data / "financebench" / "questions.jsonl"
    args.data_dir = args.data_dir or _check_index()
    if not questions_file.exists() or args.data_dir is None or not args.data_dir.exists():
        print(f"skipped: need {questions_file} and an index in {args.data_dir}")
        return 0
    questions = [json.loads(x)["question"] for x in questions_file.read_text().splitlines() if x]
    from server.services import SENTENCE_CACHE_FILE  # the services' stack, only when run

    # no answer sentence's vector is kept from earlier runs (the answers benchmark asks some of
    # these questions): each measured question embeds what its own hits need
    for path in args.data_dir.glob(f"{SENTENCE_CACHE_FILE}*"):
        path.unlink()
    try:
        with folio_server(args.data_dir) as base, httpx.Client(base_url=base, timeout=30) as client:
            for q in _WARM_UP:
                client.post("/query", json={"question": q, "top_k": args.top_k})
            latencies, errors = [], 0
            for question in list(dict.fromkeys(questions))[: args.n]:
                t0 = time.perf_counter()
                r = client.post("/query", json={"question": question, "top_k": args.top_k})
                latencies.append((time.perf_counter() - t0) * 1000)
                errors += r.status_code != 200
            points = client.get("/health").json()["points"]
    except ServerDidNotStartError:
        print("server did not start")
        return 1
    cuts = statistics.quantiles(latencies, n=100)
    print(f"/query over {points} points, {len(latencies)} sequential requests, top_k={args.top_k}")
    print(
        f"p50 {statistics.median(latencies):.1f} ms, p90 {cuts[89]:.1f} ms, p99 {cuts[98]:.1f} ms, "
        f"errors {errors}"
    )
    where = (
        f"{points} points, {len(latencies)} distinct questions, one at a time, top_k {args.top_k}"
    )
    record(
        "query-latency",
        "Query latency",
        f"python -m eval query_latency --data-dir {args.data_dir} -n {args.n}",
        [
            BenchRow(set=where, figure=f"/query {name} ms", value=f"{value:.0f}")
            for name, value in (
                ("p50", statistics.median(latencies)),
                ("p90", cuts[89]),
                ("p99", cuts[98]),
            )
        ]
        + [BenchRow(set=where, figure="errors", value=str(errors))],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
