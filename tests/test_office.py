"""Office, HTML and Markdown files rendered to pages by real LibreOffice and Chromium: answers cited
on the rendered page, the source's structure kept, a hung converter killed alone, bad files
refused with their reason. The files are made here with python-docx, python-pptx and openpyxl."""

from __future__ import annotations

import io
import os
import re
import shutil
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from doubles.fakes import HashEmbedder
from ocr_engine.engines.extract import extract_document
from ocr_engine.errors import BadInputError
from ocr_engine.inputs.convert_pool import ConversionError, ConvertLimits, ConvertPool
from ocr_engine.inputs.office import check_office, render_pdf
from ocr_engine.options import OcrMode
from ocr_engine.schema import BlockType
from retrieval.schema import QueryRequest
from server.serve.app import create_app
from server.services import build_services
from server.settings import Settings

SOFFICE = shutil.which("soffice")
needs_soffice = pytest.mark.skipif(
    SOFFICE is None and os.environ.get("FOLIO_SKIP_OFFICE") == "1",
    reason="LibreOffice is skipped (FOLIO_SKIP_OFFICE=1)",
)


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Harbour tariffs", level=1)
    document.add_paragraph("The tariffs below apply to every vessel that berths in the harbour.")
    document.add_paragraph("Pilots are booked a day ahead", style="List Bullet")
    table = document.add_table(rows=3, cols=2)
    table.style = "Table Grid"
    for row, (a, b) in enumerate(
        [("Vessel class", "Berthing fee"), ("Trawler", "310 crowns"), ("Tanker", "2,450 crowns")]
    ):
        table.cell(row, 0).text, table.cell(row, 1).text = a, b
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _pptx() -> bytes:
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Lighthouse keepers"
    slide.placeholders[1].text_frame.text = "Marta Olsen keeps the Pharos lamp lit"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Harvest"
    sheet.column_dimensions["A"].width = sheet.column_dimensions["B"].width = 24
    sheet.column_dimensions["C"].width = 40
    for row in [
        ("Orchard", "Apples picked", "Remark"),
        ("Northfield", 1840, "a normal year"),
        ("Quarrybrook", 977, "hail stripped the late pears"),
    ]:
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _dark_inside(png: bytes, box: list[float]) -> int:
    """Dark pixels of the page image (72 dpi) inside `box`: the evidence is drawn there."""
    image = Image.open(io.BytesIO(png)).convert("L")
    x0, y0, x1, y1 = (round(v) for v in box)
    crop = image.crop((x0, y0, max(x1, x0 + 1), max(y1, y0 + 1)))
    return int((np.asarray(crop) < 128).sum())


@needs_soffice
def test_answers_from_a_docx_table_a_slide_and_a_cell_are_cited_on_the_rendered_page(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "tariffs.docx").write_bytes(_docx())
    (inbox / "keepers.pptx").write_bytes(_pptx())
    (inbox / "harvest.xlsx").write_bytes(_xlsx())
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never)
    services = build_services(settings, embedder=HashEmbedder())
    try:
        results = {Path(r.path).name: r for r in services.sync.ingest_paths([inbox])}
        assert {n: r.status.value for n, r in results.items()} == dict.fromkeys(results, "ok")
        assert sorted(results) == ["harvest.xlsx", "keepers.pptx", "tariffs.docx"]
        doc_id = str(results["tariffs.docx"].doc_id)
        stored = services.files.pdf_path(doc_id).read_bytes()
        assert stored == (inbox / "tariffs.docx").read_bytes()  # the original stays the document
        assert len(list(services.files.root.glob(f"{doc_id}.docx.*.render.pdf"))) == 1
        document = services.files.load_document(doc_id)
        assert document.source == "tariffs.docx"
        blocks = [b for p in document.pages for b in p.blocks]
        heading = next(b for b in blocks if b.text == "Harbour tariffs")
        assert (heading.type, heading.level) == (BlockType.section_header, 1)
        table = next(b for b in blocks if b.type is BlockType.table)
        assert {c.text for c in table.cells} >= {"Tanker", "2,450 crowns", "Berthing fee"}
        assert any(b.type is BlockType.list_item and "Pilots" in b.text for b in blocks)
        app = create_app(services, watch=False)
        with TestClient(app) as client:
            for question, source, evidence in [
                ("What is the berthing fee of a tanker?", "tariffs.docx", "2,450"),
                ("Who keeps the Pharos lamp lit?", "keepers.pptx", "Marta Olsen"),
                ("What stripped the late pears at Quarrybrook?", "harvest.xlsx", "hail"),
            ]:
                body = client.post("/query", json={"question": question, "top_k": 3}).json()
                assert body["citations"], (question, body)
                first = body["citations"][0]
                assert first["source"] == source, (question, body["answer"])
                assert evidence in body["answer"], (question, body["answer"])
                page = f"/documents/{first['doc_id']}/pages/{first['page']}.png?dpi=72"
                plain = client.get(page)
                lit = client.get(first["highlight_url"].replace("?", "?dpi=72&"))
                assert plain.status_code == lit.status_code == 200, lit.text
                assert plain.content != lit.content, "the cited region is drawn"
                assert _dark_inside(plain.content, first["bbox"]) > 20, "the evidence is inside"
    finally:
        services.close()


