"""CPU seconds a query replica (`folio serve --query-only`) spends per `/query`, for the capacity
plan (docs/scaling.md).

    python -m eval.replica_cpu [--data ../shared/data] [--docs "2023 Q3 AAPL,2023 Q3 MSFT"] [-n 40]

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
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from doubles.loopback import free_port
from doubles.qdrant_stub import QdrantStub

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


def _questions(data: Path, docs: list[str]) -> list[str]:
    """The dataset's questions about exactly one of `docs`, in file order, each once."""
    rows = csv.DictReader((data / "qna_data.csv").open(encoding="utf-8-sig"))
    found = [r["Question"] for r in rows if r["Source Docs"].strip("*") in docs]
    return list(dict.fromkeys(found))


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--docs", default="2023 Q3 AAPL,2023 Q3 MSFT")
    parser.add_argument("-n", type=int, default=40)
    args = parser.parse_args(argv)
    data = args.data / "docugami_sec10q"
    docs = [d.strip() for d in args.docs.split(",")]
    pdfs = [data / "docs" / f"{d}.pdf" for d in docs]
    if not all(p.exists() for p in pdfs):
        print(f"skipped: need {', '.join(map(str, pdfs))}")
        return 0
    questions = _questions(data, docs)[: args.n]
    with tempfile.TemporaryDirectory(prefix="folio-replica-cpu-") as tmp, QdrantStub() as qdrant:
        root = Path(tmp)
        (root / "coordinator").mkdir()
        (root / "replica").mkdir()
        coordinator, coordinator_url = _start(
            ["--data-dir", "data"], {"FOLIO_QDRANT_URL": qdrant.url}, root / "coordinator"
        )
        try:
            began = time.monotonic()
            _ingest(coordinator_url, pdfs)
            print(f"ingested {len(pdfs)} filings in {time.monotonic() - began:.0f} s")
            replica, url = _start(
                ["--query-only"],
                {"FOLIO_QDRANT_URL": qdrant.url, "FOLIO_COORDINATOR_URL": coordinator_url},
                root / "replica",
            )
            try:
                _measure(replica, url, questions)
            finally:
                replica.terminate()
                replica.wait(60)
        finally:
            coordinator.terminate()
            coordinator.wait(60)
    return 0


def _measure(replica: subprocess.Popen[bytes], url: str, questions: list[str]) -> None:
    with httpx.Client(base_url=url, timeout=120) as client:
        for question in _WARM_UP:
            client.post("/query", json={"question": question}).raise_for_status()
        load, cores = os.getloadavg()[0], os.cpu_count()
        print(f"{len(questions)} questions, one replica, load average {load:.1f} on {cores} cores")
        for label in ("new questions", "the same again (sentences' vectors cached)"):
            cpu: list[float] = []
            wall: list[float] = []
            for question in questions:
                before, start = cpu_seconds(replica.pid), time.perf_counter()
                client.post("/query", json={"question": question}).raise_for_status()
                wall.append(time.perf_counter() - start)
                cpu.append(cpu_seconds(replica.pid) - before)
            print(
                f"{label}: replica CPU per /query mean {statistics.mean(cpu):.3f} s, "
                f"p50 {statistics.median(cpu):.3f} s, max {max(cpu):.3f} s; latency p50 "
                f"{statistics.median(wall):.3f} s; {1 / statistics.mean(cpu):.1f} queries/s a core"
            )


if __name__ == "__main__":
    raise SystemExit(main())
