"""The scanning part of `Sync`: a folder or given files compared with the ledger (size and mtime,
hashing only what differs), the links recorded, the paths gone unlinked, and the documents a newly
known password may open queued again."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ingest.ledger.files import file_sha256
from ingest.ledger.ledger import Ledger, LinkKind
from ingest.pipeline.events import EventKind
from ingest.pipeline.passwords import fingerprint
from ingest.pipeline.pipeline import Ingestor
from ingest.sync.scan import ScanReport, walk

__all__ = ["ScanStage"]

log = logging.getLogger("ingest.sync.sync")  # Sync's logger, as before the split


_SEEN_EVERY_S = 3600.0  # `seen_at` of an unchanged path is refreshed at most this often


class ScanStage:
    """`Sync`'s scans (what they use of the sync is declared here; `Sync` sets it)."""

    ledger: Ledger
    ingestor: Ingestor
    _lock: threading.RLock
    collect_garbage: Callable[[], list[str]]
    _emit: Callable[[EventKind, str, str, str | None], None]

    # scanning ---------------------------------------------------------------------------------

    def scan(self, root: Path, *, settle: float = 0.0) -> ScanReport:
        """Bring the ledger in line with the PDFs under `root`; files modified less than `settle`
        seconds ago are left for a later scan (they may still be being written)."""
        started = time.perf_counter()
        top = os.path.abspath(root)
        found: dict[str, tuple[int, int]] = {}
        walk(top, found)
        report = ScanReport(root=top, files=len(found))
        known = self.ledger.path_stats(top)
        stones = self.ledger.tombstones.stats(top)
        stale = time.time() - _SEEN_EVERY_S
        seen = []
        hashed: list[tuple[str, str, int, int]] = []
        unchanged = 0
        for path, (size, mtime_ns) in sorted(found.items()):
            record = known.get(path)
            if record is not None and record[1:3] == (size, mtime_ns):
                unchanged += 1
                if record[3] < stale:
                    seen.append(path)
            elif (stone := stones.get(path)) is not None and stone[1:] == (size, mtime_ns):
                report.tombstoned.append(path)
            elif (doc_id := self._hash(path, size, mtime_ns, settle, report)) is not None:
                hashed.append((path, doc_id, size, mtime_ns))
        report.unchanged = unchanged
        with self._lock:  # hashing is done: the lock is held for ledger writes only
            hashed, held = self.ledger.tombstones.hold_back(hashed, stones, found, known)
            report.tombstoned.extend(held)
            for path, doc_id, size, mtime_ns in hashed:
                self._record_link(path, doc_id, size, mtime_ns, report)
            self._unlink([path for path in known if path not in found], report)
            self.ledger.touch(seen)
            self._finish_scan(report)
        report.seconds = time.perf_counter() - started
        return report

    def add_files(self, paths: Sequence[Path]) -> ScanReport:
        """Record files given one by one (no folder is scanned; a missing one is unlinked)."""
        started = time.perf_counter()
        report = ScanReport(root="", files=len(paths))
        hashed: list[tuple[str, str, int, int]] = []
        missing: list[str] = []
        for given in paths:
            path = os.path.abspath(given)
            try:
                stat = os.stat(path)
            except FileNotFoundError:
                missing.append(path)
                continue
            except OSError:
                report.unreadable.append(path)
                continue
            record = self.ledger.path_record(path)
            current = (stat.st_size, stat.st_mtime_ns)
            if record is not None and (record.size, record.mtime_ns) == current:
                report.unchanged += 1
            elif (doc_id := self._hash(path, *current, 0.0, report)) is not None:
                hashed.append((path, doc_id, *current))
        with self._lock:
            for path, doc_id, size, mtime_ns in hashed:
                self._record_link(path, doc_id, size, mtime_ns, report)
            self._unlink(missing, report)
            self._finish_scan(report)
        report.seconds = time.perf_counter() - started
        return report

    def _hash(
        self, path: str, size: int, mtime_ns: int, settle: float, report: ScanReport
    ) -> str | None:
        """The doc_id of a settled file, or None (unsettled or unreadable, noted in `report`)."""
        if settle > 0 and time.time() - mtime_ns / 1e9 < settle:
            report.unsettled.append(path)
            at = mtime_ns / 1e9 + settle
            report.settle_at = min(at, report.settle_at or at)
            return None
        try:
            doc_id = file_sha256(Path(path))
            stat = os.stat(path)
        except OSError as exc:
            log.info("cannot read %s: %s", path, exc)
            report.unreadable.append(path)
            return None
        if (stat.st_size, stat.st_mtime_ns) != (size, mtime_ns):  # written while hashed
            report.unsettled.append(path)
            report.settle_at = time.time() + max(settle, 0.5)
            return None
        report.hashed += 1
        return doc_id

    def _record_link(
        self, path: str, doc_id: str, size: int, mtime_ns: int, report: ScanReport
    ) -> None:
        result = self.ledger.link(path, doc_id, size, mtime_ns)
        name = os.path.basename(path)
        if result.kind is LinkKind.new:
            report.new.append(path)
            self._emit(EventKind.queued, doc_id, name, path)
        elif result.kind is LinkKind.changed:
            report.changed.append(path)
            self._emit(EventKind.queued, doc_id, name, path)
        elif result.kind is LinkKind.copied:
            report.copied.append(path)
            self._emit(EventKind.linked, doc_id, name, path)

    def _unlink(self, gone: Sequence[str], report: ScanReport) -> None:
        lost: dict[str, str] = {}
        for path in gone:
            doc_id = self.ledger.unlink(path)
            if doc_id is not None:
                report.deleted.append(path)
                lost[doc_id] = path
        if not lost:
            return
        for path in list(report.copied):  # known bytes under a new name, old name gone: moved
            record = self.ledger.path_record(path)
            if record is not None and record.doc_id in lost:
                report.copied.remove(path)
                report.moved.append(path)
                report.deleted.remove(lost.pop(record.doc_id))

    def _finish_scan(self, report: ScanReport) -> None:
        report.requeued = self._password_retries()
        report.removed = self.collect_garbage()

    def _password_retries(self) -> list[str]:
        """Documents that failed for want of a password, for which another one is now known."""
        again = []
        for doc_id, tried in self.ledger.password_failures().items():
            record = self.ledger.find(doc_id)
            if record is None:
                continue
            password = self.ingestor.passwords.lookup(doc_id, record.paths, record.source)
            if fingerprint(password) != tried:
                again.append(doc_id)
        self.ledger.requeue(again)
        return again
