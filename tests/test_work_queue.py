"""Page windows read by real `folio worker` processes through a real redis-server: mixed PDFs
(text layer and scans read by the OCR simulator, embedded by the embeddings server), a worker
killed mid-OCR, and still exactly the points of an embedded run; a broker that is not there."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from doubles.embed_server import EmbedServer
from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from doubles.ocr_simulator import OcrSimulator
from ingest.ledger.records import DocStatus
from ingest.queue.work_queue import BrokerUnavailableError, QueueExtractor
from ocr_engine.options import OcrMode
from server.datadir import DataDirLock
from server.services import Services, build_services
from server.settings import Settings
from tests.conftest import REPO_ROOT, shared_path
from tests.pdfgen import FACTS, fact_pdf
from tests.test_ocr_pipeline import scanned

FOLIO = str(Path(sys.executable).parent / "folio")
HEARTBEAT_S = 2.0
EMBED_MODEL = "test/embed"
# scanned PDFs: the facts they show and the text-layer pages they keep
SCANS = {"bakery scan.pdf": ("bakery.pdf", (2,)), "kelud scan.pdf": ("volcano.pdf", ())}
SCAN_PAGES = 3


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


def _scans(folder: Path, sim: OcrSimulator) -> None:
    """Two scanned PDFs in `folder` (one with a text-layer page), registered with `sim`."""
    for name, (facts, kept) in SCANS.items():
        text = fact_pdf(*FACTS[facts], filler_pages=SCAN_PAGES - 1)
        scan = scanned(text, keep_text_pages=kept)
        sim.register_pdf(scan, text_source=text)
        (folder / name).write_bytes(scan)


def _pages(services: Services) -> dict[str, list[tuple[int, str, str | None, str]]]:
    """Every read document's pages: (number, engine, route, status), by the document's source."""
    out = {}
    for record in services.ledger.documents():
        if record.status not in (DocStatus.ok, DocStatus.partial):
            continue
        document = services.files.load_document(record.doc_id)
        out[record.source] = [
            (page.number, page.engine.name, page.route, page.status.value)
            for page in document.pages
        ]
    return out


def _worker(
    data_dir: Path, url: str, log: Path, *, ocr_api_key: str | None = None
) -> subprocess.Popen[bytes]:
    env = {  # no OCR or embeddings settings: the OCR endpoint comes with each unit
        **{k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")},
        "FOLIO_BROKER_URL": url,
        "FOLIO_BROKER_HEARTBEAT_S": str(HEARTBEAT_S),
        "HF_HUB_OFFLINE": "1",
    }
    if ocr_api_key is not None:  # the key of the OCR endpoint: the worker's own, not the unit's
        env["FOLIO_OCR_API_KEY"] = ocr_api_key
    with log.open("wb") as out:
        return subprocess.Popen(
            [FOLIO, "worker", "--data-dir", str(data_dir)], cwd=REPO_ROOT, env=env, stderr=out
        )


@contextmanager
def _running(worker: subprocess.Popen[bytes]) -> Iterator[None]:
    """The worker killed on exit."""
    try:
        yield
    finally:
        worker.kill()
        worker.wait(10)


def _units(log: Path, state: str) -> dict[str, str]:
    """The units a worker's log shows `started` (id: pages and document) or `read` (id: "")."""
    lines = log.read_text(errors="replace").splitlines()
    marks = [
        line.split("unit ", 1)[1].split(":", 1) for line in lines if "work_queue: unit " in line
    ]
    return {m[0]: m[1].strip() for m in marks if (m[1].strip() == "read") == (state == "read")}


def _holds_one_of(what: str, pages: set[tuple[str, int]]) -> bool:
    """Whether a started unit ("pages 3-4 of name.pdf") holds one of `pages` (source, number)."""
    span, name = what.removeprefix("pages ").split(" of ", 1)
    first, last = (int(n) for n in span.split("-"))
    return any((name, n) in pages for n in range(first, last + 1))


