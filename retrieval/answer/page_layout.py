"""What a page's layout in the document JSON adds to a citation: the box of a table cell, the
figure or table that a cited title or caption names, where a chunk's section heading is and the
figure or table it heads.

A title (a block of its own, short and without a closing mark) names the figure or table right
below it in its column: the nearest one whose top lies within `TITLE_GAP` points of the title's
bottom, with at most a legend's few words between them (no text block of `BODY_WORDS` words or
more). A caption ("Figure 3: ...", or a sentence of a caption chunk) names the nearest figure or
table just above or below it. A title names only the part of a table under it when the table's
cells beyond the title hold prose (the text-layer engine can read a chart and the column of text
beside it as one table).
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from threading import Lock
from typing import Protocol

from ocr_engine.geometry import Box
from ocr_engine.schema import Block, BlockType, Page, TableCell
from retrieval.schema import BBox, Chunk, ChunkLine
from retrieval.text_terms import said

__all__ = ["BODY_WORDS", "TITLE_GAP", "Layout", "PageLayouts", "is_caption", "is_title"]

log = logging.getLogger(__name__)

TITLE_GAP = 40.0  # points from a title's bottom to the top of what it titles (a legend between)
CAPTION_GAP = 24.0  # points between a caption and its figure or table
BODY_WORDS = 15  # a text block this long between a title and a figure is body text: no title
_MIN_CONTENT_HEIGHT = 30.0  # smaller figures are marks and icons, not what a title names
_TITLE_WORDS = 40
_AIR = 4.0  # points left around a cut
_CAPTION = re.compile(r"^(?:figure|fig\.|table|chart|exhibit|graph|diagram)\s*[\dA-Z]", re.I)
_CAPTION_KINDS = frozenset({"figure_caption", "table_caption"})


def is_caption(text: str, chunk_kind: str) -> bool:
    """Whether a sentence is a caption: it starts as one ("Table 4:") or its chunk is one."""
    return chunk_kind in _CAPTION_KINDS or bool(_CAPTION.match(text.lstrip()))


def is_title(text: str) -> bool:
    """Whether a sentence reads as a title: short and without a sentence's closing mark."""
    words = text.split()
    return 0 < len(words) <= _TITLE_WORDS and not text.rstrip().endswith((".", "!", "?", ":"))


class Layout(Protocol):
    """What an answer asks of the page layout (`PageLayouts`, or a test's stand-in)."""

    def cell_box(self, chunk: Chunk, line: ChunkLine, col: int) -> BBox | None: ...

    def titled(self, doc_id: str, page: int, title: BBox, caption: bool) -> BBox | None: ...

    def column_heads(self, chunk: Chunk, line: ChunkLine) -> BBox | None: ...

    def heading(self, doc_id: str, page: int, text: str, above: float) -> BBox | None: ...

    def headed(self, doc_id: str, page: int, heading: BBox) -> BBox | None: ...


_Content = tuple[Box, list[tuple[Box, int]]]


@dataclass(frozen=True)
class _PageBlocks:
    cells: list[TableCell]
    contents: list[_Content]
    """Boxes of the page's figures and tables (but marks and icons), each with its cells' boxes
    and how many words of running text each cell holds (`_prose_words`)."""
    texts: list[tuple[Box, int]]
    """Boxes of the page's other blocks (running headers and footers left out), and their words."""
    heads: list[tuple[Box, Box]]
    """Each table's box, and the box of the column headings atop it (`_heads`)."""
    headings: list[tuple[Box, str]]
    """Boxes of the page's titles and section headings, with their words in lower case."""


