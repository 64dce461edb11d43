"""A deck's speaker notes shown under their slide, on the slide's own page.

A deck with notes is rendered with LibreOffice's notes pages (`ExportNotesPages`: the slides, then
a notes page per slide). The notes text is cut from each notes page (the blocks whose text is the
slide's notes, as python-pptx reads them) and placed under its slide beneath a "Speaker notes"
heading; the notes pages are then dropped, so slide n stays page n and its notes are cited there.
"""

from __future__ import annotations

import io
import logging
import zipfile

import pymupdf

from ocr_engine.inputs.office_structure import Item, Structure

__all__ = ["EXPORT_WITH_NOTES", "HEADING", "has_notes", "with_notes"]

log = logging.getLogger(__name__)

EXPORT_WITH_NOTES = 'pdf:impress_pdf_Export:{"ExportNotesPages":{"type":"boolean","value":"true"}}'
HEADING = "Speaker notes"
_HEAD_PT = 28.0
_PAD = 6.0


def has_notes(data: bytes) -> bool:
    """Whether a .pptx holds notes slides (its notes pages are then rendered too)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return any(n.startswith("ppt/notesSlides/") for n in archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _notes(data: bytes) -> list[str]:
    """The notes text of each slide LibreOffice shows (hidden slides are not rendered)."""
    import pptx

    deck = pptx.Presentation(io.BytesIO(data))
    said = []
    for slide in deck.slides:
        if slide._element.get("show") == "0":
            continue
        frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
        said.append(frame.text if frame is not None else "")
    return said


def _notes_part(page: pymupdf.Page, notes: str) -> pymupdf.Rect | None:
    """Where the notes' text lies on a notes page (not its slide picture), None when nowhere."""
    key = _norm(notes)
    found = [
        pymupdf.Rect(block[:4])
        for block in page.get_text("blocks")
        if len(_norm(block[4])) >= 2 and _norm(block[4]) in key
    ]
    if not found:
        return None
    part = found[0]
    for rect in found[1:]:
        part |= rect
    padded = pymupdf.Rect(part.x0 - _PAD, part.y0 - _PAD, part.x1 + _PAD, part.y1 + _PAD)
    return padded & page.rect


def _with_part(
    out: pymupdf.Document, pdf: pymupdf.Document, n: int, part: pymupdf.Rect, at: int
) -> None:
    slide = pdf[n].rect
    width = max(slide.width, part.width + 2 * _PAD)
    page = out.new_page(width=width, height=slide.height + _HEAD_PT + part.height + _PAD)
    page.show_pdf_page(pymupdf.Rect(0, 0, slide.width, slide.height), pdf, n)
    page.draw_line((0, slide.height), (width, slide.height), color=(0.6, 0.6, 0.6), width=0.5)
    page.insert_text((_PAD * 2, slide.height + 19), HEADING, fontname="hebo", fontsize=12)
    top = slide.height + _HEAD_PT
    target = pymupdf.Rect(_PAD, top, _PAD + part.width, top + part.height)
    page.show_pdf_page(target, pdf, at, clip=part)


def with_notes(pdf: pymupdf.Document, data: bytes, structure: Structure) -> pymupdf.Document | None:
    """Each slide's page with its notes under it, the notes pages dropped; None when the
    rendering holds no notes pages, or not one for each slide."""
    notes = _notes(data)
    count = len(notes)
    if pdf.page_count != 2 * count:
        if pdf.page_count != count:
            log.info("%d pages for %d slides: notes left as rendered", pdf.page_count, count)
        return None
    out = pymupdf.open()
    placed = False
    for n, said in enumerate(notes):
        part = _notes_part(pdf[count + n], said) if said.strip() else None
        if part is None:
            out.insert_pdf(pdf, from_page=n, to_page=n)
        else:
            _with_part(out, pdf, n, part, count + n)
            placed = True
    if placed:
        structure.items.append(Item(type="section_header", text=HEADING, level=2))
    return out
