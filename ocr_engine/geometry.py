"""Boxes on a page and the sizes of page renders: the one place for box arithmetic.

A `Box` is `(x0, y0, x1, y1)` with x0 <= x1 and y0 <= y1, top-left origin; in PDF points of the
page as displayed unless a name says otherwise (pixels of a render, cells of a model's grid).
A render at `zoom` (pixels per point; dpi / 72) is `ceil(w * zoom)` by `ceil(h * zoom)` pixels:
MuPDF rounds a pixmap's edges outwards (tests/test_geometry.py checks this on real renders).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "Box",
    "area",
    "capped_zoom",
    "centre_inside",
    "clamp",
    "fit_dpi",
    "from_grid",
    "intersection",
    "iou",
    "normalised",
    "render_pixels",
    "rounded",
    "scale",
    "to_points",
    "translate",
    "union",
]

Box = tuple[float, float, float, float]

_SHRINK = 0.995  # step by which a capped zoom is lowered until the render fits
_MIN_ZOOM = 1e-3


def union(boxes: Iterable[Box]) -> Box:
    """The smallest box holding every box; ValueError when there are none."""
    x0 = y0 = math.inf
    x1 = y1 = -math.inf
    for b in boxes:
        x0, y0, x1, y1 = min(x0, b[0]), min(y0, b[1]), max(x1, b[2]), max(y1, b[3])
    if x0 == math.inf:
        raise ValueError("the union of no boxes")
    return (x0, y0, x1, y1)


def intersection(a: Box, b: Box) -> Box | None:
    """The part two boxes share, or None when it has no area (apart or only touching)."""
    box = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    return box if box[0] < box[2] and box[1] < box[3] else None


def area(box: Box) -> float:
    """Width times height; 0 for a box whose corners are out of order."""
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def iou(a: Box, b: Box) -> float:
    """Intersection over union of two boxes (0 when they share no area)."""
    shared = intersection(a, b)
    if shared is None:
        return 0.0
    inter = area(shared)
    total = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / total if total > 0 else 0.0


def centre_inside(box: Box, outer: Box, pad: float = 1.0) -> bool:
    """Whether the centre of `box` lies in `outer` grown by `pad` on every side."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] - pad <= cx <= outer[2] + pad and outer[1] - pad <= cy <= outer[3] + pad


def clamp(box: Box, bounds: Box) -> Box:
    """Each edge of `box` moved into `bounds` (a box outside it collapses onto its border)."""
    return (
        min(max(box[0], bounds[0]), bounds[2]),
        min(max(box[1], bounds[1]), bounds[3]),
        min(max(box[2], bounds[0]), bounds[2]),
        min(max(box[3], bounds[1]), bounds[3]),
    )


def normalised(box: Box) -> Box:
    """The box with its corners in order (x0 <= x1, y0 <= y1)."""
    return (min(box[0], box[2]), min(box[1], box[3]), max(box[0], box[2]), max(box[1], box[3]))


def rounded(box: Box, digits: int = 2) -> Box:
    """Each edge rounded to `digits` decimals (points: a hundredth is far below a glyph)."""
    return (
        round(box[0], digits),
        round(box[1], digits),
        round(box[2], digits),
        round(box[3], digits),
    )


def scale(box: Box, factor: float) -> Box:
    """Every edge times `factor` (points -> pixels at a zoom; pixels -> points at 1 / zoom)."""
    return (box[0] * factor, box[1] * factor, box[2] * factor, box[3] * factor)


def to_points(box: Box, zoom: float) -> Box:
    """A box in pixels of a render at `zoom` (pixels per point) in points of the render's area."""
    return (box[0] / zoom, box[1] / zoom, box[2] / zoom, box[3] / zoom)


def translate(box: Box, dx: float, dy: float) -> Box:
    """The box moved by (dx, dy)."""
    return (box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy)


def from_grid(
    cells: Box, grid: float, width: float, height: float, x0: float = 0.0, y0: float = 0.0
) -> Box:
    """A box on a model's `grid` (0..grid over the image sent: 999 for DeepSeek-OCR, 1000 for
    others) in points of the `width` x `height` area at (x0, y0) that the image showed; corners
    put in order and clamped to the grid."""
    gx0, gy0, gx1, gy1 = normalised(cells)

    def unit(value: float) -> float:
        return min(max(value, 0.0), grid) / grid

    return (
        x0 + unit(gx0) * width,
        y0 + unit(gy0) * height,
        x0 + unit(gx1) * width,
        y0 + unit(gy1) * height,
    )


def render_pixels(width: float, height: float, zoom: float) -> int:
    """Pixels of a render of a `width` x `height` point area at `zoom` (MuPDF rounds up)."""
    return math.ceil(width * zoom) * math.ceil(height * zoom)


def capped_zoom(width: float, height: float, dpi: float, max_pixels: int) -> float:
    """The zoom for rendering a `width` x `height` point area at `dpi`, lowered where needed so
    that the render holds at most `max_pixels` pixels."""
    zoom = dpi / 72
    if render_pixels(width, height, zoom) > max_pixels:
        zoom = math.sqrt(max_pixels / (width * height))
        while render_pixels(width, height, zoom) > max_pixels and zoom > _MIN_ZOOM:
            zoom *= _SHRINK
    return zoom


def fit_dpi(width: float, height: float, dpi: int, max_pixels: int) -> int:
    """The largest whole dpi up to `dpi` at which a `width` x `height` point area renders to at
    most `max_pixels` pixels; 0 when not even 1 dpi fits (or the area is empty)."""
    if width <= 0 or height <= 0:
        return 0
    fit = min(dpi, math.floor(72 * math.sqrt(max_pixels / (width * height))))
    while fit > 0 and render_pixels(width, height, fit / 72) > max_pixels:
        fit -= 1
    return max(fit, 0)
