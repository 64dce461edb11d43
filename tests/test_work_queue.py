"""Page windows read by real `folio worker` processes through a real redis-server: a worker
killed mid-run, and still exactly the points of an embedded run; a broker that is not there."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from ingest.records import DocStatus
from ingest.work_queue import BrokerUnavailableError, QueueExtractor
from ocr_engine.options import OcrMode
from server.datadir import DataDirLock
from server.services import Services, build_services
from server.settings import Settings
from tests.conftest import REPO_ROOT, shared_path
from tests.pdfgen import fact_pdf

FOLIO = str(Path(sys.executable).parent / "folio")
HEARTBEAT_S = 2.0


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (`make test` installs Debian's package)")
    port = free_port()
    proc = _redis(port, tmp_path)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait(10)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for pdf in sorted(shared_path("docling", "pdf").glob("*.pdf")):
        shutil.copy(pdf, folder / pdf.name)
    sections = [
        (f"Section {i}", f"Revenue of unit {i} was {i * 7} million dollars.") for i in (1, 2)
    ]
    (folder / "long.pdf").write_bytes(fact_pdf("Long report", sections, filler_pages=40))
    return folder


def _settings(data_dir: Path, **more: object) -> Settings:
    return Settings.model_validate({"data_dir": data_dir, "ocr": OcrMode.never, **more})


def _points(services: Services) -> dict[str, list[tuple[str, str, str]]]:
    """Every document's points: (point id, chunk id, text), by the document's source."""
    names = {r.doc_id: r.source for r in services.ledger.documents()}
    return {
        names[doc_id]: sorted(
            (c.point_id, c.chunk_id, c.text) for c in services.store.chunks(doc_id)
        )
        for doc_id in services.store.doc_ids()
    }


def _pages(services: Services) -> dict[str, list[int]]:
    out = {}
    for record in services.ledger.documents():
        if record.status not in (DocStatus.ok, DocStatus.partial):
            continue
        document = services.files.load_document(record.doc_id)
        out[record.source] = [page.number for page in document.pages]
    return out


def _worker(data_dir: Path, url: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "FOLIO_BROKER_URL": url,
        "FOLIO_BROKER_HEARTBEAT_S": str(HEARTBEAT_S),
        "HF_HUB_OFFLINE": "1",
    }
    with log.open("wb") as out:
        return subprocess.Popen(
            [FOLIO, "worker", "--data-dir", str(data_dir)], cwd=REPO_ROOT, env=env, stderr=out
        )


def _units(log: Path, state: str) -> set[str]:
    """Ids of the units a worker's log shows `started` or `read`."""
    lines = log.read_text(errors="replace").splitlines()
    marks = [line.split("unit ", 1)[1].split(":") for line in lines if "work_queue: unit " in line]
    return {m[0] for m in marks if (m[1].strip() == "read") == (state == "read")}


