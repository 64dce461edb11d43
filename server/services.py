"""Builds the long-lived objects of a running folio: catalog, embedder, store, ingestor."""

from __future__ import annotations

from dataclasses import dataclass

from ingest.catalog import Catalog
from ingest.pipeline import IngestOptions, Ingestor
from retrieval.edge_store import EdgeStore
from retrieval.embedder import Embedder, SentenceTransformerEmbedder
from retrieval.search import Retriever
from retrieval.store import VectorStore
from server.settings import Settings


@dataclass
class Services:
    settings: Settings
    catalog: Catalog
    embedder: Embedder
    store: VectorStore
    ingestor: Ingestor
    retriever: Retriever

    def close(self) -> None:
        self.store.close()


def open_store(settings: Settings, dim: int) -> VectorStore:
    """The Qdrant server when FOLIO_QDRANT_URL is set, else Qdrant Edge under the data dir."""
    if settings.qdrant_url is None:
        return EdgeStore(settings.data_dir / "index", dim=dim)
    from retrieval.qdrant_store import QdrantServerStore  # qdrant-client takes seconds to import

    api_key = settings.qdrant_api_key
    return QdrantServerStore(
        settings.qdrant_url,
        dim=dim,
        collection=settings.qdrant_collection,
        api_key=api_key.get_secret_value() if api_key is not None else None,
        timeout_s=settings.qdrant_timeout_s,
    )


def build_services(settings: Settings) -> Services:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    catalog = Catalog(settings.data_dir)
    embedder = SentenceTransformerEmbedder(batch_size=settings.embed_batch_size)
    store = open_store(settings, embedder.dim)
    options = IngestOptions(
        max_tokens=settings.max_tokens, embed_batch_size=settings.embed_batch_size
    )
    return Services(
        settings=settings,
        catalog=catalog,
        embedder=embedder,
        store=store,
        ingestor=Ingestor(catalog, embedder, store, options),
        retriever=Retriever(embedder, store),
    )
