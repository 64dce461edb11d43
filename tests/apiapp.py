"""The real app over real services (ledger, Qdrant Edge, ingest) with the hash embedder, and one
generated PDF ingested, for tests of the API's edges: auth, errors, exports, metrics."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from doubles.fakes import HashEmbedder
from ocr_engine.options import OcrMode
from server.serve.app import create_app
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf


@dataclass
class ApiApp:
    services: Services
    client: TestClient
    doc_id: str
    pdf: Path


@contextmanager
def api_app(root: Path, **settings: Any) -> Iterator[ApiApp]:
    """The app with `settings`, volcano.pdf (3 pages) ingested, as a TestClient in its lifespan."""
    pdf = root / "volcano.pdf"
    title, sections = FACTS["volcano.pdf"]
    pdf.write_bytes(fact_pdf(title, sections, filler_pages=2))
    config = Settings(data_dir=root / "data", ocr=OcrMode.never, **settings)
    services = build_services(config, embedder=HashEmbedder())
    try:
        [result] = services.sync.ingest_paths([pdf])
        assert result.doc_id is not None and result.status.value == "ok", result
        app = create_app(services, watch=False)
        with TestClient(app, raise_server_exceptions=False) as client:
            yield ApiApp(services, client, result.doc_id, pdf)
    finally:
        services.close()