@needs_soffice
def test_a_spreadsheet_row_is_read_as_a_row_named_by_its_date(tmp_path: Path) -> None:
    """A sheet's table is written a row a line, as every engine writes tables, so its cells are
    read with their row and column; a row's date names the row (the sale), as its product does."""
    import datetime

    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.column_dimensions["B"].width = 24  # a date wider than its column prints as "###"
    sheet.append(("Product", "Date", "Quantity", "Revenue"))
    for day, (product, quantity, revenue) in enumerate(
        [
            ("Widget A", 5, 5000),
            ("Widget C", 3, 3000),
            ("Widget A", 7, 7100),
            ("Widget C", 12, 15000),
        ]
        * 2
    ):
        sheet.append((product, datetime.datetime(2024, 1, day + 1), quantity, revenue + day))
    out = io.BytesIO()
    book.save(out)
    (tmp_path / "sales.xlsx").write_bytes(out.getvalue())
    services = build_services(Settings(data_dir=tmp_path / "data", ocr=OcrMode.never))
    try:
        [result] = services.sync.ingest_paths([tmp_path / "sales.xlsx"])
        assert result.status.value == "ok", result
        table = next(
            b
            for p in services.files.load_document(str(result.doc_id)).pages
            for b in p.blocks
            if b.type is BlockType.table
        )
        assert table.lines[0].text == "| Product | Date | Quantity | Revenue |"
        answer = services.retriever.query(
            QueryRequest(question="What was the revenue for Widget C on 2024-01-04?")
        )
        assert answer.answer is not None and answer.citations, answer
        assert answer.answer.split("[1]")[0].endswith(": 15003 "), answer.answer
        assert answer.citations[0].quote is not None and "2024-01-04" in answer.citations[0].quote
    finally:
        services.close()


def test_structure_of_html_and_markdown_printed_offline_by_chromium(tmp_path: Path) -> None:
    page = (
        b"<html><head><script>document.title='ran'</script></head><body><h1>Tide tables</h1>"
        b"<h2>Spring tides</h2><ul><li>High water at dawn</li><li>Low water at noon</li></ul>"
        b"<img src='http://192.0.2.1/tracker.png'><script>document.write('SCRIPT RAN')</script>"
        b"<table><tr><th>Port</th><th>Range</th></tr><tr><td>Brest</td><td>7.1 m</td></tr>"
        b"<tr><td>Dover</td><td>6.0 m</td></tr></table></body></html>"
    )
    for name, data in [("tides.html", page), ("tides.md", b"# Tide tables\n\n- High water\n")]:
        document = extract_document(data, source=name)
        blocks = [b for p in document.pages for b in p.blocks]
        assert "SCRIPT RAN" not in " ".join(b.text for b in blocks)
        heading = next(b for b in blocks if b.text == "Tide tables")
        assert (heading.type, heading.level) == (BlockType.section_header, 1)
        assert any(b.type is BlockType.list_item and "High water" in b.text for b in blocks)
    html_blocks = [b for p in extract_document(page, source="t.html").pages for b in p.blocks]
    table = next(b for b in html_blocks if b.type is BlockType.table)
    assert {c.text for c in table.cells} == {"Port", "Range", "Brest", "7.1 m", "Dover", "6.0 m"}


