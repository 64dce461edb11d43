"""`folio serve` stops within seconds of SIGTERM while event streams and answer streams are open.

The real command in a subprocess on loopback: a browser tab's `/events` stream and a
`/query/stream` whose LLM never answers must not keep the process (and its data directory's
lock) alive after it is told to stop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from doubles.llm_stub import Behaviour, LlmStub
from doubles.loopback import free_port, sse_events
from server.datadir import LOCK_FILE
from tests.pdfgen import FACTS, fact_pdf

STOP_WITHIN_S = 5.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """`folio serve` answering with an LLM that hangs, one document ingested; killed at the end.
    Yields the process, its URL and the folder of its `serve.log` and `data`."""
    port = free_port()
    log = tmp_path / "serve.log"
    with LlmStub(Behaviour.hang) as stub, log.open("wb") as out:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
        env.update(HF_HUB_OFFLINE="1", FOLIO_LLM_URL=stub.url, FOLIO_OCR="never")
        cmd = [sys.executable, "-m", "server", "serve", "--data-dir", str(tmp_path / "data")]
        proc = subprocess.Popen([*cmd, "--port", str(port)], env=env, stdout=out, stderr=out)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base, proc, log)
            yield proc, base, tmp_path
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)


def _wait_ready(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    with httpx.Client(base_url=base, timeout=10) as client:
        while True:
            try:
                if client.get("/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        title, sections = FACTS["volcano.pdf"]
        files = {"file": ("volcano.pdf", fact_pdf(title, sections), "application/pdf")}
        doc_id = client.post("/documents", files=files).json()["doc_id"]
        while client.get(f"/documents/{doc_id}").json()["status"] != "ok":
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)


def test_sigterm_ends_open_streams_and_the_process(
    served: tuple[subprocess.Popen[bytes], str, Path],
) -> None:
    proc, base, root = served
    log, data_dir = root / "serve.log", root / "data"
    client = httpx.Client(base_url=base, timeout=httpx.Timeout(10, read=30))
    question = {"question": "When did Kelud erupt?"}
    with (
        client,
        client.stream("GET", "/events") as events,
        client.stream("POST", "/query/stream", json=question) as answer,
    ):
        assert events.status_code == 200 and answer.status_code == 200
        lines = events.iter_lines()
        assert next(lines) == ": connected"
        time.sleep(0.5)  # the answer is waiting on the LLM
        assert proc.poll() is None
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_WITHIN_S * 4)
        except subprocess.TimeoutExpired:
            pytest.fail(f"folio serve still runs {STOP_WITHIN_S * 4:.0f} s after SIGTERM")
        took = time.monotonic() - started
        rest_of_events = list(lines)  # both streams were ended cleanly, not cut
        answer_events = sse_events(answer)
    assert took < STOP_WITHIN_S, f"stopped after {took:.1f} s\n{log.read_text()}"
    assert proc.returncode == 0, log.read_text()  # a stop it was asked for is a clean one
    assert (data_dir / LOCK_FILE).read_bytes() == b""  # the services were closed first
    assert "folio stopped cleanly (SIGTERM): the index is written" in log.read_text()
    assert all(not line.startswith("data:") for line in rest_of_events)
    kind, data = answer_events[-1]
    assert kind == "error", answer_events
    assert data == {"error": {"code": "shutting_down", "message": "the server is stopping"}}