def _page_blocks(page: Page) -> _PageBlocks:
    contents: list[_Content] = []
    texts: list[tuple[Box, int]] = []
    for block in page.blocks:
        if block.type in (BlockType.figure, BlockType.table):
            if block.bbox[3] - block.bbox[1] >= _MIN_CONTENT_HEIGHT:
                prose = [(c.bbox, _prose_words(c.text)) for c in block.cells if c.bbox]
                contents.append((block.bbox, prose))
        elif block.type not in (BlockType.page_header, BlockType.page_footer):
            texts.append((block.bbox, _words(block)))
    cells = [c for block in page.blocks for c in block.cells if c.bbox is not None]
    heads = [
        (block.bbox, head)
        for block in page.blocks
        if block.type is BlockType.table and (head := _heads(block)) is not None
    ]
    headings = [
        (block.bbox, said(block.text).lower())
        for block in page.blocks
        if block.type in (BlockType.title, BlockType.section_header)
    ]
    return _PageBlocks(cells, contents, texts, heads, headings)


def _heads(table: Block) -> Box | None:
    """The rows of column headings atop a table, as wide as the table: its heading cells above
    the first cell of figures, the stub column's ("Assets") left out; None without them."""
    boxed = [c for c in table.cells if c.bbox is not None]
    body_top = min((c.bbox[1] for c in boxed if not c.header and c.bbox), default=None)
    heads = [
        c.bbox
        for c in boxed
        if c.header and c.col > 0 and c.bbox and (body_top is None or c.bbox[3] <= body_top + 1)
    ]
    if not heads or body_top is None:
        return None
    return (table.bbox[0], min(b[1] for b in heads), table.bbox[2], max(b[3] for b in heads))


def _prose_words(text: str) -> int:
    """The words of a line of running text (four words or more, most in lower case); 0 for a
    label, a header or figures."""
    words = [w for w in text.split() if w.strip(",.;:()").isalpha()]
    lower = sum(1 for w in words if w[0].islower())
    return len(words) if len(words) >= 4 and lower >= 0.6 * len(words) else 0


def _words(block: Block) -> int:
    return len(block.text.split())


def _shares_column(a: Box, b: Box) -> bool:
    """Whether two boxes overlap across by half the narrower one's width."""
    overlap = min(a[2], b[2]) - max(a[0], b[0])
    return overlap >= 0.5 * min(a[2] - a[0], b[2] - b[0])


class PageLayouts:
    """Page layouts from the document JSON, a page at a time (`load_page(doc_id, number)`, a
    KeyError when the document or page is gone), the last `keep` pages' kept."""

    def __init__(self, load_page: Callable[[str, int], Page], keep: int = 256) -> None:
        self._load_page = load_page
        self._keep = keep
        self._pages: OrderedDict[tuple[str, int], _PageBlocks | None] = OrderedDict()
        self._lock = Lock()

    def _page(self, doc_id: str, number: int) -> _PageBlocks | None:
        key = (doc_id, number)
        with self._lock:
            if key in self._pages:
                self._pages.move_to_end(key)
                return self._pages[key]
        try:
            layout: _PageBlocks | None = _page_blocks(self._load_page(doc_id, number))
        except KeyError:  # removed since it was found: cited by its chunk lines alone
            log.info("no page %d in the JSON of %s: cited by chunk lines alone", number, doc_id)
            layout = None
        with self._lock:
            self._pages[key] = layout
            while len(self._pages) > self._keep:
                self._pages.popitem(last=False)
        return layout

    def forget(self, doc_ids: list[str]) -> None:
        """Drop the kept pages of these documents (read again: their JSON is new)."""
        gone = set(doc_ids)
        with self._lock:
            for key in [k for k in self._pages if k[0] in gone]:
                del self._pages[key]

    def cell_box(self, chunk: Chunk, line: ChunkLine, col: int) -> BBox | None:
        """The box of the cell in column `col` whose middle lies in the row `line` boxes."""
        layout = self._page(chunk.doc_id, line.page)
        x0, y0, x1, y1 = line.bbox
        for cell in layout.cells if layout else []:
            if cell.col != col or cell.bbox is None:
                continue
            cx = (cell.bbox[0] + cell.bbox[2]) / 2
            cy = (cell.bbox[1] + cell.bbox[3]) / 2
            if x0 - 1 <= cx <= x1 + 1 and y0 - 1 <= cy <= y1 + 1:
                return cell.bbox
        return None

    def column_heads(self, chunk: Chunk, line: ChunkLine) -> BBox | None:
        """The box of the column headings of the table whose row `line` boxes, when they stand
        above it; None for a row of no known table, or one of its headings."""
        layout = self._page(chunk.doc_id, line.page)
        middle = (line.bbox[1] + line.bbox[3]) / 2
        for table, head in layout.heads if layout else []:
            across = line.bbox[0] < table[2] and line.bbox[2] > table[0]
            if across and table[1] - 1 <= middle <= table[3] + 1 and head[3] <= line.bbox[1] + 1:
                return head
        return None

    def heading(self, doc_id: str, page: int, text: str, above: float) -> BBox | None:
        """The box of a title or section heading on `page` that says `text` and starts above
        `above` (the top of the first line it heads); None when the page has none."""
        layout = self._page(doc_id, page)
        words = said(text).lower()
        found = [box for box, written in layout.headings if written == words] if layout else []
        return max((b for b in found if b[1] < above + 1), key=lambda b: b[1], default=None)

    def headed(self, doc_id: str, page: int, heading: BBox) -> BBox | None:
        """The box of the figure or table right under a section heading on `page`, whole: a
        heading heads all of it, where a chart's title may name only the part of a table under
        it (`titled`); None when there is none."""
        layout = self._page(doc_id, page)
        if layout is None or not _stands_alone(layout, heading):
            return None
        found = _below(layout, heading, TITLE_GAP)
        return found[0] if found is not None else None

    def titled(self, doc_id: str, page: int, title: BBox, caption: bool) -> BBox | None:
        """The box of the figure or table that the title (or `caption`) at `title` names on
        `page`, clipped to the title's column on a two-column page; None when there is none."""
        layout = self._page(doc_id, page)
        if layout is None or not (caption or _stands_alone(layout, title)):
            return None
        found = _below(layout, title, CAPTION_GAP if caption else TITLE_GAP)
        if found is None and caption:
            found = _above(layout, title)
        return _beside_cut(title, found) if found is not None else None


