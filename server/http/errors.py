"""The one JSON error shape, `{"error": {"code", "message"}}`, for every error the API answers.

`ApiError` (raised by routes), Starlette's HTTP errors (unknown route 404, 405, ...), request
validation (422) and any unhandled exception (500 `internal_error`: logged here with its traceback,
which never reaches the client) are all answered in it.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.http.deps import ApiError, error_response, validation_message

__all__ = ["CatchAllMiddleware", "ErrorBody", "ErrorDetail", "install_error_handlers"]

log = logging.getLogger(__name__)

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
}


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    """What every error response holds."""

    error: ErrorDetail


def install_error_handlers(app: FastAPI) -> None:
    """Answer ApiError, HTTP errors and validation errors in the one error shape."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = validation_message(first) if first else "invalid request"
        return error_response(422, "invalid_request", f"{where}: {message}" if where else message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _CODES.get(exc.status_code, "http_error")
        headers = dict(exc.headers) if exc.headers else None
        return error_response(exc.status_code, code, str(exc.detail), headers)


class CatchAllMiddleware:
    """Turns an exception no handler took into a logged 500 in the error shape (no traceback
    leaves the server); an exception after the response began only closes the connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_tracking)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = error_response(500, "internal_error", "internal server error")
            await response(scope, receive, send)
