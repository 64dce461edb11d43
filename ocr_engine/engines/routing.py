"""Which pages need OCR: a cheap per-page check of whether the text layer can be trusted.

A page goes to OCR when its text layer is
- missing: no text beside an image or over a page of vector drawings, or a few characters over a
  page-sized image (a scan with a stamped page number; a slide whose title sits beside a large
  picture keeps its text layer);
- invisible: OCR text drawn in render mode 3 or fully transparent, or hidden under the scan image
  drawn after it, over a page that images cover (there is something for OCR to read);
- garbage: mostly replacement, private-use, control or unassigned characters (glyphs without a
  Unicode map).
Text that only a clip or a shading makes visible still counts as visible: PyMuPDF's text trace
does not list it, but the text layer has it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

import pymupdf

from ocr_engine.schema import Page

__all__ = [
    "GARBAGE",
    "INVISIBLE",
    "NO_TEXT",
    "TextLayerStats",
    "ocr_reason",
    "text_layer_stats",
]

NO_TEXT = "no text layer"
INVISIBLE = "invisible text layer"
GARBAGE = "garbage text layer"

ALMOST_NO_TEXT = 32  # fewer visible characters than this: a stamp or page number at most
COVERED = 0.5  # share of the page that images (or vector drawings) cover on a scan
SOME_IMAGE = 0.05  # image cover that may hold text on a page without any
SCANNED = 0.9  # image cover beside a few characters of text: a scan with a stamp, not a slide
MANY_PATHS = 300  # vector drawings on a page without text: outlined text or a vector scan
MOSTLY = 0.5  # share of the text's characters that makes the whole layer invisible or garbage
MIN_GARBAGE = 16  # fewer unreadable characters than this are icons and bullets, not garbage
_UNREADABLE = frozenset({"Co", "Cn", "Cs", "Cc"})
_GRID = 32  # cells per side of the coverage grid


class TextLayerStats:
    """Character counts of a page's text layer and how much of the page images cover."""

    __slots__ = ("hidden", "image_cover", "invisible", "text", "unreadable")

    def __init__(
        self, text: int, unreadable: int, invisible: int, hidden: int, image_cover: float
    ) -> None:
        self.text = text
        self.unreadable = unreadable
        self.invisible = invisible
        self.hidden = hidden
        self.image_cover = image_cover

    @property
    def visible(self) -> int:
        return max(self.text - self.invisible - self.hidden, 0)

    def __repr__(self) -> str:
        return (
            f"TextLayerStats(text={self.text}, unreadable={self.unreadable}, "
            f"invisible={self.invisible}, hidden={self.hidden}, "
            f"image_cover={self.image_cover:.2f})"
        )


def _unreadable(char: str) -> bool:
    return char == "\ufffd" or unicodedata.category(char) in _UNREADABLE


def _page_chars(text_page: Page) -> tuple[int, int]:
    """Non-space characters of the text layer, and how many of them are unreadable."""
    total = bad = 0
    for block in text_page.blocks:
        for line in block.lines:
            for char in line.text:
                if not char.isspace():
                    total += 1
                    bad += _unreadable(char)
    return total, bad


def _cover(rects: Iterable[pymupdf.Rect], page_rect: pymupdf.Rect) -> float:
    """The share of `page_rect` that the union of `rects` covers, on a coarse grid."""
    width, height = page_rect.width, page_rect.height
    if width <= 0 or height <= 0:
        return 0.0
    cells: set[tuple[int, int]] = set()
    for rect in rects:
        r = rect & page_rect
        if r.is_empty:
            continue
        x0 = int((r.x0 - page_rect.x0) / width * _GRID)
        x1 = min(int((r.x1 - page_rect.x0) / width * _GRID + 0.999), _GRID)
        y0 = int((r.y0 - page_rect.y0) / height * _GRID)
        y1 = min(int((r.y1 - page_rect.y0) / height * _GRID + 0.999), _GRID)
        # a cell counts when the rectangle covers most of it
        for gx in range(x0, x1):
            cx0 = page_rect.x0 + gx * width / _GRID
            overlap_x = min(r.x1, cx0 + width / _GRID) - max(r.x0, cx0)
            if overlap_x < 0.5 * width / _GRID:
                continue
            for gy in range(y0, y1):
                cy0 = page_rect.y0 + gy * height / _GRID
                if min(r.y1, cy0 + height / _GRID) - max(r.y0, cy0) >= 0.5 * height / _GRID:
                    cells.add((gx, gy))
    return len(cells) / (_GRID * _GRID)