def _stands_alone(layout: _PageBlocks, title: Box) -> bool:
    """Whether a block of the page holds the title and nothing above or below it (a title is a
    block of its own; the last words of a paragraph are not)."""
    return any(
        _shares_column(box, title) and box[1] >= title[1] - 3 and box[3] <= title[3] + 3
        for box, _ in layout.texts
        if box[1] < title[3] and box[3] > title[1]
    )


def _below(layout: _PageBlocks, title: Box, gap: float) -> _Content | None:
    """The nearest figure or table starting below the title, with no body text between."""
    near = [
        content
        for content in layout.contents
        if _shares_column(content[0], title) and -2.0 <= content[0][1] - title[3] <= gap
    ]
    for content in sorted(near, key=lambda c: c[0][1]):
        box = content[0]
        between = sum(
            words
            for text, words in layout.texts
            if _shares_column(text, title) and text[1] >= title[3] - 1 and text[3] <= box[1] + 1
        )
        if between < BODY_WORDS:
            return content
    return None


def _above(layout: _PageBlocks, caption: Box) -> _Content | None:
    """The nearest figure or table ending just above a caption."""
    near = [
        content
        for content in layout.contents
        if _shares_column(content[0], caption) and -2.0 <= caption[1] - content[0][3] <= CAPTION_GAP
    ]
    return max(near, key=lambda c: c[0][3], default=None)


def _beside_cut(title: Box, content: _Content) -> Box:
    """The content's box, cut at the title's edge on a side where its cells beyond the title
    hold prose (the text-layer engine can read a chart and the column of text beside it as one
    table): what the title names lies under it."""
    x0, y0, x1, y1 = content[0]
    left = sum(words for box, words in content[1] if box[0] < title[0] - 2)
    right = sum(words for box, words in content[1] if box[2] > title[2] + 2)
    if left >= BODY_WORDS:
        x0 = max(x0, title[0] - _AIR)
    if right >= BODY_WORDS:
        x1 = min(x1, title[2] + _AIR)
    return (x0, y0, x1, y1)
