"""Request limits: the size of any request body, and a query's question length and top_k.

The body limit answers 413 before the body is read when `Content-Length` is over it, and stops a
body sent without one (chunked) as soon as it passes the limit, so an upload larger than
`FOLIO_MAX_UPLOAD_MB` is never spooled to disk whole. The upload route keeps its own per-file
check; this one allows the multipart overhead on top.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Depends, Request
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.http.deps import ApiError, Svc, error_response

__all__ = ["MULTIPART_SLACK", "QUERY_LIMITS", "BodyLimitMiddleware", "query_limits", "too_long"]

MULTIPART_SLACK = 1 << 20  # boundaries, part headers and form fields around the file


class BodyLimitMiddleware:
    """413 in the error shape for a request body over the upload limit (plus the slack)."""

    def __init__(self, app: ASGIApp, *, max_upload_mb: int) -> None:
        self.app = app
        self.max_upload_mb = max_upload_mb
        self.max_bytes = (max_upload_mb << 20) + MULTIPART_SLACK

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:  # FastAPI re-raises an HTTPException from parsing
                    raise HTTPException(413, self._message())
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"the request exceeds the upload limit of {self.max_upload_mb} MiB"

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, "too_large", self._message(), {"Connection": "close"})
        await response(scope, receive, send)


def too_long(length: int, limit: int) -> str:
    """What a question over the length limit is told, by the API and the CLI alike."""
    return f"the question has {length} characters; at most {limit} are accepted"


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
            422, "question_too_long", too_long(len(question), settings.max_question_chars)
        )
    if isinstance(top_k, int) and top_k > settings.max_top_k:
        raise ApiError(422, "top_k_too_large", f"top_k must be <= {settings.max_top_k}")


QUERY_LIMITS = Depends(query_limits)
