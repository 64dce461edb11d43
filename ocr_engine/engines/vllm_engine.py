"""The vLLM engine: page images -> an OpenAI-compatible `/v1/chat/completions` -> typed pages.

Pages are rendered by worker processes (`ocr_engine.engines.render_pool`) a bounded number ahead of
the requests, so the endpoint never waits for the CPU; at most `max_in_flight` requests are open at
once. Endpoints are used in turn; a connection error moves on to the next one at once. Connection
errors, timeouts and 5xx are retried with jittered exponential backoff; a 4xx is not. An output
cut by `max_tokens` or ending in a loop is asked again once with the stricter n-gram guard. A page
that still fails comes back `failed` with a `PageError` (code `endpoint_unavailable`, `timeout`,
`http_error`, `truncated`, `repetition_loop`, `bad_output` or `render_failed`); the caller
chooses a fallback. Render workers are started with multiprocessing's "spawn": a script that calls
the engine at import time needs the usual ``if __name__ == "__main__":`` guard.

The served model (`VLLMOptions.model`) picks the protocol (`vllm_request.model_profile`):
DeepSeek-OCR and dots.ocr answer one request a page; MinerU2.5 answers a layout request, then
one request a region, its crops rendered from the PDF in a thread (`ocr_engine.engines.mineru`), and
a page fails when any of its requests does.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import httpx
import pymupdf

from ocr_engine.engines.engine import PageWindow
from ocr_engine.engines.figure_tables import figure_of_blocks, region_lines
from ocr_engine.engines.mineru import render_crop
from ocr_engine.engines.render import RenderedPage, render_region
from ocr_engine.engines.render_pool import BodyBuilder, RenderPool, SourceDocument
from ocr_engine.engines.vllm_regions import (
    CropError,
    CropRenderer,
    ImageFrame,
    read_regions,
    timed_render_crops,
)
from ocr_engine.engines.vllm_request import model_profile, request_body
from ocr_engine.engines.vllm_transport import (
    Endpoints,
    PageFailure,
    RunStats,
    Session,
    check_reachable,
    complete,
    output_problem,
)
from ocr_engine.errors import EngineOutputError, EngineUnavailableError
from ocr_engine.geometry import Box
from ocr_engine.inputs.pdf import page_sizes
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import Block, EngineInfo, Line, Page, PageError, PageStatus

__all__ = ["ENGINE_NAME", "RunStats", "VLLMEngine"]

log = logging.getLogger(__name__)

ENGINE_NAME = "vllm"


@dataclass(slots=True)
class _Run:
    """The state of one `read_pages` call."""

    session: Session
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
        loop (see `ocr_engine.engines.render_pool`): for hosts that cannot start processes."""
        self.options = options
        self.render_processes = render_processes
        self.profile = model_profile(options.model)
        self.info = EngineInfo(
            name=ENGINE_NAME, model=options.model, version=self.profile.prompt_version
        )
        self._transport = transport
        self._endpoints = Endpoints(options.urls)
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
        sizes = page_sizes(pdf, password, numbers)
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
                        session=Session(client, asyncio.Semaphore(options.max_in_flight), stats),
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
        return region_lines(self._region_blocks(page, box))

    def read_figure(self, page: pymupdf.Page, block: Block) -> list[Block]:
        """The figure `block` read as `read_region` reads it, its tables kept (`figure_tables`)."""
        return figure_of_blocks(block, self._region_blocks(page, block.bbox), self.info)

    def _region_blocks(self, page: pymupdf.Page, box: Box) -> list[Block]:
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
        except PageFailure as failure:
            unavailable = failure.code in ("endpoint_unavailable", "timeout", "http_error")
            error = EngineUnavailableError if unavailable else EngineOutputError
            raise error(f"{failure.code}: {failure.message}") from failure
        return blocks

    async def _region(
        self, body: bytes, number: int, frame: ImageFrame, crops: CropRenderer
    ) -> list[Block]:
        async with self._client() as client:
            session = Session(client, asyncio.Semaphore(1), RunStats(pages=1))
            content = await self._ask(session, body, number)
            if self.profile.two_step:
                return await self._two_step(session, number, content, frame, crops)
            return self._parse(content, number, frame)

    def _parse(self, content: str, number: int, frame: ImageFrame) -> list[Block]:
        """The blocks of a one-request answer; raises PageFailure("bad_output") when unreadable."""
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
            raise PageFailure("bad_output", str(exc)) from exc

    async def _two_step(
        self, session: Session, number: int, layout: str, frame: ImageFrame, render: CropRenderer
    ) -> list[Block]:
        """MinerU's second step (`vllm_regions.read_regions`) with this engine's requests."""
        ask = partial(self._ask, session, number=number)
        try:
            read = await read_regions(ask, self.options, number, layout, frame, render)
        except EngineOutputError as exc:
            raise PageFailure("bad_output", str(exc)) from exc
        except CropError as exc:
            raise PageFailure("render_failed", str(exc)) from exc
        session.stats.encode_cpu_s += read.encode_cpu_s
        session.stats.parse_cpu_s += read.parse_cpu_s
        return read.blocks

    async def _ask(self, session: Session, body: bytes, number: int) -> str:
        """The model's answer to `body`, asked again with the strict guard when cut or looping."""
        strict = False
        while True:
            content, finish = await complete(
                session, self._endpoints, self.options, body, number, strict
            )
            problem = output_problem(content, finish)
            if problem is None:
                return content
            if strict:
                raise PageFailure(*problem)
            log.info("page %d: %s; asking again with the strict guard", number, problem[1])
            session.stats.strict_retries += 1
            strict = True

    async def _page(
        self,
        run: _Run,
        number: int,
        size: tuple[float, float, int],
        on_page: Callable[[Page], None] | None,
    ) -> Page:
        try:
            page = await self._read(run, number)
        except PageFailure as failure:
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
            check_reachable(run.session)
            try:
                rendered = await run.pool.render(
                    run.source,
                    number,
                    dpi=self.options.dpi,
                    max_pixels=self.options.max_pixels,
                    build_body=run.build_body,
                )
            except Exception as exc:
                raise PageFailure("render_failed", f"{type(exc).__name__}: {exc}") from exc
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
