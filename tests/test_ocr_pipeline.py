"""Scanned pages through the whole pipeline: routed to OCR, read, indexed, searchable, recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

from doubles.embed_server import EmbedServer
from doubles.fakes import HashEmbedder
from doubles.loopback import closed_port_url
from doubles.ocr_simulator import OcrSimulator
from ocr_engine.schema import PageStatus
from retrieval.schema import QueryRequest
from server.services import Services, build_services
from server.settings import Settings
from tests.conftest import REPO_ROOT
from tests.pdfgen import FACTS, fact_pdf

TITLE, SECTIONS = FACTS["bakery.pdf"]


def scanned(text_pdf: bytes, *, keep_text_pages: tuple[int, ...] = ()) -> bytes:
    """The PDF with every page (but those kept) replaced by a picture of it, as a scanner makes."""
    source = pymupdf.open(stream=text_pdf, filetype="pdf")
    out = pymupdf.open()
    for index, page in enumerate(source):
        if index + 1 in keep_text_pages:
            out.insert_pdf(source, from_page=index, to_page=index)
            continue
        pix = page.get_pixmap(dpi=150)
        out.new_page(width=page.rect.width, height=page.rect.height).insert_image(
            page.rect, pixmap=pix
        )
    data = out.tobytes()
    out.close()
    source.close()
    return data


@pytest.fixture(scope="module")
def simulator() -> Iterator[OcrSimulator]:
    with OcrSimulator(capacity=8) as sim:
        yield sim


def _services(data_dir: Path, **settings: object) -> Services:
    return build_services(Settings(data_dir=data_dir, extract_processes=0, **settings))


def _ingest(services: Services, path: Path) -> None:
    (result,) = services.sync.ingest_paths([path])
    assert result.status in ("ok", "partial"), result.error


def _best(services: Services, question: str) -> tuple[str, int, str]:
    response = services.retriever.query(QueryRequest(question=question, top_k=3))
    hit = response.hits[0]
    return hit.source, hit.page, hit.text


def test_scanned_pages_are_read_by_the_endpoint_and_text_pages_by_the_text_layer(
    tmp_path: Path, simulator: OcrSimulator
) -> None:
    text_pdf = fact_pdf(TITLE, SECTIONS, filler_pages=1)
    scan = scanned(text_pdf, keep_text_pages=(2,))
    simulator.register_pdf(scan, text_source=text_pdf)
    path = tmp_path / "bakery scan.pdf"
    path.write_bytes(scan)
    services = _services(tmp_path / "data", ocr_url=[simulator.url])
    try:
        _ingest(services, path)
        source, page, text = _best(services, "What flour is the sourdough starter fed with?")
        record = services.ledger.documents()[0]
        document = services.files.load_document(record.doc_id)
    finally:
        services.close()
    assert (source, page) == ("bakery scan.pdf", 1) and "rye flour" in text
    first, second = document.pages
    assert first.engine.name == "vllm" and first.status is PageStatus.ok
    assert first.route == "no text layer"
    assert second.engine.name == "pymupdf" and second.route == "text layer"
    assert any("rye flour" in line.text for b in first.blocks for line in b.lines)


def test_folio_ingest_exits_after_its_extraction_process_read_scans(
    tmp_path: Path, simulator: OcrSimulator
) -> None:
    """The extraction process's render processes stop with it: `folio ingest` exits."""
    text_pdf = fact_pdf(TITLE, SECTIONS, filler_pages=0)
    scan = scanned(text_pdf)
    simulator.register_pdf(scan, text_source=text_pdf)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "scan.pdf").write_bytes(scan)
    with EmbedServer(HashEmbedder(64), model="test/embed") as embed:
        env = {
            **os.environ,
            "FOLIO_OCR_URL": simulator.url,
            "FOLIO_EMBED_URL": embed.url,
            "FOLIO_EMBED_MODEL": "test/embed",
            "FOLIO_EXTRACT_PROCESSES": "1",
        }
        folio = str(Path(sys.executable).parent / "folio")
        command = [folio, "ingest", str(tmp_path / "in"), "--data-dir", str(tmp_path / "data")]
        proc = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, start_new_session=True
        )
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # and the processes it left
            proc.communicate()
            pytest.fail("folio ingest did not exit after reading a scan through the endpoint")
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    assert b"1 new" in err and b"0 failed" in err


def test_dead_endpoint_falls_back_to_cpu_ocr_and_says_so(tmp_path: Path) -> None:
    scan = scanned(fact_pdf(TITLE, SECTIONS, filler_pages=0))
    path = tmp_path / "scan.pdf"
    path.write_bytes(scan)
    services = _services(tmp_path / "data", ocr_url=[closed_port_url()])
    try:
        _ingest(services, path)
        source, page, text = _best(services, "deck oven preheated temperature")
        document = services.files.load_document(services.ledger.documents()[0].doc_id)
    finally:
        services.close()
    (only,) = document.pages
    assert only.status is PageStatus.fallback and only.engine.name == "rapidocr"
    assert [e.code for e in only.errors][:1] == ["endpoint_unavailable"]
    assert (source, page) == ("scan.pdf", 1) and "250" in text


def test_without_ocr_a_scan_fails_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned(fact_pdf(TITLE, SECTIONS, filler_pages=0)))
    services = _services(tmp_path / "data", ocr="never")
    try:
        (result,) = services.sync.ingest_paths([path])
    finally:
        services.close()
    assert result.status == "failed" and result.error is not None and "OCR" in result.error


def test_cli_ocr_flag_routes_pages_and_refuses_unknown_modes(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from server.cli.cli import app

    path = tmp_path / "scan.pdf"
    path.write_bytes(scanned(fact_pdf(TITLE, SECTIONS, filler_pages=0)))
    runner = CliRunner()
    bad = runner.invoke(app, ["extract", str(path), "--ocr", "sometimes"])
    assert bad.exit_code == 2 and "ocr" in bad.output and "'never'" in bad.output
    out = tmp_path / "scan.json"
    never = runner.invoke(app, ["extract", str(path), "--ocr", "never", "--out", str(out)])
    assert never.exit_code == 0, never.output
    page = json.loads(out.read_text())["pages"][0]
    assert page["engine"]["name"] == "pymupdf" and page["blocks"] == []
