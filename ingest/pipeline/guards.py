"""Refuse PDFs that would cost far more to read than their size suggests, before reading them.

MuPDF inflates streams as it reads them, so a 1 MB file whose content stream inflates to 1 GB
keeps a core busy for ~8 s on every pass over the page (it never holds it in memory, but an
engine passes over a page several times) and a page image could inflate to gigabytes. Each Flate
stream is inflated here, block by block without keeping the output, and stopped at a cap. Page
objects that MuPDF cannot parse (e.g. nested thousands of levels deep) are refused by name.
"""

from __future__ import annotations

import zlib

import pymupdf
from pydantic import BaseModel, Field

from ocr_engine.errors import BadInputError

__all__ = ["PdfLimits", "check_pdf", "inflated_size"]

_MiB = 1 << 20
_BLOCK = 4 * _MiB
_CONTENT_FLOOR = 32 * _MiB  # content streams this large are legitimate (CAD drawings, maps)


class PdfLimits(BaseModel):
    """How far streams may inflate: an image to `max_stream_bytes` (a 600 dpi A4 RGB scan is
    ~100 MiB), any other stream to 32 MiB or `max_content_ratio` times its compressed size."""

    max_stream_bytes: int = Field(default=256 * _MiB, ge=_MiB)
    max_content_ratio: int = Field(
        default=100, ge=10, description="inflated/compressed, for non-image streams over 32 MiB"
    )


def inflated_size(raw: bytes, cap: int) -> int:
    """Bytes the zlib stream `raw` inflates to, counting no further than just past `cap`."""
    inflater = zlib.decompressobj()
    total = 0
    data = raw
    while data and not inflater.eof:
        total += len(inflater.decompress(data, _BLOCK))
        if total > cap:
            return total
        data = inflater.unconsumed_tail
    return total


def _filters(pdf: pymupdf.Document, xref: int) -> str:
    kind, value = pdf.xref_get_key(xref, "Filter")
    return value if kind in ("name", "array") else ""


def _is_flate(filters: str) -> bool:
    first = filters.strip("[] ").split("/")
    names = [name.strip() for name in first if name.strip()]
    return bool(names) and names[0] in ("FlateDecode", "Fl")


def _check_stream(pdf: pymupdf.Document, xref: int, name: str, limits: PdfLimits) -> None:
    if not _is_flate(_filters(pdf, xref)):
        return
    raw = pdf.xref_stream_raw(xref)
    if not raw:
        return
    cap = limits.max_stream_bytes
    if pdf.xref_get_key(xref, "Subtype")[1] != "/Image":
        cap = min(cap, max(_CONTENT_FLOOR, limits.max_content_ratio * len(raw)))
    try:
        size = inflated_size(raw, cap)
    except zlib.error:
        return  # a damaged stream: MuPDF reads what it can, and that is bounded by `raw`
    if size > cap:
        raise BadInputError(
            f"{name}: decompression bomb: stream {xref} inflates past {cap // _MiB} MiB "
            f"from {len(raw):,} bytes; not read"
        )


def check_pdf(pdf: pymupdf.Document, name: str, limits: PdfLimits | None = None) -> None:
    """Raise `BadInputError` for an open PDF that is a decompression bomb or unparseable."""
    limits = limits or PdfLimits()
    for index in range(pdf.page_count):
        try:
            pdf.xref_object(pdf.page_xref(index), compressed=True)
        except RuntimeError as exc:
            raise BadInputError(
                f"{name}: page {index + 1} cannot be parsed ({exc}): its objects are nested too "
                "deeply or damaged"
            ) from exc
    for xref in range(1, pdf.xref_length()):
        try:
            if pdf.xref_is_stream(xref):
                _check_stream(pdf, xref, name, limits)
        except RuntimeError:
            continue  # an object no page uses may be broken; MuPDF reads around it
