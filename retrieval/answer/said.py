"""What an answer says for each chosen candidate (its citation quotes it whole)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from retrieval.answer.candidates import _Sentence
from retrieval.schema import Chunk, Citation, ScoredChunk
from retrieval.table_units import unit_for_row
from retrieval.text_terms import sentence_spans

_SAID_WORDS = 60  # the words of a table's rows an answer led by its heading says (all are quoted)


def _said(sentence: _Sentence, citation: Citation) -> str:
    """What the answer says for a chosen sentence (its citation quotes it)."""
    if sentence.heading is not None:
        return _heading_said(sentence, citation.quote)
    return _spoken(sentence)


def _heading_said(heading: _Sentence, quote: str) -> str:
    """What an answer led by a heading says: the heading and the first sentence of what it heads,
    or of a table it heads the rows, up to `_SAID_WORDS` (a cell's own full stop ends no row;
    its citation quotes all of it)."""
    rest = quote.removeprefix(f"{heading.text} — ")
    if rest == quote:
        return quote
    if heading.heads is not None:
        rows: list[str] = []
        for row in rest.split("; "):
            if rows and sum(len(r.split()) for r in [*rows, row]) > _SAID_WORDS:
                return f"{heading.text} — {'; '.join(rows)} …"
            rows.append(row)
        return quote
    first = next(iter(sentence_spans(rest)), None)
    return f"{heading.text} — {rest[first[0] : first[1]]}" if first else quote


_BULLET = re.compile(r"^[•●▪◦‣∙·■□➢➤-]\s+(?=\S)")


_ITEM_END = re.compile(r"\s*;(?:\s*(?:and|or))?\s*$")


def _spoken(sentence: _Sentence) -> str:
    """A sentence as the answer says it: without the bullet that leads it in a list ("• Touch
    Blood pressure" is "Touch Blood pressure") or the "; and" that ends a list item; a step's
    number stays, since the answer gives its sentences best first and the numbers show their
    order. Its citation quotes it whole."""
    if sentence.cell is not None:
        return sentence.text
    item = _BULLET.sub("", sentence.text, count=1)
    if item == sentence.text:
        return sentence.text
    return _ITEM_END.sub("", item) or sentence.text


def _with_unit(
    sentence: _Sentence, hits: Sequence[ScoredChunk], unit_of: Callable[[Chunk], str]
) -> _Sentence:
    """A cell naming no unit, with the unit its table's neighbours state, if any and if its
    column names no measure of its own."""
    cell = sentence.cell
    if cell is None or cell.unit or cell.column_measure:
        return sentence
    unit = unit_for_row(cell.label, cell.value, unit_of(hits[sentence.hit].chunk))
    if not unit:
        return sentence
    cell = replace(cell, unit=unit)
    return replace(sentence, text=cell.text, cell=cell)
