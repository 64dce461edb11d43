"""The ingest pipeline reports pages it could not read instead of passing them off as ingested."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ocr_engine.options import OcrMode
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import image_page_pdf


def test_image_only_pages_are_reported_and_a_scan_alone_fails(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.pdf"
    mixed.write_bytes(image_page_pdf(with_text_page=True))
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(image_page_pdf(with_text_page=False))
    services = build_services(Settings(data_dir=tmp_path / "data", ocr=OcrMode.never))
    try:
        first, second = services.sync.ingest_paths([mixed, scan])
        records = {r.source: r for r in services.ledger.documents()}
    finally:
        services.close()
    assert first.status == "partial" and first.chunks >= 1
    assert first.error is not None and "pages 2:" in first.error and "OCR" in first.error
    assert second.status == "failed" and second.error is not None and "OCR" in second.error
    assert records["mixed.pdf"].status == "partial" and records["scan.pdf"].status == "failed"


def test_a_failed_file_is_logged_as_a_warning_with_its_name_and_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A log read at the default level (WARNING) shows every file that failed, and why."""
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"<html>not a pdf</html>")
    services = build_services(Settings(data_dir=tmp_path / "data", ocr=OcrMode.never))
    try:
        with caplog.at_level(logging.WARNING, logger="ingest"):
            (result,) = services.sync.ingest_paths([broken])
    finally:
        services.close()
    assert result.status == "failed"
    failed = [r for r in caplog.records if r.getMessage().startswith("failed: broken.pdf")]
    assert failed and failed[0].levelno == logging.WARNING, caplog.text
    assert "not a PDF" in failed[0].getMessage()


def test_a_slow_read_starts_with_single_pages() -> None:
    """With CPU OCR possible, a document's first pages are asked one by one, then in doubling
    parts, so a scan shows progress after its first page, not after the first eight."""
    from ingest.pipeline.options import ramped, windows

    assert ramped(1, 4, 8) == [(1, 1), (2, 2), (3, 4)]
    assert ramped(1, 40, 8) == [(1, 1), (2, 2), (3, 4), (5, 8), *windows(9, 40, 8)]
    assert ramped(1, 1, 8) == [(1, 1)]
    covered = [n for lo, hi in ramped(3, 97, 8) for n in range(lo, hi + 1)]
    assert covered == list(range(3, 98))
