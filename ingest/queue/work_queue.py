"""Page windows read by `folio worker` processes through a Dramatiq broker on Redis.

The coordinator (`folio serve` / `folio ingest`, the ledger's one writer) runs the embedded
pipeline unchanged except for where page windows are read: `QueueExtractor` sends each window as a
unit (document hash + page range, with a deterministic message id) and waits for its pages, which
a worker reads from the document's address the unit carries (`ingest.queue.doc_bytes`: the
coordinator's API with a token, an S3-compatible store) or from shared storage where
`DATA_DIR/documents/` is mounted (preferred). A worker that can read the bytes from none of them
answers so, and the document waits for a worker that can (retried with backoff). Chunking,
embedding, the index and the ledger stay with the coordinator, so the chunks and point ids are those
of an embedded run, whichever worker read which window.

A worker killed mid-unit leaves its message unacknowledged; Redis maintenance run by the other
workers puts it back on the queue once the dead worker's heartbeat is `heartbeat_s` old. A unit
with no answer within `unit_timeout_s`, or a broker lost mid-run, fails its document as
retryable (the ledger shows it failed with a retry time); nothing of it is indexed.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.results import Results, ResultTimeout
from dramatiq.results.backends import RedisBackend
from pydantic import BaseModel

from ingest.pipeline.extractor import Extractor, WindowReader, WindowResult, WorkerCrashedError
from ingest.pipeline.guards import PdfLimits
from ingest.queue.doc_bytes import DocAddress, DocSources, NoReaderError
from ingest.queue.doc_fetch import DocCache, DocFetcher
from ocr_engine.errors import BadInputError, EngineOutputError, EngineUnavailableError
from ocr_engine.options import ExtractOptions

__all__ = [
    "ACTOR",
    "QUEUE",
    "BrokerUnavailableError",
    "QueueExtractor",
    "UnitTimeoutError",
    "WindowUnit",
    "connect",
    "run_worker",
]

log = logging.getLogger(__name__)

QUEUE = "folio-pages"
ACTOR = "folio_read_window"
_NAMESPACE = uuid.UUID("6f1c2f1e-9d0b-4c51-9d8e-0a4d5e7f1b23")
_RESULT_TTL_MS = 3600 * 1000
_MAINTENANCE_CHANCE = 100_000  # of a million broker commands: dead workers are found quickly
_WAIT_SLICE_S = 2.0  # redis-py's socket timeout is 5 s: a longer blocking read would fail
_PDF_NAME = re.compile(r"^[0-9a-f]{64}\.pdf$")


class BrokerUnavailableError(EngineUnavailableError):
    """The broker named by FOLIO_BROKER_URL cannot be reached."""


class UnitTimeoutError(EngineUnavailableError):
    """No worker answered a unit in time."""


class WindowUnit(BaseModel):
    """One unit of work: pages first..last of a stored PDF, read with the coordinator's options
    (but its OCR endpoint's API key: a worker sends its own FOLIO_OCR_API_KEY, so that no key
    is kept in the broker)."""

    file: str
    name: str
    password: str | None = None
    doc_id: str
    first: int
    last: int
    options: ExtractOptions
    limits: PdfLimits
    address: DocAddress | None = None

    def message_id(self) -> str:
        """The same unit always has the same id: document, window, how it is read and its
        address (whose token changes with each sending: an answer left by an earlier sending,
        read from a worker's prefetched copy, is never taken for this one's)."""
        how = self.options.model_dump_json() + self.limits.model_dump_json()
        where = self.address.model_dump_json() if self.address is not None else ""
        return str(uuid.uuid5(_NAMESPACE, f"{self.doc_id}:{self.first}-{self.last}:{how}{where}"))


class _UnitError(BaseModel):
    kind: str
    message: str


class _UnitResult(BaseModel):
    window: WindowResult | None = None
    error: _UnitError | None = None


_RAISED: dict[str, Callable[[str], Exception]] = {
    "bad_input": BadInputError,
    "unavailable": EngineUnavailableError,
    "output": EngineOutputError,
    "crashed": WorkerCrashedError,
    "unreachable": lambda message: NoReaderError(
        f"waiting for a worker that can read it: {message}"
    ),
}


def _error_kind(exc: BaseException) -> str:
    if isinstance(exc, NoReaderError):
        return "unreachable"
    if isinstance(exc, BadInputError):
        return "bad_input"
    if isinstance(exc, EngineOutputError):
        return "output"
    if isinstance(exc, EngineUnavailableError | OSError):
        return "unavailable"
    return "crashed"


def _redact(url: str) -> str:
    return re.sub(r"//[^@/]*@", "//***@", url)


def connect(url: str, *, heartbeat_s: float = 60.0) -> tuple[RedisBroker, RedisBackend]:
    """The broker and result backend at `url`, checked; BrokerUnavailableError names the URL."""
    backend = RedisBackend(url=url, namespace="folio-results")
    broker = RedisBroker(
        url=url,
        namespace="folio",
        heartbeat_timeout=int(heartbeat_s * 1000),
        maintenance_chance=_MAINTENANCE_CHANCE,
    )
    broker.add_middleware(Results(backend=backend, result_ttl=_RESULT_TTL_MS))
    try:
        broker.client.ping()
    except redis.RedisError as exc:
        broker.close()
        raise BrokerUnavailableError(
            f"cannot reach the broker at FOLIO_BROKER_URL={_redact(url)}: {exc}"
        ) from exc
    return broker, backend


def _declare(broker: RedisBroker, fn: Callable[[str], str]) -> dramatiq.Actor[[str], str]:
    # no retries by Dramatiq: a failure is returned as a result; a killed worker's unit comes back
    # through the heartbeat; an hour bounds a window read by CPU OCR
    declare = dramatiq.actor(
        broker=broker,
        actor_name=ACTOR,
        queue_name=QUEUE,
        store_results=True,
        max_retries=0,
        time_limit=3600 * 1000,
    )
    return declare(fn)


def _no_worker_side(unit_json: str) -> str:
    raise RuntimeError("the coordinator does not read units")


class QueueExtractor(Extractor):
    """An Extractor whose page windows are read by `folio worker`s; probes stay local."""

    def __init__(
        self,
        options: ExtractOptions,
        broker: RedisBroker,
        backend: RedisBackend,
        *,
        limits: PdfLimits | None = None,
        unit_timeout_s: float = 3600.0,
        waiting: int = 32,
        sources: DocSources | None = None,
    ) -> None:
        super().__init__(options, cache_path=None, limits=limits, processes=1)
        self.broker = broker
        self.backend = backend
        self.unit_timeout_s = unit_timeout_s
        self.sources = sources
        self.actor = _declare(broker, _no_worker_side)
        self._waiters = ThreadPoolExecutor(waiting, thread_name_prefix="folio-unit")
        self.sent = 0
        self._sent_options = _with_api_key(options, None)

    def window(
        self, path: Path, name: str, password: str | None, doc_id: str, first: int, last: int
    ) -> Future[WindowResult]:
        unit = WindowUnit(
            file=path.name,
            name=name,
            password=password,
            doc_id=doc_id,
            first=first,
            last=last,
            options=self._sent_options,
            limits=self.limits,
        )
        return self._waiters.submit(self._run, unit, path)

    def _run(self, unit: WindowUnit, path: Path) -> WindowResult:
        if self.sources is not None:  # signed now: the token lives from when the unit is sent
            unit = unit.model_copy(update={"address": self.sources.address(unit.doc_id, path)})
        message = self.actor.message(unit.model_dump_json()).copy(message_id=unit.message_id())
        key = self.backend.build_message_key(message)
        where = f"pages {unit.first}-{unit.last} of {unit.name}"
        try:
            self.backend.client.delete(key)  # an answer left by an earlier attempt
            self.broker.enqueue(message)
            self.sent += 1
            raw = self._answer(message)
            self.backend.client.delete(key)
        except ResultTimeout as exc:
            raise UnitTimeoutError(
                f"{where}: no worker answered within {self.unit_timeout_s:g} s"
            ) from exc
        except redis.RedisError as exc:
            raise BrokerUnavailableError(f"{where}: lost the broker: {exc}") from exc
        result = _UnitResult.model_validate_json(raw)
        if result.error is not None:
            raise _RAISED[result.error.kind](result.error.message)
        assert result.window is not None
        return result.window

    def _answer(self, message: dramatiq.Message[str]) -> str:
        """The unit's answer, waited for in slices shorter than the client's socket timeout."""
        deadline = time.monotonic() + self.unit_timeout_s
        while True:
            wait_s = min(_WAIT_SLICE_S, max(1.0, deadline - time.monotonic()))
            try:
                raw = self.backend.get_result(message, block=True, timeout=int(wait_s * 1000))
                return str(raw)
            except ResultTimeout:
                if time.monotonic() >= deadline:
                    raise

    def close(self) -> None:
        self._waiters.shutdown(wait=False, cancel_futures=True)
        super().close()
        self.broker.close()


def _with_api_key(options: ExtractOptions, api_key: str | None) -> ExtractOptions:
    """The options with this API key for their OCR endpoint (None: without one, as units are
    sent); the options themselves when they name no endpoint or already carry it."""
    if options.vllm is None or options.vllm.api_key == api_key:
        return options
    return options.model_copy(update={"vllm": options.vllm.model_copy(update={"api_key": api_key})})


class _Readers:
    """One WindowReader per worker thread and way of reading; PDFs from `fetcher`; requests to
    an OCR endpoint carry `ocr_api_key` (the worker's own)."""

    def __init__(self, fetcher: DocFetcher, ocr_api_key: str | None = None) -> None:
        self.fetcher = fetcher
        self.ocr_api_key = ocr_api_key
        self._local = threading.local()

    def read(self, unit_json: str) -> str:
        try:
            unit = WindowUnit.model_validate_json(unit_json)
            if not _PDF_NAME.match(unit.file):
                raise BadInputError(f"not a stored document: {unit.file!r}")
            address = unit.address or DocAddress(doc_id=unit.file.removesuffix(".pdf"), size=0)
            if f"{address.doc_id}.pdf" != unit.file:
                raise BadInputError(f"the unit's address is not of {unit.file!r}")
            log.info(
                "unit %s: pages %d-%d of %s", unit.message_id(), unit.first, unit.last, unit.name
            )
            path = self.fetcher.path(address, unit.name)
            result = self._reader(unit).read(
                str(path),
                unit.name,
                unit.password,
                unit.doc_id,
                unit.first,
                unit.last,
            )
            log.info("unit %s: read", unit.message_id())
            return _UnitResult(window=result).model_dump_json()
        except Exception as exc:  # returned to the coordinator, which fails the document
            log.warning("unit failed: %s: %s", type(exc).__name__, exc)
            error = _UnitError(kind=_error_kind(exc), message=f"worker: {exc}")
            return _UnitResult(error=error).model_dump_json()

    def _reader(self, unit: WindowUnit) -> WindowReader:
        readers: dict[str, WindowReader] = getattr(self._local, "readers", None) or {}
        self._local.readers = readers
        key = unit.options.model_dump_json() + unit.limits.model_dump_json()
        if key not in readers:
            options = unit.options
            if self.ocr_api_key is not None:
                options = _with_api_key(options, self.ocr_api_key)
            readers[key] = WindowReader(options, None, unit.limits)
        return readers[key]


def run_worker(
    url: str,
    data_dir: Path,
    stop: threading.Event,
    *,
    heartbeat_s: float = 60.0,
    ocr_api_key: str | None = None,
    cache_dir: Path | None = None,
    cache_bytes: int = 2 << 30,
) -> None:
    """Read units until `stop` is set; the documents come from `data_dir/documents` (read only)
    where it is mounted, else fetched into `cache_dir` (unset: a temporary directory, removed at
    the end) up to `cache_bytes`; OCR requests carry `ocr_api_key`."""
    import shutil
    import tempfile

    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    broker, _ = connect(url, heartbeat_s=heartbeat_s)
    shared = data_dir / "documents"
    temporary = cache_dir is None
    root = Path(tempfile.mkdtemp(prefix="folio-worker-cache-")) if cache_dir is None else cache_dir
    fetcher = DocFetcher(shared if shared.is_dir() else None, DocCache(root, cache_bytes))
    readers = _Readers(fetcher, ocr_api_key)
    _declare(broker, readers.read)
    worker = dramatiq.Worker(broker, queues={QUEUE}, worker_threads=1, worker_timeout=500)
    worker.start()
    where = f"shared storage {shared}" if shared.is_dir() else f"fetched into {root}"
    log.info("folio worker reading %s from %s; documents: %s", QUEUE, _redact(url), where)
    try:
        stop.wait()
    finally:
        worker.stop()
        broker.close()
        fetcher.close()
        log.info("folio worker stopped; %s", fetcher.cache.stats.line())
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
