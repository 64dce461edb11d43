"""Figures drawn as vector paths whose words are not in the text layer: charts and diagrams that
set their labels as outlines (Pew Research's reports draw every chart so). Their paths are merged
on a coarse grid; a drawing big on the page with no text-layer text inside becomes a figure
block, which figure OCR then reads like a raster image."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import ndimage

from ocr_engine.geometry import Box, area, centre_inside, iou
from ocr_engine.layout.textlayer import PageFrame

__all__ = ["DRAWN_MIN_SHARE", "drawn_figure_boxes"]

DRAWN_MIN_SHARE = 0.06  # a drawing worth reading covers this share of the page at least
_MAX_SHARE = 0.85  # more is a page's background or frame, not a figure
_GRID = 4.0  # points a grid cell spans
_REACH = 3  # cells: paths this close (12 points) are parts of one drawing
_MIN_SIDE = 60.0  # points: a thinner drawing is a rule or a bar of colour, not a figure
_MAX_TEXT = 10  # characters of text-layer lines inside: more, and its words are there to read


def drawn_figure_boxes(
    drawings: Sequence[dict[str, Any]],
    frame: PageFrame,
    lines: Sequence[tuple[Box, str]],
    taken: Sequence[Box],
) -> list[Box]:
    """Boxes of the page's drawings (`get_cdrawings`) that are figures to read: paths within
    12 points of each other merged, each drawing at least `DRAWN_MIN_SHARE` of the page and 60
    points on each side, with at most a few characters of the text `lines` inside it, and not
    over an image or table already found (`taken`)."""
    width, height = frame.rect.width, frame.rect.height
    page_area = width * height
    if not drawings or page_area <= 0:
        return []
    cols, rows = int(width / _GRID) + 1, int(height / _GRID) + 1
    grid = np.zeros((rows, cols), dtype=bool)
    for path in drawings:
        box = frame.box(path["rect"])
        if area(box) > _MAX_SHARE * page_area:
            continue
        x0, y0 = int(box[0] / _GRID), int(box[1] / _GRID)
        x1, y1 = int(box[2] / _GRID), int(box[3] / _GRID)
        grid[max(0, y0 - _REACH) : y1 + _REACH + 1, max(0, x0 - _REACH) : x1 + _REACH + 1] = True
    labels, _ = ndimage.label(grid)
    found = []
    for rows_at, cols_at in ndimage.find_objects(labels):
        box = (
            (cols_at.start + _REACH) * _GRID,
            (rows_at.start + _REACH) * _GRID,
            min(width, (cols_at.stop - _REACH) * _GRID),
            min(height, (rows_at.stop - _REACH) * _GRID),
        )
        if box[2] - box[0] < _MIN_SIDE or box[3] - box[1] < _MIN_SIDE:
            continue
        if not DRAWN_MIN_SHARE * page_area <= area(box) <= _MAX_SHARE * page_area:
            continue
        if any(iou(box, other) > 0.1 or centre_inside(other, box) for other in taken):
            continue
        inside = sum(len(text.strip()) for line, text in lines if centre_inside(line, box))
        if inside <= _MAX_TEXT:
            found.append(box)
    return found
