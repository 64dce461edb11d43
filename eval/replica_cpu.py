"""CPU seconds a query replica (`folio serve --query-only`) spends per `/query`, and the queries a
second of one and of two replicas, for the capacity plan (docs/scaling.md).

    python -m eval.replica_cpu [--data ../shared/data] [--docs "2023 Q3 AAPL,2023 Q3 MSFT"] [-n 40]
        [-m 60] [--clients 4]

Starts a Qdrant REST server on loopback in this process (`doubles.qdrant_stub`: qdrant-client's
engine; its CPU is not the replica's), a coordinator (`folio serve`) and one replica in fresh
temporary directories, the replica with only addresses; ingests the named SEC 10-Q filings of
docugami_sec10q through the coordinator's API; warms the replica up with questions of its own
(the model loaded, the documents' JSON fetched); then asks up to n of the dataset's questions
about those filings, one at a time, and reads the replica's CPU time (user + system of its
process, /proc/PID/stat) before and after each; then asks them all again. The replica's
answer-sentence cache starts empty, so on the first pass each question pays for embedding the
sentences its hits hold that no earlier question's did, as on a replica that has just started;
the second pass is a replica whose cache holds them.

Then throughput: `--clients` clients at once ask m other questions of the dataset about the same
companies (none asked in the first passes), first of one replica, then of two (requests spread
round robin), each pass on replicas just started (empty caches: the same m questions are new to
each); queries a second over the pass's wall time, and the replicas' CPU per query. The
coordinator runs with `FOLIO_ANSWER_SENTENCES=query`, so that it fills no sentence cache of its
own on the shared cores meanwhile. On a machine of 2 cores, which the replicas share with the
Qdrant stub and the clients (this process), two replicas cannot answer twice as fast as one: the
cores, not the replicas, are the limit.
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from doubles.loopback import free_port
from doubles.qdrant_stub import QdrantStub
from eval.bench_results import BenchRow, record

_WARM_UP = (
    "What does this document say about its subject?",
    "Which table lists the figures of the quarter?",
    "Who signed the report?",
)
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _start(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    full = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    full.update(HF_HUB_OFFLINE="1", FOLIO_OCR="never", **env)
    with (cwd / "folio.log").open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "serve", *args, "--port", str(port)],
            env=full,
            cwd=cwd,
            stdout=out,
            stderr=out,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=10).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"folio did not start: see {cwd / 'folio.log'}")
        time.sleep(0.5)


def _questions(data: Path, docs: list[str]) -> tuple[list[str], list[str]]:
    """The dataset's questions about exactly one of `docs`, and then the others about the same
    companies (other quarters, several filings), in file order, each once."""
    rows = list(csv.DictReader((data / "qna_data.csv").open(encoding="utf-8-sig")))
    exact = [r["Question"] for r in rows if r["Source Docs"].strip("*") in docs]
    tickers = {d.split()[-1] for d in docs}
    near = [
        r["Question"] for r in rows if tickers & set(r["Source Docs"].replace("*", " ").split())
    ]
    exact = list(dict.fromkeys(exact))
    return exact, [q for q in dict.fromkeys(near) if q not in exact]


def _ingest(base: str, pdfs: list[Path]) -> None:
    with httpx.Client(base_url=base, timeout=60) as client:
        ids = []
        for pdf in pdfs:
            files = {"file": (pdf.name, pdf.read_bytes(), "application/pdf")}
            ids.append(client.post("/documents", files=files).json()["doc_id"])
        for doc_id in ids:
            while (status := client.get(f"/documents/{doc_id}").json()["status"]) != "ok":
                if status in ("failed", "partial"):
                    raise RuntimeError(f"{doc_id[:12]} ended {status}")
                time.sleep(1.0)


@dataclass(frozen=True)
class Pass:
    """One measured pass: how, how many queries, their wall time and the replicas' CPU."""

    label: str
    replicas: int
    queries: int
    wall_s: float
    cpu_s: list[float]  # per query when asked one at a time, else each replica's total
    latency_s: list[float]
    here_cpu_s: float  # this process: the Qdrant stub and the clients

    @property
    def here_per_query(self) -> float:
        return self.here_cpu_s / self.queries

    @property
    def cpu_per_query(self) -> float:
        return sum(self.cpu_s) / self.queries

    @property
    def rate(self) -> float:
        return self.queries / self.wall_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--docs", default="2023 Q3 AAPL,2023 Q3 MSFT")
    parser.add_argument("-n", type=int, default=40, help="questions asked one at a time")
    parser.add_argument("-m", type=int, default=60, help="questions of each throughput pass")
    parser.add_argument("--clients", type=int, default=4, help="clients at once (throughput)")
    args = parser.parse_args(argv)
    data = args.data / "docugami_sec10q"
    docs = [d.strip() for d in args.docs.split(",")]
    pdfs = [data / "docs" / f"{d}.pdf" for d in docs]
    if not all(p.exists() for p in pdfs):
        print(f"skipped: need {', '.join(map(str, pdfs))}")
        return 0
    exact, others = _questions(data, docs)
    questions, more = exact[: args.n], (exact[args.n :] + others)[: args.m]
    with tempfile.TemporaryDirectory(prefix="folio-replica-cpu-") as tmp, QdrantStub() as qdrant:
        root = Path(tmp)
        (root / "coordinator").mkdir()
        coordinator, coordinator_url = _start(
            ["--data-dir", "data"],
            {"FOLIO_QDRANT_URL": qdrant.url, "FOLIO_ANSWER_SENTENCES": "query"},
            root / "coordinator",
        )
        env = {"FOLIO_QDRANT_URL": qdrant.url, "FOLIO_COORDINATOR_URL": coordinator_url}
        try:
            began = time.monotonic()
            _ingest(coordinator_url, pdfs)
            print(f"ingested {len(pdfs)} filings in {time.monotonic() - began:.0f} s")
            passes = _with_replicas(root, "one", 1, env, lambda r: _one_at_a_time(r[0], questions))
            for count in (1, 2):
                passes += _with_replicas(
                    root, f"pass{count}", count, env, lambda r: [_at_once(r, more, args.clients)]
                )
        finally:
            coordinator.terminate()
            coordinator.wait(60)
    _report(passes, len(docs), args.clients, argv)
    return 0


