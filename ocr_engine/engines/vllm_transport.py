"""Requests to a vLLM endpoint: endpoints in turn, retries with backoff, a chat completion read.

Connection errors move on to the next endpoint at once; timeouts, 5xx and refused connections are
retried with jittered exponential backoff up to `VLLMOptions.retries`; a 4xx is not. A page that
cannot be read raises `PageFailure` with the code its `PageError` carries.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field

import httpx

from ocr_engine.engines.deepseek import detect_repetition
from ocr_engine.engines.vllm_request import strict_body
from ocr_engine.errors import EngineError
from ocr_engine.options import VLLMOptions

__all__ = [
    "Endpoints",
    "PageFailure",
    "RunStats",
    "Session",
    "TransientFailure",
    "check_reachable",
    "complete",
    "output_problem",
]

log = logging.getLogger(__name__)

_DOWN_S = 5.0  # an endpoint that refused a connection is tried last for this long
_MAX_BACKOFF_S = 60.0
_MAX_ERROR_CHARS = 300


@dataclass(slots=True)
class RunStats:
    """What one `read_pages` call did. CPU seconds: render and encode (PNG, base64, JSON body) in
    the workers, parse on the event loop."""

    pages: int = 0
    requests: int = 0
    retries: int = 0
    strict_retries: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    render_cpu_s: float = 0.0
    encode_cpu_s: float = 0.0
    parse_cpu_s: float = 0.0
    wall_s: float = 0.0


class PageFailure(EngineError):
    """The page cannot be read by this engine: `code` and message go into its PageError."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message[:_MAX_ERROR_CHARS]


class TransientFailure(PageFailure):
    """Worth another attempt after a pause; `refused`: no endpoint accepted a connection."""

    def __init__(self, code: str, message: str, *, refused: bool = False) -> None:
        super().__init__(code, message)
        self.refused = refused


class Endpoints:
    """Base URLs in turn, the ones that recently refused a connection last."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = list(urls)
        self._next = 0
        self._down_until: dict[str, float] = {}

    def order(self) -> list[str]:
        start = self._next
        self._next = (self._next + 1) % len(self.urls)
        rotated = self.urls[start:] + self.urls[:start]
        now = time.monotonic()
        healthy = [u for u in rotated if self._down_until.get(u, 0.0) <= now]
        return healthy + [u for u in rotated if u not in healthy]

    def down(self, url: str) -> None:
        self._down_until[url] = time.monotonic() + _DOWN_S

    def up(self, url: str) -> None:
        self._down_until.pop(url, None)


@dataclass(slots=True)
class Session:
    """Requests of one call: the client, the bound on requests in flight, what they did."""

    client: httpx.AsyncClient
    in_flight: asyncio.Semaphore
    stats: RunStats
    unreachable: str | None = None


def check_reachable(run: Session) -> None:
    """Raises the failure of a page not sent, once no endpoint accepted a connection."""
    if run.unreachable is not None:
        raise PageFailure("endpoint_unavailable", f"not sent: {run.unreachable}")


async def complete(
    run: Session,
    endpoints: Endpoints,
    options: VLLMOptions,
    body: bytes,
    number: int,
    strict: bool,
) -> tuple[str, str]:
    """The model's text and finish reason, retrying transient failures with backoff."""
    body = strict_body(body, options) if strict else body
    failures = 0
    while True:
        try:
            async with run.in_flight:
                check_reachable(run)
                response = await _post(run, endpoints, body)
            return _answer(response)
        except TransientFailure as exc:
            failures += 1
            if failures > options.retries:
                if exc.refused:  # the pages still waiting would only wait longer
                    run.unreachable = exc.message
                raise PageFailure(exc.code, f"{exc.message} (after {failures} attempts)") from exc
            run.stats.retries += 1
            delay = min(
                _MAX_BACKOFF_S,
                options.backoff_s * 2 ** (failures - 1) * random.uniform(0.5, 1.5),
            )
            log.debug("page %d: %s; retrying in %.2fs", number, exc.message, delay)
            await asyncio.sleep(delay)


async def _post(run: Session, endpoints: Endpoints, body: bytes) -> httpx.Response:
    """One attempt: each endpoint in turn until one accepts the connection."""
    refused = []
    for url in endpoints.order():
        run.stats.requests += 1
        try:
            response = await run.client.post(f"{url}/chat/completions", content=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            endpoints.down(url)
            refused.append(f"{url}: {type(exc).__name__}: {exc}")
            continue
        except httpx.TimeoutException as exc:
            raise TransientFailure(
                "timeout", f"{url}: no answer in time ({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            raise TransientFailure(
                "endpoint_unavailable", f"{url}: {type(exc).__name__}: {exc}"
            ) from exc
        endpoints.up(url)
        if response.status_code >= 500:
            raise TransientFailure("http_error", f"{url}: {_describe(response)}")
        if response.status_code >= 400:
            raise PageFailure("http_error", f"{url}: {_describe(response)}")
        return response
    raise TransientFailure("endpoint_unavailable", "; ".join(refused), refused=True)


def _describe(response: httpx.Response) -> str:
    """The status and the server's own message (vLLM: {"error": {"message": ...}})."""
    message = response.text
    try:
        payload = response.json()
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict) and error.get("message"):
            message = str(error["message"])
        elif isinstance(error, str):
            message = error
        elif isinstance(payload, dict) and payload.get("detail"):
            message = str(payload["detail"])
    except ValueError:
        pass
    return f"HTTP {response.status_code}: {' '.join(message.split())}"


def _answer(response: httpx.Response) -> tuple[str, str]:
    """Content and finish reason of a chat completion."""
    try:
        choice = response.json()["choices"][0]
        content = choice["message"]["content"]
        finish = choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise PageFailure("bad_output", f"not a chat completion: {response.text[:200]!r}") from exc
    if content is not None and not isinstance(content, str):
        raise PageFailure("bad_output", f"message content is {type(content).__name__}, not text")
    return content or "", str(finish or "")


def output_problem(content: str, finish: str | None) -> tuple[str, str] | None:
    """Why an output that arrived cannot be used as is: a loop or a cut."""
    if detect_repetition(content):
        return "repetition_loop", f"the output ends in a repetition loop ({len(content)} chars)"
    if finish == "length":
        return "truncated", f"the output hit max_tokens ({len(content)} chars)"
    return None
