"""Per-document files under `DATA_DIR/documents/`: the PDF's bytes and its structured JSON.

`{doc_id}.pdf` is a copy of the bytes that were indexed (page images are rendered from it, even
after the user's file changed); `{doc_id}.json` is the `Document`, written a window of pages at a
time so a 1,000-page document is never held whole. Both are written to a temporary file and moved
into place, so a reader or a crash never sees half a file. While a document is being written, the
pages already added are read back from its temporary file (`DocumentFiles.pages_written`): the
writer keeps where each page's JSON lies in it, not the page.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ingest.records import UnknownDocumentError, is_doc_id
from ocr_engine.schema import Document, Page

__all__ = ["DocumentFiles", "DocumentWriter", "file_sha256"]

_COPY_BLOCK = 1 << 20


def _temp(directory: Path, name: str) -> tuple[IO[bytes], Path]:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    return os.fdopen(fd, "wb"), Path(tmp)


class DocumentWriter:
    """Writes `{doc_id}.json` page by page; `commit()` moves it into place, `abort()` drops it.

    `pages(first, last)` reads back the pages added so far (from the temporary file, at the
    offsets kept for each page), from another thread while the writer goes on."""

    def __init__(
        self, path: Path, document: Document, on_close: Callable[[], None] | None = None
    ) -> None:
        self.path = path
        self._handle, self._tmp = _temp(path.parent, path.name)
        head = document.model_dump(mode="json", exclude={"pages"})
        opening = json.dumps(head, ensure_ascii=False)[:-1] + ', "pages": ['
        self._handle.write(opening.encode("utf-8"))
        self._first = True
        self._offset = len(opening.encode("utf-8"))
        self._spans: dict[int, tuple[int, int]] = {}  # page number -> (offset, length)
        self._lock = threading.Lock()
        self._on_close = on_close

    def add(self, pages: list[Page]) -> None:
        spans: dict[int, tuple[int, int]] = {}
        for page in pages:
            if not self._first:
                self._handle.write(b",")
                self._offset += 1
            data = page.model_dump_json().encode("utf-8")
            self._handle.write(data)
            spans[page.number] = (self._offset, len(data))
            self._offset += len(data)
            self._first = False
        self._handle.flush()
        with self._lock:
            self._spans.update(spans)

    def pages(self, first: int, last: int) -> list[Page]:
        """The pages numbered `first`..`last` added so far, in page order."""
        with self._lock:
            wanted = [self._spans[n] for n in range(first, last + 1) if n in self._spans]
            if not wanted or self._handle.closed:
                return []
            out: list[Page] = []
            with self._tmp.open("rb") as handle:
                for offset, length in wanted:
                    handle.seek(offset)
                    out.append(Page.model_validate_json(handle.read(length)))
            return out

    def commit(self) -> None:
        with self._lock:
            self._handle.write(b"]}")
            self._handle.close()
            os.replace(self._tmp, self.path)
        self._closed()

    def abort(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.close()
            self._tmp.unlink(missing_ok=True)
        self._closed()

    def _closed(self) -> None:
        if self._on_close is not None:
            self._on_close()


class DocumentFiles:
    """The documents folder; ids are checked before they become file names."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "documents"
        self.root.mkdir(parents=True, exist_ok=True)
        self._writing: dict[str, DocumentWriter] = {}
        self._writing_lock = threading.Lock()

    def _path(self, doc_id: str, suffix: str) -> Path:
        if not is_doc_id(doc_id):
            raise UnknownDocumentError(doc_id)
        return self.root / f"{doc_id}{suffix}"

    def pdf_path(self, doc_id: str) -> Path:
        """The stored PDF; raises UnknownDocumentError when there is none."""
        path = self._path(doc_id, ".pdf")
        if not path.exists():
            raise UnknownDocumentError(doc_id)
        return path

    def has_pdf(self, doc_id: str) -> bool:
        return self._path(doc_id, ".pdf").exists()

    def save_pdf(self, doc_id: str, data: bytes) -> Path:
        path = self._path(doc_id, ".pdf")
        if not path.exists():
            handle, tmp = _temp(self.root, path.name)
            with handle:
                handle.write(data)
            os.replace(tmp, path)
        return path

    def copy_pdf(self, doc_id: str, source: Path) -> Path | None:
        """Copy `source` in as `doc_id` if its bytes still hash to it; None when they do not."""
        path = self._path(doc_id, ".pdf")
        handle, tmp = _temp(self.root, path.name)
        digest = hashlib.sha256()
        try:
            with handle, source.open("rb") as src:
                while block := src.read(_COPY_BLOCK):
                    digest.update(block)
                    handle.write(block)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        if digest.hexdigest() != doc_id:
            tmp.unlink(missing_ok=True)
            return None
        os.replace(tmp, path)
        return path

    def verified_pdf(self, doc_id: str) -> Path | None:
        """The stored PDF if its bytes still hash to `doc_id` (a damaged copy is removed)."""
        path = self._path(doc_id, ".pdf")
        if not path.exists():
            return None
        if file_sha256(path) == doc_id:
            return path
        path.unlink(missing_ok=True)
        return None

    def writer(self, document: Document) -> DocumentWriter:
        """A writer for the JSON of `document` (its `pages` are ignored; add them as they come)."""
        doc_id = document.doc_id
        writer: DocumentWriter

        def closed() -> None:
            with self._writing_lock:
                if self._writing.get(doc_id) is writer:
                    del self._writing[doc_id]

        writer = DocumentWriter(self._path(doc_id, ".json"), document, closed)
        with self._writing_lock:
            self._writing[doc_id] = writer
        return writer

    def pages_written(self, doc_id: str, first: int, last: int) -> list[Page]:
        """Pages `first`..`last` of a document being written, as far as written (else none)."""
        with self._writing_lock:
            writer = self._writing.get(doc_id)
        return [] if writer is None else writer.pages(first, last)

    def load_document(self, doc_id: str) -> Document:
        path = self._path(doc_id, ".json")
        if not path.exists():
            raise UnknownDocumentError(doc_id)
        return Document.model_validate_json(path.read_bytes())

    def remove(self, doc_id: str) -> None:
        for suffix in (".pdf", ".json"):
            self._path(doc_id, suffix).unlink(missing_ok=True)

    def sweep_temporary(self) -> int:
        """Remove temporary files a killed process left behind."""
        stale = list(self.root.glob(".*.tmp"))
        for path in stale:
            path.unlink(missing_ok=True)
        return len(stale)


def file_sha256(path: Path) -> str:
    """The document id of a file: sha256 of its bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_COPY_BLOCK):
            digest.update(block)
    return digest.hexdigest()
