"""Loopback helpers shared by the tests: free ports, a URL nothing listens on, SSE reading."""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Self

import httpx
import uvicorn
from starlette.types import ASGIApp

__all__ = ["ThreadedServer", "closed_port_url", "free_port", "sse_events"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def closed_port_url() -> str:
    """An OpenAI-style base URL on a loopback port nothing listens on."""
    return f"http://127.0.0.1:{free_port()}/v1"


def sse_events(response: httpx.Response) -> list[tuple[str, dict[str, object]]]:
    """(kind, data) of each server-sent event until the server ends the stream."""
    out: list[tuple[str, dict[str, object]]] = []
    kind = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            kind = line[len("event: ") :]
        elif line.startswith("data: "):
            out.append((kind, json.loads(line[len("data: ") :])))
    return out


class ThreadedServer:
    """An ASGI app served by uvicorn in a thread on a loopback socket: a context manager that
    returns once the server accepts connections, and stops it on exit."""

    name = "server"

    def _listen(self, app: ASGIApp, sock: socket.socket) -> None:
        self._sock = sock
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def serve(self) -> None:
        """Run in this thread until stopped."""
        self._server.run(sockets=[self._sock])

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self.serve, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name} did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
