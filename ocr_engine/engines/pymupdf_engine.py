"""The text-layer engine: a born-digital PDF page -> a structured `Page` through PyMuPDF."""

from __future__ import annotations

import logging
from typing import Any

import pymupdf

from ocr_engine.engines.engine import TEXT_LAYER_ROUTE, PageWindow, read_each, read_page
from ocr_engine.geometry import Box, area, centre_inside, iou, rounded, union
from ocr_engine.layout.drawn_figures import drawn_figure_boxes
from ocr_engine.layout.layout import (
    LayoutBlock,
    body_style,
    classify,
    demote_heading_runs,
    demote_invisible,
    demote_subtitles,
    merge_paragraphs,
    split_block,
)
from ocr_engine.layout.reading_order import reading_order
from ocr_engine.layout.rule_tables import find_rule_tables, with_unruled
from ocr_engine.layout.table_headers import with_headings_above
from ocr_engine.layout.table_parts import joined_parts
from ocr_engine.layout.tables import FoundTable, find_tables
from ocr_engine.layout.textlayer import (
    LineKey,
    PageFrame,
    RawBlock,
    TextLine,
    Word,
    WordKey,
    image_boxes,
    read_blocks,
    read_words,
    text_page,
)
from ocr_engine.layout.unruled_tables import MIN_NUMERIC_TOKENS, find_unruled_tables, numeric_tokens
from ocr_engine.schema import Block, BlockType, EngineInfo, Line, Page, PageStatus

__all__ = ["TEXT_LAYER_VERSION", "PyMuPDFEngine", "raster_regions"]

log = logging.getLogger(__name__)

ENGINE_NAME = "pymupdf"
# Bump when this engine's own table code alters what it gives for a page: it is part of the
# engine's version, so its cached pages are read again while OCR pages keep theirs
# (`EXTRACTION_VERSION` is for changes to every engine's pages). 1: headings above a table's
# first row of figures are its header rows; 2: so is a row of years under a spanning heading;
# 3: a stub heading starts where the labels do and goes on no sentence; 4: a heading in the top
# margin band under the running header heads; 5: a line going on in bold, in lower case, is no
# heading but the rest of the sentence above it; 6: one opening with a bracket does not go on;
# 7: a chart drawn as paths, its labels as outlines, is a figure (`drawn_figures`); 8: a row of
# notes in brackets ("(In millions)") between the headings and the figures does not part them;
# 10: a table ruled across its rows alone (`rule_tables`) is a table (9 was an experiment's,
# reverted: its pages may still lie in page caches); 11: its cells' boxes hold their words;
# 12: a bullet glyph joined to its item's line leaves the line its text's size and font;
# 13: a label alone over the labels ("Revenue:") between the headings and the figures does not
# part them either; 14: a table printed in parts (a statement going on under "Cost of sales:"
# after a wider gap) is one table (`table_parts`); 15: a table ruled across its rows alone may
# number what its headings name ("Rung 1"); 16: a table ruled between its columns alone reads a
# row per line of figures (`unstacked_rows`).
TEXT_LAYER_VERSION = "16"
FIGURE_MIN_SHARE = 0.08  # a raster figure worth OCR covers this share of the page at least
FIGURE_MIN_PIXELS = 150  # and is at least this many pixels wide and high at its native resolution
FIGURE_MAX_TEXT = 10  # characters of text-layer lines inside it: more, and its text is there


def _with_headings(tables: list[FoundTable], words: list[Word]) -> list[FoundTable]:
    """Ruled tables with the column headings printed above their top rule taken in."""
    out: list[FoundTable] = []
    for table in tables:
        taken = {key for t in tables if t is not table for key in t.words}
        out.append(with_headings_above(table, [w for w in words if w.key not in taken]))
    return out


