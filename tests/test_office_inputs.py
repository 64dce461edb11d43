"""More of what Office files say, rendered by real LibreOffice: a password-protected file opened
with the password given the PDF way, wide sheets split by columns with their header row, sheet
names, speaker notes and hyperlinks. The files are made here with python-docx, python-pptx,
openpyxl and msoffcrypto-tool."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest

from doubles.fakes import HashEmbedder
from ingest.ledger.records import DocStatus, FailureKind
from ingest.pipeline.options import FileStatus
from ocr_engine.errors import PasswordError
from ocr_engine.inputs.office import check_office, render_pdf
from ocr_engine.options import OcrMode
from ocr_engine.schema import BlockType
from server.services import build_services
from server.settings import Settings

needs_soffice = pytest.mark.skipif(
    shutil.which("soffice") is None and os.environ.get("FOLIO_SKIP_OFFICE") == "1",
    reason="LibreOffice is skipped (FOLIO_SKIP_OFFICE=1)",
)


def _docx(*paragraphs: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Lock keeper's log", level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _encrypted(data: bytes, password: str) -> bytes:
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(data)).encrypt(password, out)
    return out.getvalue()


@needs_soffice
def test_a_password_protected_docx_opens_with_its_sidecar_or_passwords_file(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    sealed = _encrypted(_docx("The sluice at Dunmore opens at 06:40 on weekdays."), "tide-42")
    (inbox / "sealed.docx").write_bytes(sealed)
    (inbox / "other.docx").write_bytes(_encrypted(_docx("Barge quota: 14 a day."), "quay"))
    assert check_office(sealed, "sealed.docx").encrypted
    with pytest.raises(PasswordError, match=r"sealed\.docx: a password-protected Office file"):
        render_pdf(sealed, "sealed.docx")
    services = build_services(
        Settings(data_dir=tmp_path / "data", ocr=OcrMode.never), embedder=HashEmbedder()
    )
    try:
        services.sync.ingest_paths([inbox])
        failed = {r.source: r for r in services.ledger.documents(DocStatus.failed)}
        assert set(failed) == {"sealed.docx", "other.docx"}
        assert failed["sealed.docx"].failure is FailureKind.password
        assert "sealed.docx.password" in failed["sealed.docx"].errors[0]
        assert "passwords.json" in failed["sealed.docx"].errors[0]
        (inbox / "sealed.docx.password").write_text("tide-42\n")
        passwords = services.settings.data_dir / "passwords.json"
        passwords.write_text(json.dumps({"other.docx": "wrong"}))
        assert len(services.sync.scan(inbox).requeued) == 2
        results = {r.source: r for r in services.sync.process_pending()}
        assert results["sealed.docx"].status is FileStatus.ok
        assert "does not open" in (results["other.docx"].error or "")
        document = services.files.load_document(str(results["sealed.docx"].doc_id))
        text = " ".join(b.text for p in document.pages for b in p.blocks)
        assert "The sluice at Dunmore opens at 06:40" in text
        assert services.files.pdf_path(document.doc_id).read_bytes() == sealed  # kept as it came
        passwords.write_text(json.dumps({"other.docx": "quay"}))
        assert len(services.sync.scan(inbox).requeued) == 1
        assert [r.status for r in services.sync.process_pending()] == [FileStatus.ok]
        kinds = {b.type for p in document.pages for b in p.blocks}
        assert BlockType.section_header in kinds
    finally:
        services.close()


def _wide_book() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Plot yields"
    sheet.append(["Plot"] + [f"Month {m:02d}" for m in range(1, 31)])
    for plot in range(1, 9):
        sheet.append([f"Plot {plot}"] + [plot * 1000 + m for m in range(1, 31)])
    sheet.column_dimensions["A"].width = 14
    notes = book.create_sheet("Field notes")
    notes.append(["Plot", "Soil"])
    notes.append(["Plot 3", "clay over chalk"])
    notes.append(["Plot 5", "sandy loam"])
    notes["A5"] = "Soil survey 2025"
    notes["A5"].hyperlink = "https://example.org/soil-survey"
    notes.column_dimensions["B"].width = 24
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


@needs_soffice
def test_a_wide_sheet_is_split_by_columns_with_its_header_row_and_row_labels() -> None:
    from ocr_engine.engines.extract import extract_document
    from ocr_engine.inputs.sheet_pages import MAX_COLS, PAGE_PT
    from ocr_engine.options import ExtractOptions

    document = extract_document(
        _wide_book(), source="yields.xlsx", options=ExtractOptions(ocr=OcrMode.never)
    )
    *split, last = document.pages
    assert len(split) >= 3, [p.width for p in document.pages]
    seen: set[str] = set()
    for page in split:
        assert page.width <= PAGE_PT + 1
        title = page.blocks[0]
        assert title.type is BlockType.title and title.text.startswith("Plot yields (columns A")
        table = next(b for b in page.blocks if b.type is BlockType.table)
        header = {c.col: c.text for c in table.cells if c.header}
        labels = {c.row: c.text for c in table.cells if c.col == 0}
        assert header[0] == "Plot" and 2 <= len(header) <= MAX_COLS + 1
        months = set(header.values()) - {"Plot"}
        assert not months & seen, "each column is on one page"
        seen |= months
        for cell in table.cells:  # every value under its own month and beside its own plot
            if cell.row > 0 and cell.col > 0:
                plot, month = labels[cell.row], header[cell.col]
                assert cell.text == str(int(plot.split()[1]) * 1000 + int(month.split()[1]))
    assert seen == {f"Month {m:02d}" for m in range(1, 31)}
    assert last.blocks[0].type is BlockType.title and last.blocks[0].text == "Field notes"
    table = next(b for b in last.blocks if b.type is BlockType.table)
    assert {c.text for c in table.cells} >= {"Soil", "clay over chalk", "Plot 5"}
    links = [k for b in last.blocks for k in b.links]
    assert [(k.text, k.url) for k in links] == [
        ("Soil survey 2025", "https://example.org/soil-survey")
    ]


def _deck() -> bytes:
    import pptx

    deck = pptx.Presentation()
    for n, (title, notes) in enumerate(
        [
            ("Ferry timetable", "Mention that the 07:15 ferry skips Inchmore in winter."),
            ("Fares", ""),
        ]
    ):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = f"Slide {n + 1} body"
        if n == 1:
            run = body.paragraphs[0].add_run()
            run.text = " see the fare table online"
            run.hyperlink.address = "https://example.org/fares"
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _linked_docx() -> bytes:
    import docx
    from docx.oxml.ns import qn
    from docx.oxml.shared import OxmlElement

    document = docx.Document()
    paragraph = document.add_paragraph("Berth bookings go through ")
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"
    r_id = document.part.relate_to("https://example.org/harbour-master", rel, is_external=True)
    link, run, text = OxmlElement("w:hyperlink"), OxmlElement("w:r"), OxmlElement("w:t")
    link.set(qn("r:id"), r_id)
    text.text = "the harbour master's page"
    run.append(text)
    link.append(run)
    paragraph._p.append(link)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@needs_soffice
def test_speaker_notes_under_their_slide_and_hyperlinks_on_their_words() -> None:
    from ocr_engine.engines.extract import extract_document
    from ocr_engine.options import ExtractOptions

    options = ExtractOptions(ocr=OcrMode.never)
    deck = extract_document(_deck(), source="ferry.pptx", options=options)
    assert deck.page_count == 2, "the notes pages are not pages of their own"
    first = deck.pages[0].blocks
    heading = next(b for b in first if b.text == "Speaker notes")
    assert (heading.type, heading.level) == (BlockType.section_header, 2)
    notes = next(b for b in first if "07:15 ferry skips Inchmore" in b.text)
    assert notes.type is BlockType.text and notes.bbox[1] > heading.bbox[1]
    title = next(b for b in first if b.text == "Ferry timetable")
    assert title.type is BlockType.title and title.bbox[3] < heading.bbox[1]
    assert not any("Speaker notes" in b.text for b in deck.pages[1].blocks)
    slide_links = [k for b in deck.pages[1].blocks for k in b.links]
    assert [k.url for k in slide_links] == ["https://example.org/fares"]
    web = b'<p>Tide times are on <a href="https://example.org/tides">the tide page</a>.</p>'
    for data, name, url in [
        (_linked_docx(), "berths.docx", "https://example.org/harbour-master"),
        (web, "tides.html", "https://example.org/tides"),
    ]:
        document = extract_document(data, source=name, options=options)
        block, link = next((b, k) for p in document.pages for b in p.blocks for k in b.links)
        assert link.url == url
        line = next(line for line in block.lines if "page" in line.text)
        assert line.bbox[0] < link.bbox[0] < link.bbox[2] <= line.bbox[2] + 0.01


_MACRO = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">
<script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1"
 script:language="StarBasic">
Sub Seal(src As String, dst As String, filt As String, pw As String)
  Dim a(0) As New com.sun.star.beans.PropertyValue
  a(0).Name = &quot;Hidden&quot; : a(0).Value = True
  d = StarDesktop.loadComponentFromURL(ConvertToURL(src), &quot;_blank&quot;, 0, a())
  Dim b(1) As New com.sun.star.beans.PropertyValue
  b(0).Name = &quot;FilterName&quot; : b(0).Value = filt
  b(1).Name = &quot;Password&quot; : b(1).Value = pw
  d.storeToURL(ConvertToURL(dst), b())
  d.close(True)
End Sub
</script:module>
"""


