"""Builds the long-lived objects of a running folio: ledger, embedder, store, ingest pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ingest.ledger import DocumentFiles, Ledger
from ingest.pipeline import (
    EMBED_CACHE_FILE,
    PAGE_CACHE_FILE,
    PASSWORDS_FILE,
    EmbeddingCache,
    EventHub,
    IngestOptions,
    Ingestor,
    SqlitePageCache,
)
from ingest.queue import DocSources, DocTokens
from ingest.sync import Sync
from ocr_engine.schema import Page
from retrieval.answer import (
    AnswerTextsAhead,
    PageLayouts,
    RememberingEmbedder,
    Retriever,
    SentenceFill,
    min_support_for,
)
from retrieval.index import (
    EdgeStore,
    Embedder,
    EmbedServiceOptions,
    HttpEmbedder,
    IndexModel,
    OnnxEmbedder,
    QdrantCluster,
    SentenceTransformerEmbedder,
    VectorStore,
    check_edge_model,
    precheck_edge_model,
)
from retrieval.search import DocumentCatalog, HttpReranker, NamedDocuments, build_reranker
from server.datadir import DataDirLock
from server.settings import Settings, local_url
from server.shelf import LedgerShelf

VLLM_WAVES_PER_WINDOW = 8
SENTENCE_CACHE_FILE = "sentence_cache.sqlite3"


@dataclass
class Services:
    settings: Settings
    ledger: Ledger
    files: DocumentFiles
    embedder: Embedder
    store: VectorStore
    events: EventHub
    ingestor: Ingestor
    sync: Sync
    retriever: Retriever
    lock: DataDirLock

    @property
    def shelf(self) -> LedgerShelf:
        """The documents as the answer and page routes read them: the ledger and its files."""
        return LedgerShelf(self.ledger, self.files)

    def close(self) -> None:
        try:
            self.ingestor.close()
            self.store.close()
            self.ledger.close()
            if isinstance(self.embedder, HttpEmbedder):
                self.embedder.close()
            if isinstance(self.retriever.reranker, HttpReranker):
                self.retriever.reranker.close()
            remembering = self.retriever.embedder
            if isinstance(remembering, RememberingEmbedder) and remembering.cache is not None:
                remembering.cache.close()
        finally:
            self.lock.release()


def build_embedder(settings: Settings) -> Embedder:
    """The embeddings endpoint when FOLIO_EMBED_URL is set, else the shipped model in-process."""
    if settings.embed_url is None and settings.embedder == "bge-small":
        return OnnxEmbedder(batch_size=settings.embed_batch_size)
    if settings.embed_url is None:
        return SentenceTransformerEmbedder(batch_size=settings.embed_batch_size)
    assert settings.embed_model is not None  # the settings refuse a URL without a model
    return HttpEmbedder(
        EmbedServiceOptions(
            url=settings.embed_url,
            model=settings.embed_model,
            api_key=settings.embed_api_key,
            batch_size=settings.embed_batch_size,
            max_in_flight=settings.embed_max_in_flight,
            timeout_s=settings.embed_timeout_s,
            tokenizer=settings.embed_tokenizer,
        )
    )


def open_store(settings: Settings, dim: int, *, model: str | None = None) -> VectorStore:
    """The Qdrant server when FOLIO_QDRANT_URL is set, else Qdrant Edge under the data dir; given
    `model`, the index's recorded embedding model must be it (EmbedderMismatchError names both)."""
    if settings.qdrant_url is None:
        index = settings.data_dir / "index"
        wanted = IndexModel(model=model, dim=dim) if model is not None else None
        if wanted is not None:
            precheck_edge_model(index, wanted)
        store = EdgeStore(index, dim=dim)
        if wanted is None:
            return store
        try:
            check_edge_model(index, wanted, empty=store.count() == 0)
        except BaseException:
            store.close()
            raise
        return store
    from retrieval.index import (
        QdrantServerStore,  # qdrant-client takes seconds to import
    )

    api_key = settings.qdrant_api_key
    return QdrantServerStore(
        settings.qdrant_url,
        dim=dim,
        collection=settings.qdrant_collection,
        api_key=api_key.get_secret_value() if api_key is not None else None,
        timeout_s=settings.qdrant_timeout_s,
        model=model,
        cluster=QdrantCluster(
            shards=settings.qdrant_shards,
            replicas=settings.qdrant_replicas,
            write_consistency=settings.qdrant_write_consistency,
            ordering=settings.qdrant_write_ordering,
        ),
    )


class PageSource(Protocol):
    """Where the documents' JSON is read a page at a time (`DocumentFiles`, a replica's shelf)."""

    def page(self, doc_id: str, number: int) -> Page: ...


def build_retriever(
    settings: Settings,
    embedder: Embedder,
    store: VectorStore,
    catalog: DocumentCatalog,
    files: PageSource | None = None,
    *,
    sentence_cache: Path | None = None,
) -> Retriever:
    """The one search of a running folio: what `POST /query`, `folio query`, MCP and LlamaIndex's
    `FolioRetriever` all use (documents a question names come from `catalog`: the ledger, or a
    replica's card map; table cells, and the figures and tables that cited titles name, boxed
    from the documents' JSON, given `files`; re-ranked as FOLIO_RERANK says, answer candidates
    judged as FOLIO_ANSWER_JUDGE says; answer sentences' vectors kept in `sentence_cache`
    (DATA_DIR/sentence_cache.sqlite3 unless given), the last questions' in memory)."""
    rerank = settings.rerank_options()
    judge = settings.rerank_options(settings.answer_judge)
    cache = EmbeddingCache(sentence_cache or settings.data_dir / SENTENCE_CACHE_FILE)
    return Retriever(
        RememberingEmbedder(embedder, cache),
        store,
        names=NamedDocuments(catalog.named),
        dense_sentences=settings.answer_dense_sentences,
        layout=PageLayouts(files.page) if files is not None else None,
        reranker=build_reranker(rerank) if rerank is not None else None,
        rerank_candidates=rerank.candidates if rerank is not None else 20,
        answer_judge=build_reranker(judge) if judge is not None else None,
        min_support=min_support_for(embedder.name),
    )


