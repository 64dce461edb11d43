"""Open a PDF (or an image, wrapped into one) from a path or bytes, refusing unreadable input
with a clear human reason."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pymupdf

from ocr_engine.errors import BadInputError, PasswordError
from ocr_engine.inputs.images import image_to_pdf, sniff, stored_pdf_bytes

__all__ = ["is_damage", "load_page", "open_pdf", "open_stored", "page_sizes", "read_pdf_bytes"]

log = logging.getLogger(__name__)

_MAGIC = b"%PDF-"
_MAGIC_WINDOW = 1024
# MuPDF's error codes that mean the file itself is damaged (bad format or syntax, broken beyond
# repair, past a limit, a feature it cannot read): bad input. Memory, I/O, abort and the generic
# code stay what they are, for a retry.
_DAMAGE_CODES = frozenset(
    {
        pymupdf.mupdf.FZ_ERROR_FORMAT,
        pymupdf.mupdf.FZ_ERROR_SYNTAX,
        pymupdf.mupdf.FZ_ERROR_REPAIRED,
        pymupdf.mupdf.FZ_ERROR_LIMIT,
        pymupdf.mupdf.FZ_ERROR_UNSUPPORTED,
    }
)
_CODE = re.compile(r"^code=(\d+):\s*")


def read_pdf_bytes(path_or_bytes: Path | str | bytes) -> tuple[bytes, str]:
    """The file's bytes and a name for messages; a missing or unreadable path is bad input."""
    if isinstance(path_or_bytes, bytes | bytearray | memoryview):
        return bytes(path_or_bytes), "<bytes>"
    path = Path(path_or_bytes)
    try:
        return path.read_bytes(), path.name
    except FileNotFoundError as exc:
        raise BadInputError(f"{path.name}: file not found") from exc
    except IsADirectoryError as exc:
        raise BadInputError(f"{path.name}: is a directory, not a PDF file") from exc
    except OSError as exc:
        raise BadInputError(f"{path.name}: cannot be read ({exc.strerror or exc})") from exc


def _is_text(data: bytes) -> bool:
    """UTF-8 without control characters other than whitespace (random bytes rarely are)."""
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        text = data[: exc.start].decode("utf-8") if exc.start > len(data) - 4 else "\0"
    return all(c.isprintable() or c in "\t\r\n" for c in text)


def _describe_non_pdf(data: bytes) -> str:
    head = data[:_MAGIC_WINDOW].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return "is an HTML page, not a PDF"
    if head.startswith(b"<") and _is_text(head[:256]):
        return "is XML/markup, not a PDF"
    if head.startswith(b"pk\x03\x04"):
        return "is a ZIP archive (maybe an Office file), not a PDF"
    return "does not start with the %PDF- signature (not a PDF file)"


def _check_bytes(data: bytes, name: str) -> None:
    if not data:
        raise BadInputError(f"{name}: the file is empty (0 bytes)")
    if _MAGIC not in data[:_MAGIC_WINDOW]:
        raise BadInputError(f"{name}: {_describe_non_pdf(data)}")


def _looks_truncated(data: bytes) -> bool:
    return b"%%EOF" not in data[-2048:]


def is_damage(exc: BaseException) -> bool:
    """Whether MuPDF raised `exc` because the file is damaged (not for memory, I/O or a bug)."""
    if isinstance(exc, pymupdf.FileDataError):
        return True
    if isinstance(exc, pymupdf.mupdf.FzErrorBase):
        return int(exc.m_code) in _DAMAGE_CODES
    match = _CODE.match(str(exc)) if isinstance(exc, RuntimeError) else None
    return match is not None and int(match.group(1)) in _DAMAGE_CODES


def _damaged(label: str, data: bytes, exc: BaseException) -> BadInputError:
    reason = "truncated or damaged" if _looks_truncated(data) else "damaged"
    return BadInputError(f"{label}: the PDF is {reason} and cannot be read ({_said(exc)})")


def _said(exc: BaseException) -> str:
    """MuPDF's message without its `code=N: ` prefix."""
    return _CODE.sub("", str(exc)).strip() or type(exc).__name__


def load_page(pdf: pymupdf.Document, number: int, label: str) -> pymupdf.Page:
    """Page `number` (1-based) of an open PDF; a page MuPDF cannot load from a damaged file is
    bad input, with the page's number."""
    try:
        return pdf.load_page(number - 1)
    except Exception as exc:
        if not is_damage(exc):
            raise
        where = f"{label}: page {number}" if label else f"page {number} of the PDF"
        raise BadInputError(f"{where} is damaged and cannot be read ({_said(exc)})") from exc


def open_pdf(
    path_or_bytes: Path | str | bytes, *, password: str | None = None, name: str | None = None
) -> pymupdf.Document:
    """Open a PDF (an image: wrapped into one, `ocr_engine.inputs.images`) for reading or raise
    `BadInputError` saying why it cannot be read."""
    data, default_name = read_pdf_bytes(path_or_bytes)
    label = name or default_name
    if sniff(data) not in (None, "pdf"):
        data = image_to_pdf(data, label)
    _check_bytes(data, label)
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        reason = "truncated or damaged" if _looks_truncated(data) else "damaged"
        raise BadInputError(f"{label}: the PDF is {reason} and cannot be opened ({exc})") from exc
    try:
        _check_document(doc, data, label, password)
    except BaseException as exc:
        doc.close()
        if isinstance(exc, Exception) and is_damage(exc):
            raise _damaged(label, data, exc) from exc
        raise
    return doc


def _check_document(doc: pymupdf.Document, data: bytes, label: str, password: str | None) -> None:
    if not doc.is_pdf:
        raise BadInputError(f"{label}: not a PDF document")
    if doc.needs_pass:
        if password is None:
            raise PasswordError(f"{label}: the PDF is encrypted and needs a password to open")
        if not doc.authenticate(password):
            raise PasswordError(f"{label}: the password given does not open this encrypted PDF")
    if doc.page_count == 0:
        if _looks_truncated(data):
            raise BadInputError(f"{label}: the PDF is truncated or damaged: no page can be read")
        raise BadInputError(f"{label}: the PDF has no pages")
    if doc.is_repaired and _looks_truncated(data):
        raise BadInputError(f"{label}: the PDF is truncated (no end-of-file marker, broken xref)")
    if doc.is_repaired:
        log.warning("%s: damaged PDF was repaired by MuPDF; some content may be missing", label)


def open_stored(path: Path) -> pymupdf.Document:
    """A stored copy (`DATA_DIR/documents/{doc_id}.pdf`) for rendering: the PDF file itself, or
    the PDF an image it holds is wrapped into."""
    made = stored_pdf_bytes(path)
    return pymupdf.open(path) if made is None else pymupdf.open(stream=made, filetype="pdf")


def page_sizes(
    pdf: bytes, password: str | None, numbers: list[int]
) -> dict[int, tuple[float, float, int]]:
    """Width, height and rotation of each page, which failed pages report too."""
    with open_pdf(pdf, password=password) as doc:
        count = doc.page_count
        sizes = {}
        for number in numbers:
            if not 1 <= number <= count:
                raise BadInputError(f"page {number} is not in the document (1..{count})")
            try:
                page = doc.load_page(number - 1)
                rect = page.rect
                sizes[number] = (rect.width or 1.0, rect.height or 1.0, page.rotation)
            except Exception as exc:  # reported on the page by the renderer
                log.warning("page %d cannot be loaded: %s", number, exc)
                sizes[number] = (612.0, 792.0, 0)
        return sizes
