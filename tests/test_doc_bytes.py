"""Workers that need only addresses: real `folio worker` processes started in fresh temporary
directories with FOLIO_BROKER_URL alone (no data directory, no shared path) fetch each document
from the coordinator's API on loopback (a token per document), over a real redis-server; one is
SIGKILLed mid-unit and the points are still exactly those of an embedded run. A wrong or expired
token is refused and logged on both sides; a worker that reaches nothing says what it tried."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from doubles.fakes import HashEmbedder
from doubles.loopback import ThreadedServer, free_port
from ingest.ledger.records import DocStatus
from ingest.queue.doc_bytes import DocSources, DocTokens, TokenRefusedError, bytes_path
from ingest.queue.work_queue import QueueExtractor
from server.serve.app import create_app
from server.services import Services, build_services
from tests.apiapp import api_app
from tests.pdfgen import FACTS, fact_pdf
from tests.test_work_queue import (
    FOLIO,
    HEARTBEAT_S,
    _alive,
    _children,
    _left_unread,
    _points,
    _settings,
    _stop_mid_unit,
    _units,
    redis_url,
)

__all__ = ["LONG_PAGES", "Coordinator", "fresh_worker", "generated_folder", "redis_url"]

EMBED_DIM = 64
# the pages of generated_folder's long report: enough two-page units that a worker is caught
# holding one of them, though each takes a few milliseconds
LONG_PAGES = {("long.pdf", n) for n in range(1, 42)}


def generated_folder(root: Path) -> Path:
    """A few generated PDFs: two short documents of facts and a long report (LONG_PAGES)."""
    folder = root / "in"
    folder.mkdir()
    for name, (title, sections) in FACTS.items():
        (folder / name).write_bytes(fact_pdf(title, sections, filler_pages=3))
    sections = [
        (f"Section {i}", f"Revenue of unit {i} was {i * 7} million dollars.") for i in (1, 2)
    ]
    (folder / "long.pdf").write_bytes(
        fact_pdf("Long report", sections, filler_pages=len(LONG_PAGES) - 1)
    )
    return folder


class Coordinator(ThreadedServer):
    """The coordinator's app over `services`, on the loopback socket `sock` (lifespan off: the
    test runs the ingest itself)."""

    name = "coordinator"

    def __init__(self, services: Services, sock: socket.socket) -> None:
        self._listen(create_app(services, watch=False), sock)


def _socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def fresh_worker(root: Path, url: str, log: Path, **env_more: str) -> subprocess.Popen[bytes]:
    """`folio worker` in a new empty directory `root` with only the broker's settings (and
    `env_more`): no data directory, nothing shared with the coordinator but the broker."""
    root.mkdir(parents=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("FOLIO_", "AWS_"))},
        "FOLIO_BROKER_URL": url,
        "FOLIO_BROKER_HEARTBEAT_S": str(HEARTBEAT_S),
        "HF_HUB_OFFLINE": "1",
        **env_more,
    }
    with log.open("wb") as out:
        return subprocess.Popen([FOLIO, "worker"], cwd=root, env=env, stderr=out)


@contextmanager
def _served(services: Services, sock: socket.socket) -> Iterator[None]:
    with Coordinator(services, sock):
        yield


def _coordinator(tmp_path: Path, redis_url: str, sock: socket.socket, **more: object) -> Services:
    port = sock.getsockname()[1]
    settings = _settings(
        tmp_path / "coordinator",
        broker_url=redis_url,
        broker_window=2,
        broker_heartbeat_s=HEARTBEAT_S,
        public_url=f"http://127.0.0.1:{port}",
        **more,
    )
    return build_services(settings, embedder=HashEmbedder(EMBED_DIM))


def test_two_workers_without_a_data_dir_one_killed_give_the_points_of_an_embedded_run(
    tmp_path: Path, redis_url: str
) -> None:
    folder = generated_folder(tmp_path)
    embedded = build_services(_settings(tmp_path / "embedded"), embedder=HashEmbedder(EMBED_DIM))
    try:
        expected = {r.source: r.status for r in embedded.sync.ingest_paths([folder])}
        points = _points(embedded)
    finally:
        embedded.close()
    assert set(expected.values()) == {"ok"}

    sock = _socket()
    coordinator = _coordinator(tmp_path, redis_url, sock)
    extractor = coordinator.ingestor.extractor
    assert isinstance(extractor, QueueExtractor)
    logs = [tmp_path / f"worker{i}.log" for i in (1, 2)]
    workers = [fresh_worker(tmp_path / f"w{i}", redis_url, log) for i, log in enumerate(logs)]
    results: list[object] = []
    try:
        with _served(coordinator, sock):
            run = threading.Thread(
                target=lambda: results.extend(coordinator.sync.ingest_paths([folder]))
            )
            run.start()
            killed, unfinished = _stop_mid_unit(
                workers, logs, LONG_PAGES, lambda: True, alone=False
            )
            left = _children(workers[killed].pid)
            workers[killed].send_signal(signal.SIGKILL)
            run.join(120)
            assert not run.is_alive(), "the run did not end after a worker was killed"
            got = {r.source: r.status for r in results}  # type: ignore[attr-defined]
            errors = [r.error for r in results if r.status == "failed"]  # type: ignore[attr-defined]
            assert got == expected, errors
            assert _points(coordinator) == points
            other = logs[1 - killed]
            lost = _left_unread(unfinished, logs[killed])
            assert lost <= set(_units(other, "read"))  # re-delivered to the other
            assert not _alive(left), "the killed worker left processes behind"
    finally:
        coordinator.close()
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    # neither worker had the coordinator's files: both fetched over HTTP into their own caches
    survivor = logs[1 - killed].read_text(errors="replace")
    assert "documents: fetched into" in survivor
    assert "fetched long.pdf" in survivor or "fetched volcano.pdf" in survivor
    assert " hits, " in survivor and "0 read from shared storage" in survivor
    assert workers[killed].returncode == -signal.SIGKILL


def test_a_wrong_or_expired_token_is_refused_and_logged_and_the_document_waits(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's answer names what it tried; the document waits for a worker that can read
    it (retryable), not failed with an engine error."""
    caplog.set_level(logging.WARNING, logger="server.routes.doc_bytes")
    pdf = tmp_path / "volcano.pdf"
    pdf.write_bytes(fact_pdf(*FACTS["volcano.pdf"], filler_pages=1))
    sock = _socket()
    coordinator = _coordinator(tmp_path, redis_url, sock)
    extractor = coordinator.ingestor.extractor
    assert isinstance(extractor, QueueExtractor)
    signing = extractor.sources
    assert signing is not None
    log = tmp_path / "worker.log"
    worker = fresh_worker(tmp_path / "w", redis_url, log)
    public = signing.public_url
    try:
        with _served(coordinator, sock):
            cases = {
                "the token's signature does not match this document": DocSources(
                    public_url=public, tokens=DocTokens(b"not the coordinator's key" * 2), ttl_s=60
                ),
                "the token expired at": DocSources(
                    public_url=public, tokens=signing.tokens, ttl_s=-5
                ),
            }
            for reason, sources in cases.items():
                extractor.sources = sources
                [result] = coordinator.sync.ingest_paths([pdf])
                assert result.status == "failed"
                error = result.error or ""
                assert error.startswith("waiting for a worker that can read it: "), error
                assert "HTTP 401, the coordinator refused the token" in error and reason in error
                assert "EngineUnavailableError" not in error
                assert f"{public}{bytes_path(result.doc_id or '')} (" in error  # no token shown
                assert "token=" not in error
                [record] = coordinator.ledger.documents()
                assert record.status is DocStatus.failed and record.retryable
                assert any(reason in m for m in caplog.messages), caplog.messages
                coordinator.sync.retry()
            extractor.sources = signing  # the coordinator's own tokens open it
            coordinator.sync.retry()
            coordinator.sync.process_pending()
            [record] = coordinator.ledger.documents()
            assert record.status is DocStatus.ok, record.errors
    finally:
        coordinator.close()
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    text = log.read_text(errors="replace")
    refusals = [line for line in text.splitlines() if "refused the token" in line]
    assert any("the token's signature does not match" in line for line in refusals), text
    assert any("the token expired at" in line for line in refusals), text


