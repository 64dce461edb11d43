"""The vLLM engine: page images -> an OpenAI-compatible `/v1/chat/completions` -> typed pages.

Pages are rendered in worker threads (each with its own PyMuPDF document: documents must not be
shared across threads) a bounded number ahead of the requests, so the endpoint never waits for the
CPU; at most `max_in_flight` requests are open at once. Endpoints are used in turn; a connection
error moves on to the next one at once. Connection errors, timeouts and 5xx are retried with
jittered exponential backoff; a 4xx is not. An output cut by `max_tokens` or ending in a loop is
asked again once with the stricter n-gram guard. A page that still fails comes back `failed` with
a `PageError` (code `endpoint_unavailable`, `timeout`, `http_error`, `truncated`,
`repetition_loop`, `bad_output` or `render_failed`); the caller chooses a fallback.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pymupdf

from ocr_engine.deepseek import OcrProfile, detect_repetition, profile_for
from ocr_engine.errors import BadInputError, EngineOutputError
from ocr_engine.options import VLLMOptions
from ocr_engine.pdf import open_pdf
from ocr_engine.render import render_page
from ocr_engine.schema import EngineInfo, Page, PageError, PageStatus

__all__ = ["ENGINE_NAME", "RunStats", "VLLMEngine", "build_request"]

log = logging.getLogger(__name__)

ENGINE_NAME = "vllm"
WHITELIST_TOKEN_IDS = [128821, 128822]  # <td>, </td>: table cells must be allowed to repeat
_DOWN_S = 5.0  # an endpoint that refused a connection is tried last for this long
_MAX_BACKOFF_S = 60.0
_MAX_ERROR_CHARS = 300


def build_request(
    profile: OcrProfile,
    options: VLLMOptions,
    image_url: str,
    width_px: int,
    height_px: int,
    *,
    strict: bool = False,
) -> dict[str, Any]:
    """The chat-completions body for one page image (OCR_FORMATS.md §1.5)."""
    max_tokens = options.max_tokens or max(
        256, options.context_tokens - profile.prompt_tokens(width_px, height_px)
    )
    return {
        "model": options.model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_url}},
                    {"type": "text", "text": profile.prompt},
                ],
            }
        ],
        "temperature": 0.0,
        "max_tokens": max_tokens,
        "skip_special_tokens": False,
        "vllm_xargs": {
            "ngram_size": options.strict_ngram_size if strict else options.ngram_size,
            "window_size": options.strict_window_size if strict else options.window_size,
            "whitelist_token_ids": WHITELIST_TOKEN_IDS,
        },
    }


@dataclass(slots=True)
class RunStats:
    """What one `read_pages` call did; CPU seconds are per thread (render and encode in workers,
    parse on the event loop)."""

    pages: int = 0
    requests: int = 0
    retries: int = 0
    strict_retries: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    render_cpu_s: float = 0.0
    encode_cpu_s: float = 0.0
    parse_cpu_s: float = 0.0
    wall_s: float = 0.0


@dataclass(slots=True)
class _Rendered:
    number: int
    width: float
    height: float
    x0: float
    y0: float
    rotation: int
    width_px: int
    height_px: int
    image_url: str
    body: bytes


class _Failure(Exception):
    """The page cannot be read by this engine: `code` and message go into its PageError."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message[:_MAX_ERROR_CHARS]


class _Transient(_Failure):
    """Worth another attempt after a pause."""


class _Endpoints:
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


class _Renderer:
    """Renders pages and builds their request bodies in worker threads, one document per thread."""

    def __init__(self, engine: VLLMEngine, pdf: bytes, password: str | None, stats: RunStats):
        self.engine = engine
        self.pdf = pdf
        self.password = password
        self.stats = stats
        self._local = threading.local()
        self._docs: list[pymupdf.Document] = []
        self._lock = threading.Lock()

    def _document(self) -> pymupdf.Document:
        doc: pymupdf.Document | None = getattr(self._local, "doc", None)
        if doc is None:
            doc = pymupdf.open(stream=self.pdf, filetype="pdf")
            if doc.needs_pass:
                doc.authenticate(self.password or "")
            self._local.doc = doc
            with self._lock:
                self._docs.append(doc)
        return doc

    def render(self, number: int) -> _Rendered:
        started = time.thread_time()
        page = self._document().load_page(number - 1)
        options = self.engine.options
        image = render_page(page, dpi=options.dpi, max_pixels=options.max_pixels)
        rendered_at = time.thread_time()
        url = "data:image/png;base64," + base64.b64encode(image.png).decode("ascii")
        request = build_request(self.engine.profile, options, url, image.width_px, image.height_px)
        body = json.dumps(request).encode()
        with self._lock:
            self.stats.render_cpu_s += rendered_at - started
            self.stats.encode_cpu_s += time.thread_time() - rendered_at
        return _Rendered(
            number=number,
            width=image.width_pt,
            height=image.height_pt,
            x0=image.x0,
            y0=image.y0,
            rotation=page.rotation,
            width_px=image.width_px,
            height_px=image.height_px,
            image_url=url,
            body=body,
        )

    def close(self) -> None:
        for doc in self._docs:
            doc.close()
        self._docs.clear()


