"""A question asking which did best or worst: parallel statements and a table column compared."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import TYPE_CHECKING

from retrieval.compare import asked_extreme, cell_value, parallel, parallel_labels, signed_change
from retrieval.schema import Chunk, ScoredChunk
from retrieval.text_terms import said, sentence_spans, stems

if TYPE_CHECKING:
    pass

from retrieval.answer.candidates import _Sentence
from retrieval.answer.meet import _WHEN


def _compared(
    question: str,
    chosen: list[_Sentence],
    sentences: list[_Sentence],
    hits: list[ScoredChunk],
    around: Callable[[Chunk], Sequence[Chunk]] | None,
    most: int,
    ignored: frozenset[str] = frozenset(),
) -> tuple[list[_Sentence], list[ScoredChunk]]:
    """For a question asking which of several things did best or worst (`asked_extreme`), the
    `most` chosen sentences led by the first chosen one that has parallel candidates
    (`_peers`) and those, the extreme asked for first (each said with its section's heading),
    then the rest, else led by the cells of the column the question names
    (`_column_compared`); and the hits, with the chunks of the sibling sections read."""
    direction = asked_extreme(question)
    if not direction:
        return chosen, hits
    for compared in chosen:
        value = _compared_value(compared) if compared.heading is None else None
        if value is None:
            continue
        peers, pool = _peers(compared, sentences, hits, around)
        valued = [(v, peer) for peer in peers if (v := _compared_value(peer)) is not None]
        if not valued:
            continue
        ranked = sorted([(value, compared), *valued], key=lambda vs: -vs[0] * direction)
        led = [s for _, s in ranked]
        if compared.cell is None:
            led = [replace(s, compared=_section(pool, s)) for s in led]
        rest = [s for s in chosen if all(s is not peer for _, peer in ranked)]
        return [*led, *rest][:most], pool
    column = _column_compared(question, sentences, hits, ignored)
    if not column:
        return chosen, hits
    ordered = [s for _, s in sorted(column, key=lambda vs: -vs[0] * direction)]
    return [*ordered, *(s for s in chosen if all(s is not c for c in ordered))][:most], hits


def _column_compared(
    question: str,
    sentences: list[_Sentence],
    hits: list[ScoredChunk],
    ignored: frozenset[str],
) -> list[tuple[Decimal, _Sentence]]:
    """The value cells, with their values, of the table column whose header names most words of
    the question (not its dates, periods or the documents' names) among the columns of two rows
    or more whose labels name none of those words (the rows are things compared, such as models
    in a results table, not line items), leaving out a whole's rows ("Total", "Average"); none
    when no column is named."""
    wanted = {t for t in stems(question) if not t[0].isdigit()} - ignored - _WHEN
    columns: dict[tuple[str, int, int, str], list[tuple[Decimal, _Sentence]]] = {}
    first_hit: dict[tuple[str, int, int, str], int] = {}
    for s in sentences:
        cell = s.cell
        if cell is None or _WHOLE_ROW.match(cell.label):
            continue
        value = cell_value(cell.value)
        named = wanted & set(stems(cell.header))
        if value is None or not named or named & set(stems(cell.label)):
            continue
        chunk = hits[s.hit].chunk
        key = (chunk.doc_id, chunk.page, cell.col, cell.header)
        columns.setdefault(key, []).append((value, s))
        first_hit.setdefault(key, s.hit)
    found = [k for k, cells in columns.items() if len(cells) >= 2]
    if not found:
        return []
    best = max(found, key=lambda k: (len(wanted & set(stems(k[3]))), -first_hit[k]))
    return columns[best]


def _compared_value(sentence: _Sentence) -> Decimal | None:
    """What a parallel candidate is compared by: a cell's value, a sentence's stated change."""
    if sentence.cell is not None:
        return cell_value(sentence.cell.value)
    return signed_change(sentence.text)


def _peers(
    first: _Sentence,
    sentences: list[_Sentence],
    hits: list[ScoredChunk],
    around: Callable[[Chunk], Sequence[Chunk]] | None,
) -> tuple[list[_Sentence], list[ScoredChunk]]:
    """The candidates of `first`'s document parallel to it, and the hits with the chunks that
    hold the ones no hit holds: for a cell, the cells of its column on its page whose row labels
    are parallel to its own; for a sentence, the parallel sentences of its section and of its
    sibling sections (same parent heading), among the hits and around its chunk."""
    home = hits[first.hit].chunk
    parent = home.section_path[:-1]
    own = [
        s
        for s in sentences
        if s is not first
        and hits[s.hit].chunk.doc_id == home.doc_id
        and (first.cell is not None or hits[s.hit].chunk.section_path[:-1] == parent)
    ]
    cell = first.cell
    if cell is not None:
        return [
            s
            for s in own
            if s.cell is not None
            and s.cell.header == cell.header
            and hits[s.hit].chunk.page == home.page
            and parallel_labels(cell.label, s.cell.label)
        ], hits
    found = [s for s in own if s.cell is None and s.heading is None]
    added: list[ScoredChunk] = []
    seen = {(h.chunk.doc_id, h.chunk.chunk_id) for h in hits}
    for chunk in around(home) if around is not None else ():
        if (chunk.doc_id, chunk.chunk_id) in seen or not _sibling(chunk, home):
            continue
        added.append(ScoredChunk(chunk=chunk, score=hits[first.hit].score))
        for start, end in sentence_spans(chunk.text):
            text = said(chunk.text[start:end])
            found.append(_Sentence(len(hits) + len(added) - 1, start, end, text, frozenset()))
    return [s for s in found if parallel(first.text, s.text)], [*hits, *added]


def _sibling(chunk: Chunk, home: Chunk) -> bool:
    """Whether `chunk` lies in `home`'s section or a sibling of it: under the same parent."""
    path, own = chunk.section_path, home.section_path
    return len(path) == len(own) >= 1 and path[:-1] == own[:-1]


def _section(hits: Sequence[ScoredChunk], sentence: _Sentence) -> str:
    path = hits[sentence.hit].chunk.section_path
    return path[-1] if path else ""


_WHOLE_ROW = re.compile(r"^\s*(?:total|average|mean|overall|all|sum)\b", re.I)
