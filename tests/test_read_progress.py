"""Progress while a document is OCR'd: each page read is an `extract` progress event (the page,
the engine that read it, the count so far) and counts in the ledger's `pages_done` as it
finishes, though the vLLM engine reads the whole window in one request: the pages read are told
while the window's last page still hangs in the endpoint; in the extraction worker process as in
a thread, and on the CPU engine too (told from the thread that reads, not after its window).
Through the real pipeline: the OCR simulator on loopback as the endpoint, a scan made here."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from doubles.fakes import HashEmbedder
from doubles.ocr_sim_requests import Fault
from doubles.ocr_simulator import OcrSimulator
from ingest.pipeline.events import EventKind, IngestEvent
from ocr_engine.options import OcrMode
from server.services import Services, build_services, ingest_options
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf
from tests.test_ocr_pipeline import scanned

TITLE, SECTIONS = FACTS["bakery.pdf"]


class Seen:
    """The extract events of a run, each with what was true when it was sent: the ledger's
    `pages_done`, the thread that sent it, the requests the simulator had answered."""

    def __init__(self, services: Services, simulator: OcrSimulator | None) -> None:
        self.services = services
        self.simulator = simulator
        self.lock = threading.Lock()
        self.events: list[Told] = []

    def __call__(self, event: IngestEvent) -> None:
        if event.kind is EventKind.progress and event.stage == "extract":
            done = self.services.ledger.get(event.doc_id).pages_done
            answered = self.simulator.stats.completed if self.simulator is not None else 0
            told = Told(event, done, threading.current_thread().name, answered)
            with self.lock:
                self.events.append(told)


class Told(NamedTuple):
    event: IngestEvent
    pages_done: int  # the ledger's
    thread: str
    answered: int  # requests the simulator had answered


def _read(
    tmp_path: Path,
    pages: int,
    window: dict[str, int] | None = None,
    simulator: OcrSimulator | None = None,
    **settings: Any,
) -> tuple[list[Told], Any]:
    """A scan of `pages` pages ingested with `settings` (and ingest's `window` options); with a
    `simulator`, through it, the last page's first request left hanging until the client gives
    up on it (after 20 s) and asks again. Its extract events, its record."""
    text_pdf = fact_pdf(TITLE, SECTIONS, filler_pages=pages - 1)
    scan = scanned(text_pdf)
    if simulator is not None:
        keys = simulator.register_pdf(scan, text_source=text_pdf)
        simulator.add_fault(Fault.hang, key=keys[-1], times=1)
        settings["ocr_url"] = [simulator.url]
    path = tmp_path / "bakery scan.pdf"
    path.write_bytes(scan)
    config = Settings(data_dir=tmp_path / "data", ocr=OcrMode.auto, **settings)
    options = ingest_options(config).model_copy(update=window or {})
    if options.extract.vllm is not None:
        vllm = options.extract.vllm.model_copy(update={"read_timeout_s": 20.0})
        extract = options.extract.model_copy(update={"vllm": vllm})
        options = options.model_copy(update={"extract": extract})
    services = build_services(config, embedder=HashEmbedder(), options=options)
    seen = Seen(services, simulator)
    unsubscribe = services.events.subscribe(seen)
    try:
        [result] = services.sync.ingest_paths([path])
        assert result.status.value == "ok", result.error
        record = services.ledger.get(str(result.doc_id))
    finally:
        unsubscribe()
        services.close()
    return seen.events, record


def _check(told: list[Told], pages: int, engine: str) -> None:
    events = [t.event for t in told]
    assert [e.pages_done for e in events] == list(range(1, pages + 1)), events
    assert sorted(e.page for e in events if e.page is not None) == list(range(1, pages + 1))
    assert {e.engine for e in events} == {engine}
    assert all(e.pages_total == pages for e in events)
    # the ledger (GET /documents' pages_done) counts each page as its event is sent
    assert [t.pages_done for t in told] == list(range(1, pages + 1))


@pytest.mark.parametrize("processes", [0, 1], ids=["thread", "worker-process"])
def test_each_page_the_endpoint_reads_is_an_event(tmp_path: Path, processes: int) -> None:
    pages = 4
    with OcrSimulator() as sim:  # the four pages asked at once, in one window
        told, record = _read(tmp_path, pages, simulator=sim, extract_processes=processes)
    _check(told, pages, "vllm")
    # the first three were told while the last one's request still hung in the endpoint (it is
    # answered when asked again, 20 s on)
    assert all(t.answered < pages for t in told[:-1]), told
    assert sorted(t.event.page or 0 for t in told[:-1]) == [1, 2, 3]
    assert record.pages == pages and record.pages_done == pages


def test_each_page_the_cpu_engine_reads_is_an_event(tmp_path: Path) -> None:
    pages = 3
    # one request of three pages (no ramp of 1, 1, 2 pages: the window is the request)
    whole = {"window": pages, "extract_window": pages}
    told, _ = _read(tmp_path, pages, whole, extract_processes=0, ocr_url=[])
    _check(told, pages, "rapidocr")
    # told by the extraction thread as it read each, not by the feeder once the window came back
    assert {t.thread for t in told} == {"folio-extract_0"}, told