def sentence_fill(services: Services) -> SentenceFill | None:
    """With FOLIO_ANSWER_SENTENCES=idle, the filler of the query path's sentence cache: it works
    while no query and no ingest runs, and looks again when a document is indexed or removed."""
    remembering = services.retriever.embedder
    if services.settings.answer_sentences != "idle":
        return None
    if not isinstance(remembering, RememberingEmbedder) or remembering.cache is None:
        return None
    return SentenceFill(services.store, remembering, busy=lambda: services.sync.busy)


def ingest_options(settings: Settings) -> IngestOptions:
    extract = settings.extract_options()
    window = IngestOptions().window
    if extract.vllm is not None:  # whole waves of requests: the endpoint idles between windows
        window = max(window, VLLM_WAVES_PER_WINDOW * extract.vllm.max_in_flight)
    return IngestOptions(
        max_tokens=settings.max_tokens,
        extract=extract,
        window=window,
        extract_processes=settings.extract_processes,
        passwords_file=settings.passwords_file or settings.data_dir / PASSWORDS_FILE,
    )


def _read_through_queue(settings: Settings, ingestor: Ingestor) -> None:
    """Page windows go to `folio worker`s through the broker (FOLIO_BROKER_URL); the rest of the
    pipeline is unchanged. BrokerUnavailableError, naming the URL, when it cannot be reached."""
    from ingest.queue import QueueExtractor, connect  # dramatiq only when asked for

    assert settings.broker_url is not None
    broker, backend = connect(settings.broker_url, heartbeat_s=settings.broker_heartbeat_s)
    options = ingestor.options
    window = min(options.extract_window or settings.broker_window, settings.broker_window)
    ingestor.options = options.model_copy(
        update={"extract_window": window, "prefetch": max(options.prefetch, 8)}
    )
    ingestor.extractor.close()  # its pool was never started
    ingestor.extractor = QueueExtractor(
        options.extract,
        broker,
        backend,
        limits=options.limits,
        unit_timeout_s=settings.broker_unit_timeout_s,
        sources=doc_sources(settings),
    )


def doc_sources(settings: Settings) -> DocSources:
    """Where units say their documents' bytes are: this coordinator's API (FOLIO_PUBLIC_URL, a
    token each, valid while a unit may wait) and the object store (FOLIO_OBJECT_STORE_URL,
    checked now: ObjectStoreError names a missing bucket or refused credentials)."""

    store = None
    if settings.object_store_url is not None:
        from ingest.queue import ObjectStore

        store = ObjectStore(settings.object_store_url)
        store.check()
    return DocSources(
        public_url=settings.public_url or local_url(settings.host, settings.port),
        tokens=DocTokens.for_data_dir(settings.data_dir),
        ttl_s=settings.broker_unit_timeout_s + 300.0,
        store=store,
    )


def build_services(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    options: IngestOptions | None = None,
    command: str = "serve",
) -> Services:
    """Everything a running folio needs; `embedder` and `options` replace the configured ones.

    The data directory's lock is taken first, before any file of the index or the ledger is
    opened; DataDirBusyError names the process that holds it."""
    lock = DataDirLock(settings.data_dir, command).acquire()
    try:
        return _build(settings, lock, embedder, options)
    except BaseException:
        lock.release()
        raise


def _build(
    settings: Settings,
    lock: DataDirLock,
    embedder: Embedder | None,
    options: IngestOptions | None,
) -> Services:
    embedder = embedder or build_embedder(settings)
    try:
        store = open_store(settings, embedder.dim, model=embedder.name)
    except BaseException:
        if isinstance(embedder, HttpEmbedder):
            embedder.close()
        raise
    ledger = Ledger(settings.data_dir)
    files = DocumentFiles(settings.data_dir)
    events = EventHub()
    cache_path = settings.data_dir / PAGE_CACHE_FILE
    sentences = settings.data_dir / SENTENCE_CACHE_FILE
    options = options or ingest_options(settings)
    if options.passwords_file is None:
        passwords = settings.passwords_file or settings.data_dir / PASSWORDS_FILE
        options = options.model_copy(update={"passwords_file": passwords})
    ingestor = Ingestor(
        ledger,
        files,
        embedder,
        store,
        options,
        cache_path=cache_path,
        embed_cache=EmbeddingCache(settings.data_dir / EMBED_CACHE_FILE),
        on_embedded=(
            AnswerTextsAhead(embedder, EmbeddingCache(sentences))
            if settings.answer_sentences == "ingest"
            else None
        ),
        events=events,
    )
    if settings.broker_url is not None:
        _read_through_queue(settings, ingestor)
    sync = Sync(
        ledger,
        files,
        store,
        ingestor,
        events=events,
        cache=SqlitePageCache(cache_path),
        reread_older=settings.reread_older,
    )
    return Services(
        settings=settings,
        ledger=ledger,
        files=files,
        embedder=embedder,
        store=store,
        events=events,
        ingestor=ingestor,
        sync=sync,
        retriever=build_retriever(settings, embedder, store, ledger, files),
        lock=lock,
    )
