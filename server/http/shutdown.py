"""Stopping the server: open streams end as soon as it is told to stop, so no client holds it up.

uvicorn, on SIGTERM or SIGINT, stops accepting connections and then waits for every open response
to finish before it runs the app's lifespan shutdown; an `/events` stream (a browser tab) or an
answer stream waiting on an LLM never finishes by itself. `serve` runs uvicorn with a server that
sets the app's `Stopping` first thing when it begins to stop; every `StoppableStream` ends then
(with its `farewell`, if any), and a grace period bounds whatever else is still running. `serve`
then closes the services: a stop asked for by SIGTERM or SIGINT is a clean stop, said in the log
and ended at once with status 0 (uvicorn alone raises the signal again, before its caller can
close anything, and `make run` would report the server's death by SIGTERM as an error).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterable, Callable, Iterator, Mapping
from contextlib import contextmanager
from socket import socket

import anyio
import uvicorn
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["GRACE_S", "StoppableStream", "Stopping", "serve"]

log = logging.getLogger(__name__)

GRACE_S = 5  # then uvicorn cancels what still runs (a long upload, a slow render)


class Stopping:
    """Set once, when the server begins to stop; cancels the scopes registered with `guard`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._scopes: dict[anyio.CancelScope, asyncio.AbstractEventLoop] = {}

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Cancel every guarded scope (from any thread); later guards are cancelled at once."""
        with self._lock:
            self._set = True
            scopes, self._scopes = self._scopes, {}
        for scope, loop in scopes.items():
            loop.call_soon_threadsafe(scope.cancel)

    @contextmanager
    def guard(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope, in the running event loop, that is cancelled when the server stops."""
        loop = asyncio.get_running_loop()
        with anyio.CancelScope() as scope:
            with self._lock:
                if self._set:
                    scope.cancel()
                else:
                    self._scopes[scope] = loop
            try:
                yield scope
            finally:
                with self._lock:
                    self._scopes.pop(scope, None)


class StoppableStream(StreamingResponse):
    """A streaming response that ends, after `farewell`, when the app's `Stopping` is set."""

    def __init__(
        self,
        content: AsyncIterable[str],
        *,
        media_type: str,
        headers: Mapping[str, str] | None = None,
        farewell: str | None = None,
    ) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self.farewell = farewell
        self._stopping: Stopping | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope.get("app")
        self._stopping = getattr(getattr(app, "state", None), "stopping", None)
        await super().__call__(scope, receive, send)

    async def stream_response(self, send: Send) -> None:
        if self._stopping is None:
            await super().stream_response(send)
            return
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        with self._stopping.guard() as stop:
            async for chunk in self.body_iterator:
                data = (
                    chunk if isinstance(chunk, bytes | memoryview) else chunk.encode(self.charset)
                )
                await send({"type": "http.response.body", "body": data, "more_body": True})
        if stop.cancelled_caught:
            close = getattr(self.body_iterator, "aclose", None)
            if close is not None:
                await close()
            if self.farewell is not None:
                farewell = self.farewell.encode()
                await send({"type": "http.response.body", "body": farewell, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Server(uvicorn.Server):
    """uvicorn's server, telling the app's streams to end as soon as it begins to stop."""

    def __init__(self, config: uvicorn.Config, stopping: Stopping) -> None:
        super().__init__(config)
        self.stopping = stopping
        self.signals: list[int] = []

    async def shutdown(self, sockets: list[socket] | None = None) -> None:
        self.stopping.set()
        await super().shutdown(sockets)
        # uvicorn raises the stop signals again once it is down, which would end the process
        # by the signal before the services are closed: a stop it was asked for is a clean one.
        self.signals = list(self._captured_signals)
        self._captured_signals.clear()


def serve(app: FastAPI, *, host: str, port: int, close: Callable[[], None]) -> None:
    """Run `app` until SIGTERM or SIGINT (its open streams end then, the rest within `GRACE_S`),
    then `close` (the services: the index is flushed); stopped by a signal, say it stopped cleanly
    and end the process with status 0."""
    config = uvicorn.Config(app, host=host, port=port, timeout_graceful_shutdown=GRACE_S)
    server = _Server(config, app.state.stopping)
    try:
        server.run()
    finally:
        close()
    if not server.signals:
        return
    names = ", ".join(signal.Signals(s).name for s in server.signals)
    log.info("folio stopped cleanly (%s): the index is written, the data directory released", names)
    # status 0 at once: what is left (threads of finished requests, the interpreter's teardown)
    # holds nothing that must be written, and would only delay the stop
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
