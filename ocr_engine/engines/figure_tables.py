"""A raster figure of a text-layer page that is a picture of a table, read as a table.

The CPU engine reads a figure region rendered alone (`RegionRead`). Where the layout model finds a
table over most of the picture and the table model reads its grid (`scan_layout.figure_table`),
the figure becomes a `table` block with cells holding the words OCR read inside them, as a
scanned table does; the words read outside the table stay with the figure. A picture read
sideways or upside down keeps its lines: the models see the rendering as displayed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ocr_engine.engines.engine import figure_with_lines
from ocr_engine.geometry import Box, clamp, translate
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.layout.scan_layout import figure_table
from ocr_engine.layout.scan_models import ScanModels
from ocr_engine.layout.scan_tables import table_block
from ocr_engine.schema import Block, EngineInfo, Line

__all__ = ["RegionRead", "figure_blocks"]


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

    cells = table_block(table, to_page, block.id).model_copy(update={"engine": info})
    outside = {id(line) for line in rest}
    left = [line for line, mine in zip(read.lines, ocr, strict=True) if id(mine) in outside]
    return [figure_with_lines(block, left, info), cells] if left else [cells]