def _stop_mid_unit(proc: subprocess.Popen[bytes], log: Path) -> set[str]:
    """Freeze the worker (SIGSTOP) at a moment it is reading a unit; the units it holds."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        proc.send_signal(signal.SIGSTOP)
        unfinished = _units(log, "started") - _units(log, "read")
        if unfinished:
            return unfinished
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    raise AssertionError("the worker was never caught reading a unit")


def test_two_workers_one_killed_give_exactly_the_points_of_an_embedded_run(
    tmp_path: Path, redis_url: str
) -> None:
    folder = _folder(tmp_path)
    embedded = build_services(_settings(tmp_path / "embedded"), embedder=HashEmbedder(64))
    try:
        expected = {r.source: r.status for r in embedded.sync.ingest_paths([folder])}
        points, pages = _points(embedded), _pages(embedded)
    finally:
        embedded.close()
    assert sum(status == "ok" for status in expected.values()) >= 5

    data = tmp_path / "queued"
    settings = _settings(
        data, broker_url=redis_url, broker_window=2, broker_heartbeat_s=HEARTBEAT_S
    )
    coordinator = build_services(settings, embedder=HashEmbedder(64))
    extractor = coordinator.ingestor.extractor
    assert isinstance(extractor, QueueExtractor)
    workers = [_worker(data, redis_url, tmp_path / f"worker{i}.log") for i in (1, 2)]
    results: list[object] = []
    try:
        run = threading.Thread(
            target=lambda: results.extend(coordinator.sync.ingest_paths([folder]))
        )
        run.start()
        deadline = time.monotonic() + 60
        while extractor.sent < 12:  # both workers busy, most of the units still to come
            assert time.monotonic() < deadline and run.is_alive(), "no units were sent"
            time.sleep(0.05)
        unfinished = _stop_mid_unit(workers[0], tmp_path / "worker1.log")
        workers[0].send_signal(signal.SIGKILL)
        killed_at = len(results)
        run.join(120)
        assert not run.is_alive(), "the run did not end after a worker was killed"
        assert killed_at < len(expected)  # killed mid-run
        got = {r.source: r.status for r in results}  # type: ignore[attr-defined]
        errors = [r.error for r in results if r.status == "failed"]  # type: ignore[attr-defined]
        assert got == expected, errors
        assert {r.source: r.status for r in coordinator.ledger.documents()} == {
            s: DocStatus(v.value) for s, v in expected.items()
        }
        assert _points(coordinator) == points
        assert _pages(coordinator) == pages
        assert extractor.sent >= sum(len(p) for p in pages.values()) // 2
        assert unfinished <= _units(tmp_path / "worker2.log", "read")  # re-delivered
    finally:
        coordinator.close()
        for proc in workers:
            proc.kill()
            proc.wait(10)
    assert workers[0].returncode == -signal.SIGKILL


def test_a_broker_that_is_not_there_is_named_at_start(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(BrokerUnavailableError, match=f"FOLIO_BROKER_URL={url}"):
        build_services(_settings(tmp_path / "data", broker_url=url), embedder=HashEmbedder(64))
    DataDirLock(tmp_path / "data", "test").acquire().release()  # let go at once
    done = subprocess.run(
        [FOLIO, "worker", "--data-dir", str(tmp_path / "data")],
        env={**os.environ, "FOLIO_BROKER_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"cannot reach the broker at FOLIO_BROKER_URL={url}" in done.stderr


def test_without_a_broker_url_pages_are_read_in_process(tmp_path: Path) -> None:
    services = build_services(_settings(tmp_path / "data"), embedder=HashEmbedder(64))
    try:
        assert not isinstance(services.ingestor.extractor, QueueExtractor)
    finally:
        services.close()


def _redis(port: int, cwd: Path) -> subprocess.Popen[bytes]:
    server = shutil.which("redis-server")
    assert server is not None
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while (
        subprocess.run(
            ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True
        ).stdout.strip()
        != "PONG"
    ):
        assert time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.1)
    return proc


def test_a_broker_lost_mid_run_marks_nothing_done_that_is_not(
    tmp_path: Path, redis_url: str
) -> None:
    """The broker dies while units are out: the run ends, no document is ok without all its
    pages indexed, the others wait for a retry, and with a broker back they all end ok."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    folder = _folder(tmp_path)
    data = tmp_path / "queued"
    settings = _settings(
        data, broker_url=redis_url, broker_window=2, broker_heartbeat_s=HEARTBEAT_S
    )
    coordinator = build_services(settings, embedder=HashEmbedder(64))
    extractor = coordinator.ingestor.extractor
    assert isinstance(extractor, QueueExtractor)
    worker = _worker(data, redis_url, tmp_path / "worker.log")
    revived: subprocess.Popen[bytes] | None = None
    results: list[object] = []
    try:
        run = threading.Thread(
            target=lambda: results.extend(coordinator.sync.ingest_paths([folder]))
        )
        run.start()
        deadline = time.monotonic() + 60
        while extractor.sent < 6:
            assert time.monotonic() < deadline and run.is_alive(), "no units were sent"
            time.sleep(0.05)
        # the fixture's redis-server is the only one on this port: stop it mid-run
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
        run.join(180)
        assert not run.is_alive(), "the run did not end after the broker went"
        records = coordinator.ledger.documents()
        counts = coordinator.store.doc_ids()
        waiting = [r for r in records if r.status is not DocStatus.ok]
        assert waiting, "the broker went mid-run, yet every document ended ok"
        for record in records:
            if record.status is DocStatus.ok:
                assert counts.get(record.doc_id, 0) == record.chunks > 0
            else:  # waiting for a retry, nothing indexed
                assert record.status in (DocStatus.failed, DocStatus.queued), record
                assert record.status is DocStatus.queued or record.retryable, record
                assert counts.get(record.doc_id, 0) == 0
        revived = _redis(port, tmp_path)
        worker.kill()
        worker.wait(10)
        worker = _worker(data, redis_url, tmp_path / "worker2.log")
        coordinator.sync.retry()
        coordinator.sync.process_pending()
        final = {r.source: r.status for r in coordinator.ledger.documents()}
        assert set(final.values()) <= {DocStatus.ok, DocStatus.partial}, final
    finally:
        coordinator.close()
        worker.kill()
        worker.wait(10)
        if revived is not None:
            revived.kill()
            revived.wait(10)
