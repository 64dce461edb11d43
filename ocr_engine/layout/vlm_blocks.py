"""Blocks from what an OCR vision-language model wrote: a type, a box in points, its text.

Shared by the parsers of DeepSeek-OCR (`ocr_engine.engines.deepseek`), dots.ocr
(`ocr_engine.engines.dots_ocr`) and MinerU2.5 (`ocr_engine.engines.mineru`): tables from their HTML
(cells with spans, one line a row), headings with the level their leading ``#`` give, estimated line
boxes for the rest.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ocr_engine.geometry import Box
from ocr_engine.layout.html_table import parse_html_table
from ocr_engine.layout.line_boxes import estimate_lines
from ocr_engine.schema import Block, BlockType, Line

__all__ = ["Draft", "heading", "make_block", "smart_resize"]

_HASHES = re.compile(r"^(#{1,6})[ \t]*")


@dataclass(slots=True)
class Draft:
    """A block before ids and lines: type, box in points, text."""

    type: BlockType
    bbox: Box
    text: str
    level: int | None = None
    html: str | None = None


def heading(kind: BlockType, text: str) -> tuple[str, int | None]:
    """A title's or section header's text without its leading ``#`` and its level (the number
    of ``#``; title 1 and section header 2 when there are none); other kinds unchanged."""
    if kind not in (BlockType.title, BlockType.section_header):
        return text, None
    hashes = _HASHES.match(text)
    level = len(hashes.group(1)) if hashes else (1 if kind == BlockType.title else 2)
    return _HASHES.sub("", text), level


def make_block(draft: Draft, page_number: int, index: int) -> Block:
    """The block `p{page}-b{index}`: a table's cells and row lines, estimated lines otherwise."""
    block_id = f"p{page_number}-b{index}"
    if draft.type == BlockType.table:
        if draft.html is None:
            return Block(id=block_id, type=BlockType.table, bbox=draft.bbox, text=draft.text)
        table = parse_html_table(draft.html, draft.bbox)
        x0, y0, x1, y1 = draft.bbox
        pitch = (y1 - y0) / max(table.n_rows, 1)
        lines = [
            Line(text=row, bbox=(x0, round(y0 + i * pitch, 2), x1, round(y0 + (i + 1) * pitch, 2)))
            for i, row in enumerate(table.rows)
        ]
        return Block(
            id=block_id,
            type=BlockType.table,
            bbox=draft.bbox,
            text=table.markdown,
            lines=lines,
            html=draft.html,
            cells=table.cells,
        )
    if draft.type == BlockType.figure or not draft.text:
        lines = []
    elif draft.type == BlockType.formula:
        lines = [Line(text=draft.text, bbox=draft.bbox)]
    else:
        lines = estimate_lines(draft.text, draft.bbox)
    return Block(
        id=block_id,
        type=draft.type,
        bbox=draft.bbox,
        text=draft.text,
        level=draft.level,
        lines=lines,
    )


def smart_resize(
    height: int,
    width: int,
    *,
    factor: int = 28,
    min_pixels: int = 3136,
    max_pixels: int = 11_289_600,
) -> tuple[int, int]:
    """The (height, width) a Qwen2-VL processor resizes an image to: each side a multiple of
    `factor`, the area within [min_pixels, max_pixels], the aspect ratio kept as near as it can
    (dots.ocr's and MinerU2.5's image processors; OCR_FORMATS.md §2)."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar
