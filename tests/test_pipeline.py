"""The ingest pipeline reports pages it could not read instead of passing them off as ingested."""

from __future__ import annotations

from pathlib import Path

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