def _concealed_chars(page: pymupdf.Page, log: list[tuple[str, Any]]) -> tuple[int, int]:
    """Characters drawn invisibly (render mode 3 or opacity 0), and characters of other spans
    that an image drawn later covers (OCR text under the scan)."""
    images = [
        (index, pymupdf.Rect(rect))
        for index, (kind, rect) in enumerate(log)
        if kind == "fill-image"
    ]
    invisible = hidden = 0
    for span in page.get_texttrace():
        count = sum(1 for c in span["chars"] if c[0] > 32 and not chr(c[0]).isspace())
        if span["type"] == 3 or span.get("opacity", 1.0) == 0:
            invisible += count
            continue
        box = pymupdf.Rect(span["bbox"])
        centre = (box.tl + box.br) / 2
        if any(index > span["seqno"] and rect.contains(centre) for index, rect in images):
            hidden += count
    return invisible, hidden


def text_layer_stats(page: pymupdf.Page, text_page: Page) -> TextLayerStats:
    """Counts behind `ocr_reason`. A page with text and no image XObject is not interpreted
    again; otherwise the drawing log says what images cover, and on pages that images cover
    the text trace says which characters are invisible or hidden."""
    text, unreadable = _page_chars(text_page)
    if text >= ALMOST_NO_TEXT and not page.get_images():
        return TextLayerStats(text, unreadable, 0, 0, 0.0)
    log = page.get_bboxlog()
    image_cover = _cover(
        (pymupdf.Rect(rect) for kind, rect in log if kind == "fill-image"), _unrotated_rect(page)
    )
    invisible = hidden = 0
    if text and image_cover >= COVERED:
        invisible, hidden = _concealed_chars(page, log)
    return TextLayerStats(text, unreadable, min(invisible, text), hidden, image_cover)


def _unrotated_rect(page: pymupdf.Page) -> pymupdf.Rect:
    """The page area in the unrotated space where images, drawings and text traces lie."""
    return pymupdf.Rect(0, 0, page.cropbox.width, page.cropbox.height)


def _vector_covered(page: pymupdf.Page) -> bool:
    """Many vector drawings spread over the page (text outlined as paths, a vectorised scan)."""
    paths = page.get_cdrawings()
    if len(paths) < MANY_PATHS:
        return False
    return _cover((pymupdf.Rect(p["rect"]) for p in paths), _unrotated_rect(page)) >= COVERED


def ocr_reason(page: pymupdf.Page, text_page: Page) -> str | None:
    """None when the page's text layer can be trusted; otherwise why the page needs OCR
    ("no text layer", "invisible text layer" or "garbage text layer")."""
    stats = text_layer_stats(page, text_page)
    readable_area = stats.image_cover >= COVERED
    concealed = stats.invisible + stats.hidden
    if concealed >= ALMOST_NO_TEXT and concealed >= MOSTLY * stats.text and readable_area:
        return INVISIBLE
    if stats.visible < ALMOST_NO_TEXT:
        if stats.image_cover >= (SOME_IMAGE if stats.visible == 0 else SCANNED):
            return NO_TEXT
        if stats.visible == 0 and _vector_covered(page):
            return NO_TEXT
        return None
    if stats.unreadable >= MIN_GARBAGE and stats.unreadable >= MOSTLY * stats.text:
        return GARBAGE
    return None
