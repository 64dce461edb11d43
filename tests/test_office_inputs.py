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
from ingest.options import FileStatus
from ingest.records import DocStatus, FailureKind
from ocr_engine.errors import PasswordError
from ocr_engine.office import check_office, render_pdf
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
