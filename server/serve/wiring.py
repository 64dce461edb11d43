"""What the API puts around its routes: errors, auth, CORS, limits, metrics, exports, OpenAPI.

With an API key, `app.state.links` signs citation links (`deps.Links`); None without one.

Middleware, outermost first: CORS (answers preflights, adds headers to every answer, 401s
included) -> metrics (every request, by route template and status) -> API key -> body size
(413 before an oversized body is read) -> catch-all (an unhandled exception becomes a logged 500
in the error shape) -> FastAPI's routing.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from server.http.errors import CatchAllMiddleware, install_error_handlers
from server.http.limits import QUERY_LIMITS, BodyLimitMiddleware
from server.http.metrics import Metrics, MetricsMiddleware
from server.http.metrics import router as metrics_router
from server.http.openapi import install_openapi
from server.http.security import ApiKeyMiddleware
from server.routes.exports import router as exports_router
from server.services import Services
from server.shelf import Answering

__all__ = ["QUERY_LIMITS", "install_api"]


def install_api(app: FastAPI, services: Answering) -> Metrics:
    """Error shape, exports (a coordinator's), metrics, OpenAPI and middleware on `app`; returns
    its metrics (subscribe them to ingest events with `metrics.watch(services.events)`)."""
    settings = services.settings
    install_error_handlers(app)
    if isinstance(services, Services):  # a query replica holds no ledger to export from
        app.include_router(exports_router, tags=["exports"])
    app.include_router(metrics_router, tags=["metrics"])
    install_openapi(app, settings)
    metrics = Metrics(services)
    app.state.metrics = metrics
    links = settings.link_signer()
    app.state.links = links
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(BodyLimitMiddleware, max_upload_mb=settings.max_upload_mb)
    if settings.api_key is not None:
        app.add_middleware(
            ApiKeyMiddleware, api_key=settings.api_key.get_secret_value(), links=links
        )
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            expose_headers=["Content-Disposition", "WWW-Authenticate"],
            max_age=600,
        )
    return metrics
