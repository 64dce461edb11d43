"""Per-document files under `DATA_DIR/documents/`: the PDF's bytes and its structured JSON.

`{doc_id}.pdf` is a copy of the bytes that were indexed (page images are rendered from it, even
after the user's file changed); `{doc_id}.json` is the `Document`, written a window of pages at a
time so a 1,000-page document is never held whole. Both are written to a temporary file and moved
into place, so a reader or a crash never sees half a file. While a document is being written, the
pages already added are read back from its temporary file (`DocumentFiles.pages_written`): the
writer keeps where each page's JSON lies in it, not the page. Where each page lies in a finished
`{doc_id}.json` is kept beside it in `{doc_id}.pages.json` (written with it, or found by one scan
of a file written without it), so one page is read without reading the document
(`DocumentFiles.page`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ValidationError

from ingest.ledger.records import UnknownDocumentError, is_doc_id
from ocr_engine.schema import Document, Page

__all__ = ["DocumentFiles", "DocumentWriter", "file_sha256"]

_COPY_BLOCK = 1 << 20
_PAGE_INDEX = ".pages.json"
_PAGES_KEY = re.compile(r'"pages"\s*:\s*\[')

Spans = dict[int, tuple[int, int]]
"""Page number -> (byte offset, length) of the page's JSON in the document's file."""


class PageIndex(BaseModel):
    """Where each page of one `{doc_id}.json` lies, and which file it indexes (its size and
    modification time: a rewritten document makes the index stale)."""

    size: int
    mtime_ns: int
    spans: Spans

    def matches(self, stat: os.stat_result) -> bool:
        return (self.size, self.mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def _write_atomic(path: Path, data: bytes) -> None:
    handle, tmp = _temp(path.parent, path.name)
    try:
        with handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def scan_spans(data: bytes) -> Spans:
    """Where each page lies in a document's JSON, found by reading it once."""
    text = data.decode("utf-8")
    found = _PAGES_KEY.search(text)
    if found is None:
        return {}
    decoder = json.JSONDecoder()
    spans: Spans = {}
    index, byte_index = found.end(), len(text[: found.end()].encode("utf-8"))
    while True:
        start = index
        while text[index] in " \t\r\n,":
            index += 1
        byte_index += index - start  # the skipped characters are ASCII
        if text[index] == "]":
            return spans
        page, end = decoder.raw_decode(text, index)
        length = len(text[index:end].encode("utf-8"))
        spans[int(page["number"])] = (byte_index, length)
        index, byte_index = end, byte_index + length


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
        """Move the document into place, its page index first (an index of another file is
        stale by its size and time, so a reader in between scans the file instead)."""
        with self._lock:
            self._handle.write(b"]}")
            self._handle.close()
            stat = self._tmp.stat()
            index = PageIndex(size=stat.st_size, mtime_ns=stat.st_mtime_ns, spans=self._spans)
            _write_atomic(_index_path(self.path), index.model_dump_json().encode("utf-8"))
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


def _index_path(document: Path) -> Path:
    return document.with_name(document.name.removesuffix(".json") + _PAGE_INDEX)


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

    def json_path(self, doc_id: str) -> Path:
        """The finished document's JSON; raises UnknownDocumentError when there is none."""
        path = self._path(doc_id, ".json")
        if not path.exists():
            raise UnknownDocumentError(doc_id)
        return path

    def has_pdf(self, doc_id: str) -> bool:
        return self._path(doc_id, ".pdf").exists()

    def save_pdf(self, doc_id: str, data: bytes) -> Path:
        path = self._path(doc_id, ".pdf")
        if not path.exists():
            _write_atomic(path, data)
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

    def page(self, doc_id: str, number: int) -> Page:
        """One page of a finished document, read alone; UnknownDocumentError when the document
        has no JSON, KeyError when it has no such page."""
        path = self._path(doc_id, ".json")
        try:
            with path.open("rb") as handle:
                spans = self._spans(path, os.fstat(handle.fileno()), handle)
                offset, length = spans[number]
                handle.seek(offset)
                return Page.model_validate_json(handle.read(length))
        except FileNotFoundError:
            raise UnknownDocumentError(doc_id) from None

    @staticmethod
    def _spans(path: Path, stat: os.stat_result, handle: IO[bytes]) -> Spans:
        """The page index of the open document file: kept beside it, else found and kept."""
        index_path = _index_path(path)
        try:
            index = PageIndex.model_validate_json(index_path.read_bytes())
            if index.matches(stat):
                return index.spans
        except (OSError, ValidationError):  # none, unreadable or damaged: found again
            pass
        spans = scan_spans(handle.read())
        index = PageIndex(size=stat.st_size, mtime_ns=stat.st_mtime_ns, spans=spans)
        with contextlib.suppress(OSError):  # a read-only folder: found again next time
            _write_atomic(index_path, index.model_dump_json().encode("utf-8"))
        return spans

    def remove(self, doc_id: str) -> None:
        for suffix in (".pdf", ".json", _PAGE_INDEX):
            self._path(doc_id, suffix).unlink(missing_ok=True)
        for rendering in self.root.glob(f"{doc_id}.*.render.pdf"):  # an Office file's rendering
            rendering.unlink(missing_ok=True)

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
