"""Reading order of a page's blocks: a recursive XY-cut, with straddling blocks set aside.

The XY-cut reads columns wherever a gutter runs through a region and otherwise cuts it into bands
at the widest vertical gap. A picture or caption set in the middle of two columns whose paragraphs
are staggered around it leaves neither a gutter nor a gap; then the few blocks that straddle the
best gutter are set aside, the rest is read column by column, and the straddlers come before the
columns when they start above them all, after them otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ocr_engine.schema import BlockType

if TYPE_CHECKING:
    from ocr_engine.layout.layout import LayoutBlock

__all__ = ["reading_order"]

MIN_GUTTER = 6.0  # points between two columns
MIN_BAND_GAP = 0.5  # points between two bands
MAX_DEPTH = 200


def reading_order(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """Headers first, body by recursive XY-cut (columns before bands), footers last."""
    headers = [b for b in blocks if b.type == BlockType.page_header]
    footers = [b for b in blocks if b.type == BlockType.page_footer]
    body = [b for b in blocks if b.type not in (BlockType.page_header, BlockType.page_footer)]

    def by_position(items: list[LayoutBlock]) -> list[LayoutBlock]:
        return sorted(items, key=lambda b: (round(b.bbox[1]), b.bbox[0]))

    return by_position(headers) + _xy_cut(body) + by_position(footers)


def _by_top(items: list[LayoutBlock]) -> list[LayoutBlock]:
    return sorted(items, key=lambda b: (b.bbox[1], b.bbox[0]))


def _gaps(spans: list[tuple[float, float]], min_gap: float) -> list[tuple[float, float]]:
    """(cut position, gap width) between merged intervals at least min_gap apart."""
    spans = sorted(spans)
    cuts: list[tuple[float, float]] = []
    end = spans[0][1]
    for start, stop in spans[1:]:
        if start - end >= min_gap:
            cuts.append(((start + end) / 2, start - end))
        end = max(end, stop)
    return cuts


def _partition(items: list[LayoutBlock], cuts: list[float], axis: int) -> list[list[LayoutBlock]]:
    parts: list[list[LayoutBlock]] = [[] for _ in range(len(cuts) + 1)]
    for item in items:
        b = item.bbox
        centre = (b[axis] + b[axis + 2]) / 2
        parts[sum(1 for c in cuts if centre > c)].append(item)
    return [p for p in parts if p]


def _xy_cut(items: list[LayoutBlock], depth: int = 0) -> list[LayoutBlock]:
    """Columns whenever a gutter runs through the region; otherwise cut at the widest band gap;
    with neither, columns around the blocks that straddle a gutter."""
    if len(items) <= 1 or depth > MAX_DEPTH:
        return _by_top(items)
    x_gaps = _gaps([(b.bbox[0], b.bbox[2]) for b in items], min_gap=MIN_GUTTER)
    x_cuts = [c for c, _ in x_gaps]
    if x_cuts and _real_columns(items, x_cuts):
        parts = _partition(items, x_cuts, axis=0)
    else:
        y_gaps = _gaps([(b.bbox[1], b.bbox[3]) for b in items], min_gap=MIN_BAND_GAP)
        if not y_gaps:
            return _around_straddlers(items, depth)
        widest = max(w for _, w in y_gaps)
        parts = _partition(items, [c for c, w in y_gaps if w >= widest - 0.5], axis=1)
    if len(parts) <= 1:
        return _by_top(items)
    out: list[LayoutBlock] = []
    for part in parts:
        out.extend(_xy_cut(part, depth + 1))
    return out


def _real_columns(items: list[LayoutBlock], cuts: list[float]) -> bool:
    """A vertical cut is a column gutter only if text lies on both sides over some height."""
    parts = _partition(items, cuts, axis=0)
    if len(parts) < 2:
        return False
    heights = [max(b.bbox[3] for b in p) - min(b.bbox[1] for b in p) for p in parts]
    return sum(1 for h in heights if h > 20) >= 2 or len(items) <= 3


def _straddlers(items: list[LayoutBlock]) -> list[LayoutBlock]:
    """Blocks crossing a gutter that fewer blocks cross than stand on either side of it."""
    best: list[LayoutBlock] = []
    for edge in sorted({b.bbox[2] for b in items}):
        left = [b for b in items if b.bbox[2] <= edge]
        right = [b for b in items if b.bbox[0] >= edge + MIN_GUTTER]
        crossing = [b for b in items if b.bbox[0] < edge + MIN_GUTTER and b.bbox[2] > edge]
        if (
            crossing
            and min(len(left), len(right)) > len(crossing)
            and _real_columns(left + right, [edge + MIN_GUTTER / 2])
            and (not best or len(crossing) < len(best))
        ):
            best = crossing
    return best


def _around_straddlers(items: list[LayoutBlock], depth: int) -> list[LayoutBlock]:
    """Columns read one after the other around the blocks straddling their gutter, which come
    first if they start above the columns, last otherwise; rows from the top if none do."""
    straddling = _straddlers(items)
    if not straddling:
        return _by_top(items)
    rest = [b for b in items if all(b is not s for s in straddling)]
    top = min(b.bbox[1] for b in rest)
    before = [s for s in straddling if (s.bbox[1] + s.bbox[3]) / 2 < top]
    after = [s for s in straddling if all(s is not b for b in before)]
    return _xy_cut(before, depth + 1) + _xy_cut(rest, depth + 1) + _xy_cut(after, depth + 1)
