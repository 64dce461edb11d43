"""API-key auth: with `FOLIO_API_KEY` set, every request needs `Authorization: Bearer KEY`.

Open without the key: `GET /health` and the web page shell (`GET /`, `/static/*`), which hold no
data; the page asks its user for the key and sends it on every data request. Everything else,
unknown routes and `/openapi.json`/`/docs` included, answers 401 in the one error shape with a
`WWW-Authenticate: Bearer` header. CORS preflights (`OPTIONS`) are answered by the CORS
middleware outside this one, so browsers can ask before they send the key.

A signed citation link (`retrieval.links`: a page image, crop or viewer page with `exp` and
`sig`) opens without the key until it expires; a tampered, expired or other page's signature is
a 401 that says which.

A worker's fetch of a stored copy (`/worker/documents/{sha256}.pdf`) is left to its route, which
opens it only with the document token the coordinator put in the worker's unit.
"""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ingest.queue import WORKER_PATH
from retrieval.links import LinkRefusedError, LinkSigner, carries_signature
from server.http.deps import error_response

__all__ = ["OPEN_PATHS", "OPEN_PREFIXES", "ApiKeyMiddleware", "is_open"]

OPEN_PATHS = frozenset({"/health", "/"})
OPEN_PREFIXES = ("/static/",)
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="folio"'}


def is_open(method: str, path: str) -> bool:
    """True for the requests that need no key: the health check and the web page shell."""
    if method not in ("GET", "HEAD"):
        return False
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


class ApiKeyMiddleware:
    """Refuses requests without the right bearer token (compared in constant time) unless,
    given `links`, they are GETs of a link it signed that has not expired."""

    def __init__(self, app: ASGIApp, *, api_key: str, links: LinkSigner | None = None) -> None:
        if not api_key:
            raise ValueError("api_key must not be empty")
        self.app = app
        self._key = api_key.encode("utf-8")
        self._links = links

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_open(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD") and scope["path"].startswith(WORKER_PATH):
            await self.app(scope, receive, send)
            return
        token = bearer_token(Headers(scope=scope).get("authorization"))
        if token is not None and hmac.compare_digest(token.encode("utf-8"), self._key):
            await self.app(scope, receive, send)
            return
        message = "missing API key" if token is None else "wrong API key"
        message = f"{message}: send `Authorization: Bearer KEY`"
        query = scope["query_string"].decode("latin-1")
        if (
            self._links is not None
            and scope["method"] in ("GET", "HEAD")
            and carries_signature(query)
        ):
            try:
                self._links.check(scope["path"], query)
            except LinkRefusedError as exc:
                message = f"this link does not open: {exc.reason}; or {message}"
            else:
                await self.app(scope, receive, send)
                return
        response = error_response(401, "unauthorized", message, CHALLENGE)
        await response(scope, receive, send)
