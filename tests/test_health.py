"""/health tells the truth about the index: a store whose writes fail turns it to 503 with the
reason, instead of `ok` while every ingest fails."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.apiapp import api_app
from tests.pdfgen import FACTS, fact_pdf


def test_health_is_ok_then_an_error_naming_the_failed_write(tmp_path: Path) -> None:
    with api_app(tmp_path) as app:
        ok = app.client.get("/health")
        assert ok.status_code == 200 and ok.json()["status"] == "ok", ok.json()
        assert ok.json()["reason"] is None

        shutil.rmtree(app.services.settings.data_dir / "index" / "wal")  # the disk lost it
        title, sections = FACTS["bakery.pdf"]
        bakery = tmp_path / "bakery.pdf"
        bakery.write_bytes(fact_pdf(title, sections))
        [result] = app.services.sync.ingest_paths([bakery])
        assert result.status.value == "failed", result

        broken = app.client.get("/health")
        assert broken.status_code == 503
        body = broken.json()
        assert body["status"] == "error"
        assert "the index failed its latest write" in body["reason"]
        assert "WAL" in body["reason"], body["reason"]
