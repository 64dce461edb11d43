"""How an extractive answer is drawn, and what it is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from retrieval.answer.page_layout import Layout
from retrieval.doc_card import DocumentCard
from retrieval.schema import Chunk, Citation, ScoredChunk

if TYPE_CHECKING:
    from retrieval.search.rerank import Reranker

from retrieval.answer.candidates import PageRange
from retrieval.answer.scores import MIN_SUPPORT
from retrieval.schema import DENSE_POOL

HEADING_LEAD = 0.05  # how much more like the question than any sentence a heading must be to lead


RANK_PRIOR = 1.0  # with a re-ranker: the second hit's sentences count half, the third's a third


@dataclass(frozen=True)
class Lookups:
    """What the store and the page layouts tell the answer about its hits (None: not asked):
    the `layout` boxes table cells (else their row) and says which figure or table a title or
    caption names; `following` gives the chunks after a chunk in its document, for a lead-in
    whose table is not among the hits; `table_rest` gives the other pieces, on its page, of a
    table chunked in row groups, whose cells are candidates as if they were the hit's own (the
    search keeps one chunk a page, and the row that answers can lie in its neighbour); `unit_of`
    gives the unit a table's neighbours state, for a cited cell whose own lines name none;
    `card_of` gives a document's card by doc_id (its fiscal calendar dates table columns)."""

    layout: Layout | None = None
    following: Callable[[Chunk], Sequence[Chunk]] | None = None
    table_rest: Callable[[Chunk], Sequence[Chunk]] | None = None
    unit_of: Callable[[Chunk], str] | None = None
    card_of: Callable[[str], DocumentCard | None] | None = None


@dataclass(frozen=True)
class Scope:
    """What the request says beyond the question's words: candidates on `pages` (its page
    filter, or the pages it names) while any is; `name_terms`, stems of the words the question
    names its documents by, lend no support (every page of those documents carries them);
    `subjects`, owners the question names that name no document, must be written in a hit for
    it to answer ("Apple's iPhone revenue" is not answered from Best Buy's revenue)."""

    pages: PageRange = (None, None)
    name_terms: frozenset[str] = frozenset()
    subjects: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnswerOptions:
    """How an extractive answer is drawn: from the top `max_hits` hits; the `dense_pool` best
    candidates by terms ranked again by embedding (0: by terms alone); below `min_support` (the
    best pooled candidate's similarity to the question) there is no answer; with `cells`, table
    rows are read as cells; with a `rank_prior`, a candidate's score is divided by 1 +
    `rank_prior` times its hit's rank (0 for the first hit), so that a re-ranker's first page is
    cited first unless another is much better supported; a section heading over a hit's chunk
    leads the answer when it is more like the question than the best candidate by
    `heading_lead`; with a `judge` (a cross-encoder, FOLIO_ANSWER_JUDGE) the best candidates
    are ordered again by it ("not found" stays the embedder's `min_support`); `page_mates`, the
    search's other candidates on the hits' pages, are read with the hit of their page. The
    request's `scope` and the store's `lookups` are the rest (measured in docs/benchmarks.md)."""

    max_hits: int = 5
    dense_pool: int = DENSE_POOL
    min_support: float = MIN_SUPPORT
    cells: bool = True
    rank_prior: float = 0.0
    heading_lead: float = HEADING_LEAD
    judge: Reranker | None = None
    scope: Scope = Scope()
    lookups: Lookups = Lookups()
    page_mates: Sequence[ScoredChunk] = ()


class Answer(NamedTuple):
    text: str | None
    """None when the documents do not answer the question."""
    citations: list[Citation]
    support: float | None = None
    """The best pooled sentence's similarity to the question (None without an embedder)."""

    @property
    def found(self) -> bool:
        return self.text is not None
