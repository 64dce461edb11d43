"""What the ingest pipeline is told (options) and tells back (one result per file)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from ingest.cards.cards import CARD_PAGES
from ingest.pipeline.failures import RetryPolicy
from ingest.pipeline.guards import PdfLimits
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import BlockType, Page, PageStatus

__all__ = [
    "FileResult",
    "FileStatus",
    "IngestOptions",
    "IngestSummary",
    "image_only_pages",
    "ramped",
    "windows",
]

_OCR_WINDOW = 8  # pages per extraction request when slow CPU OCR may read them (finer progress)


class FileStatus(StrEnum):
    ok = "ok"
    partial = "partial"
    unchanged = "unchanged"
    failed = "failed"


class FileResult(BaseModel):
    """The outcome for one file or document; `error` is set whenever status is failed or partial."""

    path: str
    source: str
    status: FileStatus
    doc_id: str | None = None
    pages: int = 0
    chunks: int = 0
    error: str | None = None
    seconds: float = 0.0
    retry: bool = Field(default=False, description="a failure that will be tried again")


class IngestSummary(BaseModel):
    """One `folio ingest` run: a result per file, and each file counted once by what happened to
    it (failed first; then new, changed or moved as its scan found it; else read again or
    unchanged), with the paths whose file was gone counted as removed."""

    results: list[FileResult]
    new: int = 0
    changed: int = 0
    moved: int = 0
    again: int = Field(
        default=0, description="read again: a retry, one a killed run left, one an older folio read"
    )
    unchanged: int = 0
    failed: int = 0
    partial: int = Field(default=0, description="of the new and changed: read in part")
    removed: int = Field(default=0, description="paths whose file was deleted")
    pages: int = Field(default=0, description="pages of the files processed in this run")
    seconds: float = 0.0


class IngestOptions(BaseModel):
    max_tokens: int = Field(default=256, ge=32)
    embed_slice: int = Field(default=64, ge=1, description="chunks per embedding call")
    extract: ExtractOptions = Field(default_factory=ExtractOptions)
    window: int = Field(default=64, ge=1, description="pages chunked together")
    extract_window: int | None = Field(
        default=None, ge=1, description="pages per extraction request (default: see below)"
    )
    extract_processes: int = Field(default=1, ge=0, le=8, description="0: a thread instead")
    prefetch: int = Field(default=2, ge=1, description="windows waiting between two stages")
    index_slice: int = Field(default=256, ge=1, description="points written to the index at once")
    passwords_file: Path | None = None
    limits: PdfLimits = Field(default_factory=PdfLimits)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)

    def extraction_ranges(self, chunk_windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The extraction requests of a document chunked in `chunk_windows`: the first pages
        one by one, then doubling, when CPU OCR may read them (a scan shows progress soon), a
        request ending with the last page the document's card is read from (its card point is
        written as soon as that page is read, `ingest.cards.card_ahead`)."""
        size = self.extraction_window()
        ranges = [part for lo, hi in chunk_windows for part in windows(lo, hi, size)]
        if size < self.window and chunk_windows:
            lo, hi = chunk_windows[0]
            ranges = ramped(lo, hi, size) + ranges[len(windows(lo, hi, size)) :]
            ranges = [cut for lo, hi in ranges for cut in _cut(lo, hi, CARD_PAGES)]
        return ranges

    def extraction_window(self) -> int:
        """Pages per extraction request: a whole window, or a few when CPU OCR may be slow."""
        if self.extract_window is not None:
            return min(self.extract_window, self.window)
        cpu_ocr = self.extract.ocr is not OcrMode.never and self.extract.vllm is None
        return min(_OCR_WINDOW, self.window) if cpu_ocr else self.window


def image_only_pages(pages: Sequence[Page]) -> list[int]:
    """Pages that show images but carry no text: their content is not searchable."""
    return [
        page.number
        for page in pages
        if page.status is not PageStatus.failed
        and any(b.type is BlockType.figure for b in page.blocks)
        and not any(b.lines for b in page.blocks)
    ]


def _cut(first: int, last: int, at: int) -> list[tuple[int, int]]:
    return [(first, at), (at + 1, last)] if first <= at < last else [(first, last)]


def ramped(first: int, last: int, size: int) -> list[tuple[int, int]]:
    """first..last in parts of 1, 1, 2, 4, … pages up to `size`, then `windows` of `size`: the
    first pages of a slow read (CPU OCR of a scan) come back, and show progress, soon."""
    parts: list[tuple[int, int]] = []
    start, step = first, 1
    while start <= last and step < size:
        parts.append((start, min(last, start + step - 1)))
        start += step
        step = step if len(parts) == 1 else step * 2
    return parts + windows(start, last, size)


def windows(first: int, last: int, size: int) -> list[tuple[int, int]]:
    """Inclusive page ranges covering first..last in near-equal parts of at most `size` pages
    (65 pages are 33 + 32, not 64 + 1)."""
    total = last - first + 1
    if total <= 0:
        return []
    step = math.ceil(total / math.ceil(total / size))
    return [(s, min(last, s + step - 1)) for s in range(first, last + 1, step)]
