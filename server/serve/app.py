"""The FastAPI app, assembled: the routes of server/routes, the API's edges (server/wiring), the
MCP endpoint, and the lifespan that runs the ingest worker and the folder watcher."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from ingest.ledger import DocStatus
from ingest.pipeline import EventKind
from ingest.sync import FolderWatcher, IngestWorker
from server.http.deps import page_renderer
from server.http.shutdown import Stopping
from server.routes.answers import router as answers_router
from server.routes.doc_bytes import router as doc_bytes_router
from server.routes.documents import router as documents_router
from server.routes.extract import router as extract_router
from server.routes.health import router as health_router
from server.routes.ingest import router as ingest_router
from server.routes.pages import router as pages_router
from server.serve.mcp_server import mcp_endpoint
from server.serve.wiring import QUERY_LIMITS, install_api
from server.services import Services, sentence_fill
from server.web.web import router as web_router

log = logging.getLogger(__name__)

_INDEX_CHANGES = (EventKind.finished, EventKind.removed)  # what the sentence filler looks at
DOCS_ASSETS = "/static/docs"  # under /static/: open without the API key, as the web page is


def _held(totals: dict[DocStatus, int]) -> str:
    """A ledger's documents in words, by status: "4 documents (3 ok, 1 failed)"."""
    count = sum(totals.values())
    by_status = ", ".join(f"{n} {status.value}" for status, n in totals.items() if n)
    return f"{count} document{'s' if count != 1 else ''}" + (f" ({by_status})" if by_status else "")


@contextmanager
def _background_work(app: FastAPI, services: Services, *, watch: bool) -> Iterator[None]:
    """The ingest worker, the sentence filler (when configured) and the folder watcher (with
    `watch` and a folder), running while the app serves."""
    settings = services.settings
    worker = IngestWorker(services.sync)
    app.state.worker = worker
    worker.start()
    fill = app.state.sentence_fill = sentence_fill(services)
    unfill = services.events.subscribe(
        lambda e: fill.wake(e.doc_id) if fill is not None and e.kind in _INDEX_CHANGES else None
    )
    if fill is not None:
        fill.start()
    watcher = None
    if watch and settings.watch_dir is not None:
        watcher = FolderWatcher(
            settings.watch_dir,
            services.sync,
            wake=worker.wake,
            settle=settings.watch_settle_seconds,
        )
        watcher.start()
        log.info("watching %s", settings.watch_dir)
    try:
        yield
    finally:
        if watcher is not None:
            watcher.stop()
        unfill()
        if fill is not None:
            fill.stop()
        worker.stop()


def create_app(services: Services, *, watch: bool = True) -> FastAPI:
    """The app over ready-made services; with `watch`, the configured folder is watched."""
    settings = services.settings
    renderer = page_renderer(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services.sync.recover()
        log.info("the ledger holds %s", _held(services.ledger.status_totals()))
        unwatch = metrics.watch(services.events)
        try:
            with _background_work(app, services, watch=watch):
                async with mcp.session_manager.run():
                    yield
        finally:
            unwatch()

    app = FastAPIOffline(  # /docs and /redoc with their scripts served from a package, no CDN
        title="folio",
        version="0.1.0",
        lifespan=lifespan,
        static_url=DOCS_ASSETS,
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from the validator
    )
    app.state.services = services
    app.state.stopping = Stopping()
    app.include_router(documents_router)
    app.include_router(ingest_router)
    app.include_router(answers_router, dependencies=[QUERY_LIMITS])
    app.state.renderer = renderer
    app.include_router(pages_router)
    app.include_router(health_router)
    app.include_router(extract_router)
    app.include_router(web_router)
    app.include_router(doc_bytes_router)  # workers' fetches of stored copies (a token each)
    mcp = mcp_endpoint(services, renderer)  # streamable HTTP at /mcp, behind the API key
    app.router.routes.extend(mcp.routes)

    metrics = install_api(app, services)

    return app
