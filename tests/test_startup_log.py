"""A restarted server says what its ledger already holds, so that a user who sees nothing read
again knows the documents are there."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from doubles.fakes import HashEmbedder
from ingest.pipeline.options import FileStatus
from ingest.pipeline.pipeline import IngestOptions
from ocr_engine.options import ExtractOptions, OcrMode
from server.serve.app import create_app
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf


def test_startup_logs_the_documents_the_ledger_holds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    options = IngestOptions(extract=ExtractOptions(ocr=OcrMode.never), extract_processes=0)
    services = build_services(
        Settings(data_dir=tmp_path / "data", ocr=OcrMode.never),
        embedder=HashEmbedder(),
        options=options,
    )
    try:
        inbox = tmp_path / "inbox"
        inbox.mkdir()
        (inbox / "volcano.pdf").write_bytes(fact_pdf(*FACTS["volcano.pdf"]))
        (inbox / "broken.pdf").write_bytes(b"not a pdf")
        results = services.sync.ingest_paths(sorted(inbox.iterdir()))
        assert sorted(r.status for r in results) == sorted([FileStatus.ok, FileStatus.failed])
        with (
            caplog.at_level(logging.INFO, logger="server.serve.app"),
            TestClient(create_app(services, watch=False)),
        ):
            pass
    finally:
        services.close()
    said = [r.getMessage() for r in caplog.records if r.name == "server.serve.app"]
    assert "the ledger holds 2 documents (1 ok, 1 failed)" in said, said
