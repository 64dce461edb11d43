"""The vLLM engine: page images -> an OpenAI-compatible `/v1/chat/completions` -> typed pages.

Pages are rendered by worker processes (`ocr_engine.render_pool`) a bounded number ahead of the
requests, so the endpoint never waits for the CPU; at most `max_in_flight` requests are open at
once. Endpoints are used in turn; a connection error moves on to the next one at once. Connection
errors, timeouts and 5xx are retried with jittered exponential backoff; a 4xx is not. An output
cut by `max_tokens` or ending in a loop is asked again once with the stricter n-gram guard. A page
that still fails comes back `failed` with a `PageError` (code `endpoint_unavailable`, `timeout`,
`http_error`, `truncated`, `repetition_loop`, `bad_output` or `render_failed`); the caller
chooses a fallback. Render workers are started with multiprocessing's "spawn": a script that calls
the engine at import time needs the usual ``if __name__ == "__main__":`` guard.

The served model (`VLLMOptions.model`) picks the protocol (`vllm_request.model_profile`):
DeepSeek-OCR and dots.ocr answer one request a page; MinerU2.5 answers a layout request, then
one request a region, its crops rendered from the PDF in a thread (`ocr_engine.mineru`), and a
page fails when any of its requests does.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import httpx
import pymupdf

from ocr_engine.deepseek import detect_repetition
from ocr_engine.engine import PageWindow
from ocr_engine.errors import BadInputError, EngineOutputError, EngineUnavailableError
from ocr_engine.geometry import Box
from ocr_engine.mineru import render_crop
from ocr_engine.options import VLLMOptions
from ocr_engine.pdf import open_pdf
from ocr_engine.render import RenderedPage, render_region
from ocr_engine.render_pool import BodyBuilder, RenderPool, SourceDocument
from ocr_engine.schema import Block, EngineInfo, Line, Page, PageError, PageStatus
from ocr_engine.vllm_regions import (
    CropError,
    CropRenderer,
    ImageFrame,
    read_regions,
    timed_render_crops,
)
from ocr_engine.vllm_request import model_profile, request_body, strict_body

__all__ = ["ENGINE_NAME", "RunStats", "VLLMEngine"]

log = logging.getLogger(__name__)

ENGINE_NAME = "vllm"
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


class _Failure(Exception):
    """The page cannot be read by this engine: `code` and message go into its PageError."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message[:_MAX_ERROR_CHARS]


class _Transient(_Failure):
    """Worth another attempt after a pause; `refused`: no endpoint accepted a connection."""

    def __init__(self, code: str, message: str, *, refused: bool = False) -> None:
        super().__init__(code, message)
        self.refused = refused


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


@dataclass(slots=True)
class _Session:
    """Requests of one call: the client, the bound on requests in flight, what they did."""

    client: httpx.AsyncClient
    in_flight: asyncio.Semaphore
    stats: RunStats
    unreachable: str | None = None


@dataclass(slots=True)
class _Run:
    """The state of one `read_pages` call."""

    session: _Session
    pool: RenderPool
    source: SourceDocument
    build_body: BodyBuilder
    window: asyncio.Semaphore
    pdf: bytes = b""
    password: str | None = None


