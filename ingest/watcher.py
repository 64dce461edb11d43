"""Watch a folder and ingest PDFs dropped there, once each file has finished being written."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchfiles import Change, watch

from ingest.pipeline import FileResult, Ingestor, find_pdfs

log = logging.getLogger(__name__)


def is_pdf_name(path: Path) -> bool:
    return path.suffix.lower() == ".pdf" and not path.name.startswith(".")


def wait_until_stable(
    path: Path, *, settle: float, timeout: float, stop: threading.Event | None = None
) -> bool:
    """True once size and mtime have held for `settle` seconds; False if the file vanished."""
    deadline = time.monotonic() + timeout
    last: tuple[int, int] | None = None
    stable_since = time.monotonic()
    while time.monotonic() < deadline and not (stop and stop.is_set()):
        try:
            stat = path.stat()
        except FileNotFoundError:
            return False
        current = (stat.st_size, stat.st_mtime_ns)
        if current != last:
            last, stable_since = current, time.monotonic()
        elif time.monotonic() - stable_since >= settle and stat.st_size > 0:
            return True
        time.sleep(min(settle / 4, 0.25))
    return last is not None and path.exists()


class FolderWatcher:
    """Ingests what is in `folder` at start, then every PDF added or rewritten there."""

    def __init__(
        self,
        folder: Path,
        ingestor: Ingestor,
        *,
        settle: float = 1.0,
        write_timeout: float = 600.0,
        on_result: Callable[[FileResult], None] | None = None,
    ) -> None:
        self.folder = folder
        self.ingestor = ingestor
        self.settle = settle
        self.write_timeout = write_timeout
        self.on_result = on_result
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name="folio-watcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        self.ready.set()
        while not self._stop.is_set():
            try:
                self._scan_and_watch()
            except Exception:  # e.g. the folder was removed: log, wait, watch again
                log.exception("watching %s failed; retrying in 5 s", self.folder)
                self._stop.wait(5.0)

    def _scan_and_watch(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for path in find_pdfs([self.folder]):
            if self._stop.is_set():
                return
            self._ingest(path)
        for changes in watch(
            self.folder,
            stop_event=self._stop,
            debounce=300,
            rust_timeout=500,
            yield_on_timeout=False,
        ):
            paths = sorted(
                {Path(p) for kind, p in changes if kind != Change.deleted and is_pdf_name(Path(p))}
            )
            for path in paths:
                if self._stop.is_set():
                    return
                if path.is_file() and wait_until_stable(
                    path, settle=self.settle, timeout=self.write_timeout, stop=self._stop
                ):
                    self._ingest(path)

    def _ingest(self, path: Path) -> None:
        try:
            result = self.ingestor.ingest_file(path)
        except Exception:  # the watcher must outlive any single file
            log.exception("watcher could not ingest %s", path)
            return
        if result.error:
            log.warning("%s: %s (%s)", result.source, result.status.value, result.error)
        else:
            log.info(
                "%s: %s, %d pages, %d chunks",
                result.source,
                result.status.value,
                result.pages,
                result.chunks,
            )
        if self.on_result is not None:
            self.on_result(result)
