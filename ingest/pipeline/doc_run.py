"""One document's run through the ingest stages: its state as it goes (`DocRun`), the messages
between the stages, and what a run that found no text says about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata

from ingest.cards.cards import CardBuilder
from ingest.ledger.files import DocumentWriter
from ingest.ledger.records import DocumentRecord
from ingest.pipeline.staging import ChunkStaging
from ocr_engine.options import OcrMode
from ocr_engine.schema import Page
from retrieval.doc_card import DocumentCard
from retrieval.schema import Chunk

__all__ = ["STOP", "Batch", "DocRun", "End", "folio_version", "ocr_note"]


def folio_version() -> str:
    try:
        return metadata.version("folio")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass
class DocRun:
    """One document on its way through the stages."""

    record: DocumentRecord
    started: float
    attempt: int = 0
    pages: int = 0
    staging: ChunkStaging | None = None
    page_errors: list[str] = field(default_factory=list)
    unread: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    engines: set[str] = field(default_factory=set)
    content: int = 0  # blocks of text to index
    furniture: int = 0  # blocks of text marked as running headers, footers, page numbers
    ocr_pages: int = 0  # pages sent to OCR
    writer: DocumentWriter | None = None
    card: CardBuilder | None = None
    first_page: Page | None = None
    described: DocumentCard | None = None
    error: BaseException | None = None
    extract_s: float = 0.0
    embed_s: float = 0.0
    pages_done: int = 0  # pages embedded
    read: set[int] = field(default_factory=set)  # pages read (the ledger's pages_done)
    embedded: int = 0
    reused: int = 0

    @property
    def doc_id(self) -> str:
        return self.record.doc_id

    @property
    def path(self) -> str | None:
        """The first path that holds the document (None for an upload)."""
        return self.record.paths[0] if self.record.paths else None

    @property
    def chunks(self) -> int:
        return self.staging.count if self.staging is not None else 0

    def no_text_reason(self, ocr: OcrMode) -> str:
        """What left the document without text to index, in the user's terms."""
        reason = f"no text could be read from its {self.pages} page(s)"
        if self.furniture and not self.content:
            reason = (
                f"all the text of its {self.pages} page(s) was classified as page furniture "
                "(running headers, footers or page numbers repeated from page to page), "
                "which is not indexed"
            )
        elif self.unread:
            reason += f": image-only or scanned pages ({ocr_note(ocr)})"
        elif self.ocr_pages or ocr is OcrMode.never:
            reason += f" ({ocr_note(ocr)})"
        else:
            reason += ": they hold neither a text layer nor images to read"
        if self.page_errors:
            reason += "; " + "; ".join(self.page_errors[:3])
        if self.warnings:
            reason += "; MuPDF reported: " + "; ".join(self.warnings[:3])
        return reason


@dataclass
class Batch:
    doc: DocRun
    chunks: list[Chunk]
    last_page: int
    card: Chunk | None = None  # the card point, written at once (not staged with the chunks)


@dataclass
class End:
    doc: DocRun


STOP = object()


def ocr_note(ocr: OcrMode) -> str:
    """Why OCR gave no text, for the messages of a failed document."""
    if ocr is OcrMode.never:
        return "OCR is off"
    return "OCR read no text on them"