_Replica = tuple[subprocess.Popen[bytes], str]


def _with_replicas(
    root: Path,
    name: str,
    count: int,
    env: dict[str, str],
    measure: Callable[[list[_Replica]], list[Pass]],
) -> list[Pass]:
    """Start `count` replicas in fresh directories, warm each up, measure them, stop them."""
    replicas: list[_Replica] = []
    try:
        for i in range(count):
            (root / f"{name}-{i}").mkdir()
            replicas.append(_start(["--query-only"], env, root / f"{name}-{i}"))
        for _proc, url in replicas:
            for question in _WARM_UP:
                reply = httpx.post(f"{url}/query", json={"question": question}, timeout=120)
                reply.raise_for_status()
        return measure(replicas)
    finally:
        for proc, _url in replicas:
            proc.terminate()
            proc.wait(60)


def _one_at_a_time(replica: _Replica, questions: list[str]) -> list[Pass]:
    """Ask `questions` one at a time, twice: the replica's CPU and the latency of each."""
    proc, url = replica
    passes = []
    with httpx.Client(base_url=url, timeout=120) as client:
        for label in ("new questions", "the same again (sentences' vectors cached)"):
            cpu: list[float] = []
            wall: list[float] = []
            began, here = time.perf_counter(), time.process_time()
            for question in questions:
                before, start = cpu_seconds(proc.pid), time.perf_counter()
                client.post("/query", json={"question": question}).raise_for_status()
                wall.append(time.perf_counter() - start)
                cpu.append(cpu_seconds(proc.pid) - before)
            took, here = time.perf_counter() - began, time.process_time() - here
            passes.append(Pass(label, 1, len(questions), took, cpu, wall, here))
    return passes


