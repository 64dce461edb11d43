"""Blocks of an OCR'd page joined where the regions that made them cut what reads as one.

A layout model's regions (or a bold first line it takes for a title) may cut one paragraph into
blocks line by line, and a figure printed big over its label (a slide's "84%" over "Ad impressions
on mobile apps.") never joins its label, whose lines are much lower. Both run on the blocks in
reading order, in the upright page's points.
"""

from __future__ import annotations

import re

from ocr_engine.layout.layout import LayoutBlock, is_bullet
from ocr_engine.layout.ocr_layout import HEIGHT_RATIO, INDENT, PARA_GAP
from ocr_engine.schema import BlockType

__all__ = ["join_blocks", "join_figure_labels", "join_run_ons"]

_RUNS_ON = (BlockType.text, BlockType.section_header, BlockType.list_item)
_WORDS = (BlockType.text, BlockType.section_header)
FIGURE = re.compile(
    r"^[$€£¥]?\s?[+-]?\d[\d.,]*\s?(?:%|[kKmMbB]n?\b|\+)?$"
)  # 84% 1,134,462 $1.1 100k
BIG = 1.3  # a figure's line at least this many times its label's line height is printed big
LABEL_WORDS = 8  # a label is at most this many words


def join_blocks(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """`join_run_ons`, then `join_figure_labels`."""
    return join_figure_labels(join_run_ons(blocks))


def join_run_ons(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """Blocks in reading order with each block whose sentence runs on into the next one joined
    to it. A block runs on when its last line ends in a word (or a comma or hyphen) and the next
    text block starts with a lowercase letter (after a lowercase word also with a figure),
    directly below it at its left edge in a like line height. A heading's last line that runs on
    joins the text below (the heading keeps its other lines); blocks without lines (pictures)
    between them do not part them."""
    out: list[LayoutBlock] = []
    last = -1  # index in `out` of the last block with lines
    for block in blocks:
        if not block.lines:
            out.append(block)
            continue
        if last < 0 or not _runs_on(out[last], block):
            last = len(out)
            out.append(block)
            continue
        upper = out[last]
        if upper.type == BlockType.section_header and block.type == BlockType.text:
            text = LayoutBlock(BlockType.text, [*upper.lines[-1:], *block.lines])
            if len(upper.lines) == 1:
                out[last] = text
                continue
            out[last] = LayoutBlock(upper.type, upper.lines[:-1], level=upper.level, box=upper.box)
            last = len(out)
            out.append(text)
            continue
        kind = upper.type if upper.type == block.type else BlockType.text
        if upper.type == BlockType.list_item:
            kind = BlockType.list_item
        level = upper.level if kind == BlockType.section_header else None
        out[last] = LayoutBlock(kind, [*upper.lines, *block.lines], level=level)
    return out


def _runs_on(upper: LayoutBlock, lower: LayoutBlock) -> bool:
    if upper.type not in _RUNS_ON or lower.type not in _WORDS:
        return False
    ends, starts = upper.text.rstrip(), lower.text.lstrip()
    if not ends or not starts or is_bullet(starts):
        return False
    if not (
        (starts[0].islower() and (ends[-1].isalpha() or ends[-1] in ",-–"))
        or (starts[0].isdigit() and ends[-1].islower())
    ):
        return False
    height = min(_lowest(upper), _lowest(lower))
    if max(_lowest(upper), _lowest(lower)) > HEIGHT_RATIO * height:
        return False
    above, below = upper.lines[-1].bbox, lower.lines[0].bbox
    gap = (below[1] - above[3]) / height
    left = min(line.bbox[0] for line in upper.lines)
    return -0.5 <= gap <= PARA_GAP and abs(below[0] - left) <= INDENT * height


def join_figure_labels(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """Blocks with each figure printed big over a label joined to that label, the figure first
    ("84%" and "Ad impressions on mobile apps." are "84%\\nAd impressions on mobile apps."). A
    figure is a text block of one line that is a number (a share, an amount, "100k"); its label
    is the nearest short text block below it (`LABEL_WORDS`, no figure itself) that overlaps it
    across, whose lines are `BIG` times lower, and whose top is within the figure's height of
    the figure's foot. Each label joins one figure, the one nearest above it."""
    nearest: dict[int, tuple[float, int]] = {}  # label index -> (gap, figure index)
    for f, figure in enumerate(blocks):
        if not _is_figure(figure):
            continue
        below = [(gap, j) for j, label in enumerate(blocks) if (gap := _under(figure, label))]
        if below:
            gap, j = min(below)
            if j not in nearest or (gap, f) < nearest[j]:
                nearest[j] = (gap, f)
    pairs = {j: f for j, (_, f) in nearest.items()}
    joined = {f: j for j, f in pairs.items()}
    out: list[LayoutBlock] = []
    for index, block in enumerate(blocks):
        if index in pairs:
            continue
        label = joined.get(index)
        if label is None:
            out.append(block)
        else:
            out.append(LayoutBlock(BlockType.text, [*block.lines, *blocks[label].lines]))
    return out


def _is_figure(block: LayoutBlock) -> bool:
    return block.type in _WORDS and len(block.lines) == 1 and bool(FIGURE.match(block.text.strip()))


def _under(figure: LayoutBlock, label: LayoutBlock) -> float | None:
    """How far below the figure's foot the label's top is (a small positive number for one
    touching it), if the label is one for the figure."""
    if label is figure or label.type not in _WORDS or not label.lines or _is_figure(label):
        return None
    text = label.text.strip()
    if not text or len(text.split()) > LABEL_WORDS or FIGURE.match(text.split()[0]):
        return None
    fx0, fy0, fx1, fy1 = figure.lines[0].bbox
    lx0, ly0, lx1, _ = label.bbox
    height = fy1 - fy0
    if height < BIG * _lowest(label):
        return None
    overlap = min(fx1, lx1) - max(fx0, lx0)
    if overlap < 0.5 * min(fx1 - fx0, lx1 - lx0):
        return None
    gap = ly0 - fy1
    return max(gap, 0.0) + 0.01 if -0.5 * _lowest(label) <= gap <= height else None


def _lowest(block: LayoutBlock) -> float:
    return max(min(line.bbox[3] - line.bbox[1] for line in block.lines), 0.1)
