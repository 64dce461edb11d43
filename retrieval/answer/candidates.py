"""Answer candidates: the sentences and value cells of the hits, and the chunks around them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval.answer.cells import TableCellText, table_cells
from retrieval.schema import TABLE_ROWS_KIND, BBox, Chunk, ScoredChunk
from retrieval.table_rows import is_table_row
from retrieval.table_units import stated_unit
from retrieval.text_terms import said, sentence_spans, stems

if TYPE_CHECKING:
    pass


_STOPS = frozenset(".!?:;。！？|")  # a piece ending in one is whole
_DENSE_WORDS = 48  # a long sentence is embedded by its opening: the cost grows with its length


FOLLOW_AHEAD = 3  # chunks after a lead-in that may hold what it introduces


TABLE_REACH = 4  # row-group chunks of a table on either side of a hit that its answer reads


_SUBSTANCE_WORDS = 8  # a shorter chunk after a lead-in (a table's column header) is passed over


_ORDINAL = re.compile(r"\d+$")


PageRange = tuple[int | None, int | None]
"""First and last page (either open) that cited sentences must touch."""


@dataclass(frozen=True)
class _Sentence:
    hit: int
    start: int
    end: int
    text: str
    terms: frozenset[str]
    cell: TableCellText | None = None
    heading: BBox | None = None
    """Where the section heading is that this candidate is (its chunk's text does not hold it)."""
    heads: BBox | None = None
    """For a heading over a figure or table: its box (what the citation boxes; a table's rows are
    what it quotes)."""
    lead: str = ""
    """The sentence before this one in its paragraph, which it may go on from ("The panel is
    managed by Ipsos" after the one that names the panel)."""


def _candidates(
    hits: Sequence[ScoredChunk], pages: PageRange = (None, None), cells: bool = True
) -> list[_Sentence]:
    """The sentences of the hits, and with `cells` the value cells of their table rows in place
    of the rows; with a page range, those with a line on one of its pages."""
    low, high = pages
    sentences = []
    for index, hit in enumerate(hits):
        chunk = hit.chunk
        text = chunk.text
        rows = [ln for ln in chunk.lines if is_table_row(text[ln.start : ln.end])] if cells else []
        before: tuple[int, str] | None = None  # the last sentence's end and words
        for start, end in _whole_sentences(text):
            shown = said(text[start:end])
            lead = before[1] if before and "\n\n" not in text[before[0] : start] else ""
            before = None if is_table_row(shown) else (end, shown)
            if (low or high) and not _on_pages(chunk, start, end, low, high):
                continue
            if any(ln.start < end and ln.end > start for ln in rows):
                continue
            terms = frozenset(stems(shown))
            sentences.append(_Sentence(index, start, end, shown, terms, lead=lead))
        for cell in table_cells(chunk) if rows else []:
            line = chunk.lines[cell.line]
            if (low or high) and not _on_pages(chunk, line.start, line.end, low, high):
                continue
            terms = frozenset(stems(cell.text))
            sentences.append(_Sentence(index, line.start, line.end, cell.text, terms, cell))
    return sentences


def _whole_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of the text, one broken across two blocks or lines joined again: a piece
    that ends without a stop, followed by one that starts in lower case, goes on in it ("Allow
    1.25 cm of space on each" / "side and at the top")."""
    spans: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        if spans and _goes_on(text[spans[-1][0] : spans[-1][1]], text[start]):
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def _goes_on(before: str, first: str) -> bool:
    return first.islower() and before[-1] not in _STOPS and not is_table_row(before)


def _on_pages(chunk: Chunk, start: int, end: int, low: int | None, high: int | None) -> bool:
    """Whether characters `start`..`end` of the chunk have a line on pages `low`..`high` (true
    for a chunk without lines)."""
    on = [ln.page for ln in chunk.lines if ln.start < end and ln.end > start]
    return not on or any((low or p) <= p <= (high or p) for p in on)


def _in_context(chunk: Chunk, text: str) -> str:
    opening = " ".join(text.split()[:_DENSE_WORDS])
    return f"{chunk.section_path[-1]}: {opening}" if chunk.section_path else opening


def _dense_texts(chunk: Chunk, sentence: _Sentence) -> list[str]:
    """What the embedder reads for a candidate: its text, and with the sentence before it in its
    paragraph, as it may go on from it."""
    texts = [_in_context(chunk, sentence.text)]
    if sentence.lead:
        texts.append(_in_context(chunk, f"{sentence.lead} {sentence.text}"))
    return texts


def answer_texts(chunk: Chunk) -> list[str]:
    """Every text an answer may embed for `chunk` (each candidate sentence and table cell, led by
    its section heading, and the heading itself), once: what ingest can embed ahead of the
    queries."""
    hit = [ScoredChunk(chunk=chunk, score=1.0)]
    texts = [t for s in _candidates(hit) for t in _dense_texts(chunk, s)]
    return list(dict.fromkeys([*texts, *chunk.section_path[-1:]]))


def _with_table_rest(
    hits: list[ScoredChunk],
    table_rest: Callable[[Chunk], Sequence[Chunk]] | None,
    mates: Sequence[ScoredChunk] = (),
) -> tuple[list[ScoredChunk], list[int]]:
    """The hits, each followed by the other pieces of its table (`Lookups.table_rest`)
    that are not hits themselves, scored as the hit, then the `mates` (the search's other
    candidates) on a hit's page, with their own scores; and the rank of the hit each comes from."""
    seen = {(h.chunk.doc_id, h.chunk.chunk_id) for h in hits}
    pool: list[ScoredChunk] = []
    ranks: list[int] = []
    page_rank: dict[tuple[str, int], int] = {}
    for rank, hit in enumerate(hits):
        pool.append(hit)
        ranks.append(rank)
        page_rank.setdefault((hit.chunk.doc_id, hit.chunk.page), rank)
        rest = table_rest(hit.chunk) if table_rest and hit.chunk.kind == TABLE_ROWS_KIND else ()
        for piece in rest:
            if (piece.doc_id, piece.chunk_id) not in seen:
                seen.add((piece.doc_id, piece.chunk_id))
                pool.append(ScoredChunk(chunk=piece, score=hit.score))
                ranks.append(rank)
    for mate in mates:
        key = (mate.chunk.doc_id, mate.chunk.chunk_id)
        its_page = page_rank.get((mate.chunk.doc_id, mate.chunk.page))
        if its_page is not None and key not in seen:
            seen.add(key)
            pool.append(mate)
            ranks.append(its_page)
    return pool, ranks


def following_ids(chunk_id: str, n: int) -> list[str]:
    """The ids of the `n` chunks after `chunk_id` in its document (`c0041` -> `c0042`, ...);
    none for an id without a number."""
    return _nearby_ids(chunk_id, range(1, n + 1))


def around_ids(chunk_id: str, n: int) -> list[str]:
    """The ids of the `n` chunks before `chunk_id` (nearest first) and the `n` after it."""
    return _nearby_ids(chunk_id, [*range(-1, -n - 1, -1), *range(1, n + 1)])


def _nearby_ids(chunk_id: str, steps: Sequence[int]) -> list[str]:
    found = _ORDINAL.search(chunk_id)
    if found is None:
        return []
    head, digits = chunk_id[: found.start()], found.group()
    at = int(digits)
    return [f"{head}{at + k:0{len(digits)}d}" for k in steps if at + k >= 0]


def table_pieces(chunk: Chunk, nearby: Sequence[Chunk]) -> list[Chunk]:
    """The chunks of `nearby` (the chunks around `chunk`, as `around_ids` orders them) that hold
    other row groups of the same table on its page: the unbroken runs of `table_rows` chunks
    on either side of a `table_rows` chunk."""
    if chunk.kind != TABLE_ROWS_KIND:
        return []
    by_id = {c.chunk_id: c for c in nearby}
    pieces = []
    for side in (range(-1, -TABLE_REACH - 1, -1), range(1, TABLE_REACH + 1)):
        for chunk_id in _nearby_ids(chunk.chunk_id, side):
            piece = by_id.get(chunk_id)
            if piece is None or piece.kind != TABLE_ROWS_KIND or piece.page != chunk.page:
                break
            pieces.append(piece)
    return pieces


def table_unit(chunk: Chunk, nearby: Sequence[Chunk]) -> str:
    """The unit stated for the table of `chunk` (a table, or a group of its rows) outside the
    chunk (`nearby` as `around_ids` orders the chunks around it, one beyond `TABLE_REACH`): in
    the lines of its other row groups on the page that are no rows, or in the last paragraph of
    the chunk before the table, on its page (a lead-in: "... was as follows ($ in millions):");
    "" when none states one."""
    by_id = {c.chunk_id: c for c in nearby}
    for piece in [chunk, *table_pieces(chunk, nearby)]:
        unit = stated_unit("\n".join(ln for ln in piece.text.splitlines() if not is_table_row(ln)))
        if unit:
            return unit
    for chunk_id in _nearby_ids(chunk.chunk_id, range(-1, -TABLE_REACH - 2, -1)):
        before = by_id.get(chunk_id)
        ends_on = before.lines[-1].page if before is not None and before.lines else None
        if before is None or (ends_on or before.page) != chunk.page:
            return ""
        if before.kind != TABLE_ROWS_KIND:
            return stated_unit(before.text.rstrip().rsplit("\n\n", 1)[-1])
    return ""


def _headings(hits: Sequence[ScoredChunk], pages: PageRange = (None, None)) -> list[_Sentence]:
    """The section headings of the hits' chunks, once each (by document, page of the chunk's
    first line, and words), with a page range those whose chunk starts on one of its pages."""
    low, high = pages
    found: dict[tuple[str, int, str], _Sentence] = {}
    for index, hit in enumerate(hits):
        chunk = hit.chunk
        if not chunk.section_path or not chunk.lines:
            continue
        text, page = chunk.section_path[-1], chunk.lines[0].page
        key = (chunk.doc_id, page, text)
        if key not in found and (low or page) <= page <= (high or page):
            found[key] = _Sentence(index, 0, 0, text, frozenset(stems(text)))
    return list(found.values())
