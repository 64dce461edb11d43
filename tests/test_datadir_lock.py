"""The data directory's lock: a CLI command beside a running `folio serve` goes through its API
and never touches the index; a command that needs the index for itself refuses without opening
any of its files; the server keeps indexing afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from doubles.loopback import free_port
from server.datadir import DataDirBusyError, DataDirLock, lock_holder
from tests.pdfgen import FACTS, fact_pdf

FOLIO = [sys.executable, "-m", "server"]
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "FOLIO_OCR": "never",
    "FOLIO_WATCH_SETTLE_SECONDS": "0.3",
}


def _wait(predicate: object, timeout: float = 90.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.3)
    raise AssertionError(f"{what} not reached in {timeout:.0f} s")


def _status(client: httpx.Client, source: str) -> str | None:
    for row in client.get("/documents").json():
        if row["source"] == source:
            return str(row["status"])
    return None


def _index_files(data_dir: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for path in sorted((data_dir / "index").rglob("*")):
        if path.is_file():
            stat = path.stat()
            found[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return found


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FOLIO, *args], env=ENV, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, Path, subprocess.Popen[bytes]]]:
    data, inbox = tmp_path / "data", tmp_path / "inbox"
    inbox.mkdir()
    title, sections = FACTS["volcano.pdf"]
    (inbox / "volcano.pdf").write_bytes(fact_pdf(title, sections))
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [*FOLIO, "serve", "--data-dir", str(data), "--watch", str(inbox), "--port", str(port)],
        env=ENV,
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as client:

            def healthy() -> bool:
                try:
                    return client.get("/health").status_code == 200
                except httpx.TransportError:
                    assert proc.poll() is None, (tmp_path / "serve.log").read_text()
                    return False

            _wait(healthy, what="/health")
            _wait(lambda: _status(client, "volcano.pdf") == "ok", what="volcano.pdf ok")
        yield base, data, inbox, proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_cli_beside_the_server_uses_its_api_and_the_index_stays_writable(
    server: tuple[str, Path, Path, subprocess.Popen[bytes]],
) -> None:
    base, data, inbox, proc = server
    holder = lock_holder(data)
    assert holder is not None and holder.pid == proc.pid and holder.url == base
    before = _index_files(data)
    assert before, "the server has an index on disk"

    docs = _cli("docs", "--data-dir", str(data), "--json")
    assert docs.returncode == 0, docs.stderr
    assert f"using {base}" in docs.stderr
    [row] = json.loads(docs.stdout)
    assert (row["source"], row["status"]) == ("volcano.pdf", "ok") and row["chunks"] > 0

    asked = _cli("query", "When did the Kelud volcano erupt?", "--data-dir", str(data), "--json")
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["citations"] and answer["citations"][0]["source"] == "volcano.pdf"
    plain = _cli("query", "When did the Kelud volcano erupt?", "--data-dir", str(data))
    assert plain.returncode == 0, plain.stderr
    link = plain.stdout.splitlines()[1].split()[-1]  # "  [1] volcano.pdf p.1 [box]  LINK"
    assert link.startswith(f"{base}/documents/"), plain.stdout  # one a browser can open
    with httpx.Client(timeout=10) as client:
        assert client.get(link).status_code == 200

    retried = _cli("retry", "--data-dir", str(data))  # through the server: nothing failed
    assert retried.returncode == 0, retried.stderr
    assert f"using {base}" in retried.stderr and "nothing to retry" in retried.stderr
    refused = _cli("serve", "--data-dir", str(data), "--port", str(free_port()))
    assert refused.returncode == 2, refused.stderr  # a second server needs the index for itself
    assert f"in use by `folio serve` (pid {proc.pid}" in refused.stderr
    assert _index_files(data) == before, "a refused command touched the index"

    # a new file dropped into the watched folder is indexed, and /health stays ok
    title, sections = FACTS["bakery.pdf"]
    (inbox / "bakery.pdf").write_bytes(fact_pdf(title, sections))
    with httpx.Client(base_url=base, timeout=10) as client:
        _wait(lambda: _status(client, "bakery.pdf") in ("ok", "failed"), what="bakery.pdf")
        assert _status(client, "bakery.pdf") == "ok", client.get("/documents").json()
        health = client.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"

    # `folio ingest` beside the server: ingested by the server, counted by what happened
    extra = data.parent / "elsewhere.pdf"
    extra.write_bytes(fact_pdf("Harbour Logbook", [("Tides", "High tide came at 04:12.")]))
    ingested = _cli("ingest", str(extra), "--data-dir", str(data))
    assert ingested.returncode == 0, ingested.stderr
    assert "1 file: 1 new, 0 changed, 0 unchanged, 0 failed; 0 removed" in ingested.stderr
    again = _cli("ingest", str(extra), "--data-dir", str(data))
    assert "1 file: 0 new, 0 changed, 1 unchanged, 0 failed" in again.stderr

    # `folio retry` beside the server: the server reads the failed file again, and says so
    (inbox / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<>> endobj\n")
    with httpx.Client(base_url=base, timeout=10) as client:
        _wait(lambda: _status(client, "broken.pdf") == "failed", what="broken.pdf to fail")
    retried = _cli("retry", "--all", "--data-dir", str(data))
    assert retried.returncode == 1, retried.stderr  # it fails again, for the same reason
    assert f"using {base}" in retried.stderr
    assert "1 file: 0 new, 0 changed, 0 unchanged, 1 failed" in retried.stderr, retried.stderr


def test_a_second_holder_is_refused_and_told_who_holds_it(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path, "ingest").acquire()
    try:
        with pytest.raises(DataDirBusyError) as busy:
            DataDirLock(tmp_path, "docs").acquire()
        assert busy.value.holder is not None and busy.value.holder.pid == os.getpid()
        assert "`folio ingest`" in str(busy.value)
        first.announce("http://127.0.0.1:9")
        holder = lock_holder(tmp_path)
        assert holder is not None and holder.url == "http://127.0.0.1:9"
    finally:
        first.release()
    assert lock_holder(tmp_path) is None
    DataDirLock(tmp_path, "docs").acquire().release()


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from server.datadir import DataDirLock; "
        "DataDirLock(Path(sys.argv[1]), 'serve').acquire(); print('held', flush=True); "
        "time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        with pytest.raises(DataDirBusyError):
            DataDirLock(tmp_path, "docs").acquire()
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    DataDirLock(tmp_path, "docs").acquire().release()  # no stale lock after kill -9