def raster_regions(page: pymupdf.Page, text_page: Page, limit: int) -> list[Block]:
    """The figure blocks of `text_page` (the text layer's reading of `page`) worth reading by
    OCR, largest first, at most `limit`: raster images big on the page and in pixels, and
    figures drawn as paths, over which the text layer has no text of its own."""
    frame = PageFrame(page)
    page_area = frame.rect.width * frame.rect.height
    images = [(frame.box(info["bbox"]), info) for info in page.get_image_info()]
    lines = [ln for b in text_page.blocks if b.type is not BlockType.figure for ln in b.lines]
    found = []
    for block in text_page.blocks:
        if block.type is not BlockType.figure or area(block.bbox) < FIGURE_MIN_SHARE * page_area:
            continue
        sizes = [
            (int(info.get("width", 0)), int(info.get("height", 0)))
            for box, info in images
            if iou(box, block.bbox) >= 0.9
        ]
        drawn = not any(iou(box, block.bbox) > 0.1 for box, _ in images)  # `drawn_figures`
        if not drawn and not any(min(size) >= FIGURE_MIN_PIXELS for size in sizes):
            continue
        inside = sum(len(ln.text.strip()) for ln in lines if centre_inside(ln.bbox, block.bbox, 0))
        if inside <= FIGURE_MAX_TEXT:
            found.append(block)
    found.sort(key=lambda b: -area(b.bbox))
    return found[:limit]


def _filled(drawings: list[dict[str, Any]], frame: PageFrame) -> list[Box]:
    """Boxes of the shapes filled with a colour other than white."""
    out = []
    for path in drawings:
        fill = path.get("fill")
        if fill is not None and min(fill, default=1.0) < 0.9:
            out.append(frame.box(path["rect"]))
    return out


def _outside_tables(
    line: TextLine, words: dict[LineKey, list[Word]], taken: frozenset[WordKey]
) -> TextLine | None:
    """The part of a line that no table holds: the whole line, none of it (None), or the words
    the tables left, as a line of their own. Leaders and rules left beside a table go."""
    mine = [w for key in line.keys for w in words.get(key, ())]
    left = [w for w in mine if w.key not in taken]
    if len(left) == len(mine):
        return line
    if not any(c.isalnum() for w in left for c in w.text):
        return None
    left.sort(key=lambda w: w.bbox[0] if line.horizontal else w.bbox[1])
    return TextLine(
        text=" ".join(w.text for w in left),
        bbox=union(w.bbox for w in left),
        size=line.size,
        bold=line.bold,
        mono=line.mono,
        horizontal=line.horizontal,
        font=line.font,
        white=line.white,
        keys=line.keys,
    )