def _stop_mid_unit(
    workers: list[subprocess.Popen[bytes]],
    logs: list[Path],
    pages: set[tuple[str, int]],
    asked: Callable[[], bool],
    *,
    alone: bool = True,
) -> tuple[int, set[str]]:
    """Freeze the workers (SIGSTOP) until one holds a unit with one of `pages` while `asked()`
    (its request is at the endpoint), the only one to hold such a unit unless not `alone`; the
    others go on. Which one, and its units."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for proc in workers:
            proc.send_signal(signal.SIGSTOP)
        held = []
        for log in logs:
            started, read = _units(log, "started"), _units(log, "read")
            held.append({unit: what for unit, what in started.items() if unit not in read})
        holding = [
            i
            for i, units in enumerate(held)
            if any(_holds_one_of(w, pages) for w in units.values())
        ]
        caught = (len(holding) == 1 or (holding != [] and not alone)) and asked()
        for index, proc in enumerate(workers):
            if not caught or index != holding[0]:
                proc.send_signal(signal.SIGCONT)
        if caught:
            return holding[0], set(held[holding[0]])
        time.sleep(0.002)  # a text-layer unit takes a few milliseconds: look more often
    raise AssertionError(f"no worker was caught alone reading one of {sorted(pages)}")


def _left_unread(units: set[str], log: Path) -> set[str]:
    """Of the `units` a worker was caught holding, those its log never shows read once it is dead:
    a stop signal takes hold a moment after it is sent, and a short unit may end in between."""
    return units - set(_units(log, "read"))


def _children(pid: int) -> set[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if int(parent) == pid and state != "Z":
            out.add(int(stat.parent.name))
    return out


def _alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


def test_two_workers_one_killed_give_exactly_the_points_of_an_embedded_run(
    tmp_path: Path, redis_url: str
) -> None:
    """Text-layer and scanned PDFs, the scans read by the OCR simulator and every chunk embedded
    by the embeddings server, both on loopback, in the embedded run and in the queued one."""
    folder = _folder(tmp_path)
    sim = OcrSimulator(capacity=8, seconds_per_token=0.002, prefill_seconds=0.3)
    embed = EmbedServer(HashEmbedder(64), model=EMBED_MODEL)
    with sim, embed:
        _scans(folder, sim)
        endpoints = {
            "ocr": OcrMode.auto,
            "ocr_url": [sim.url],
            "figure_ocr": False,  # the simulator knows pages, not the crops of figures
            "embed_url": embed.url,
            "embed_model": EMBED_MODEL,
        }
        embedded = build_services(_settings(tmp_path / "embedded", **endpoints))
        try:
            expected = {r.source: r.status for r in embedded.sync.ingest_paths([folder])}
            points, pages = _points(embedded), _pages(embedded)
        finally:
            embedded.close()
        scan_pages = {(name, n) for name in SCANS for n in range(1, SCAN_PAGES + 1)}
        scan_pages -= {(name, n) for name, (_, kept) in SCANS.items() for n in kept}
        read = {(name, page[0]): page[1:] for name in SCANS for page in pages[name]}
        assert {read[page] for page in scan_pages} == {("vllm", "no text layer", "ok")}
        assert sum(status == "ok" for status in expected.values()) >= 7
        sim.reset_stats()
        embedded_batches = len(embed.batches)

        data = tmp_path / "queued"
        settings = _settings(
            data,
            broker_url=redis_url,
            broker_window=2,
            broker_heartbeat_s=HEARTBEAT_S,
            **endpoints,
        )
        coordinator = build_services(settings)
        extractor = coordinator.ingestor.extractor
        assert isinstance(extractor, QueueExtractor)
        logs = [tmp_path / f"worker{i}.log" for i in (1, 2)]
        workers = [_worker(data, redis_url, log) for log in logs]
        results: list[object] = []
        try:
            run = threading.Thread(
                target=lambda: results.extend(coordinator.sync.ingest_paths([folder]))
            )
            run.start()
            killed, unfinished = _stop_mid_unit(
                workers, logs, scan_pages, lambda: sim.stats.in_flight > 0
            )
            left = _children(workers[killed].pid)  # its render processes among them
            # killed mid-run: the run waits for the caught unit (whether units are still to be
            # sent then depends on the machine's speed: the scans come last, the smallest first)
            mid_run = run.is_alive()
            workers[killed].send_signal(signal.SIGKILL)
            run.join(120)
            assert mid_run and not run.is_alive(), "the run did not end after a worker was killed"
            got = {r.source: r.status for r in results}  # type: ignore[attr-defined]
            errors = [r.error for r in results if r.status == "failed"]  # type: ignore[attr-defined]
            assert got == expected, errors
            assert {r.source: r.status for r in coordinator.ledger.documents()} == {
                s: DocStatus(v.value) for s, v in expected.items()
            }
            assert _points(coordinator) == points
            assert _pages(coordinator) == pages  # each page once, read by the same engine
            assert extractor.sent >= sum(len(p) for p in pages.values()) // 2
            other = logs[1 - killed]
            lost = _left_unread(unfinished, logs[killed])
            assert lost <= set(_units(other, "read"))  # re-delivered
            assert left and not _alive(left), "the killed worker left processes behind"
        finally:
            coordinator.close()
            for proc in workers:
                proc.kill()
                proc.wait(10)
        stats = sim.stats
        assert workers[killed].returncode == -signal.SIGKILL
    # the workers read the scans through the simulator (the coordinator reads no page)
    assert stats.completed >= len(scan_pages) and set(stats.status_counts) == {200}
    assert len(embed.batches) > embedded_batches


def test_the_ocr_key_stays_out_of_the_broker_each_worker_sends_its_own(
    tmp_path: Path, redis_url: str
) -> None:
    """The coordinator's FOLIO_OCR_API_KEY is not sent with the units: a worker without the key
    is refused by the endpoint, one with it reads the scans."""
    key = "sk-ocr-test-key"
    folder = tmp_path / "in"
    folder.mkdir()
    sim = OcrSimulator(api_key=key)
    with sim:
        _scans(folder, sim)
        data = tmp_path / "queued"
        settings = _settings(
            data,
            ocr=OcrMode.auto,
            ocr_url=[sim.url],
            ocr_api_key=key,
            figure_ocr=False,
            broker_url=redis_url,
            broker_heartbeat_s=HEARTBEAT_S,
        )
        coordinator = build_services(settings)
        try:
            scans = sorted(folder.glob("*.pdf"))
            with _running(_worker(data, redis_url, tmp_path / "keyless.log")):
                [refused] = coordinator.sync.ingest_paths([scans[0]])
            # the endpoint refused every page (the unit held no key): the CPU engine read them
            assert set(sim.stats.status_counts) == {401}
            assert _ocr_pages(coordinator, refused.doc_id) == {("rapidocr", "fallback", True)}
            sim.reset_stats()
            with _running(_worker(data, redis_url, tmp_path / "keyed.log", ocr_api_key=key)):
                [read] = coordinator.sync.ingest_paths([scans[1]])
            assert set(sim.stats.status_counts) == {200}
            assert _ocr_pages(coordinator, read.doc_id) == {("vllm", "ok", False)}
        finally:
            coordinator.close()


def _ocr_pages(services: Services, doc_id: str | None) -> set[tuple[str, str, bool]]:
    """(engine, status, whether an error names HTTP 401) of the document's pages read by OCR."""
    assert doc_id is not None
    document = services.files.load_document(doc_id)
    return {
        (page.engine.name, page.status.value, any("401" in str(e) for e in page.errors))
        for page in document.pages
        if page.engine.name != "pymupdf"
    }


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
