"""How an extractive answer is drawn, and what it is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from retrieval.doc_card import DocumentCard
from retrieval.page_layout import Layout
from retrieval.schema import Chunk, Citation

if TYPE_CHECKING:
    from retrieval.rerank import Reranker

from retrieval.answer.candidates import PageRange
from retrieval.answer.scores import MIN_SUPPORT
from retrieval.schema import DENSE_POOL

HEADING_LEAD = 0.05  # how much more like the question than any sentence a heading must be to lead


RANK_PRIOR = 1.0  # with a re-ranker: the second hit's sentences count half, the third's a third


@dataclass(frozen=True)
class AnswerOptions:
    """How an extractive answer is drawn: from the top `max_hits` hits; the `dense_pool` best
    sentences by terms ranked again by embedding (0: by terms alone); cited on `pages` (a
    request's page filter) while any sentence is; `following` gives the chunks after a chunk in
    its document (a store lookup), for a lead-in whose table is not among the hits; below
    `min_support` (the best pooled sentence's similarity to the question) there is no answer;
    with `cells`, table rows are read as cells, boxed by the `layout` (else by their row), and
    a title or caption is cited with the figure or table the layout says it names;
    `name_terms` (stems of the words the question names its documents by) lend no support, since
    every page of those documents carries them (a signature block would win on them); with a
    `rank_prior`, a sentence's score is divided by 1 + `rank_prior` times its hit's rank (0 for
    the first hit), so that a re-ranker's first page is cited first unless another is much
    better supported (measured in docs/benchmarks.md); `table_rest` gives the other pieces, on
    its page, of a table chunked in row groups (a store lookup), whose cells are candidates as
    if they were the hit's own: the search keeps one chunk a page, and the row that answers can
    lie in its neighbour; `card_of` gives, by doc_id, a document's card: where its fiscal year is
    not the calendar year it ends in, "Q2 FY2024" meets a column dated "July 29, 2023" in it,
    and a quarterly report's quarter dates a question naming that quarter alone ("at the end of
    Q2"); `subjects` are names the question gives as the owner of what it asks that name no
    document: an answer must come from hits whose text writes one of them, else there is none
    ("Apple's iPhone revenue" is not answered from Best Buy's revenue); `unit_of` gives the
    unit a table's neighbours state (`table_unit`, a store lookup), for a cited cell whose own
    lines name none; a section heading over a
    hit's chunk leads the answer when it is more like the question than the best sentence by
    `heading_lead` (`_heading_lead`; measured in docs/benchmarks.md); with a `judge` (a
    cross-encoder, FOLIO_ANSWER_JUDGE) the best candidates by those scores are ordered again by
    it (`judge.judged`; "not found" stays the embedder's `min_support`)."""

    max_hits: int = 5
    dense_pool: int = DENSE_POOL
    min_support: float = MIN_SUPPORT
    pages: PageRange = (None, None)
    following: Callable[[Chunk], Sequence[Chunk]] | None = None
    cells: bool = True
    layout: Layout | None = None
    name_terms: frozenset[str] = frozenset()
    rank_prior: float = 0.0
    table_rest: Callable[[Chunk], Sequence[Chunk]] | None = None
    card_of: Callable[[str], DocumentCard | None] | None = None
    subjects: tuple[str, ...] = ()
    unit_of: Callable[[Chunk], str] | None = None
    heading_lead: float = HEADING_LEAD
    judge: Reranker | None = None


class Answer(NamedTuple):
    text: str | None
    """None when the documents do not answer the question."""
    citations: list[Citation]
    support: float | None = None
    """The best pooled sentence's similarity to the question (None without an embedder)."""

    @property
    def found(self) -> bool:
        return self.text is not None