class VLLMEngine:
    """Reads pages through a vLLM endpoint serving DeepSeek-OCR (or -2); see the module doc."""

    name = ENGINE_NAME

    def __init__(
        self,
        options: VLLMOptions,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        render_processes: bool = True,
    ) -> None:
        """`render_processes` false renders in threads, which the GIL serialises with the event
        loop (see `ocr_engine.render_pool`): for hosts that cannot start processes."""
        self.options = options
        self.render_processes = render_processes
        self.profile = model_profile(options.model)
        self.info = EngineInfo(
            name=ENGINE_NAME, model=options.model, version=self.profile.prompt_version
        )
        self._transport = transport
        self._endpoints = _Endpoints(options.urls)
        self._pool: RenderPool | None = None
        self._pool_lock = threading.Lock()
        self.last_run = RunStats()

    def _render_pool(self) -> RenderPool:
        """The render workers, started on first use and kept until `close`."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = RenderPool(
                    self.options.render_workers, processes=self.render_processes
                )
                weakref.finalize(self, self._pool.close)
            return self._pool

    def start(self) -> None:
        """Start the render workers now (by default the first `read_pages` starts them)."""
        self._render_pool().start()

    def close(self) -> None:
        """Stop the render workers (they also stop when the engine is garbage collected)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> VLLMEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, window: PageWindow) -> list[Page]:
        """The window's pages through the endpoint (`read_pages` on a new event loop)."""
        return self.read_pages_sync(
            window.data, list(window.numbers), password=window.password, on_page=window.on_page
        )

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
        pool = self._render_pool()
        try:
            async with self._client() as client:
                with pool.document(pdf, password) as source:
                    run = _Run(
                        session=_Session(client, asyncio.Semaphore(options.max_in_flight), stats),
                        pool=pool,
                        source=source,
                        build_body=partial(request_body, self.profile, options),
                        window=asyncio.Semaphore(options.max_in_flight + lookahead),
                        pdf=pdf,
                        password=password,
                    )
                    try:
                        async with asyncio.TaskGroup() as group:
                            tasks = [
                                group.create_task(self._page(run, n, sizes[n], on_page))
                                for n in numbers
                            ]
                    except BaseExceptionGroup as errors:  # on_page raised; the rest cancelled
                        raise errors.exceptions[0] from None
        finally:
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

    def _client(self) -> httpx.AsyncClient:
        options = self.options
        timeout = httpx.Timeout(options.read_timeout_s, connect=options.connect_timeout_s)
        limits = httpx.Limits(
            max_connections=options.max_in_flight, max_keepalive_connections=options.max_in_flight
        )
        headers = {"content-type": "application/json"}
        if options.api_key:
            headers["authorization"] = f"Bearer {options.api_key}"
        return httpx.AsyncClient(
            transport=self._transport, timeout=timeout, limits=limits, headers=headers
        )

    def read_region(self, page: pymupdf.Page, box: Box) -> list[Line]:
        """The lines inside `box` (displayed-page points) of `page`, rendered alone at the
        engine's dpi under its pixel cap and read by the endpoint, in the model's order.
        Raises `EngineUnavailableError` (endpoint down, timeouts) or `EngineOutputError`."""
        try:
            shown = render_region(
                page, box, dpi=self.options.dpi, max_pixels=self.options.max_pixels
            )
        except Exception as exc:
            raise EngineOutputError(f"the region cannot be rendered: {exc}") from exc
        url = "data:image/png;base64," + base64.b64encode(shown.png).decode()
        body = request_body(self.profile, self.options, url, shown.width_px, shown.height_px)
        number = page.number + 1
        frame = ImageFrame(
            shown.width_pt, shown.height_pt, shown.x0, shown.y0, shown.width_px, shown.height_px
        )

        async def crops(regions: list[tuple[Box, int]]) -> list[RenderedPage]:
            options = self.options
            return [
                render_crop(page, b, dpi=options.dpi, max_pixels=options.max_pixels, angle=a)
                for b, a in regions
            ]

        try:
            blocks = asyncio.run(self._region(body, number, frame, crops))
        except _Failure as failure:
            unavailable = failure.code in ("endpoint_unavailable", "timeout", "http_error")
            error = EngineUnavailableError if unavailable else EngineOutputError
            raise error(f"{failure.code}: {failure.message}") from failure
        lines = [ln for b in blocks for ln in (b.lines or [Line(text=b.text, bbox=b.bbox)])]
        return [ln for ln in lines if any(c.isalnum() for c in ln.text)]

    async def _region(
        self, body: bytes, number: int, frame: ImageFrame, crops: CropRenderer
    ) -> list[Block]:
        async with self._client() as client:
            session = _Session(client, asyncio.Semaphore(1), RunStats(pages=1))
            content = await self._ask(session, body, number)
            if self.profile.two_step:
                return await self._two_step(session, number, content, frame, crops)
            return self._parse(content, number, frame)

    def _parse(self, content: str, number: int, frame: ImageFrame) -> list[Block]:
        """The blocks of a one-request answer; raises _Failure("bad_output") when unreadable."""
        pixels = {"width_px": frame.width_px, "height_px": frame.height_px}
        try:
            return self.profile.parser(
                content,
                width=frame.width,
                height=frame.height,
                page_number=number,
                x0=frame.x0,
                y0=frame.y0,
                **(pixels if self.profile.pixel_boxes else {}),
            )
        except EngineOutputError as exc:
            raise _Failure("bad_output", str(exc)) from exc

    async def _two_step(
        self, session: _Session, number: int, layout: str, frame: ImageFrame, render: CropRenderer
    ) -> list[Block]:
        """MinerU's second step (`vllm_regions.read_regions`) with this engine's requests."""
        ask = partial(self._ask, session, number=number)
        try:
            read = await read_regions(ask, self.options, number, layout, frame, render)
        except EngineOutputError as exc:
            raise _Failure("bad_output", str(exc)) from exc
        except CropError as exc:
            raise _Failure("render_failed", str(exc)) from exc
        session.stats.encode_cpu_s += read.encode_cpu_s
        session.stats.parse_cpu_s += read.parse_cpu_s
        return read.blocks

    async def _ask(self, session: _Session, body: bytes, number: int) -> str:
        """The model's answer to `body`, asked again with the strict guard when cut or looping."""
        strict = False
        while True:
            content, finish = await self._complete(session, body, number, strict)
            problem = self._problem(content, finish)
            if problem is None:
                return content
            if strict:
                raise _Failure(*problem)
            log.info("page %d: %s; asking again with the strict guard", number, problem[1])
            session.stats.strict_retries += 1
            strict = True

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
            failed = run.session.stats.failed
            failed[failure.code] = failed.get(failure.code, 0) + 1
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
            self._check_reachable(run.session)
            try:
                rendered = await run.pool.render(
                    run.source,
                    number,
                    dpi=self.options.dpi,
                    max_pixels=self.options.max_pixels,
                    build_body=run.build_body,
                )
            except Exception as exc:
                raise _Failure("render_failed", f"{type(exc).__name__}: {exc}") from exc
            run.session.stats.render_cpu_s += rendered.render_cpu_s
            run.session.stats.encode_cpu_s += rendered.encode_cpu_s
            content = await self._ask(run.session, rendered.body, number)
            frame = ImageFrame(
                rendered.width,
                rendered.height,
                rendered.x0,
                rendered.y0,
                rendered.width_px,
                rendered.height_px,
            )
            if self.profile.two_step:
                options = self.options

                async def render(regions: list[tuple[Box, int]]) -> list[RenderedPage]:
                    crops, cpu_s = await asyncio.to_thread(
                        timed_render_crops,
                        run.pdf,
                        run.password,
                        number,
                        options.dpi,
                        options.max_pixels,
                        regions,
                    )
                    run.session.stats.render_cpu_s += cpu_s
                    return crops

                blocks = await self._two_step(run.session, number, content, frame, render)
            else:
                started = time.thread_time()
                try:
                    blocks = self._parse(content, number, frame)
                finally:
                    run.session.stats.parse_cpu_s += time.thread_time() - started
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
    def _check_reachable(run: _Session) -> None:
        if run.unreachable is not None:
            raise _Failure("endpoint_unavailable", f"not sent: {run.unreachable}")

    async def _complete(
        self, run: _Session, body: bytes, number: int, strict: bool
    ) -> tuple[str, str]:
        """The model's text and finish reason, retrying transient failures with backoff."""
        body = strict_body(body, self.options) if strict else body
        failures = 0
        while True:
            try:
                async with run.in_flight:
                    self._check_reachable(run)
                    response = await self._post(run, body)
                return _answer(response)
            except _Transient as exc:
                failures += 1
                if failures > self.options.retries:
                    if exc.refused:  # the pages still waiting would only wait longer
                        run.unreachable = exc.message
                    raise _Failure(exc.code, f"{exc.message} (after {failures} attempts)") from exc
                run.stats.retries += 1
                delay = min(
                    _MAX_BACKOFF_S,
                    self.options.backoff_s * 2 ** (failures - 1) * random.uniform(0.5, 1.5),
                )
                log.debug("page %d: %s; retrying in %.2fs", number, exc.message, delay)
                await asyncio.sleep(delay)

    async def _post(self, run: _Session, body: bytes) -> httpx.Response:
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
        raise _Transient("endpoint_unavailable", "; ".join(refused), refused=True)


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
