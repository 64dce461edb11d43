"""The document catalog under the data directory: per document its PDF, JSON and record."""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from ocr_engine.schema import Document

log = logging.getLogger(__name__)

_DOC_ID = re.compile(r"^[0-9a-f]{64}$")


class DocStatus(StrEnum):
    processing = "processing"
    ok = "ok"
    partial = "partial"
    failed = "failed"


class DocumentRecord(BaseModel):
    """What the catalog knows about one document (one version of one file's bytes)."""

    doc_id: str
    source: str
    paths: list[str] = Field(default_factory=list)
    status: DocStatus
    pages: int = 0
    chunks: int = 0
    errors: list[str] = Field(default_factory=list)
    ingested_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0


class UnknownDocumentError(KeyError):
    """No document with that id is in the catalog."""


def is_doc_id(value: str) -> bool:
    """True for a well-formed document id (sha256 hex), so ids never reach the file system raw."""
    return bool(_DOC_ID.match(value))


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Catalog:
    """Keeps `{doc_id}.pdf`, `{doc_id}.json` (structured document) and `{doc_id}.record.json`."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "documents"
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _path(self, doc_id: str, suffix: str) -> Path:
        if not is_doc_id(doc_id):
            raise UnknownDocumentError(doc_id)
        return self.root / f"{doc_id}{suffix}"

    def pdf_path(self, doc_id: str) -> Path:
        path = self._path(doc_id, ".pdf")
        if not path.exists():
            raise UnknownDocumentError(doc_id)
        return path

    def save_pdf(self, doc_id: str, data: bytes) -> None:
        path = self._path(doc_id, ".pdf")
        if not path.exists():
            _write_atomic(path, data)

    def save_document(self, document: Document) -> None:
        _write_atomic(
            self._path(document.doc_id, ".json"), document.model_dump_json().encode("utf-8")
        )

    def load_document(self, doc_id: str) -> Document:
        path = self._path(doc_id, ".json")
        if not path.exists():
            raise UnknownDocumentError(doc_id)
        return Document.model_validate_json(path.read_bytes())

    def save_record(self, record: DocumentRecord) -> None:
        with self._lock:
            _write_atomic(
                self._path(record.doc_id, ".record.json"), record.model_dump_json().encode()
            )

    def get_record(self, doc_id: str) -> DocumentRecord:
        path = self._path(doc_id, ".record.json")
        if not path.exists():
            raise UnknownDocumentError(doc_id)
        return DocumentRecord.model_validate_json(path.read_bytes())

    def has_ok(self, doc_id: str) -> bool:
        """True when this exact content was already ingested successfully."""
        try:
            return self.get_record(doc_id).status in (DocStatus.ok, DocStatus.partial)
        except UnknownDocumentError:
            return False

    def count(self) -> int:
        """Documents with a record, without reading them (for health checks)."""
        return sum(1 for _ in self.root.glob("*.record.json"))

    def records(self) -> list[DocumentRecord]:
        found = []
        for path in sorted(self.root.glob("*.record.json")):
            try:
                found.append(DocumentRecord.model_validate_json(path.read_bytes()))
            except ValueError as exc:
                log.warning("unreadable catalog record %s: %s", path.name, exc)
        return sorted(found, key=lambda r: r.ingested_at)