def _sealed_by_libreoffice(tmp_path: Path, files: dict[str, tuple[bytes, str]]) -> dict[str, bytes]:
    """Legacy files saved with a password by LibreOffice itself, as a user would (a Basic macro
    in a profile of the test's own): name -> (source bytes, export filter)."""
    import subprocess

    soffice = shutil.which("soffice") or "soffice"
    profile = tmp_path / "profile"
    home = f"-env:UserInstallation={profile.as_uri()}"
    subprocess.run([soffice, "--headless", home, "--terminate_after_init"], timeout=120)
    (profile / "user" / "basic" / "Standard" / "Module1.xba").write_text(_MACRO)
    sealed = {}
    for name, (data, export) in files.items():
        source = tmp_path / f"plain-{name}x"
        source.write_bytes(data)
        target = tmp_path / name
        call = f'macro:///Standard.Module1.Seal("{source}","{target}","{export}","brine-7")'
        subprocess.run([soffice, "--headless", "--norestore", home, call], timeout=120)
        sealed[name] = target.read_bytes()
    return sealed


@needs_soffice
def test_legacy_doc_and_xls_saved_with_a_password_are_detected_and_opened(
    tmp_path: Path,
) -> None:
    import openpyxl

    from ocr_engine.engines.extract import extract_document
    from ocr_engine.options import ExtractOptions

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["Lock", "Lift (m)"])
    sheet.append(["Caen Hill", "72.3"])
    sheet.append(["Tardebigge", "67.1"])
    sheet.column_dimensions["A"].width = 20
    workbook = io.BytesIO()
    book.save(workbook)
    sealed = _sealed_by_libreoffice(
        tmp_path,
        {
            "log.doc": (_docx("Gate 4 leaks at high water."), "MS Word 97"),
            "lifts.xls": (workbook.getvalue(), "MS Excel 97"),
        },
    )
    options = ExtractOptions(ocr=OcrMode.never)
    for name, data, evidence in [
        ("log.doc", sealed["log.doc"], "Gate 4 leaks at high water."),
        ("lifts.xls", sealed["lifts.xls"], "Tardebigge"),
    ]:
        assert check_office(data, name).encrypted
        with pytest.raises(PasswordError, match=f"{name}: a password-protected Office file; put"):
            render_pdf(data, name)
        with pytest.raises(PasswordError, match="the password given does not open"):
            render_pdf(data, name, password="brine-8")
        document = extract_document(data, source=name, password="brine-7", options=options)
        assert evidence in " ".join(b.text for p in document.pages for b in p.blocks)


