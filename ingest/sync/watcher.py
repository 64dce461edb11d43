"""Watch a folder: any change under it triggers a scan (cheap when little changed), and the
ingest worker is woken for what the scan queued. Files still being written are scanned again
once they have not changed for `settle` seconds."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchfiles import watch

from ingest.sync.scan import ScanReport
from ingest.sync.sync import Sync

__all__ = ["FolderWatcher"]

log = logging.getLogger(__name__)


class FolderWatcher:
    """Scans `folder` at start and after every change; `wake` is called when work was queued."""

    def __init__(
        self,
        folder: Path,
        sync: Sync,
        *,
        wake: Callable[[], None],
        settle: float = 1.0,
        on_scan: Callable[[ScanReport], None] | None = None,
    ) -> None:
        self.folder = folder
        self.sync = sync
        self.wake = wake
        self.settle = settle
        self.on_scan = on_scan
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()
        self._rescan_at: float | None = None

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name="folio-watcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._scan_and_watch()
            except Exception:  # e.g. the folder was removed: log, wait, watch again
                log.exception("watching %s failed; retrying in 5 s", self.folder)
                self._stop.wait(5.0)

    def _scan_and_watch(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._scan()
        self.ready.set()
        for changes in watch(
            self.folder,
            stop_event=self._stop,
            debounce=300,
            rust_timeout=250,
            yield_on_timeout=True,
        ):
            due = self._rescan_at is not None and time.time() >= self._rescan_at
            if changes or due:
                self._scan()

    def _scan(self) -> None:
        try:
            report = self.sync.scan(self.folder, settle=self.settle)
        except Exception:  # one failed scan (e.g. a locked index) must not end the watcher
            log.exception("scanning %s failed", self.folder)
            self._rescan_at = time.time() + 5.0
            return
        self._rescan_at = report.settle_at
        if report.new or report.changed or report.requeued:
            log.info(
                "%s: %d new, %d changed, %d moved, %d copied, %d deleted",
                self.folder,
                len(report.new),
                len(report.changed),
                len(report.moved),
                len(report.copied),
                len(report.deleted),
            )
        if report.new or report.changed or report.requeued or report.removed:
            self.wake()
        if self.on_scan is not None:
            self.on_scan(report)
