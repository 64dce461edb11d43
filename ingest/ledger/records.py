"""What the ledger hands out: typed records of documents, their paths and their pages."""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from ocr_engine.errors import FolioError
from ocr_engine.schema import EngineInfo, PageStatus
from retrieval.doc_card import DocumentCard

__all__ = [
    "DocStatus",
    "DocumentRecord",
    "FailureKind",
    "NotRemovedError",
    "PageRecord",
    "PathRecord",
    "RemovedFileGoneError",
    "Timings",
    "Tombstone",
    "UnknownDocumentError",
    "Versions",
    "is_doc_id",
]

_DOC_ID = re.compile(r"^[0-9a-f]{64}$")


def is_doc_id(value: str) -> bool:
    """True for a well-formed document id (sha256 hex), so ids never reach the file system raw."""
    return bool(_DOC_ID.match(value))


class UnknownDocumentError(FolioError, KeyError):
    """No document with that id is in the ledger."""


class NotRemovedError(FolioError, KeyError):
    """No removal of that document (or path) is remembered."""


class RemovedFileGoneError(FolioError, FileNotFoundError):
    """A removed document cannot be restored: its file is no longer where it was."""


class DocStatus(StrEnum):
    """queued -> processing -> ok | partial | failed; a retryable failure is queued again."""

    queued = "queued"
    processing = "processing"
    ok = "ok"
    partial = "partial"
    failed = "failed"


INDEXED = (DocStatus.ok, DocStatus.partial)


class FailureKind(StrEnum):
    """Why a document failed, which decides whether it is tried again."""

    bad_input = "bad_input"  # never succeeds as is
    password = "password"  # tried again when a password for it appears
    no_text = "no_text"  # nothing readable with the engines configured
    transient = "transient"  # an engine or the index was unavailable: retried with backoff
    internal = "internal"  # a bug or a library crash: retried with backoff, a few times

    @property
    def retryable(self) -> bool:
        return self in (FailureKind.transient, FailureKind.internal)


class Timings(BaseModel):
    """Seconds of one document's last attempt by stage (stages overlap across documents)."""

    extract_s: float = 0.0
    embed_s: float = 0.0
    index_s: float = 0.0
    total_s: float = 0.0
    chunks_embedded: int = Field(default=0, description="chunks the model embedded")
    chunks_cached: int = Field(default=0, description="chunks whose vectors were cached")


class Versions(BaseModel):
    """What produced the indexed points, so a document can be redone when any of it changes."""

    folio: str | None = None
    document_schema: str | None = None
    chunk_schema: str | None = None
    embedder: str | None = None
    extraction: str | None = Field(default=None, description="folio's extraction version")
    engines: list[str] = Field(default_factory=list, description="engine keys of its pages")

    def older_than(self, current: Versions) -> str | None:
        """What the code reading documents now changed since this reading (None: nothing).

        `current.engines` holds the keys of the engines whose new versions read a page anew
        (the text layer's); an engine this document's pages did not use is no reason."""
        for name, then, now in (
            ("extraction version", self.extraction, current.extraction),
            ("document schema", self.document_schema, current.document_schema),
            ("chunk schema", self.chunk_schema, current.chunk_schema),
        ):
            if then != now:
                return f"{name} {then or 'unrecorded'} -> {now}"
        for key in current.engines:
            name = key.split("|", 1)[0]
            used = [k for k in self.engines if k.split("|", 1)[0] == name]
            if used and key not in used:
                return f"{used[0]} -> {key}"
        return None


class DocumentRecord(BaseModel):
    """One version of a file's bytes (doc_id = sha256) and where ingesting it stands."""

    doc_id: str
    source: str = Field(description="file name it was last seen under")
    paths: list[str] = Field(default_factory=list)
    size: int = 0
    status: DocStatus
    pages: int = Field(default=0, description="page count, known once processing started")
    pages_done: int = Field(default=0, description="pages read in the current attempt")
    chunks: int = Field(default=0, description="chunks written to the index by the last success")
    errors: list[str] = Field(default_factory=list)
    failure: FailureKind | None = None
    retryable: bool = False
    attempts: int = 0
    next_retry_at: datetime | None = None
    uploaded: bool = Field(default=False, description="kept without a path (an upload)")
    replaced_by: str | None = Field(default=None, description="the newer version of its path")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    seconds: float = Field(default=0.0, description="duration of the last attempt")
    timings: Timings = Field(default_factory=Timings)
    versions: Versions = Field(default_factory=Versions)
    card: DocumentCard | None = Field(
        default=None, description="what it is, read from its content by the last success"
    )


class PathRecord(BaseModel):
    """A file path as last scanned: which bytes it held (by doc_id), its size and mtime."""

    path: str
    doc_id: str
    size: int
    mtime_ns: int
    seen_at: datetime


class PageRecord(BaseModel):
    """One page of a document as extracted: which engine read it, why, and how it went."""

    number: int = Field(ge=1)
    width: float
    height: float
    engine: EngineInfo
    status: PageStatus
    route: str | None = None
    errors: list[str] = Field(default_factory=list)
    blocks: int = 0


class Tombstone(BaseModel):
    """A file removed by the user while it stayed in its folder: scans leave it out while `path`
    holds the bytes `doc_id`; restoring it, or other bytes at `path`, ends the removal."""

    path: str
    doc_id: str = Field(description="sha256 of the bytes removed")
    source: str = Field(description="file name of the document removed")
    size: int
    mtime_ns: int = Field(description="as last scanned; other values make a scan hash it again")
    removed_at: datetime
