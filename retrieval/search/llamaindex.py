"""folio as a LlamaIndex retriever: hybrid search over a folio index, nodes that cite regions.

Needs `llama-index-core` (folio's `eval` extra installs it); nothing else in folio imports this
module, so folio runs without it.

    from retrieval.search.llamaindex import FolioRetriever
    from server.services import build_services
    from server.settings import Settings

    services = build_services(Settings(data_dir="data"))  # holds the data directory's lock
    retriever = FolioRetriever(services.retriever, top_k=5)  # the search `POST /query` runs
    for hit in retriever.retrieve("What were capital expenditures in 2018?"):
        print(hit.score, hit.node.metadata["page"], hit.node.metadata["highlight_url"])
    services.close()

The retriever is always the one `build_services` makes (documents a question names searched
first, the same fusion and page hits), so a notebook finds what the API and the CLI find.

Each `NodeWithScore` holds the chunk text; its metadata carries `doc_id`, `source`, `page`,
`bbox` (the lines that best support the question, on `page`), `regions` (every region of those
lines, one per page, as `{"page", "bbox"}`), `highlight_url` (the page image with those lines
drawn, relative to folio's API unless `base_url` is given), `section_path`, `chunk_id` and `kind`.
Only the source and the section trail reach an LLM or an embedding model; the rest is kept out.
"""

from __future__ import annotations

import asyncio

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from retrieval.schema import ScoredChunk, SearchFilter
from retrieval.search.evidence import locate, supporting_lines
from retrieval.search.search import Searcher

__all__ = ["FolioRetriever"]

_HIDDEN = ["doc_id", "page", "bbox", "regions", "highlight_url", "chunk_id", "kind"]


class FolioRetriever(BaseRetriever):
    """Retrieves folio chunks as LlamaIndex nodes, best first, with their evidence regions."""

    def __init__(
        self,
        retriever: Searcher,
        *,
        top_k: int = 5,
        doc_ids: list[str] | None = None,
        page_from: int | None = None,
        page_to: int | None = None,
        base_url: str = "",
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        self.folio = retriever
        self.top_k = top_k
        self.filter = (
            SearchFilter(doc_ids=doc_ids, page_from=page_from, page_to=page_to)
            if doc_ids is not None or page_from is not None or page_to is not None
            else None
        )
        self.base_url = base_url.rstrip("/")
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = query_bundle.query_str
        hits = self.folio.search(question, self.top_k, self.filter)
        return [self._node(hit, question) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def _node(self, hit: ScoredChunk, question: str) -> NodeWithScore:
        chunk = hit.chunk
        where = locate(chunk, supporting_lines(chunk, question))
        metadata = {
            "doc_id": chunk.doc_id,
            "source": chunk.source,
            "page": where.page,
            "bbox": list(where.bbox),
            "regions": [{"page": r.page, "bbox": list(r.bbox)} for r in where.regions],
            "highlight_url": self.base_url + where.highlight_url(chunk.doc_id),
            "section_path": " > ".join(chunk.section_path),
            "chunk_id": chunk.chunk_id,
            "kind": chunk.kind,
        }
        node = TextNode(
            id_=chunk.point_id,
            text=chunk.text,
            metadata=metadata,
            excluded_embed_metadata_keys=list(_HIDDEN),
            excluded_llm_metadata_keys=list(_HIDDEN),
        )
        return NodeWithScore(node=node, score=hit.score)
