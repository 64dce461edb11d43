"""A raster figure of a text-layer page that is a picture of a table, read as a table.

The CPU engine reads a figure region rendered alone (`RegionRead`). Where the layout model finds a
table over most of the picture and the table model reads its grid (`scan_layout.figure_table`),
the figure becomes a `table` block with cells holding the words OCR read inside them, as a
scanned table does; the words read outside the table stay with the figure. A picture read
sideways or upside down keeps its lines: the models see the rendering as displayed. A VLM reads
the region into blocks of its own (`figure_of_blocks`): a table it reads over most of the picture
is kept the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ocr_engine.engines.engine import figure_with_lines
from ocr_engine.geometry import Box, area, clamp, translate
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.layout.scan_layout import FIGURE_TABLE, figure_table
from ocr_engine.layout.scan_models import ScanModels
from ocr_engine.layout.scan_tables import table_block
from ocr_engine.schema import Block, BlockType, EngineInfo, Line

__all__ = ["RegionRead", "figure_blocks", "figure_of_blocks", "region_lines"]


@dataclass(frozen=True, slots=True)
class RegionRead:
    """One region of a page read by OCR: its rendering as displayed, at `zoom` pixels a point;
    the quarter turns that made its text upright; its lines in displayed-page points."""

    image: np.ndarray
    zoom: float
    turns: int
    lines: list[Line]


def figure_blocks(
    block: Block, read: RegionRead, models: ScanModels | None, info: EngineInfo
) -> list[Block]:
    """The blocks the figure `block` is once `read`: a table with cells (after the figure with the
    lines outside it, if any) when the picture is a table and `models` are given, else the figure
    with its lines. Raises `EngineUnavailableError` when the models cannot load."""
    figure = figure_with_lines(block, read.lines, info)
    if models is None or read.turns or not read.lines:
        return [figure]
    x0, y0 = block.bbox[0], block.bbox[1]
    ocr = [OcrLine(text=ln.text, box=translate(ln.bbox, -x0, -y0)) for ln in read.lines]
    found = figure_table(models, read.image, read.zoom, ocr)
    if found is None:
        return [figure]
    table, rest = found

    def to_page(box: Box) -> Box:
        return clamp(translate(box, x0, y0), block.bbox)

    cells = table_block(table, to_page, block.id)
    outside = {id(line) for line in rest}
    left = [line for line, mine in zip(read.lines, ocr, strict=True) if id(mine) in outside]
    return _figure_then_tables(block, left, [cells], info)


def figure_of_blocks(block: Block, read: list[Block], info: EngineInfo) -> list[Block]:
    """The blocks the figure `block` is once an engine (`info`) read the blocks `read` inside it
    (page points): the tables with cells it read over `FIGURE_TABLE` of the figure at least,
    after the figure with the lines of the rest; else the figure with every line."""
    whole = area(block.bbox)
    tables = [
        b
        for b in read
        if b.type is BlockType.table and b.cells and area(b.bbox) >= FIGURE_TABLE * whole
    ]
    if not tables:
        return [figure_with_lines(block, region_lines(read), info)]
    rest = region_lines([b for b in read if all(b is not t for t in tables)])
    return _figure_then_tables(block, rest, tables, info)


def region_lines(blocks: list[Block]) -> list[Line]:
    """The lines of blocks read inside a region (a block without lines as one), leaving out
    those without a letter or digit (bars, bullets and legend marks read as symbols)."""
    lines = [ln for b in blocks for ln in (b.lines or [Line(text=b.text, bbox=b.bbox)])]
    return [ln for ln in lines if any(c.isalnum() for c in ln.text)]


def _figure_then_tables(
    block: Block, left: list[Line], tables: list[Block], info: EngineInfo
) -> list[Block]:
    """The tables a figure is (given the figure's id), after the figure with the `left` lines
    read outside them, when there are any."""
    read = [t.model_copy(update={"id": block.id, "engine": info}) for t in tables]
    return [figure_with_lines(block, left, info), *read] if left else read