def test_a_worker_that_reaches_nothing_names_what_it_tried(tmp_path: Path, redis_url: str) -> None:
    pdf = tmp_path / "bakery.pdf"
    pdf.write_bytes(fact_pdf(*FACTS["bakery.pdf"], filler_pages=1))
    nowhere = f"http://127.0.0.1:{free_port()}"
    settings = _settings(
        tmp_path / "coordinator",
        broker_url=redis_url,
        broker_heartbeat_s=HEARTBEAT_S,
        public_url=nowhere,
    )
    coordinator = build_services(settings, embedder=HashEmbedder(EMBED_DIM))
    worker = fresh_worker(tmp_path / "w", redis_url, tmp_path / "worker.log")
    try:
        [result] = coordinator.sync.ingest_paths([pdf])
    finally:
        coordinator.close()
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    error = result.error or ""
    assert result.status == "failed" and result.retry, error
    shared = tmp_path / "w" / "data" / "documents" / f"{result.doc_id}.pdf"
    assert "\n" not in error
    assert "waiting for a worker that can read it: worker: cannot read bakery.pdf" in error
    assert "tried no shared storage" in error or f"path {shared} (not there)" in error
    assert f"{nowhere}{bytes_path(result.doc_id or '')} (ConnectError" in error
    assert "--data-dir" in error and "FOLIO_PUBLIC_URL" in error
    assert "FOLIO_OBJECT_STORE_URL" in error