class PyMuPDFEngine:
    """Font and position heuristics over PyMuPDF's text layer, with ruled-table detection."""

    name = ENGINE_NAME

    def __init__(self, *, detect_tables: bool = True) -> None:
        self.detect_tables = detect_tables
        self.info = EngineInfo(
            name=ENGINE_NAME, model=None, version=f"{pymupdf.VersionBind}+t{TEXT_LAYER_VERSION}"
        )

    def read(self, window: PageWindow) -> list[Page]:
        """The window's pages from their text layer (route `text layer`), failed ones included."""
        pages = read_each(self.info, window, self.extract_page)
        for page in pages:
            if page.status is not PageStatus.failed:
                page.route = TEXT_LAYER_ROUTE
        return pages

    def close(self) -> None:
        """Nothing to release."""

    def extract_page(self, page: pymupdf.Page) -> Page:
        """One page as typed blocks in reading order, boxes in displayed-page points."""
        frame = PageFrame(page)
        width, height = frame.rect.width, frame.rect.height
        textpage = text_page(page)
        raw_blocks = read_blocks(page, frame, textpage)
        drawings = page.get_cdrawings()
        words = read_words(page, frame, textpage) if self.detect_tables else []
        tables = self._tables(page, frame, raw_blocks, words, drawings) if words else []
        tables = joined_parts(tables, words)
        style = body_style(raw_blocks)
        body = style.size
        first_page = page.number == 0
        laid: list[LayoutBlock] = []
        table_of: dict[int, FoundTable] = {}
        for table in tables:
            placeholder = LayoutBlock(BlockType.table, box=table.bbox)
            table_of[id(placeholder)] = table
            laid.append(placeholder)
        if tables:  # each word in one place: lines lose the words that tables hold
            taken = frozenset().union(*(t.words for t in tables))
            by_line: dict[LineKey, list[Word]] = {}
            for word in words:
                by_line.setdefault(word.key[:2], []).append(word)
            for raw in raw_blocks:
                cut = (_outside_tables(line, by_line, taken) for line in raw.lines)
                raw.lines = [line for line in cut if line is not None]
            raw_blocks = [raw for raw in raw_blocks if raw.lines]
        groups = [g for raw in raw_blocks for g in split_block(raw, body)]
        horizontal = [line.bbox[3] for g in groups for line in g if line.horizontal]
        text_top = min(horizontal, default=None)
        for group in merge_paragraphs(groups, body):
            laid.append(classify(group, style, width, height, first_page, text_top=text_top))
        images = image_boxes(page, frame)
        for box in images:
            if not any(centre_inside(box, t.bbox) for t in tables):
                laid.append(LayoutBlock(BlockType.figure, box=box))
        texts = [(line.bbox, line.text) for raw in raw_blocks for line in raw.lines]
        found = [*images, *(t.bbox for t in tables)]
        for box in drawn_figure_boxes(drawings, frame, texts, found):
            laid.append(LayoutBlock(BlockType.figure, box=box))
        ordered = reading_order(laid)
        demote_heading_runs(ordered)
        demote_subtitles(ordered)
        if any(line.white for b in ordered for line in b.lines):
            demote_invisible(ordered, [*images, *_filled(drawings, frame)])
        blocks = [
            self._to_block(item, table_of.get(id(item)), page.number + 1, index)
            for index, item in enumerate(ordered)
        ]
        return read_page(page, self.info, blocks)

    @staticmethod
    def _tables(
        page: pymupdf.Page,
        frame: PageFrame,
        raw_blocks: list[RawBlock],
        words: list[Word],
        drawings: list[dict[str, Any]],
    ) -> list[FoundTable]:
        """Ruled tables, then unruled ones on pages with enough figures (outside the ruled ones),
        and tables ruled across their rows alone (`rule_tables.with_unruled` settles the two).

        On such pages, grids of shaded cells (SEC filings draw every table so) go to the unruled
        finder first: it reads figure tables as well at a twentieth of the cost of PyMuPDF's
        finder, which then only runs when the unruled finder found nothing."""
        texts = (line.text for raw in raw_blocks for line in raw.lines)
        if numeric_tokens(texts) < MIN_NUMERIC_TOKENS:
            return _with_headings(find_tables(page, frame, words, drawings), words)
        tables = _with_headings(
            find_tables(page, frame, words, drawings, shaded_cells=False, rows_ruled=False), words
        )
        taken = {key for t in tables for key in t.words}
        free = [w for w in words if w.key not in taken]
        unruled = find_unruled_tables(frame, free, exclude=[t.bbox for t in tables])
        rows_ruled = find_rule_tables(frame, words, drawings, frozenset(taken))
        tables += with_unruled(_with_headings(rows_ruled, free), unruled)
        if tables:
            return tables
        return _with_headings(find_tables(page, frame, words, drawings), words)

    @staticmethod
    def _to_block(item: LayoutBlock, table: FoundTable | None, page_no: int, index: int) -> Block:
        block_id = f"p{page_no}-b{index}"
        if table is not None:
            return Block(
                id=block_id,
                type=BlockType.table,
                bbox=rounded(table.bbox),
                text=table.markdown,
                lines=[Line(text=row.text, bbox=rounded(row.bbox)) for row in table.rows],
                html=table.html,
                cells=table.cells,
            )
        return Block(
            id=block_id,
            type=item.type,
            bbox=rounded(item.bbox),
            text=item.text,
            level=item.level,
            lines=[Line(text=line.text, bbox=rounded(line.bbox)) for line in item.lines],
        )
