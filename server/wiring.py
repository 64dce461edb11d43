"""What the API puts around its routes: errors, auth, CORS, limits, metrics, exports, OpenAPI.

Middleware, outermost first: CORS (answers preflights, adds headers to every answer, 401s
included) -> metrics (every request, by route template and status) -> API key -> catch-all (an
unhandled exception becomes a logged 500 in the error shape) -> FastAPI's routing.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Depends, FastAPI, Request
from starlette.middleware.cors import CORSMiddleware

from server.deps import ApiError, Svc
from server.errors import CatchAllMiddleware, install_error_handlers
from server.exports_api import router as exports_router
from server.metrics import Metrics, MetricsMiddleware
from server.metrics import router as metrics_router
from server.openapi import install_openapi
from server.security import ApiKeyMiddleware
from server.services import Services

__all__ = ["QUERY_LIMITS", "install_api", "query_limits"]


async def query_limits(request: Request, svc: Svc) -> None:
    """422 when a query's question or top_k exceeds the configured limits.

    A router dependency (so every query route gets it without repeating it): it reads the
    JSON body FastAPI has already parsed and cached on the request; the body's shape is
    validated by the route's own model."""
    try:
        body: Any = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return
    if not isinstance(body, dict):
        return
    settings = svc.settings
    question, top_k = body.get("question"), body.get("top_k")
    if isinstance(question, str) and len(question) > settings.max_question_chars:
        raise ApiError(
            422,
            "question_too_long",
            f"the question has {len(question)} characters; at most "
            f"{settings.max_question_chars} are accepted",
        )
    if isinstance(top_k, int) and top_k > settings.max_top_k:
        raise ApiError(422, "top_k_too_large", f"top_k must be <= {settings.max_top_k}")


QUERY_LIMITS = Depends(query_limits)


def install_api(app: FastAPI, services: Services) -> Metrics:
    """Error shape, exports, metrics, OpenAPI and middleware on `app`; returns its metrics
    (subscribe them to ingest events with `metrics.watch(services.events)` while it runs)."""
    settings = services.settings
    install_error_handlers(app)
    app.include_router(exports_router, tags=["exports"])
    app.include_router(metrics_router, tags=["metrics"])
    install_openapi(app, settings)
    metrics = Metrics(services)
    app.state.metrics = metrics
    app.add_middleware(CatchAllMiddleware)
    if settings.api_key is not None:
        app.add_middleware(ApiKeyMiddleware, api_key=settings.api_key.get_secret_value())
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