def _at_once(replicas: list[_Replica], questions: list[str], clients: int) -> Pass:
    """`clients` threads ask `questions`, the i-th of the replica i mod their count."""
    urls = [url for _proc, url in replicas]
    order = iter(enumerate(questions))
    lock = threading.Lock()
    latency: list[float] = []

    def client() -> None:
        with httpx.Client(timeout=300) as http:
            while True:
                with lock:
                    i, question = next(order, (-1, ""))
                if i < 0:
                    return
                start = time.perf_counter()
                answer = http.post(f"{urls[i % len(urls)]}/query", json={"question": question})
                answer.raise_for_status()
                with lock:
                    latency.append(time.perf_counter() - start)

    before = [cpu_seconds(proc.pid) for proc, _url in replicas]
    threads = [threading.Thread(target=client) for _ in range(clients)]
    began, here = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took, here = time.perf_counter() - began, time.process_time() - here
    cpu = [cpu_seconds(proc.pid) - b for (proc, _url), b in zip(replicas, before, strict=True)]
    if len(latency) != len(questions):
        raise RuntimeError(f"{len(questions) - len(latency)} queries failed")
    label = f"{clients} clients at once, {len(replicas)} replica(s) just started"
    return Pass(label, len(replicas), len(questions), took, cpu, latency, here)


def _report(passes: list[Pass], docs: int, clients: int, argv: list[str] | None) -> None:
    """Print the passes and record them in docs/bench-results.json."""
    load, cores = os.getloadavg()[0], os.cpu_count()
    print(f"{docs} filings, load average {load:.1f} on {cores} cores")
    print(
        "| pass | replicas | queries | replica CPU per /query | stub + clients CPU per /query "
        "| latency p50 | queries/s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for p in passes:
        print(
            f"| {p.label} | {p.replicas} | {p.queries} | {p.cpu_per_query:.3f} s | "
            f"{p.here_per_query:.3f} s | {statistics.median(p.latency_s):.2f} s | {p.rate:.2f} |"
        )
    corpus = f"{docs} Docugami filings, MiniLM, extractive answers"
    one, again, single, double = passes
    rows = [
        BenchRow(
            set=corpus,
            figure=f"replica CPU s per /query, one at a time, {one.queries} new questions",
            value=f"{one.cpu_per_query:.3f}",
            baseline=f"{again.cpu_per_query:.3f} asked again",
        ),
        BenchRow(
            set=corpus,
            figure=f"replica CPU s per /query, {clients} clients, 1 replica",
            value=f"{single.cpu_per_query:.3f}",
        ),
        BenchRow(
            set=corpus,
            figure=f"replica CPU s per /query, {clients} clients, 2 replicas",
            value=f"{double.cpu_per_query:.3f}",
        ),
        BenchRow(
            set=corpus,
            figure=f"queries/s, {clients} clients, 1 replica ({single.queries} new questions)",
            value=f"{single.rate:.2f}",
        ),
        BenchRow(
            set=corpus,
            figure=f"queries/s, {clients} clients, 2 replicas round robin (the same questions)",
            value=f"{double.rate:.2f}",
            baseline=f"{double.rate / single.rate:.2f}x 1 replica",
        ),
    ]
    notes = [
        f"{cores} cores shared by the replicas, the Qdrant stub and the clients: the cores, not "
        "the replicas, cap queries/s; each throughput pass on replicas just started (empty "
        f"caches); the stub and the clients took {single.here_per_query:.3f} s CPU per query "
        f"beside 1 replica, {double.here_per_query:.3f} s beside 2"
    ]
    command = shlex.join(["python", "-m", "eval", "replica_cpu", *(argv or sys.argv[1:])])
    record("replica-cpu", "Scale-out", command, rows, notes)
    print(f"command: {command}")