def _standin(tmp_path: Path) -> Path:
    """A converter that answers --version and then hangs, as a soffice stuck on a file would."""
    script = tmp_path / "soffice-hangs"
    script.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "Hangs 1.0" && exit 0\nsleep 300\n')
    script.chmod(0o755)
    return script


def test_a_hung_converter_is_killed_and_fails_its_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = ConvertPool(ConvertLimits(processes=2, timeout_s=3, memory_mb=512))

    def hung() -> None:
        with pytest.raises(ConversionError, match="did not finish in 3 s"):
            pool.run([str(_standin(tmp_path)), "x"], cwd=tmp_path, what="stuck.docx")

    thread = threading.Thread(target=hung)
    thread.start()
    done = pool.run(["sh", "-c", "echo fine"], cwd=tmp_path, what="ok")
    assert done.returncode == 0 and "fine" in done.output  # ran beside the hung one
    thread.join(60)
    assert not thread.is_alive()
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_standin(p)]
    monkeypatch.setenv("FOLIO_SOFFICE", str(_standin(tmp_path)))
    monkeypatch.setenv("FOLIO_CONVERT_TIMEOUT_S", "2")
    with pytest.raises(ConversionError, match="did not finish"):
        render_pdf(_xlsx(), "stuck.xlsx", pool=ConvertPool())


def _is_standin(proc: Path) -> bool:
    try:
        return b"soffice-hangs" in (proc / "cmdline").read_bytes()
    except OSError:
        return False


def _zip_with(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "error", "reason"),
    [
        ("empty.docx", b"", BadInputError, "empty (0 bytes)"),
        ("report.docx", b"%PDF-1.7\n%%EOF\n", BadInputError, "named .docx but is a PDF"),
        ("cut.docx", _docx()[:3000], BadInputError, "damaged ZIP"),
        ("deck.docx", _pptx(), BadInputError, "named .docx but is a PowerPoint deck"),
        ("notes.rtf", b"plain text", BadInputError, "no RTF header"),
    ],
)
def test_bad_office_files_are_refused_with_the_reason(
    name: str, data: bytes, error: type[Exception], reason: str
) -> None:
    with pytest.raises(error, match=re.escape(reason)):
        check_office(data, name)


def test_a_macro_workbook_is_noted_and_its_macros_never_run() -> None:
    book = _xlsx()
    with zipfile.ZipFile(io.BytesIO(book)) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["xl/vbaProject.bin"] = b'Attribute VB_Name = "Shell"\nShell "touch /tmp/pwned"'
    checked = check_office(_zip_with(members), "sales.xlsm")
    assert checked.notes == ["macros in this file were ignored: folio never runs them"]


@needs_soffice
def test_a_rendering_past_the_page_limit_is_refused_and_uploads_check_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docx

    long = docx.Document()
    for n in range(3):
        long.add_paragraph(f"Chapter {n}")
        long.add_page_break()
    out = io.BytesIO()
    long.save(out)
    monkeypatch.setenv("FOLIO_MAX_RENDERED_PAGES", "2")
    with pytest.raises(ConversionError, match="more than the limit of 2"):
        render_pdf(out.getvalue(), "long.docx")
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never)
    services = build_services(settings, embedder=HashEmbedder())
    try:
        with TestClient(create_app(services, watch=False)) as client:
            lying = ("a.xlsx", b"%PDF-1.4 not a workbook", "application/octet-stream")
            refused = client.post("/documents", files={"file": lying})
            assert refused.status_code == 415 and "is a PDF" in refused.text
            accepted = client.post("/documents", files={"file": ("t.md", b"# T\n", "text/plain")})
            assert accepted.status_code == 202, accepted.text
    finally:
        services.close()
