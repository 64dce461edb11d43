"""The answer sentences of indexed chunks embedded while folio is idle, so that a new question
reads their vectors instead of embedding them (FOLIO_ANSWER_SENTENCES=idle, the default).

Ingest stays as fast as without it (nothing runs while a document is read), and a query waits
for one small batch at most: the filler embeds `batch` texts at a time, each only after
`quiet_s` without a query and with no ingest running. What it keeps is the same cache the query
path fills (`RememberingEmbedder`), so nothing is lost when it is stopped: the next start goes on
from what is there. Progress is logged per document.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from pydantic import BaseModel, Field

from retrieval.answer.sentence_cache import RememberingEmbedder, VectorCache, missing_answer_texts
from retrieval.index.embedder import Embedder
from retrieval.index.store import VectorStore

__all__ = ["FillProgress", "FillStep", "SentenceFill"]

log = logging.getLogger(__name__)


class FillStep(BaseModel):
    """One document's answer texts being embedded: `done` of the `total` it lacked."""

    doc_id: str
    done: int = Field(ge=0)
    total: int = Field(ge=0)


class FillProgress(BaseModel):
    """What the filler has done since `folio serve` started (in `GET /health`)."""

    settled: bool = Field(
        default=False, description="every indexed document's answer sentences are embedded"
    )
    documents_checked: int = Field(default=0, description="documents whose sentences are all in")
    texts_embedded: int = Field(default=0, description="sentences and table cells embedded")
    pending: list[str] = Field(
        default_factory=list,
        description="doc_ids whose answer sentences are not yet known to be all embedded: a "
        "question about them embeds the missing ones first (a little slower)",
    )
    current: FillStep | None = Field(
        default=None, description="the document being filled now, and how far it is"
    )


class SentenceFill:
    """One daemon thread embedding, between queries and ingests, the answer texts not cached."""

    def __init__(
        self,
        store: VectorStore,
        embedder: RememberingEmbedder,
        *,
        busy: Callable[[], bool],
        quiet_s: float = 2.0,
        batch: int = 8,
        poll_s: float = 60.0,
    ) -> None:
        self.store = store
        if embedder.cache is None:
            raise ValueError("the sentence filler needs the embedder's sentence cache")
        self.model: Embedder = embedder.inner  # not `embedder`: its use marks query time
        self.queries = embedder
        self.cache: VectorCache = embedder.cache
        self.busy = busy
        self.quiet_s = quiet_s
        self.batch = batch
        self.poll_s = poll_s
        self.progress = FillProgress()
        self._done: dict[str, int] = {}  # doc_id -> chunk count when its texts were all cached
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="folio-sentences", daemon=True)
        self._thread.start()

    def wake(self, doc_id: str | None = None) -> None:
        """A document was (re)indexed or removed: look again (at `doc_id` even if seen); it is
        pending only while the index holds chunks of it (not a file that failed, or was removed)."""
        if doc_id is not None:
            self._done.pop(doc_id, None)
            held = self.store.count(doc_id) > 0
            if held and doc_id not in self.progress.pending:  # pending from now, not next pass
                self.progress.pending = [*self.progress.pending, doc_id]
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._pass()
            except Exception:  # a closed store at shutdown, a failed batch: tried again later
                log.exception("embedding answer sentences failed; again in %.0f s", self.poll_s)
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _pass(self) -> None:
        """Every document not yet seen whole, in id order; `settled` when none lacks a text."""
        counts = self.store.doc_ids()
        for gone in set(self._done) - set(counts):
            self._done.pop(gone, None)
        todo = [d for d in sorted(counts) if self._done.get(d) != counts[d]]
        self.progress.pending = list(todo)  # a new list: /health copies it from another thread
        if todo:
            self.progress.settled = False
        for doc_id in todo:
            if not self._idle():
                return
            filled = self._fill(doc_id)
            if filled is None:
                return
            self._done[doc_id] = counts[doc_id]
            self.progress.pending = [d for d in self.progress.pending if d != doc_id]
            self.progress.documents_checked += 1
            source, embedded = filled
            if embedded:
                log.info("%s: %d answer sentences embedded for /query", source, embedded)
        self.progress.settled = not self._wake.is_set()

    def _fill(self, doc_id: str) -> tuple[str, int] | None:
        """The missing answer texts of one document embedded: its file name and how many; None
        when stopped first."""
        chunks = self.store.chunks(doc_id)
        missing = missing_answer_texts(chunks, self.model.name, self.model.dim, self.cache)
        try:
            for start in range(0, len(missing), self.batch):
                # a new object each time: /health reads it from another thread
                self.progress.current = FillStep(doc_id=doc_id, done=start, total=len(missing))
                if not self._idle():
                    return None
                part = missing[start : start + self.batch]
                self.cache.put(self.model.name, part, self.model.embed_documents(part))
                self.progress.texts_embedded += len(part)
        finally:
            self.progress.current = None
        return (chunks[0].source if chunks else doc_id), len(missing)

    def _idle(self) -> bool:
        """Wait until no query has run for `quiet_s` and no ingest runs; False when stopping."""
        while not self._stop.is_set():
            quiet = time.monotonic() - self.queries.last_used
            if quiet >= self.quiet_s and not self.busy():
                return True
            self._stop.wait(max(0.05, self.quiet_s - quiet) if quiet < self.quiet_s else 0.5)
        return False