def test_the_stored_copy_route_answers_ranges_and_only_to_its_token(tmp_path: Path) -> None:
    """With an API key set, the key does not open a stored copy; its token does, with ranges."""
    with api_app(tmp_path, api_key="the-api-key") as app:
        tokens = DocTokens.for_data_dir(app.services.settings.data_dir)
        path = bytes_path(app.doc_id)
        data = app.pdf.read_bytes()
        keyed = app.client.get(path, headers={"Authorization": "Bearer the-api-key"})
        assert keyed.status_code == 401 and "no token" in keyed.json()["error"]["message"]
        other = tokens.sign("0" * 64, 60)
        refused = app.client.get(path, params={"token": other})
        assert refused.status_code == 401
        assert "does not match this document" in refused.json()["error"]["message"]
        token = tokens.sign(app.doc_id, 60)
        whole = app.client.get(path, params={"token": token})
        assert whole.status_code == 200 and whole.content == data
        part = app.client.get(path, params={"token": token}, headers={"Range": "bytes=100-"})
        assert part.status_code == 206 and part.content == data[100:]
        missing = app.client.get(bytes_path("1" * 64), params={"token": tokens.sign("1" * 64, 60)})
        assert missing.status_code == 404
        # a signed token for one document opens no other route
        assert (
            app.client.get(f"/documents/{app.doc_id}", params={"token": token}).status_code == 401
        )


def test_tokens_expire_and_belong_to_one_document(tmp_path: Path) -> None:
    tokens = DocTokens.for_data_dir(tmp_path)
    assert oct((tmp_path / "doc_tokens.key").stat().st_mode & 0o777) == "0o600"
    again = DocTokens.for_data_dir(tmp_path)  # the same key, kept
    token = tokens.sign("a" * 64, 10, now=1000.0)
    again.check("a" * 64, token, now=1005.0)
    with pytest.raises(TokenRefusedError, match="expired"):
        tokens.check("a" * 64, token, now=1011.0)
    with pytest.raises(TokenRefusedError, match="does not match"):
        tokens.check("b" * 64, token, now=1005.0)
    with pytest.raises(TokenRefusedError, match=r"not EXP\.SIG"):
        tokens.check("a" * 64, "garbage", now=1005.0)