@dataclass(slots=True)
class _Run:
    """The state of one `read_pages` call."""

    client: httpx.AsyncClient
    pool: ThreadPoolExecutor
    renderer: _Renderer
    in_flight: asyncio.Semaphore
    window: asyncio.Semaphore
    stats: RunStats
    unreachable: str | None = None


class VLLMEngine:
    """Reads pages through a vLLM endpoint serving DeepSeek-OCR (or -2); see the module doc."""

    name = ENGINE_NAME

    def __init__(
        self, options: VLLMOptions, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.options = options
        self.profile = profile_for(options.model)
        self.info = EngineInfo(
            name=ENGINE_NAME, model=options.model, version=self.profile.prompt_version
        )
        self._transport = transport
        self._endpoints = _Endpoints(options.urls)
        self.last_run = RunStats()

    def read_pages_sync(
        self,
        pdf: bytes,
        numbers: list[int],
        *,
        password: str | None = None,
        on_page: Callable[[Page], None] | None = None,
    ) -> list[Page]:
        """`read_pages` on a new event loop (call it from a thread without a running loop)."""
        return asyncio.run(self.read_pages(pdf, numbers, password=password, on_page=on_page))

    async def read_pages(
        self,
        pdf: bytes,
        numbers: list[int],
        *,
        password: str | None = None,
        on_page: Callable[[Page], None] | None = None,
    ) -> list[Page]:
        """Pages `numbers` (1-based) in the order given; `on_page` sees each as it completes.

        Raises BadInputError only when the PDF cannot be opened or a number is not a page of it;
        a page that cannot be read comes back with status failed and its errors."""
        sizes = self._page_sizes(pdf, password, numbers)
        stats = RunStats(pages=len(numbers))
        self.last_run = stats
        if not numbers:
            return []
        options = self.options
        started = time.monotonic()
        lookahead = max(4, 2 * options.render_workers)
        timeout = httpx.Timeout(options.read_timeout_s, connect=options.connect_timeout_s)
        limits = httpx.Limits(
            max_connections=options.max_in_flight, max_keepalive_connections=options.max_in_flight
        )
        headers = {"content-type": "application/json"}
        if options.api_key:
            headers["authorization"] = f"Bearer {options.api_key}"
        pool = ThreadPoolExecutor(options.render_workers, thread_name_prefix="vllm-render")
        renderer = _Renderer(self, pdf, password, stats)
        try:
            async with httpx.AsyncClient(
                transport=self._transport, timeout=timeout, limits=limits, headers=headers
            ) as client:
                run = _Run(
                    client=client,
                    pool=pool,
                    renderer=renderer,
                    in_flight=asyncio.Semaphore(options.max_in_flight),
                    window=asyncio.Semaphore(options.max_in_flight + lookahead),
                    stats=stats,
                )
                try:
                    async with asyncio.TaskGroup() as group:
                        tasks = [
                            group.create_task(self._page(run, number, sizes[number], on_page))
                            for number in numbers
                        ]
                except BaseExceptionGroup as errors:  # on_page raised: the others were cancelled
                    raise errors.exceptions[0] from None
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            renderer.close()
            stats.wall_s = time.monotonic() - started
        pages = [task.result() for task in tasks]
        failed = [p.number for p in pages if p.status is PageStatus.failed]
        log.info(
            "vllm: %d pages in %.1fs (%d requests, %d retries, %d strict), %d failed",
            len(pages),
            stats.wall_s,
            stats.requests,
            stats.retries,
            stats.strict_retries,
            len(failed),
        )
        return pages

    def _page_sizes(
        self, pdf: bytes, password: str | None, numbers: list[int]
    ) -> dict[int, tuple[float, float, int]]:
        """Width, height and rotation of each page, which failed pages report too."""
        with open_pdf(pdf, password=password) as doc:
            count = doc.page_count
            sizes = {}
            for number in numbers:
                if not 1 <= number <= count:
                    raise BadInputError(f"page {number} is not in the document (1..{count})")
                try:
                    page = doc.load_page(number - 1)
                    rect = page.rect
                    sizes[number] = (rect.width or 1.0, rect.height or 1.0, page.rotation)
                except Exception as exc:  # reported on the page by the renderer
                    log.warning("page %d cannot be loaded: %s", number, exc)
                    sizes[number] = (612.0, 792.0, 0)
            return sizes

    async def _page(
        self,
        run: _Run,
        number: int,
        size: tuple[float, float, int],
        on_page: Callable[[Page], None] | None,
    ) -> Page:
        try:
            page = await self._read(run, number)
        except _Failure as failure:
            run.stats.failed[failure.code] = run.stats.failed.get(failure.code, 0) + 1
            log.warning("page %d failed (%s): %s", number, failure.code, failure.message)
            width, height, rotation = size
            page = Page(
                number=number,
                width=width,
                height=height,
                rotation=rotation,
                engine=self.info,
                status=PageStatus.failed,
                errors=[PageError(code=failure.code, message=failure.message)],
            )
        if on_page is not None:
            on_page(page)
        return page

    async def _read(self, run: _Run, number: int) -> Page:
        async with run.window:
            self._check_reachable(run)
            loop = asyncio.get_running_loop()
            try:
                rendered = await loop.run_in_executor(run.pool, run.renderer.render, number)
            except Exception as exc:
                raise _Failure("render_failed", f"{type(exc).__name__}: {exc}") from exc
            strict = False
            while True:
                content, finish = await self._complete(run, rendered, strict)
                problem = self._problem(content, finish)
                if problem is None:
                    break
                if strict:
                    raise _Failure(*problem)
                log.info("page %d: %s; asking again with the strict guard", number, problem[1])
                run.stats.strict_retries += 1
                strict = True
        started = time.thread_time()
        try:
            blocks = self.profile.parser(
                content,
                width=rendered.width,
                height=rendered.height,
                page_number=number,
                x0=rendered.x0,
                y0=rendered.y0,
            )
        except EngineOutputError as exc:
            raise _Failure("bad_output", str(exc)) from exc
        finally:
            run.stats.parse_cpu_s += time.thread_time() - started
        return Page(
            number=number,
            width=rendered.width,
            height=rendered.height,
            rotation=rendered.rotation,
            engine=self.info,
            status=PageStatus.ok,
            blocks=blocks,
        )

    @staticmethod
    def _problem(content: str, finish: str | None) -> tuple[str, str] | None:
        """Why an output that arrived cannot be used as is: a loop or a cut."""
        if detect_repetition(content):
            return "repetition_loop", f"the output ends in a repetition loop ({len(content)} chars)"
        if finish == "length":
            return "truncated", f"the output hit max_tokens ({len(content)} chars)"
        return None

    @staticmethod
    def _check_reachable(run: _Run) -> None:
        if run.unreachable is not None:
            raise _Failure("endpoint_unavailable", f"not sent: {run.unreachable}")

    async def _complete(self, run: _Run, rendered: _Rendered, strict: bool) -> tuple[str, str]:
        """The model's text and finish reason, retrying transient failures with backoff."""
        if strict:
            request = build_request(
                self.profile,
                self.options,
                rendered.image_url,
                rendered.width_px,
                rendered.height_px,
                strict=True,
            )
            body = json.dumps(request).encode()
        else:
            body = rendered.body
        failures = 0
        while True:
            self._check_reachable(run)
            try:
                async with run.in_flight:
                    response = await self._post(run, body)
                return _answer(response)
            except _Transient as exc:
                failures += 1
                if failures > self.options.retries:
                    if exc.code == "endpoint_unavailable":
                        run.unreachable = exc.message
                    raise _Failure(exc.code, f"{exc.message} (after {failures} attempts)") from exc
                run.stats.retries += 1
                delay = min(
                    _MAX_BACKOFF_S,
                    self.options.backoff_s * 2 ** (failures - 1) * random.uniform(0.5, 1.5),
                )
                log.debug("page %d: %s; retrying in %.2fs", rendered.number, exc.message, delay)
                await asyncio.sleep(delay)

    async def _post(self, run: _Run, body: bytes) -> httpx.Response:
        """One attempt: each endpoint in turn until one accepts the connection."""
        refused = []
        for url in self._endpoints.order():
            run.stats.requests += 1
            try:
                response = await run.client.post(f"{url}/chat/completions", content=body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                self._endpoints.down(url)
                refused.append(f"{url}: {type(exc).__name__}: {exc}")
                continue
            except httpx.TimeoutException as exc:
                raise _Transient(
                    "timeout", f"{url}: no answer in time ({type(exc).__name__})"
                ) from exc
            except httpx.TransportError as exc:
                raise _Transient(
                    "endpoint_unavailable", f"{url}: {type(exc).__name__}: {exc}"
                ) from exc
            self._endpoints.up(url)
            if response.status_code >= 500:
                raise _Transient("http_error", f"{url}: {_describe(response)}")
            if response.status_code >= 400:
                raise _Failure("http_error", f"{url}: {_describe(response)}")
            return response
        raise _Transient("endpoint_unavailable", "; ".join(refused))


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
        raise _Failure("bad_output", f"not a chat completion: {response.text[:200]!r}") from exc
    if content is not None and not isinstance(content, str):
        raise _Failure("bad_output", f"message content is {type(content).__name__}, not text")
    return content or "", str(finish or "")
