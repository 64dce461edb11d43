"""Text-detector quads on a page image: boxes narrowed to their ink, cuts at column gutters."""

from __future__ import annotations

import math

import numpy as np

from ocr_engine.geometry import Box
from ocr_engine.layout.ocr_layout import gutter_cuts

__all__ = ["Quad", "axis_box", "ink_span", "split_quads"]

Quad = np.ndarray  # 4 x 2 float32 corner points, clockwise from the top-left


def axis_box(quad: Quad) -> Box:
    xs, ys = quad[:, 0], quad[:, 1]
    return (float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()))


def _middle_rows(image: np.ndarray, box: Box) -> tuple[int, int]:
    """The middle half of a line box's rows: the neighbouring lines' ascenders and descenders
    reach into the rest (detector boxes overlap)."""
    quarter = (box[3] - box[1]) / 4
    return int(max(box[1] + quarter, 0)), int(min(box[3] - quarter, image.shape[0]))


def _blank_run(image: np.ndarray, box: Box, estimate: float) -> tuple[float, float]:
    """The ink-free run of pixel columns inside `box`, within half a line height of `estimate`,
    that is widest and nearest to it (so that a cut never goes through a glyph), as
    (start, end); `estimate` twice when there is none."""
    reach = (box[3] - box[1]) / 2
    left = int(max(estimate - reach, box[0], 0))
    right = int(min(estimate + reach, box[2], image.shape[1]))
    top, bottom = _middle_rows(image, box)
    if right - left < 3 or bottom - top < 3:
        return estimate, estimate
    strip = image[top:bottom, left:right].mean(axis=2)
    background = float(np.percentile(strip, 90))
    blank = (strip > background - 60).all(axis=0)
    best: tuple[float, float, float] | None = None
    run_start = None
    for x, free in enumerate([*blank.tolist(), False]):
        if free and run_start is None:
            run_start = x
        elif not free and run_start is not None:
            centre = left + (run_start + x) / 2
            score = (x - run_start) - 0.3 * abs(centre - estimate)  # near the estimate wins
            if best is None or score > best[0]:
                best = (score, left + run_start, left + x)
            run_start = None
    return (best[1], best[2]) if best is not None else (estimate, estimate)


def ink_span(image: np.ndarray, box: Box) -> Box:
    """`box` narrowed to the pixel columns that hold ink (detector boxes reach past the glyphs,
    which closes narrow column gutters)."""
    left, right = int(max(box[0], 0)), int(min(math.ceil(box[2]), image.shape[1]))
    top, bottom = _middle_rows(image, box)
    if right - left < 3 or bottom - top < 3:
        return box
    strip = image[top:bottom, left:right].mean(axis=2)
    inked = np.flatnonzero((strip < float(np.percentile(strip, 90)) - 60).any(axis=0))
    if inked.size == 0:
        return box
    # a sliver of ink cut off by a wide gap at either end is a neighbouring column's glyph
    height = box[3] - box[1]
    gaps = np.flatnonzero(np.diff(inked) > 0.5 * height)
    first, last = 0, inked.size - 1
    if gaps.size and inked[gaps[0]] - inked[0] < 0.8 * height:
        first = int(gaps[0]) + 1
    if gaps.size and inked[-1] - inked[gaps[-1] + 1] < 0.8 * height and gaps[-1] + 1 > first:
        last = int(gaps[-1])
    return (float(left + inked[first]), box[1], float(left + inked[last] + 1), box[3])


def split_quads(image: np.ndarray, quads: list[Quad]) -> list[Quad]:
    """Horizontal text quads cut where they run across a column gutter (see `gutter_cuts`);
    the pieces end and start at the edges of the blank gutter."""
    out: list[Quad] = []
    boxes = [axis_box(q) for q in quads]
    for quad, box, estimates in zip(quads, boxes, gutter_cuts(boxes), strict=True):
        if not estimates:
            out.append(quad)
            continue
        x0, x1 = float(quad[0][0]), float(quad[1][0])
        width = max(x1 - x0, 1.0)
        edges = [0.0]
        for estimate in estimates:
            start, end = _blank_run(image, box, estimate)
            edges += [(start - x0) / width, (end - x0) / width]
        edges.append(1.0)
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            top = quad[0] + (quad[1] - quad[0]) * np.array([[a], [b]], np.float32)
            bottom = quad[3] + (quad[2] - quad[3]) * np.array([[b], [a]], np.float32)
            out.append(np.vstack([top, bottom]).astype(np.float32))
    return out
