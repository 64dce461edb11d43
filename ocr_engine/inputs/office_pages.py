"""A rendering made ready to keep: its page count checked, a workbook's sheets and a deck's
speaker notes laid out (`ocr_engine.inputs.sheet_pages`, `ocr_engine.inputs.deck_notes`), the
source's structure (read from its OOXML sibling where it has one,
`ocr_engine.inputs.office_sibling`) embedded (`folio-office.json`) for
`ocr_engine.layout.office_match`."""

from __future__ import annotations

import logging

import pymupdf

from ocr_engine.inputs.convert_pool import ConversionError
from ocr_engine.inputs.office_sibling import Sibling
from ocr_engine.inputs.office_structure import EMBEDDED_NAME, Structure, source_structure

__all__ = ["finish"]

log = logging.getLogger(__name__)


def _laid_out(
    pdf: pymupdf.Document, data: bytes, kind: str, structure: Structure
) -> tuple[pymupdf.Document, Structure] | None:
    """The pages laid out to be read, with the structure that records how; None: as rendered."""
    from ocr_engine.inputs.deck_notes import with_notes
    from ocr_engine.inputs.sheet_pages import lay_out_sheets

    trial = structure.model_copy(deep=True)
    try:
        if kind in ("xlsx", "xlsm"):
            laid = lay_out_sheets(pdf, data, trial)
        elif kind == "pptx":
            laid = with_notes(pdf, data, trial)
        else:
            return None
    except Exception as exc:  # the rendering as it came is still a faithful one
        log.warning("a %s rendering could not be laid out, kept as rendered: %s", kind, exc)
        return None
    return None if laid is None else (laid, trial)


def _check_count(pdf: pymupdf.Document, name: str, limit: int) -> None:
    if pdf.page_count == 0:
        raise ConversionError(f"{name}: the rendering has no pages (nothing to show)")
    if pdf.page_count > limit:
        raise ConversionError(
            f"{name}: renders to {pdf.page_count:,} pages, more than the limit of {limit:,}"
        )


def finish(
    rendered: bytes,
    data: bytes,
    name: str,
    kind: str,
    notes: list[str],
    limit: int,
    sibling: Sibling | None = None,
) -> bytes:
    """The rendering checked for its page count, laid out, with the source's structure embedded
    (`sibling`'s, an OOXML copy of the source, where given)."""
    read_kind, read = (sibling.kind, sibling.data) if sibling is not None else (kind, data)
    with pymupdf.open(stream=rendered, filetype="pdf") as pdf:
        _check_count(pdf, name, limit)
        structure = source_structure(read, read_kind, pdf.get_toc(simple=True))
        structure.kind, structure.read_as, structure.notes = kind, read_kind, notes
        laid = _laid_out(pdf, read, read_kind, structure)
        final, structure = laid if laid is not None else (pdf, structure)
        _check_count(final, name, limit)
        final.embfile_add(EMBEDDED_NAME, structure.model_dump_json().encode("utf-8"))
        return final.tobytes(garbage=1, deflate=True)
