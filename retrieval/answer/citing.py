"""Citations of chosen candidates: lines boxed, a cell to its box, a lead-in with what follows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ocr_engine.geometry import centre_inside, union
from retrieval.answer.cells import (
    TableCellText,
    is_table_row,
    period_row_above,
    row_words,
)
from retrieval.answer.page_layout import TITLE_GAP, Layout, is_caption, is_title
from retrieval.schema import BBox, Chunk, Citation, Region, ScoredChunk, Support
from retrieval.search.evidence import Evidence, locate
from retrieval.text_terms import said

if TYPE_CHECKING:
    pass

from retrieval.answer.candidates import _SUBSTANCE_WORDS, FOLLOW_AHEAD, _Sentence, following_ids
from retrieval.answer.options import AnswerOptions


def cite(
    n: int,
    hit: ScoredChunk,
    spans: Sequence[tuple[int, int]],
    *,
    support: Support | None = None,
    then: Sequence[Chunk] = (),
    located: tuple[Evidence, str] | None = None,
) -> Citation:
    """`hit` cited as source `n`: boxed to the chunk lines that overlap the character `spans` of
    its text, quoting them (in text order; a gap between them shown as an ellipsis), unless
    `located` says where and what; the whole of each chunk in `then` (what the cited text
    introduces) is boxed and quoted after them."""
    chunk = hit.chunk
    where, quote_text = located or _located(chunk, spans)
    for after in then:
        evidence, after_text = _located(after, [(0, len(after.text))])
        where = where.followed_by(evidence)
        quote_text = f"{quote_text} … {after_text}"
    return Citation(
        n=n,
        doc_id=chunk.doc_id,
        source=chunk.source,
        page=where.page,
        bbox=where.bbox,
        regions=where.regions,
        quote=quote_text,
        score=hit.score,
        **where.links(chunk.doc_id),
        support=support,
    )


def _cell_evidence(
    chunk: Chunk, cell: TableCellText, options: AnswerOptions
) -> tuple[Evidence, str]:
    """Where a table cell is (its box, else its row's; its preview shows the row, label
    included, under its table's column headings) and its words."""
    line = chunk.lines[cell.line]
    box = options.lookups.layout.cell_box(chunk, line, cell.col) if options.lookups.layout else None
    box = box or line.bbox
    row = union([line.bbox, box])
    heads = options.lookups.layout.column_heads(chunk, line) if options.lookups.layout else None
    parts = [row] if heads is None else [heads, row]
    dating = period_row_above(chunk, cell.line)
    if dating is not None and chunk.lines[dating].page == line.page:
        year = chunk.lines[dating].bbox
        if heads is None or year[1] >= heads[3] - 1:  # not among the headings already shown
            parts.insert(-1, year)
    shown = _stacked(parts, row[3] - row[1])
    return Evidence(line.page, box, [Region(page=line.page, bbox=box)], [box], shown), cell.text


def _stacked(parts: list[BBox], line_height: float) -> tuple[BBox, ...]:
    """A preview of a row under its table's column headings and the row of the year that dates
    it (a quarterly table's "2016"), top to bottom: parts a few lines apart in one region, the
    others one under the other."""
    merged: list[BBox] = []
    for part in sorted(parts, key=lambda b: b[1]):
        if merged and part[1] - merged[-1][3] <= 3 * line_height:
            merged[-1] = union([merged[-1], part])
        else:
            merged.append(part)
    return tuple(merged)


def _located(chunk: Chunk, spans: Sequence[tuple[int, int]]) -> tuple[Evidence, str]:
    """Where the character `spans` of the chunk are, and their text as quoted."""
    ordered = sorted(set(spans))
    lines = [ln for ln in chunk.lines if any(ln.start < e and ln.end > s for s, e in ordered)]
    quote_text = ""
    previous_end: int | None = None
    for start, end in ordered:
        shown = said(chunk.text[start:end])
        if previous_end is not None:
            gap = chunk.text[previous_end:start] if start > previous_end else ""
            quote_text += " " if not gap.strip() else " … "
        quote_text += shown
        previous_end = max(end, previous_end or 0)
    return locate(chunk, lines, ordered), quote_text


def _cite_sentence(
    n: int,
    sentence: _Sentence,
    hits: Sequence[ScoredChunk],
    options: AnswerOptions,
) -> Citation:
    """The citation of an answer sentence; a lead-in ("... as follows:") is cited together with
    what it introduces: the lines under it in its column, or else what follows the chunk; a
    cell is cited to its box and quoted in words."""
    hit = hits[sentence.hit]
    span = (sentence.start, sentence.end)
    if sentence.cell is not None:
        return cite(n, hit, [span], located=_cell_evidence(hit.chunk, sentence.cell, options))
    if sentence.heading is not None:
        return cite(n, hit, [span], located=_headed(hit.chunk, sentence))
    following = options.lookups.following
    if not sentence.text.endswith((":", "：")):
        titled = _titled(hit.chunk, sentence, options.lookups.layout)
        return cite(n, hit, [span], located=titled)
    text = hit.chunk.text
    if text[sentence.end :].strip():
        end = _column_end(hit.chunk, sentence.start, sentence.end)
        return cite(n, hit, [(sentence.start, end)])
    return cite(n, hit, [span], then=_introduced(hit.chunk, hits, following))


def _column_end(chunk: Chunk, start: int, end: int) -> int:
    """Where the run of chunk lines that follow the lead-in at characters `start`..`end` one
    under another in its column ends (a jump up or sideways, a gap of more than a line or
    another page ends it: the labels of a figure beside a list are not what the list's lead-in
    introduces); the chunk's end when no line follows so, or the chunk has no lines."""
    text = chunk.text
    lead = [ln for ln in chunk.lines if ln.start < end and ln.end > start]
    after = [ln for ln in chunk.lines if ln.start >= end]
    if not lead or not after:
        return len(text.rstrip())
    page = lead[-1].page
    run = union([ln.bbox for ln in lead if ln.page == page])
    last = None
    for line in after:
        x0, y0, x1, y1 = line.bbox
        height = y1 - y0
        below = run[3] - height <= y0 <= run[3] + 1.5 * height
        if line.page != page or not (x0 < run[2] and x1 > run[0] and below):
            break
        run = union([run, line.bbox])
        last = line.end
    return len(text.rstrip()) if last is None else last


def _titled(
    chunk: Chunk, sentence: _Sentence, layout: Layout | None
) -> tuple[Evidence, str] | None:
    """A title's or caption's evidence together with the figure or table it names, when the
    layout knows one (else None: the sentence alone)."""
    caption = is_caption(sentence.text, chunk.kind)
    if layout is None or not (caption or is_title(sentence.text)):
        return None
    lines = [ln for ln in chunk.lines if ln.start < sentence.end and ln.end > sentence.start]
    if not lines:
        return None
    page = lines[0].page
    title = union(ln.bbox for ln in lines if ln.page == page)
    named = layout.titled(chunk.doc_id, page, title, caption)
    if named is None:
        return None
    where, quote_text = _located(chunk, [(sentence.start, sentence.end)])
    return where.followed_by(Evidence(page, named, [Region(page=page, bbox=named)], [named])), (
        quote_text
    )


def _introduced(
    chunk: Chunk,
    hits: Sequence[ScoredChunk],
    following: Callable[[Chunk], Sequence[Chunk]] | None,
) -> list[Chunk]:
    """What a chunk ending in a lead-in introduces: its next chunks up to the first of some
    length (a table's column header can be a chunk of its own), taken from the hits a few
    chunks after it, else (given `following`) from the store; the nearest such hit alone when
    none is of that length and the store is not asked. Only chunks that start on the page the
    lead-in ends on or the next."""
    last_page = chunk.lines[-1].page if chunk.lines else chunk.page

    def starts_near(after: Chunk) -> bool:
        return 0 <= after.page - last_page <= 1

    ahead = set(following_ids(chunk.chunk_id, FOLLOW_AHEAD))
    near = [
        hit.chunk
        for hit in hits
        if hit.chunk.doc_id == chunk.doc_id
        and hit.chunk.chunk_id in ahead
        and starts_near(hit.chunk)
    ]
    near.sort(key=lambda c: c.chunk_id)
    run = _up_to_substance(near, starts_near)
    if run or following is None:
        return run or near[:1]
    return _up_to_substance(following(chunk), starts_near)


def _up_to_substance(chunks: Sequence[Chunk], starts_near: Callable[[Chunk], bool]) -> list[Chunk]:
    """The chunks up to the first of some length, all starting near; none if no such one."""
    run: list[Chunk] = []
    for after in chunks:
        if not starts_near(after):
            break
        run.append(after)
        if len(after.text.split()) >= _SUBSTANCE_WORDS:
            return run
    return []


def _opens(chunk: Chunk, heading: BBox) -> bool:
    """Whether the chunk starts right under the heading (not the rest of a long section, further
    down its page)."""
    return chunk.lines[0].bbox[1] - heading[3] <= TITLE_GAP


def _headed(chunk: Chunk, sentence: _Sentence) -> tuple[Evidence, str]:
    """A section heading's evidence: what it heads (the figure or table under it, whole, else
    the chunk's first lines in their column), with the heading drawn too and shown
    above it in the crop, as a cell's column headings are; quoted as heading and lines (a
    table's rows, a figure's heading alone)."""
    assert sentence.heading is not None
    heading = sentence.heading
    first = chunk.lines[0]
    page = first.page
    named = sentence.heads
    if named is not None:
        where = Evidence(page, named, [Region(page=page, bbox=named)], [named])
        rows = [
            row_words(text)
            for ln in chunk.lines
            if ln.page == page
            and centre_inside(ln.bbox, named)
            and is_table_row(text := chunk.text[ln.start : ln.end])
        ]  # a table's rows are what it says; a figure's labels are read off its image
        rows = [r for r in rows if r]
        quote_text = f"{sentence.text} — {'; '.join(rows)}" if rows else sentence.text
    else:
        where, lines = _located(chunk, [(first.start, _column_end(chunk, first.start, first.end))])
        quote_text = f"{sentence.text} — {lines}"
    shown = _stacked([heading, where.bbox], heading[3] - heading[1])
    return replace(where, highlight=[heading, *where.highlight], context=shown), quote_text
