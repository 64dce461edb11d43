"""The background ingest worker of a running service: processes what the ledger has queued.

Scans (the watcher) and uploads (the API) only record work in the ledger and `wake()` the worker;
it also wakes by itself when a failed document's retry time comes.
"""

from __future__ import annotations

import logging
import threading
import time

from ingest.sync.sync import Sync

__all__ = ["IngestWorker"]

log = logging.getLogger(__name__)


class IngestWorker:
    """One thread running `Sync.process_pending` whenever there may be work."""

    def __init__(self, sync: Sync, *, poll_s: float = 300.0) -> None:
        self.sync = sync
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="folio-ingest", daemon=True)
        self._thread.start()
        self.wake()

    def wake(self) -> None:
        """There may be new work."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the current window; unfinished documents are queued for the next start."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _timeout(self) -> float:
        at = self.sync.ledger.next_retry_at()
        if at is None:
            return self.poll_s
        return min(self.poll_s, max(0.05, at - time.time()))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._timeout())
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.sync.process_pending(stop=self._stop)
            except Exception:  # the worker outlives any failure; the ledger keeps the state
                log.exception("ingest worker failed; retrying in 5 s")
                self._stop.wait(5.0)
                self._wake.set()
                continue
