"""`folio serve --query-only`: a stateless query replica beside a coordinator (docs/scaling.md).

It opens a Qdrant server (FOLIO_QDRANT_URL, required: Qdrant Edge is one process's files) and the
embedder, and answers `/query`, `/query/stream`, page images, crops, viewer pages, the web page
and `/health`; no ledger, no data-directory lock, no ingest worker, watcher or sentence filler.
What answers need of the documents comes from the index's card points (`retrieval.search.card_map`,
polled every FOLIO_REPLICA_POLL_S) and the stored copies and JSON by address
(`server.replica_docs`). A write (POST, PUT, PATCH or DELETE of a route it does not serve) is a
405 naming the coordinator (FOLIO_COORDINATOR_URL). Signed citation links are checked under the
key derived from FOLIO_API_KEY, so a link signed by one replica opens on any.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline

from ocr_engine.errors import BadInputError
from retrieval.answer import PageLayouts, RememberingEmbedder, Retriever
from retrieval.index import Embedder, HttpEmbedder, VectorStore
from retrieval.search import CardMap, CardPoller
from server.http.deps import error_response, page_renderer
from server.http.shutdown import Stopping
from server.replica_docs import ReplicaDocs, ReplicaShelf
from server.routes.answers import router as answers_router
from server.routes.health import router as health_router
from server.routes.pages import router as pages_router
from server.serve.wiring import QUERY_LIMITS, install_api
from server.services import SENTENCE_CACHE_FILE, build_embedder, build_retriever, open_store
from server.settings import Settings
from server.web.web import router as web_router

__all__ = ["Replica", "ReplicaConfigError", "build_replica", "create_query_app", "serve_replica"]

log = logging.getLogger(__name__)

WRITE_METHODS = ["POST", "PUT", "PATCH", "DELETE"]


class ReplicaConfigError(BadInputError):
    """A query replica's settings cannot work (no Qdrant server, no way to read documents)."""


@dataclass
class Replica:
    """The long-lived objects of a query replica (`server.shelf.Answering`)."""

    settings: Settings
    embedder: Embedder
    store: VectorStore
    cards: CardMap
    docs: ReplicaDocs
    shelf: ReplicaShelf
    retriever: Retriever
    cache_dir: Path
    temporary: bool

    def close(self) -> None:
        try:
            self.docs.close()
            self.store.close()
            if isinstance(self.embedder, HttpEmbedder):
                self.embedder.close()
            remembering = self.retriever.embedder
            if isinstance(remembering, RememberingEmbedder) and remembering.cache is not None:
                remembering.cache.close()
        finally:
            if self.temporary:
                shutil.rmtree(self.cache_dir, ignore_errors=True)


def build_replica(settings: Settings, *, embedder: Embedder | None = None) -> Replica:
    """A replica over the Qdrant server at FOLIO_QDRANT_URL, its card map read once;
    ReplicaConfigError naming the setting when one is missing, StoreError when the index
    cannot be read."""
    if settings.qdrant_url is None:
        raise ReplicaConfigError(
            "folio serve --query-only needs a Qdrant server: set FOLIO_QDRANT_URL (qdrant_url) "
            "to the coordinator's; Qdrant Edge is one process's files, not shared"
        )
    shared = settings.data_dir if (settings.data_dir / "documents").is_dir() else None
    if shared is None and settings.coordinator_url is None:
        raise ReplicaConfigError(
            "a query replica reads the documents' JSON and stored copies from the coordinator "
            f"or shared storage: set FOLIO_COORDINATOR_URL, or mount the coordinator's data "
            f"directory and pass it as --data-dir (no {settings.data_dir / 'documents'})"
        )
    temporary = settings.worker_cache_dir is None
    cache_dir = settings.worker_cache_dir or Path(tempfile.mkdtemp(prefix="folio-replica-"))
    embedder = embedder or build_embedder(settings)
    store = open_store(settings, embedder.dim, model=embedder.name)
    try:
        key = settings.api_key
        docs = ReplicaDocs(
            shared=shared,
            cache_root=cache_dir,
            cache_bytes=settings.worker_cache_mb << 20,
            coordinator_url=settings.coordinator_url,
            api_key=key.get_secret_value() if key is not None else None,
            object_store_url=settings.object_store_url,
        )
        cards = CardMap(store)
        cards.poll()
    except BaseException:
        store.close()
        raise
    shelf = ReplicaShelf(cards, docs)
    retriever = build_retriever(
        settings, embedder, store, cards, shelf, sentence_cache=cache_dir / SENTENCE_CACHE_FILE
    )
    cards.on_change = _forgetting(docs, retriever)
    return Replica(
        settings=settings,
        embedder=embedder,
        store=store,
        cards=cards,
        docs=docs,
        shelf=shelf,
        retriever=retriever,
        cache_dir=cache_dir,
        temporary=temporary,
    )


def _forgetting(docs: ReplicaDocs, retriever: Retriever) -> Callable[[list[str]], None]:
    """What a replica does with documents the index says were read again or removed: their
    cached JSON and the page layouts read from it are dropped."""

    def forget(doc_ids: list[str]) -> None:
        docs.forget(doc_ids)
        if isinstance(retriever.layout, PageLayouts):
            retriever.layout.forget(doc_ids)

    return forget


def create_query_app(replica: Replica) -> FastAPI:
    """The replica's app: answers, pages, the web page and health; writes refused."""
    settings = replica.settings
    coordinator = settings.coordinator_url or "the coordinator"

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        poller = CardPoller(replica.cards, settings.replica_poll_s)
        poller.start()
        log.info(
            "query replica: %d documents in the index; cards read every %g s",
            replica.shelf.count(),
            settings.replica_poll_s,
        )
        try:
            yield
        finally:
            poller.stop()

    app = FastAPIOffline(
        title="folio (query replica)",
        version="0.1.0",
        lifespan=lifespan,
        static_url="/static/docs",
        swagger_ui_parameters={"validatorUrl": None},
    )
    app.state.services = replica
    app.state.stopping = Stopping()
    app.state.renderer = page_renderer(settings)
    app.include_router(answers_router, dependencies=[QUERY_LIMITS])
    app.include_router(pages_router)
    app.include_router(health_router)
    app.include_router(web_router)

    @app.api_route("/{path:path}", methods=WRITE_METHODS, include_in_schema=False)
    def refused(path: str, request: Request) -> JSONResponse:
        """Anything that writes goes to the coordinator, the one writer."""
        return error_response(
            405,
            "query_replica",
            f"{request.method} /{path} is not served by a query replica: send it to the "
            f"coordinator at {coordinator}",
            {"Allow": "GET, HEAD"},
        )

    install_api(app, replica)
    return app


def serve_replica(settings: Settings) -> None:
    """Serve a replica until SIGTERM or SIGINT (ReplicaConfigError before anything starts)."""
    from server.http.shutdown import serve

    replica = build_replica(settings)
    replica.embedder.embed_query("warm up")
    serve(create_query_app(replica), host=settings.host, port=settings.port, close=replica.close)