def _wrapped_deck() -> bytes:
    import pptx
    from pptx.enum.text import PP_ALIGN
    from pptx.util import Inches, Pt

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank: the shape's text alone
    box = slide.shapes.add_textbox(Inches(3), Inches(2), Inches(2.2), Inches(1.5))
    box.text_frame.word_wrap = True
    paragraph = box.text_frame.paragraphs[0]
    paragraph.text = "The harbour light is lit at dusk by the keeper on duty."
    paragraph.alignment = PP_ALIGN.CENTER
    paragraph.runs[0].font.size = Pt(24)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


@needs_soffice
def test_a_paragraph_the_source_states_whole_is_one_block_however_it_wraps() -> None:
    """A shape's centred paragraph wraps over several lines of the rendering, which the layout
    reads as blocks of their own; the source says it is one paragraph, so it is one block."""
    from ocr_engine.engines.extract import extract_document
    from ocr_engine.options import ExtractOptions

    deck = extract_document(
        _wrapped_deck(), source="harbour.pptx", options=ExtractOptions(ocr=OcrMode.never)
    )
    [page] = deck.pages
    said = "The harbour light is lit at dusk by the keeper on duty."
    [block] = [b for b in page.blocks if "harbour" in b.text]
    assert block.type is BlockType.text and " ".join(block.text.split()) == said
    assert len(block.lines) >= 2, "the paragraph wraps over lines of the rendering"
