"""Ingestion events: what happened to which document, for progress bars, logs and SSE streams.

Every change of a document's state is published on an `EventHub`; subscribers are called in the
thread that made the change, so they must be quick (put the event on a queue) and not raise.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from enum import StrEnum

from pydantic import BaseModel, Field

from ingest.ledger.records import DocStatus

__all__ = ["EventHub", "EventKind", "IngestEvent", "Subscriber"]

log = logging.getLogger(__name__)


class EventKind(StrEnum):
    queued = "queued"  # new bytes recorded, waiting to be processed
    linked = "linked"  # a path now holds known bytes (copy, rename, touch): nothing to process
    started = "started"  # processing began; `pages_total` is known
    progress = "progress"  # a page read (`stage` extract, each as it is read) or pages embedded
    finished = "finished"  # ok, partial or failed; `error` says why for the last two
    removed = "removed"  # its points and record are gone (file deleted, replaced or DELETE)


class IngestEvent(BaseModel):
    kind: EventKind
    doc_id: str
    source: str
    path: str | None = None
    status: DocStatus | None = None
    stage: str | None = None
    pages_done: int = 0
    pages_total: int = 0
    pages_per_s: float | None = None
    chunks: int = 0
    error: str | None = None
    page: int | None = Field(default=None, description="stage extract: the page just read")
    engine: str | None = Field(default=None, description="stage extract: the engine that read it")
    at: float = Field(default_factory=time.time)


Subscriber = Callable[[IngestEvent], None]


class EventHub:
    """Fan-out of events to any number of subscribers (a CLI bar, log lines, SSE clients)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Start calling `subscriber`; returns the function that stops it."""
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(self, event: IngestEvent) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for subscriber in subscribers:
            try:
                subscriber(event)
            except Exception:  # one broken listener must not stop ingestion
                log.exception("event subscriber failed on %s", event.kind)
