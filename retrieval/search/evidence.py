"""Evidence below the chunk: which lines of a chunk support a claim, and where they are.

A claim is an answer sentence, or the question itself when the answer is extracted. Lines are
scored by the claim terms they hold, weighted by how rare each term is among the chunk's lines
(numbers weigh more); the best line, the lines of its sentence and neighbours that score nearly as
well are the evidence. Their boxes are merged per page (one region per page) and per column
(the highlight drawn on a page image). A line that the evidence starts or ends inside is boxed to
the part it covers, like a text selection: where its characters begin is estimated from the
widths of common fonts (`ocr_engine.char_widths`), a justified line's slack in its
spaces, so that a sentence's box starts at its first character, not inside the sentence before.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ocr_engine.char_widths import char_starts
from ocr_engine.geometry import union
from retrieval.links import CitationLinks, citation_links, page_image_url
from retrieval.schema import BBox, Chunk, ChunkLine, Region
from retrieval.text_terms import sentence_spans, stems

__all__ = ["Evidence", "locate", "supporting_lines"]

_WIDER = 0.25  # a line wider than its run by this share of the run's width starts a box


@dataclass(frozen=True)
class Evidence:
    """Where some lines of a chunk are: a region per page, and column boxes on the first page."""

    page: int
    bbox: BBox
    regions: list[Region]
    highlight: list[BBox]
    context: tuple[BBox, ...] = ()
    """What a preview crop shows, top to bottom, in place of `bbox` (a table cell's column
    headings and its row, so that its label and its column's heading show)."""

    def highlight_url(self, doc_id: str) -> str:
        """The image of the first page with the evidence drawn."""
        return page_image_url(doc_id, self.page, self.highlight)

    def links(self, doc_id: str) -> CitationLinks:
        """Every link a citation of this evidence in document `doc_id` carries (unsigned)."""
        return citation_links(
            doc_id, self.page, self.bbox, self.regions, self.highlight, crop=self.context
        )

    def followed_by(self, after: Evidence) -> Evidence:
        """This evidence and `after` (what follows it in the document) as one: a region per
        page, the highlight of both where `after` starts on this evidence's page."""
        boxes: dict[int, list[BBox]] = {}
        for region in [*self.regions, *after.regions]:
            boxes.setdefault(region.page, []).append(region.bbox)
        regions = [Region(page=p, bbox=union(bs)) for p, bs in sorted(boxes.items())]
        first = next(r for r in regions if r.page == self.page)
        shown = [*self.highlight, *after.highlight] if after.page == self.page else self.highlight
        return Evidence(self.page, first.bbox, regions, shown)


def _columns(boxes: Sequence[tuple[BBox, bool]]) -> list[BBox]:
    """Boxes of runs of whole lines that follow each other in one column: a jump up or sideways,
    a gap of more than a line, or a line much wider than the run (one that runs on under the
    next column) starts a new box, so that no box covers what the lines do not; a partly
    covered line keeps a box of its own."""
    merged: list[BBox] = []
    open_run = False
    for box, partial in boxes:
        x0, y0, x1, y1 = box
        height = y1 - y0
        if merged and open_run and not partial:
            bx0, _, bx1, by1 = merged[-1]
            below = by1 - height <= y0 <= by1 + 1.5 * height
            wider = max(0.0, bx0 - x0) + max(0.0, x1 - bx1)
            if x0 < bx1 and x1 > bx0 and below and wider <= _WIDER * (bx1 - bx0):
                merged[-1] = union([merged[-1], box])
                continue
        merged.append(box)
        open_run = not partial
    return merged


def _covered(chunk: Chunk, line: ChunkLine, spans: Sequence[tuple[int, int]]) -> tuple[BBox, bool]:
    """The box of the part of `line` that `spans` cover, and whether that is only part of it."""
    text = chunk.text[line.start : line.end]
    first = line.start + len(text) - len(text.lstrip())
    last = line.end - len(text) + len(text.rstrip())
    inside = [(max(s, first), min(e, last)) for s, e in spans if s < last and e > first]
    if not inside or chunk.kind.startswith("table") or last - first < 2:
        return line.bbox, False
    start = min(s for s, _ in inside)
    end = max(e for _, e in inside)
    if start <= first and end >= last:
        return line.bbox, False
    x0, y0, x1, y1 = line.bbox
    core = chunk.text[first:last]
    starts = [x0, *char_starts(core, line.bbox)[1:-1], x1]
    a, b = start - first, end - first
    # at a word's edge the box edge is in the middle of the space beside it, the estimate's error
    # taken up by the gap (wide in a justified line) rather than by a letter of either word
    left = (starts[a - 1] + starts[a]) / 2 if a > 0 and core[a - 1] == " " else starts[a]
    right = (starts[b] + starts[b + 1]) / 2 if b < len(core) and core[b] == " " else starts[b]
    return (left, y0, right, y1), True


def locate(
    chunk: Chunk, lines: Sequence[ChunkLine], spans: Sequence[tuple[int, int]] = ()
) -> Evidence:
    """The regions of `lines` (one per page, in order) and the highlight on the first page; a
    chunk's first region when no line is given (a chunk without lines). Given the character
    `spans` of the evidence, lines they cover only partly are boxed to the covered part."""
    pages: dict[int, list[tuple[BBox, bool]]] = {}
    for line in lines:
        covered = _covered(chunk, line, spans) if spans else (line.bbox, False)
        pages.setdefault(line.page, []).append(covered)
    if not pages:
        region = chunk.regions[0]
        return Evidence(region.page, region.bbox, [region], [region.bbox])
    regions = [Region(page=p, bbox=union([b for b, _ in bs])) for p, bs in pages.items()]
    first = regions[0]
    return Evidence(first.page, first.bbox, regions, _columns(pages[first.page]))


def supporting_lines(chunk: Chunk, claim: str, *, near: float = 0.6) -> list[ChunkLine]:
    """The lines of `chunk` that best support `claim`: the best-scoring line, the other lines of
    its sentence, and adjacent lines scoring at least `near` times as much. Empty when no line
    shares a term with the claim."""
    if not chunk.lines:
        return []
    wanted = set(stems(claim)) or set(stems(claim, keep_stopwords=True))
    line_terms = [set(stems(chunk.text[ln.start : ln.end])) for ln in chunk.lines]
    if not wanted:
        return []
    df = Counter(t for ts in line_terms for t in ts & wanted)
    n = len(chunk.lines)

    def weight(term: str) -> float:
        idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
        return idf * (1.5 if term[0].isdigit() else 1.0)

    scores = [math.fsum(weight(t) for t in ts & wanted) for ts in line_terms]
    best = max(range(n), key=lambda i: scores[i])
    if scores[best] <= 0:
        return []
    chosen = {best}
    line = chunk.lines[best]
    for start, end in sentence_spans(chunk.text):
        if start < line.end and end > line.start:
            chosen |= {i for i, ln in enumerate(chunk.lines) if ln.start < end and ln.end > start}
            break
    for step in (-1, 1):
        i = (min(chosen) if step < 0 else max(chosen)) + step
        while 0 <= i < n and scores[i] >= near * scores[best]:
            chosen.add(i)
            i += step
    return [chunk.lines[i] for i in sorted(chosen)]
