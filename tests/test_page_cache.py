"""The page cache is keyed by folio's extraction version too: after a change to extraction, pages
cached by the earlier code are read again instead of reused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from doubles.fakes import HashEmbedder
from ingest.pipeline.options import IngestOptions
from ingest.pipeline.page_cache import PAGE_CACHE_FILE
from ocr_engine.options import EXTRACTION_VERSION, ExtractOptions, OcrMode
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf


def _ingest(data: Path, pdf: Path, version: str) -> None:
    extract = ExtractOptions(ocr=OcrMode.never, extraction_version=version)
    services = build_services(
        Settings(data_dir=data, ocr=OcrMode.never),
        embedder=HashEmbedder(),
        options=IngestOptions(extract=extract, extract_processes=0),
    )
    try:
        [result] = services.sync.ingest_paths([pdf], force=True)
        assert result.status.value == "ok", result
    finally:
        services.close()


def _keys(data: Path) -> dict[str, int]:
    with sqlite3.connect(data / PAGE_CACHE_FILE) as db:
        rows = db.execute("SELECT engine_key, count(*) FROM pages GROUP BY engine_key")
        return {key: n for key, n in rows}


def test_a_new_extraction_version_reads_the_pages_again(tmp_path: Path) -> None:
    pdf, data = tmp_path / "volcano.pdf", tmp_path / "data"
    pdf.write_bytes(fact_pdf(*FACTS["volcano.pdf"], filler_pages=2))

    _ingest(data, pdf, EXTRACTION_VERSION)
    [(first_key, pages)] = _keys(data).items()
    assert pages == 3 and first_key.endswith(f"|x{EXTRACTION_VERSION}")

    _ingest(data, pdf, EXTRACTION_VERSION)  # same version: every page from the cache
    assert _keys(data) == {first_key: 3}

    _ingest(data, pdf, "bumped")  # what an upgrade that changes extraction does
    keys = _keys(data)
    assert keys[first_key] == 3
    [bumped] = [k for k in keys if k != first_key]
    assert bumped.endswith("|xbumped") and keys[bumped] == 3, keys
