"""`/query` latency of a running `folio serve` (model loaded) over an existing index, on loopback.

    python -m eval.query_latency [--data-dir DIR | --min-chunks 50000] [--rerank-stub]
        [--data ../shared/data] [-n 200]

DIR defaults to the newest finished FinanceBench check index that `python -m eval answers
--split check` built with the default embedder (`.bench/retrieval/financebench-check-*`);
`--min-chunks N` asks instead the load benchmark's index of at least N chunks, assembled once
from the cached indexes' real chunks and vectors (`eval.load_index`, `.bench/load/index-N`).
`--rerank-stub` runs the server with `FOLIO_RERANK=<url>` of a rerank service on loopback that
answers at once (`doubles/rerank_stub.py`): folio's own cost of a remote re-rank, not a model's.
With `--min-chunks` the questions are the three retrieval sets' (FinanceBench, MMLongBench-Doc,
Docugami), interleaved; else FinanceBench's.

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
from contextlib import ExitStack
from pathlib import Path

import httpx

from doubles.rerank_stub import RerankStub
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


def _measure(
    stack: ExitStack, args: argparse.Namespace, questions: list[str], env: dict[str, str]
) -> tuple[list[float], int, int]:
    """Each question's client-side ms, the errors and the index's points, from a fresh server."""
    base = stack.enter_context(folio_server(args.data_dir, env=env, start_timeout_s=600))
    client = stack.enter_context(httpx.Client(base_url=base, timeout=60))
    for q in _WARM_UP:
        client.post("/query", json={"question": q, "top_k": args.top_k})
    latencies, errors = [], 0
    for question in list(dict.fromkeys(questions))[: args.n]:
        t0 = time.perf_counter()
        r = client.post("/query", json={"question": question, "top_k": args.top_k})
        latencies.append((time.perf_counter() - t0) * 1000)
        errors += r.status_code != 200
    return latencies, errors, int(client.get("/health").json()["points"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--min-chunks", type=int, default=0)
    parser.add_argument("--rerank-stub", action="store_true")
    args = parser.parse_args(argv)
    questions_file = args.data / "financebench" / "questions.jsonl"
    if args.min_chunks:
        from eval.load_index import build_load_index

        built = build_load_index(
            Path(".bench/retrieval"),
            Path(".bench/load") / f"index-{args.min_chunks}",
            args.min_chunks,
        )
        if built is None:
            print("skipped: no cached indexes in .bench/retrieval to assemble the load index from")
            return 0
        args.data_dir = built.directory
    args.data_dir = args.data_dir or _check_index()
    if not questions_file.exists() or args.data_dir is None or not args.data_dir.exists():
        print(f"skipped: need {questions_file} and an index in {args.data_dir}")
        return 0
    if args.min_chunks:  # the three sets' questions, interleaved, as the load benchmark asks
        from eval.load import benchmark_questions

        questions = benchmark_questions(args.data)
    else:
        questions = [json.loads(x)["question"] for x in questions_file.read_text().splitlines()]
    from server.services import SENTENCE_CACHE_FILE  # the services' stack, only when run

    # no answer sentence's vector is kept from earlier runs (the answers benchmark asks some of
    # these questions): each measured question embeds what its own hits need
    for path in args.data_dir.glob(f"{SENTENCE_CACHE_FILE}*"):
        path.unlink()
    with ExitStack() as stack:
        stub = stack.enter_context(RerankStub()) if args.rerank_stub else None
        env = {"FOLIO_RERANK": stub.url} if stub is not None else {}
        try:
            latencies, errors, points = _measure(stack, args, questions, env)
        except ServerDidNotStartError:
            print("server did not start")
            return 1
    if stub is not None:
        print(f"the rerank stub answered {len(stub.requests)} requests")
        if len(stub.requests) < len(latencies):
            print("error: the server did not re-rank every question through FOLIO_RERANK")
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
    where += ", FOLIO_RERANK=<a rerank stub on loopback>" if args.rerank_stub else ""
    place = f"--min-chunks {args.min_chunks}" if args.min_chunks else f"--data-dir {args.data_dir}"
    flag = " --rerank-stub" if args.rerank_stub else ""
    name = "query-latency" + (f"-{args.min_chunks}" if args.min_chunks else "")
    record(
        name + ("-rerank-stub" if args.rerank_stub else ""),
        "Query latency",
        f"python -m eval query_latency {place} -n {args.n}{flag}",
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
