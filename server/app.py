"""The FastAPI app: query, documents, page images with highlights, health."""

from __future__ import annotations

import html
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import FastAPI, Query
from fastapi.responses import HTMLResponse, Response
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field

from ingest.records import DocStatus, DocumentRecord, PageRecord
from ingest.watcher import FolderWatcher
from ingest.worker import IngestWorker
from retrieval.links import page_image_url, parse_boxes
from retrieval.store import StoreError
from server.answers_api import router as answers_router
from server.crops import router as crops_router
from server.deps import (
    ApiError,
    DocId,
    Links,
    PageNumber,
    Svc,
    page_record_or_404,
    page_renderer,
    png_response,
    record_or_404,
    render_dpi,
    rendering_errors,
)
from server.documents_api import router as documents_router
from server.extract_api import router as extract_router
from server.ingest_api import router as ingest_router
from server.mcp_server import mcp_endpoint
from server.services import Services
from server.shutdown import Stopping
from server.web import router as web_router
from server.wiring import QUERY_LIMITS, install_api

log = logging.getLogger(__name__)

DOCS_ASSETS = "/static/docs"  # under /static/: open without the API key, as the web page is


class DocumentDetail(DocumentRecord):
    page_summaries: list[PageRecord] = Field(default_factory=list)


class Health(BaseModel):
    status: str = Field(description="ok, or error when the index cannot be written")
    documents: int
    points: int
    reason: str | None = Field(default=None, description="why the status is error")


def create_app(services: Services, *, watch: bool = True) -> FastAPI:
    """The app over ready-made services; with `watch`, the configured folder is watched."""
    settings = services.settings
    renderer = page_renderer(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services.sync.recover()
        unwatch = metrics.watch(services.events)
        worker = IngestWorker(services.sync)
        app.state.worker = worker
        worker.start()
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
            async with mcp.session_manager.run():
                yield
        finally:
            if watcher is not None:
                watcher.stop()
            worker.stop()
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
    app.include_router(crops_router)
    app.include_router(extract_router)
    app.include_router(web_router)
    mcp = mcp_endpoint(services, renderer)  # streamable HTTP at /mcp, behind the API key
    app.router.routes.extend(mcp.routes)

    metrics = install_api(app, services)

    @app.get("/health", responses={503: {"model": Health}})
    def health(svc: Svc, response: Response) -> Health:
        """ok, or 503 with the reason when the index failed its latest write or cannot be read."""
        documents = svc.ledger.count()
        try:
            points = svc.store.count()
        except StoreError as exc:
            response.status_code = 503
            return Health(status="error", documents=documents, points=0, reason=str(exc))
        if (failed := svc.store.write_error) is not None:
            response.status_code = 503
            reason = f"the index failed its latest write: {failed}"
            return Health(status="error", documents=documents, points=points, reason=reason)
        return Health(status="ok", documents=documents, points=points)

    @app.get("/documents")
    def documents(svc: Svc, status: DocStatus | None = None) -> list[DocumentRecord]:
        """Every document the ledger knows, oldest first; `?status=failed` lists the failures."""
        return svc.ledger.documents(status)

    @app.get("/documents/{doc_id}")
    def document(doc_id: DocId, svc: Svc) -> DocumentDetail:
        """One document with a record per page read so far (engine, route, status, errors)."""
        record = record_or_404(svc, doc_id)
        return DocumentDetail(**record.model_dump(), page_summaries=svc.ledger.pages(doc_id))

    @app.get(
        "/documents/{doc_id}/pages/{n}.png",
        response_class=Response,
        responses={
            200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}
        },
    )
    def page_image(
        doc_id: DocId,
        n: PageNumber,
        svc: Svc,
        highlight: Annotated[str | None, Query(max_length=4000)] = None,
        dpi: Annotated[int | None, Query(ge=36)] = None,
    ) -> Response:
        """Page `n` as PNG with `highlight` boxes drawn; a page too large for the dpi within
        FOLIO_MAX_RENDER_PIXELS is rendered at less, said in `X-Folio-Render-Dpi`."""
        page_record_or_404(svc, doc_id, n)
        use_dpi = render_dpi(svc, dpi, settings.render_dpi)
        with rendering_errors(doc_id, "invalid_highlight"):
            boxes = parse_boxes(highlight)
            render = renderer.render(svc.files.pdf_path(doc_id), n, use_dpi)
            return png_response(render, boxes)

    @app.get("/documents/{doc_id}/pages/{n}/view", response_class=HTMLResponse)
    def page_view(
        doc_id: DocId,
        n: PageNumber,
        svc: Svc,
        links: Links,
        highlight: Annotated[str | None, Query(max_length=4000)] = None,
        exp: Annotated[int | None, Query(description="a signed link's expiry")] = None,
    ) -> HTMLResponse:
        """The page image in an HTML page; with an API key its image link is signed (to expire
        with this page's own signed link), since the page is opened as a link."""
        record = page_record_or_404(svc, doc_id, n)
        try:
            image = page_image_url(doc_id, n, parse_boxes(highlight))
        except ValueError as exc:
            raise ApiError(422, "invalid_highlight", str(exc)) from None
        if links is not None:
            expires = links.expiry() if exp is None else min(exp, links.expiry())
            image = links.sign(image, expires=expires)
        title = html.escape(f"{record.source} — page {n}")
        body = (
            f"<!doctype html><meta charset=utf-8><title>{title}</title>"
            f"<h1 style='font:16px sans-serif'>{title}</h1>"
            f"<img style='max-width:100%;border:1px solid #ccc' alt='{title}' "
            f"src='{html.escape(image)}'>"
        )
        return HTMLResponse(body)

    return app
