"""Loopback helpers shared by the tests: free ports, a URL nothing listens on, SSE reading."""

from __future__ import annotations

import json
import socket

import httpx

__all__ = ["closed_port_url", "free_port", "sse_events"]


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
