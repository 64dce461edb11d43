"""Hybrid search over a vector store: a question -> its ranked chunks, and the documents and the
place it names (the answer stage, `retrieval.answer.retriever`, draws the answer from them)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import NamedTuple

from ocr_engine.errors import BadInputError
from retrieval.doc_card import CARD_KIND, Contents
from retrieval.index.embedder import Embedder
from retrieval.index.store import VectorStore
from retrieval.schema import (
    Chunk,
    Hit,
    QueryRequest,
    RerankFailure,
    ScoredChunk,
    SearchFilter,
)
from retrieval.search.doc_names import NamedDocuments, NameMatch
from retrieval.search.page_refs import captions, page_ref
from retrieval.search.rerank import Reranker, RerankError, sigmoid

__all__ = [
    "InvalidQueryError",
    "Place",
    "Ranked",
    "Searcher",
    "distinct_pages",
    "search_filter",
    "to_hit",
]

logger = logging.getLogger(__name__)

_MAX_FETCH = 400  # fused candidates asked for at most (QueryRequest.top_k is at most 100)
_AGREEMENT_WINDOW = 10  # a named document must be among the plain search's first chunks
_PLACE_HITS = 3  # chunks of the page a question names that come first, at most


class InvalidQueryError(BadInputError, ValueError):
    """The query can never match as asked (e.g. an empty page range); do not retry."""


class Place(NamedTuple):
    """Where the place a question names is: its document, first and last page, and the figure or
    table label it was named by ("figure 3"; "" for a page)."""

    doc_id: str
    first: int
    last: int
    label: str = ""


class Ranked(NamedTuple):
    hits: list[ScoredChunk]
    rerank_error: RerankFailure | None = None
    """Why the re-ranker was passed over (the hits keep the fused order)."""
    names: NameMatch | None = None
    """The documents the question names (None with names off or documents chosen by filter)."""
    place: Place | None = None
    """Where the place the question names ("on page 17", "Figure 3") was found: its hits come
    first."""
    mates: tuple[ScoredChunk, ...] = ()
    """The other fused candidates on the hits' pages, best first: a page takes one place in the
    hits, and what answers on it can be its second chunk (a table under the paragraph that
    speaks of it)."""


def _holds_caption(chunk: Chunk, label: str) -> bool:
    """Whether a line of the chunk opens a caption with that label ("figure 3")."""
    return any(captions(chunk.text[ln.start : ln.end], label) for ln in chunk.lines)


def rerank(
    reranker: Reranker, question: str, found: list[ScoredChunk], candidates: int
) -> list[ScoredChunk]:
    """The first `candidates` distinct chunks of `found` in the re-ranker's order, scored by the
    logistic of its score, then the rest below them in their fused order; RerankError as raised."""
    head: list[ScoredChunk] = []
    seen: set[tuple[str, str]] = set()
    for hit in found:
        key = (hit.chunk.doc_id, hit.chunk.chunk_id)
        if key not in seen and len(head) < candidates:
            seen.add(key)
            head.append(hit)
    if not head:
        return found
    scores = [sigmoid(v) for v in reranker.score(question, [h.chunk.embed_text for h in head])]
    order = sorted(range(len(head)), key=lambda i: -scores[i])
    ranked = [head[i].model_copy(update={"score": scores[i]}) for i in order]
    rest = [h for h in found if (h.chunk.doc_id, h.chunk.chunk_id) not in seen]
    top = max((h.score for h in rest), default=0.0)
    floor = min(scores)
    tail = [h.model_copy(update={"score": floor * h.score / top if top > 0 else 0.0}) for h in rest]
    return ranked + tail


def search_filter(req: QueryRequest) -> SearchFilter | None:
    """The store filter a request asks for, or None when it asks for none."""
    if req.page_from is not None and req.page_to is not None and req.page_from > req.page_to:
        raise InvalidQueryError(f"page_from {req.page_from} is after page_to {req.page_to}")
    if req.doc_ids is None and req.page_from is None and req.page_to is None:
        return None
    return SearchFilter(doc_ids=req.doc_ids, page_from=req.page_from, page_to=req.page_to)


def to_hit(scored: ScoredChunk) -> Hit:
    """The public view of a search result."""
    chunk = scored.chunk
    return Hit(
        doc_id=chunk.doc_id,
        source=chunk.source,
        page=chunk.page,
        regions=chunk.regions,
        text=chunk.text,
        score=scored.score,
        chunk_id=chunk.chunk_id,
        section_path=chunk.section_path,
    )


def _chunk_key(hit: ScoredChunk) -> tuple[str, str]:
    return hit.chunk.doc_id, hit.chunk.chunk_id


def _distinct(
    scored: list[ScoredChunk], limit: int, key: Callable[[ScoredChunk], Hashable]
) -> list[ScoredChunk]:
    seen: set[Hashable] = set()
    kept = []
    for hit in scored:
        if (k := key(hit)) not in seen:
            seen.add(k)
            kept.append(hit)
            if len(kept) == limit:
                break
    return kept


def distinct_pages(scored: list[ScoredChunk], limit: int) -> list[ScoredChunk]:
    """The best chunk of each page, best first, at most `limit` of them; when the candidates
    hold fewer pages than that (a search held to one page, a small index), their next best
    chunks follow, so a search still returns `limit` hits where it can."""
    best = _distinct(scored, limit, lambda hit: (hit.chunk.doc_id, hit.chunk.page))
    if len(best) == limit:
        return best
    return _distinct([*best, *scored], limit, _chunk_key)


def page_mates(hits: list[ScoredChunk], candidates: list[ScoredChunk]) -> tuple[ScoredChunk, ...]:
    """The `candidates` that are not hits but lie on a hit's page, once each, in their order."""
    pages = {(hit.chunk.doc_id, hit.chunk.page) for hit in hits}
    taken = {_chunk_key(hit) for hit in hits}
    on_pages = [
        c
        for c in candidates
        if (c.chunk.doc_id, c.chunk.page) in pages and _chunk_key(c) not in taken
    ]
    return tuple(_distinct(on_pages, len(on_pages), _chunk_key))


