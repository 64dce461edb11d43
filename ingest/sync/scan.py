"""What a sync sees and says: the files a folder holds (PDFs and accepted images), what one scan
found, what startup recovery did, and the per-file summary `folio ingest` prints."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ingest.pipeline.options import FileResult, FileStatus, IngestSummary
from ocr_engine.inputs import is_document_name

__all__ = ["RecoveryReport", "ScanReport", "is_pdf_name", "summarize", "walk"]

log = logging.getLogger(__name__)


def is_pdf_name(name: str) -> bool:
    """A PDF or an accepted image (PNG, JPEG, TIFF, WebP, BMP) by its name; hidden files
    (editors' and copy tools' temporaries) are left alone."""
    return is_document_name(name) and not name.startswith(".")


def walk(root: str, found: dict[str, tuple[int, int]]) -> None:
    """(size, mtime_ns) of every document file under `root` into `found`, hidden ones left out."""
    try:
        entries = list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        log.warning("cannot list %s: %s", root, exc)
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, found)
            elif is_pdf_name(entry.name) and entry.is_file():
                stat = entry.stat()
                found[entry.path] = (stat.st_size, stat.st_mtime_ns)
        except OSError as exc:  # vanished while listing, or unreadable
            log.info("skipping %s: %s", entry.path, exc)


class ScanReport(BaseModel):
    """What one scan found and did; paths are absolute."""

    root: str
    files: int = 0
    unchanged: int = 0
    hashed: int = 0
    new: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    copied: list[str] = Field(default_factory=list)
    moved: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    unsettled: list[str] = Field(default_factory=list, description="still being written")
    unreadable: list[str] = Field(default_factory=list)
    tombstoned: list[str] = Field(default_factory=list, description="left out: removed by the user")
    removed: list[str] = Field(default_factory=list, description="doc_ids whose points went")
    requeued: list[str] = Field(default_factory=list, description="doc_ids with a new password")
    seconds: float = 0.0
    settle_at: float | None = Field(default=None, description="when to scan the unsettled again")

    @property
    def paths(self) -> list[str]:
        """Every path the scan saw."""
        return [*self.new, *self.changed, *self.copied, *self.moved]


class RecoveryReport(BaseModel):
    """What startup reconciliation found after the last run (all empty after a clean stop)."""

    interrupted: list[str] = Field(default_factory=list, description="redone: left processing")
    stray: list[str] = Field(default_factory=list, description="points removed: not indexed")
    missing: list[str] = Field(default_factory=list, description="redone: points missing")
    removed: list[str] = Field(default_factory=list, description="orphans removed")
    reread: list[str] = Field(default_factory=list, description="queued: an older folio read them")


def summarize(results: Sequence[FileResult], scans: Sequence[ScanReport]) -> IngestSummary:
    """Each file of `results` counted once: failed, new, changed, moved, read again or
    unchanged."""
    new = {p for scan in scans for p in (*scan.new, *scan.copied)}
    changed = {p for scan in scans for p in scan.changed}
    moved = {p for scan in scans for p in scan.moved}
    summary = IngestSummary(results=list(results), removed=sum(len(scan.deleted) for scan in scans))
    for result in results:
        if result.status is FileStatus.failed:
            summary.failed += 1
            continue
        fresh = result.path in new or result.path in changed
        if result.path in new:
            summary.new += 1
        elif result.path in changed:
            summary.changed += 1
        elif result.path in moved:
            summary.moved += 1
        elif result.status is FileStatus.unchanged or result.status is FileStatus.partial:
            summary.unchanged += 1
        else:  # a retry, a document a killed run left, one an older folio read
            summary.again += 1
            fresh = True
        if fresh:
            summary.pages += result.pages
            summary.partial += result.status is FileStatus.partial
    return summary
