"""Each kind of unreadable input is refused with `BadInputError` and a reason a person reads."""

from __future__ import annotations

import os
from pathlib import Path

import pymupdf
import pytest

from ocr_engine.engines.extract import extract_document
from ocr_engine.errors import BadInputError
from ocr_engine.inputs.pdf import open_pdf

ZERO_PAGES = (
    b"%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n"
    b"2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\n"
    b"trailer <</Root 1 0 R /Size 3>>\n%%EOF\n"
)


def _pdf_bytes(pages: int = 3, **save: object) -> bytes:
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page().insert_text((72, 72), f"page {i + 1} " + "text " * 50, fontsize=11)
    return doc.tobytes(**save)  # type: ignore[arg-type]


def _write(tmp_path: Path, data: bytes, name: str = "file.pdf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (os.urandom(4096), "signature"),
        (b"<!DOCTYPE html><html><body>Not found</body></html>", "HTML"),
        (ZERO_PAGES, "no pages"),
    ],
    ids=["empty", "random-bytes", "html", "zero-pages"],
)
def test_bad_bytes_refused(tmp_path: Path, data: bytes, reason: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(BadInputError, match=reason) as info:
        open_pdf(path)
    assert "file.pdf" in str(info.value)
    with pytest.raises(BadInputError, match=reason):
        extract_document(path)


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.95])
def test_truncated_refused(tmp_path: Path, keep: float) -> None:
    data = _pdf_bytes(pages=5)
    path = _write(tmp_path, data[: int(len(data) * keep)])
    with pytest.raises(BadInputError, match="truncated"):
        open_pdf(path)


def test_encrypted_without_password_refused(tmp_path: Path) -> None:
    data = _pdf_bytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    path = _write(tmp_path, data)
    with pytest.raises(BadInputError, match="encrypted and needs a password"):
        open_pdf(path)
    with pytest.raises(BadInputError, match="password given does not open"):
        open_pdf(path, password="wrong")
    assert open_pdf(path, password="secret").page_count == 3
    doc = extract_document(path, password="secret")
    assert doc.page_count == 3 and "page 1" in doc.pages[0].blocks[0].text


def test_owner_password_only_opens(tmp_path: Path) -> None:
    data = _pdf_bytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", permissions=0)
    doc = extract_document(_write(tmp_path, data))
    assert doc.page_count == 3


def test_missing_file_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="not found"):
        open_pdf(tmp_path / "nope.pdf")


def test_good_bytes_open() -> None:
    assert open_pdf(_pdf_bytes()).page_count == 3