class Searcher:
    """Hybrid search (dense and lexical, fused by Qdrant); `lexical=False` searches the dense
    vectors alone.

    With `page_hits` (the default) a search returns the best chunk of each page, from `overfetch`
    times as many fused candidates: a page whose table or text is split into several chunks then
    takes one place in the results, not five (measured in docs/benchmarks.md); other chunks of
    the pages found fill the results only when there are fewer pages than asked for.

    With `names` (doc_id -> file name of the indexed documents), a question that names documents
    ("3M's FY2018 capex") is searched within them alone, provided the plain search finds one of
    them among its first chunks too: another company's page never answers it, even when the named
    file has fewer pages than hits are asked for; a request's own `doc_ids` filter turns this off.

    With a `reranker` (a cross-encoder, local or a service), the first `rerank_candidates` fused
    chunks are put in its order before the best chunk of each page is taken; when it fails they
    keep the fused order and `ranked` says why.
    """

    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        *,
        lexical: bool = True,
        page_hits: bool = True,
        overfetch: int = 4,
        names: NamedDocuments | None = None,
        reranker: Reranker | None = None,
        rerank_candidates: int = 20,
    ) -> None:
        if embedder.dim != store.dim:
            raise ValueError(f"embedder dim {embedder.dim} != store dim {store.dim}")
        self.embedder = embedder
        self.store = store
        self.lexical = lexical
        self.page_hits = page_hits
        self.overfetch = max(1, overfetch)
        self.names = names
        self.reranker = reranker
        self.rerank_candidates = max(1, rerank_candidates)

    def search(
        self, question: str, top_k: int, flt: SearchFilter | None = None
    ) -> list[ScoredChunk]:
        """The `top_k` best chunks for the question, best first."""
        return self.ranked(question, top_k, flt).hits

    def ranked(self, question: str, top_k: int, flt: SearchFilter | None = None) -> Ranked:
        """The `top_k` best chunks for the question, best first, and the re-ranker's failure."""
        vector = self.embedder.embed_query(question)
        text = question if self.lexical else None
        fetch = top_k if not self.page_hits else min(_MAX_FETCH, top_k * self.overfetch)
        if self.names is not None:
            fetch = max(fetch, _AGREEMENT_WINDOW)
        if self.reranker is not None:
            fetch = max(fetch, self.rerank_candidates)
        found = self.store.search(vector, fetch, flt, text=text)
        names = self.match(question, flt)
        if names is not None and names.doc_ids:
            # within them alone, with the whole question: its name words still rank the pages
            # that print the name (a filing's statements head "NIKE, Inc."; docs/benchmarks.md)
            narrowed = (flt or SearchFilter()).model_copy(update={"doc_ids": names.doc_ids})
            if self._agrees(narrowed, found):
                found = self.store.search(vector, fetch, narrowed, text=text)
        there: list[ScoredChunk] = []
        place = None
        if flt is None or (flt.page_from is None and flt.page_to is None):
            there, place = self._at_place(
                question, found, flt, lambda f: self.store.search(vector, fetch, f, text=text)
            )
        found = [hit for hit in found if hit.chunk.kind != CARD_KIND]  # routing, never a hit
        there = [hit for hit in there if hit.chunk.kind != CARD_KIND]  # boxed on the first page
        failure = None
        if self.reranker is not None:
            try:
                found = rerank(self.reranker, question, found, self.rerank_candidates)
            except RerankError as exc:
                logger.warning("re-ranking failed, fused order kept: %s: %s", exc.code, exc)
                failure = RerankFailure(code=exc.code, message=exc.message)
        # the place's first chunks, not only its best one: the question asks about that page
        first = _distinct(there, min(top_k, _PLACE_HITS), _chunk_key)
        taken = {_chunk_key(hit) for hit in first}
        found = [hit for hit in found if _chunk_key(hit) not in taken]
        rest = top_k - len(first)
        if rest <= 0:
            return Ranked(first, failure, names, place)
        if not self.page_hits:
            return Ranked(first + _distinct(found, rest, _chunk_key), failure, names, place)
        hits = first + distinct_pages(found, rest)
        return Ranked(hits, failure, names, place, page_mates(hits, [*there, *found]))

    def _at_place(
        self,
        question: str,
        found: list[ScoredChunk],
        flt: SearchFilter | None,
        search: Callable[[SearchFilter], list[ScoredChunk]],
    ) -> tuple[list[ScoredChunk], Place | None]:
        """The hits of the place the question names, and where that is: in the first of the
        search's documents that has it (a figure's caption, a page as it prints its numbers),
        searched within its pages; none when it names none or none has it."""
        ref = page_ref(question)
        if ref is None:
            return [], None
        for doc_id in dict.fromkeys(hit.chunk.doc_id for hit in found[:_AGREEMENT_WINDOW]):
            card = self.names.card(doc_id) if self.names is not None else None
            pages = ref.pages(card.contents if card is not None else Contents())
            if pages is None:
                continue
            within = (flt or SearchFilter()).model_copy(
                update={"doc_ids": [doc_id], "page_from": pages[0], "page_to": pages[1]}
            )
            if there := search(within):
                if ref.label:  # the chunk holding the caption first: the figure is in it
                    there.sort(key=lambda hit: not _holds_caption(hit.chunk, ref.label))
                return there, Place(doc_id, *pages, ref.label)
        return [], None

    @staticmethod
    def _agrees(named: SearchFilter, found: list[ScoredChunk]) -> bool:
        """Whether the plain search also finds a named document among its first chunks (its card
        point counts): a name the content does not back ("China's largest cloud provider" beside
        `US-Views-on-China`) is ignored."""
        wanted = set(named.doc_ids or ())
        return any(hit.chunk.doc_id in wanted for hit in found[:_AGREEMENT_WINDOW])

    def match(self, question: str, flt: SearchFilter | None) -> NameMatch | None:
        """The documents the question names, unless names are off or the caller chose
        documents."""
        if self.names is None or (flt is not None and flt.doc_ids):
            return None
        return self.names.match(question)
