"""OCR lines -> paragraph blocks in reading order, in the upright page's points.

A text detector returns one box per visual line (one per column, unless a narrow gutter made it
join two: see `gutter_cuts`). Lines join into paragraphs by vertical gap, horizontal overlap, line
height and indentation, never across another line between them; paragraphs are typed roughly
(headings by line height, list items, page numbers) and ordered by the text-layer engine's XY-cut.
Everything here works in the frame where the text reads upright; the engine maps boxes back to the
displayed page afterwards.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ocr_engine.geometry import Box, union
from ocr_engine.layout.layout import (
    MARGIN_BAND,
    PAGE_NUMBER_RE,
    LayoutBlock,
    is_bullet,
    wordy,
)
from ocr_engine.layout.reading_order import reading_order
from ocr_engine.layout.textlayer import TextLine
from ocr_engine.schema import BlockType

__all__ = ["OcrLine", "body_height", "group_paragraphs", "gutter_cuts", "layout_page"]

PARA_GAP = 0.75  # a vertical gap above this many line heights starts a new paragraph
HEIGHT_RATIO = 1.5  # lines whose box heights differ more belong to different blocks
SMALL = 0.9  # lines lower than this share of the body line height are small print
INDENT = 0.5  # an indent of this many line heights starts a paragraph (boxes are inked)


@dataclass(slots=True)
class OcrLine:
    """One recognised run of text with its box in upright page points and its confidence."""

    text: str
    box: Box
    score: float = 1.0

    @property
    def height(self) -> float:
        return max(self.box[3] - self.box[1], 0.1)


def gutter_cuts(boxes: list[Box], *, min_lines: int = 3, reach: float = 12.0) -> list[list[float]]:
    """Per box, the estimated x positions where it runs across a column gutter (a detector joins
    the lines of neighbouring columns when the gutter is narrow).

    A gutter inside a box is where at least `min_lines` lines of about the same height, within
    `reach` line heights above or below, start at one left edge and as many end at most two line
    heights before it (a column's lines fill it; a table's labels mostly do not), and where a
    row next to the box shows the gap: a line ending and another starting there."""
    cuts: list[list[float]] = []
    for i, box in enumerate(boxes):
        height = max(box[3] - box[1], 1.0)
        found: list[float] = []
        if box[2] - box[0] > 6 * height:
            near = [
                b
                for j, b in enumerate(boxes)
                if j != i
                and abs((b[1] + b[3]) - (box[1] + box[3])) / 2 <= reach * height
                and max(b[3] - b[1], height) <= HEIGHT_RATIO * min(b[3] - b[1], height)
            ]
            adjacent = [
                b for b in near if abs((b[1] + b[3]) - (box[1] + box[3])) / 2 <= 2.5 * height
            ]
            inner = box[0] + 2 * height, box[2] - 2 * height
            starts = sorted(b[0] for b in near if inner[0] < b[0] < inner[1])
            for start in starts:
                if found and start - found[-1] < 4 * height:
                    continue
                aligned = [s for s in starts if start <= s <= start + 0.8 * height]
                ends = [b[2] for b in near if start - 2 * height <= b[2] <= start + height]
                if len(aligned) < min_lines or len(ends) < min_lines:
                    continue
                cut = (statistics.median(ends) + statistics.median(aligned)) / 2
                if _gap_beside(adjacent, cut, height):
                    found.append(cut)
        cuts.append(found)
    return cuts


def _gap_beside(rows: list[Box], cut: float, height: float) -> bool:
    """Whether some line ends and another starts around `cut` on one row of `rows`."""
    for a in rows:
        if not cut - 2 * height <= a[2] <= cut + height:
            continue
        for b in rows:
            overlap = min(a[3], b[3]) - max(a[1], b[1])
            if (
                b is not a
                and b[0] > a[0]
                and cut - height <= b[0] <= cut + 1.5 * height
                and overlap > 0.5 * height
            ):
                return True
    return False


def _x_overlap(a: Box, b: Box) -> float:
    return min(a[2], b[2]) - max(a[0], b[0])


def _continues(para: list[OcrLine], line: OcrLine) -> float | None:
    """The gap (in line heights) if `line` continues the paragraph, else None."""
    last = para[-1]
    height = min(last.height, line.height)
    if max(last.height, line.height) > HEIGHT_RATIO * height:
        return None
    gap = (line.box[1] - last.box[3]) / height
    if not -0.5 <= gap <= PARA_GAP:
        return None
    span = union(ln.box for ln in para)
    if _x_overlap(span, line.box) < 0.5 * min(span[2] - span[0], line.box[2] - line.box[0]):
        return None
    if is_bullet(line.text):
        return None
    left, right = line.box[0] - span[0], span[2] - line.box[2]
    if min(left, right) > INDENT * height and abs(left - right) < 1.5 * height:
        return gap  # centred under the lines above
    if len(para) == 1:
        # the second line may sit left of an indented first line, or under a bullet's text
        shift = line.box[0] - para[0].box[0]
        return gap if -4 * height <= shift <= INDENT * height else None
    margin = min(ln.box[0] for ln in para[1:])  # body lines, past a first-line indent
    if abs(line.box[0] - margin) > INDENT * height:
        return None  # an indent starts a new paragraph; text further left is another block
    return gap


def group_paragraphs(lines: list[OcrLine]) -> list[list[OcrLine]]:
    """Lines (top to bottom) joined into paragraphs; each line goes to the closest open one that
    no other line parts from it."""
    paras: list[list[OcrLine]] = []
    placed: list[OcrLine] = []
    for line in sorted(lines, key=lambda ln: (ln.box[1], ln.box[0])):
        best: tuple[float, int] | None = None
        for index, para in enumerate(paras):
            gap = _continues(para, line)
            if (
                gap is not None
                and (best is None or gap < best[0])
                and not _parted(para, line, placed)
            ):
                best = (gap, index)
        if best is None:
            paras.append([line])
        else:
            paras[best[1]].append(line)
        placed.append(line)
    return paras


def _parted(para: list[OcrLine], line: OcrLine, placed: list[OcrLine]) -> bool:
    """Whether another line sits in the gap between the paragraph's last line and `line`, across
    both (a label between two figures printed big, one above the other)."""
    last = para[-1]
    return any(
        other is not last
        and last.box[3] < (other.box[1] + other.box[3]) / 2 < line.box[1]
        and _x_overlap(other.box, last.box) > 0
        and _x_overlap(other.box, line.box) > 0
        for other in placed
    )


def body_height(lines: list[OcrLine]) -> float:
    """The line height that carries most characters on the page."""
    heights = [ln.height for ln in lines for _ in range(max(len(ln.text), 1))]
    return statistics.median(heights) if heights else 10.0


def _classify(
    para: list[OcrLine], body: float, page_w: float, page_h: float, first_page: bool
) -> LayoutBlock:
    lines = [
        TextLine(text=ln.text, bbox=ln.box, size=ln.height, bold=False, mono=False) for ln in para
    ]
    box = union(ln.box for ln in para)
    text = " ".join(ln.text for ln in para)
    height = statistics.median(ln.height for ln in para)
    in_band = box[3] <= MARGIN_BAND * page_h or box[1] >= (1 - MARGIN_BAND) * page_h
    if in_band and len(para) == 1 and PAGE_NUMBER_RE.match(text.strip()):
        kind = BlockType.page_header if box[3] <= page_h / 2 else BlockType.page_footer
        return LayoutBlock(kind, lines)
    heading = (
        len(para) <= 2
        and height >= 1.3 * body
        and len(text) < 120
        and wordy(text)
        and not text.endswith((".", ",", ";"))
    )
    if heading:
        if first_page and height >= 1.8 * body and box[1] < page_h / 3:
            return LayoutBlock(BlockType.title, lines, level=1)
        return LayoutBlock(BlockType.section_header, lines, level=1 if height >= 1.8 * body else 2)
    if is_bullet(text):
        return LayoutBlock(BlockType.list_item, lines)
    return LayoutBlock(BlockType.text, lines)


def layout_page(
    lines: list[OcrLine], page_w: float, page_h: float, *, first_page: bool = False
) -> list[LayoutBlock]:
    """OCR lines on an upright `page_w` x `page_h` page (points) -> typed blocks in reading order.

    Detector boxes reach a little beyond the glyphs, which closes narrow column gutters; the
    order is decided on boxes narrowed by a quarter of the body line height on each side."""
    lines = [ln for ln in lines if ln.text.strip()]
    if not lines:
        return []
    body = body_height(lines)
    blocks = [_classify(para, body, page_w, page_h, first_page) for para in group_paragraphs(lines)]
    margin = 0.25 * body
    for block in blocks:
        x0, y0, x1, y1 = block.bbox
        if x1 - x0 > 4 * margin:
            block.box = (x0 + margin, y0, x1 - margin, y1)
    ordered = _order(blocks, body)
    for block in ordered:
        block.box = None
    return ordered


def _is_aside(block: LayoutBlock, body: float) -> bool:
    """A few lines of smaller text (a caption, a footnote) that may sit across a column gutter."""
    if block.type in (BlockType.page_header, BlockType.page_footer) or len(block.lines) > 6:
        return False
    height = statistics.median(ln.bbox[3] - ln.bbox[1] for ln in block.lines)
    return height < SMALL * body


def _order(blocks: list[LayoutBlock], body: float) -> list[LayoutBlock]:
    """XY-cut order of the body text; small-text asides (which would hide the gutters between
    columns) go before the nearest block below them that they overlap, or else after the
    nearest one above."""
    asides = [b for b in blocks if _is_aside(b, body)]
    if not asides or len(asides) == len(blocks):
        return reading_order(blocks)
    ordered = reading_order([b for b in blocks if not _is_aside(b, body)])
    for aside in sorted(asides, key=lambda b: (b.bbox[1], b.bbox[0])):
        box = aside.bbox
        below = [
            (item.bbox[1], index)
            for index, item in enumerate(ordered)
            if item.bbox[1] >= box[1] and _x_overlap(item.bbox, box) > 0
        ]
        above = [
            (item.bbox[3], index)
            for index, item in enumerate(ordered)
            if item.bbox[1] < box[1] and _x_overlap(item.bbox, box) > 0
        ]
        if below:
            ordered.insert(min(below)[1], aside)
        elif above:
            ordered.insert(max(above)[1] + 1, aside)
        else:
            ordered.append(aside)
    return ordered
