"""What the answer and page routes read of the documents, behind one protocol: the coordinator's
ledger and data directory (`LedgerShelf`), or a query replica's card map and fetched copies
(`server.serve.replica.ReplicaShelf`), so both answer the same for the same index.

`Answering` is what those routes need of a running folio: its settings, retriever, index and
shelf; `server.services.Services` and `server.serve.replica.Replica` both are one.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

from ingest.ledger import DocumentFiles, Ledger, resolve_doc_id
from ocr_engine.schema import Page
from retrieval.answer import Retriever
from retrieval.index import VectorStore
from server.settings import Settings

__all__ = ["Answering", "LedgerShelf", "Shelf", "Shelved"]


class Shelved(NamedTuple):
    """A document as the page routes show it: its file name and page count."""

    source: str
    pages: int


class Shelf(Protocol):
    """The documents whose pages are shown and cited. Unknown ids raise UnknownDocumentError;
    a stored copy no place gives raises SourceGoneError (naming the places tried)."""

    def resolve(self, text: str) -> str:
        """The full id `text` names (DocIdError, AmbiguousDocIdError, UnknownDocumentError)."""
        ...

    def about(self, doc_id: str) -> Shelved: ...

    def count(self) -> int:
        """How many documents there are."""
        ...

    def pdf_path(self, doc_id: str) -> Path:
        """A local path of the stored copy's bytes."""
        ...

    def page(self, doc_id: str, number: int) -> Page:
        """One page of the document's JSON (KeyError when it has no such page or no JSON)."""
        ...

    def page_size(self, doc_id: str, number: int) -> tuple[float, float] | None:
        """The page's width and height in points, None when it is not known."""
        ...


class Answering(Protocol):
    """What the answer, page and health routes need of a running folio."""

    @property
    def settings(self) -> Settings: ...

    @property
    def retriever(self) -> Retriever: ...

    @property
    def store(self) -> VectorStore: ...

    @property
    def shelf(self) -> Shelf: ...


class LedgerShelf:
    """The coordinator's documents: its ledger and its data directory's files."""

    def __init__(self, ledger: Ledger, files: DocumentFiles) -> None:
        self.ledger = ledger
        self.files = files

    def resolve(self, text: str) -> str:
        tombstones = [] if len(text) >= 64 else self.ledger.tombstones.all()
        removed = [(t.doc_id, t.path) for t in tombstones]
        return resolve_doc_id(self.ledger, text, removed=removed)

    def about(self, doc_id: str) -> Shelved:
        record = self.ledger.get(doc_id)
        return Shelved(record.source, record.pages)

    def count(self) -> int:
        return self.ledger.count()

    def pdf_path(self, doc_id: str) -> Path:
        return self.files.pdf_path(doc_id)

    def page(self, doc_id: str, number: int) -> Page:
        return self.files.page(doc_id, number)

    def page_size(self, doc_id: str, number: int) -> tuple[float, float] | None:
        page = next((p for p in self.ledger.pages(doc_id) if p.number == number), None)
        return (page.width, page.height) if page is not None else None
