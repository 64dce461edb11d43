"""One answer path: `folio query --json` answers exactly what `POST /query` answers, a generated
and checked answer included when an LLM is configured (a stub on loopback here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from doubles.llm_stub import LlmStub
from ocr_engine.options import OcrMode
from server.serve.app import create_app
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf

QUESTION = "When did the Kelud volcano erupt?"


def test_folio_query_answers_as_post_query_does(tmp_path: Path) -> None:
    for name, (title, sections) in FACTS.items():
        (tmp_path / name).write_bytes(fact_pdf(title, sections))
    data = tmp_path / "data"
    with LlmStub() as stub:
        settings = Settings(data_dir=data, ocr=OcrMode.never, extract_processes=0, llm_url=stub.url)
        services = build_services(settings)
        try:
            services.sync.ingest_paths([tmp_path])
            with TestClient(create_app(services, watch=False)) as client:
                api = client.post("/query", json={"question": QUESTION, "top_k": 5})
        finally:
            services.close()
        assert api.status_code == 200, api.text
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "FOLIO_LLM_URL": stub.url}
        cli = subprocess.run(
            [sys.executable, "-m", "server", "query", QUESTION, "--data-dir", str(data), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    assert cli.returncode == 0, cli.stderr
    expected, got = api.json(), json.loads(cli.stdout)
    assert expected["mode"] == "generated" and expected["checks"], expected
    assert got == expected
