"""Per-page routing over an ordered list of page engines (`ocr_engine.engines.engine.PageEngine`).

The list (`build_engines`) holds the OCR engines in the order they are tried (the vLLM endpoint
when one is configured, then the CPU engine) and the text layer last. Every page is read from
the text layer first: `auto` asks `routing.ocr_reason` whether it can be trusted, `always` sends
every page to OCR, `never` builds no OCR engine. A page the first OCR engine fails goes to the
next one and is marked `fallback` with the earlier errors; after the last, the text layer keeps
it (`fallback`) when it has text, else it is `failed` with every engine's error. A page whose
routing raised carries a `routing_failed` error and a route that says so.

A page kept from the text layer then has the text inside its large raster figures read by the
first OCR engine that reads regions (`RegionReader`; `ExtractOptions.figure_ocr`, never with
`ocr=never`): each read figure block carries the lines and that engine (a reader that reads a
figure's structure, `FigureReader`, makes a picture of a table a `table` block with cells), a
region the engine fails on adds a `figure_ocr_failed` error and leaves the page ok; such pages
have a cache key of their own (the text layer's and the region reader's).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

import pymupdf

from ocr_engine.engines.engine import (
    TEXT_LAYER_ROUTE,
    FigureReader,
    PageEngine,
    PageWindow,
    RegionReader,
    engine_error,
    figure_with_lines,
)
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine, raster_regions
from ocr_engine.engines.routing import ocr_reason
from ocr_engine.inputs.pdf import load_page
from ocr_engine.layout.office_match import shape_pages
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import Block, EngineInfo, Page, PageError, PageStatus

__all__ = [
    "OCR_FAILED_ROUTE",
    "ROUTING_FAILED_ROUTE",
    "TEXT_LAYER_ROUTE",
    "PageCache",
    "PageReader",
    "Router",
    "build_engines",
    "engine_key",
    "sent_to_ocr",
]

log = logging.getLogger(__name__)

OCR_FAILED_ROUTE = f"{TEXT_LAYER_ROUTE} (OCR failed)"
ROUTING_FAILED_ROUTE = f"{TEXT_LAYER_ROUTE} (routing failed)"
FORCED = "OCR forced (--ocr always)"
# Bump when the choice of figure regions or how they are read changes: it is part of the cache key
# of pages whose figures were read (the text layer's key stays, so those pages are not read again).
FIGURE_OCR_VERSION = "2"

Router = Callable[[pymupdf.Page, Page], str | None]
"""Why a page needs OCR given its text-layer reading, or None to keep the text layer."""


class PageCache(Protocol):
    """Finished pages by document hash, page number and engine key (engine, model, prompt)."""

    def get(self, doc_id: str, number: int, engine_key: str) -> Page | None: ...

    def put(self, doc_id: str, engine_key: str, page: Page) -> None: ...


def engine_key(info: EngineInfo) -> str:
    return f"{info.name}|{info.model or ''}|{info.version or ''}"


def build_engines(options: ExtractOptions, text_engine: PageEngine) -> list[PageEngine]:
    """The engines `options` name, in the order pages are offered to them: OCR, then the text
    layer. Engines are imported and built here, on first use, never at import."""
    engines: list[PageEngine] = []
    if options.ocr is not OcrMode.never:
        if options.vllm is not None:
            from ocr_engine.engines.vllm_engine import VLLMEngine

            engines.append(VLLMEngine(options.vllm))
        if options.cpu.enabled:
            from ocr_engine.engines.rapid_engine import RapidOCREngine

            engines.append(RapidOCREngine(options.cpu))
    engines.append(text_engine)
    return engines


def sent_to_ocr(page: Page) -> bool:
    """Whether routing sent the page to OCR (whichever engine read it in the end)."""
    return page.route not in (None, TEXT_LAYER_ROUTE, ROUTING_FAILED_ROUTE)


class PageReader:
    """Reads windows of pages of one open document; engines are built on first use and reused.

    `engines` replaces the list `build_engines` makes from the options (the text layer last)."""

    def __init__(
        self,
        options: ExtractOptions | None = None,
        *,
        text_engine: PageEngine | None = None,
        cache: PageCache | None = None,
        engines: Sequence[PageEngine] | None = None,
        router: Router = ocr_reason,
    ) -> None:
        self.options = options or ExtractOptions()
        self.text_engine: PageEngine = text_engine or PyMuPDFEngine()
        self.cache = cache
        self.router = router
        self._lock = threading.Lock()
        self._engines: list[PageEngine] | None = list(engines) if engines is not None else None

    @property
    def engines(self) -> list[PageEngine]:
        """OCR engines in the order tried, then the text layer."""
        with self._lock:
            if self._engines is None:
                self._engines = build_engines(self.options, self.text_engine)
            return self._engines

    def close(self) -> None:
        """Stop what the engines started (render processes of the vLLM engine)."""
        with self._lock:
            engines = self._engines or []
        for engine in engines:
            engine.close()

    def __enter__(self) -> PageReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cache_key(self, info: EngineInfo) -> str:
        """A page's key in the cache: its engine, model and version, and folio's extraction."""
        return f"{engine_key(info)}|x{self.options.extraction_version}"

    def read(
        self,
        pdf: pymupdf.Document,
        data: bytes,
        doc_id: str,
        numbers: Sequence[int],
        *,
        password: str | None = None,
        name: str = "",
        on_page: Callable[[Page], None] | None = None,
    ) -> list[Page]:
        """The pages `numbers` (1-based) of `pdf`, whose bytes are `data` (the file `name`), in
        that order; `on_page` sees each page once, as soon as the engine that keeps it has read
        it (an OCR'd page as the OCR engine finishes it, before the rest of the window)."""
        *ocr, text_engine = self.engines
        window = PageWindow(pdf, data, tuple(numbers), password, name)
        ocr_key = self.cache_key(ocr[0].info) if ocr else None
        done = _Done(on_page)
        pages: dict[int, Page] = {}
        for number in dict.fromkeys(numbers):
            cached = self._cached(doc_id, number, ocr_key) if ocr_key else None
            if cached is not None:
                pages[number] = cached
                done(cached)
        todo = [n for n in dict.fromkeys(numbers) if n not in pages]
        text_pages = self._text_pages(text_engine, window.only(todo), doc_id)
        reasons: dict[int, str] = {}
        problems: dict[int, PageError] = {}
        for number in todo:
            text_page = text_pages[number]
            reason = None
            if ocr:
                reason, problem = self._route(load_page(pdf, number, name), text_page)
                if problem is not None:
                    problems[number] = problem
            if reason is None:
                pages[number] = text_page
            else:
                reasons[number] = reason
        readers = [e for e in ocr if isinstance(e, RegionReader)]
        figures = self.options.figure_ocr and self.options.ocr is not OcrMode.never
        if not (figures and readers):  # the text layer's pages are read already
            for number in todo:
                if number not in reasons:
                    done(pages[number])
        if reasons:
            chosen = replace(window.only(sorted(reasons)), on_page=done.unless_failed)
            pages.update(self._ocr(ocr, chosen, doc_id, reasons, text_pages))
        if figures and readers:
            for number in todo:
                kept = pages[number]
                if kept is text_pages[number] and kept.route == TEXT_LAYER_ROUTE and kept.blocks:
                    pages[number] = self._figures(pdf, doc_id, kept, readers, name)
                done(pages[number])
        for number, problem in problems.items():
            pages[number] = _routing_failed(pages[number], problem)
        for number in numbers:  # what every engine failed on, read last
            done(pages[number])
        return shape_pages(pdf, [pages[n] for n in numbers])  # a rendering: its source's structure

    def _figures(
        self,
        pdf: pymupdf.Document,
        doc_id: str,
        page: Page,
        readers: Sequence[RegionReader],
        name: str = "",
    ) -> Page:
        """The text-layer page with the text inside its large raster figures (`raster_regions`)
        read by the first of `readers` that can, cached under its own key. Each failure adds a
        `figure_ocr_failed` error (a region no reader could read keeps no text); a page with
        errors is not cached, so that it is read again."""
        reader_key = engine_key(readers[0].info)
        key = f"{self.cache_key(page.engine)}|figures{FIGURE_OCR_VERSION}:{reader_key}"
        cached = self._cached(doc_id, page.number, key)
        if cached is not None:
            return cached
        pdf_page = load_page(pdf, page.number, name)
        regions = raster_regions(pdf_page, page, self.options.figure_regions)
        if not regions:
            return page
        read: dict[str, list[Block]] = {}
        errors: list[PageError] = []
        for block in regions:
            for reader in readers:
                try:
                    if isinstance(reader, FigureReader):
                        read[block.id] = reader.read_figure(pdf_page, block)
                    else:
                        lines = reader.read_region(pdf_page, block.bbox)
                        read[block.id] = [figure_with_lines(block, lines, reader.info)]
                except Exception as exc:  # a figure that cannot be read must not fail the page
                    log.warning("page %d, %s: figure OCR failed: %s", page.number, block.id, exc)
                    error = engine_error("figure_ocr_failed", exc)
                    message = f"{block.id} ({reader.info.name}): {error.message}"
                    errors.append(error.model_copy(update={"message": message}))
                    continue
                break
        blocks = [b for block in page.blocks for b in read.get(block.id, [block])]
        out = page.model_copy(update={"blocks": blocks, "errors": [*page.errors, *errors]})
        if len(blocks) != len(page.blocks):  # a figure that is a table beside its other words
            out = out.renumbered()
        if not errors and self.cache is not None:
            self.cache.put(doc_id, key, out)
        return out

    def _cached(self, doc_id: str, number: int, key: str) -> Page | None:
        return self.cache.get(doc_id, number, key) if self.cache is not None else None

    def _text_pages(self, engine: PageEngine, window: PageWindow, doc_id: str) -> dict[int, Page]:
        """The window's text-layer pages, from the cache or read (and cached when read)."""
        key = self.cache_key(engine.info)
        pages: dict[int, Page] = {}
        for number in window.numbers:
            cached = self._cached(doc_id, number, key)
            if cached is not None:
                pages[number] = cached
        missing = [n for n in window.numbers if n not in pages]
        if missing:
            for number, page in zip(missing, engine.read(window.only(missing)), strict=True):
                if page.status is not PageStatus.failed and self.cache is not None:
                    self.cache.put(doc_id, key, page)
                pages[number] = page
        return pages

    def _route(self, page: pymupdf.Page, text_page: Page) -> tuple[str | None, PageError | None]:
        """Why the page goes to OCR (None: it keeps the text layer), and what failed deciding."""
        if self.options.ocr is OcrMode.always:
            return FORCED, None
        try:
            return self.router(page, text_page), None
        except Exception as exc:  # a broken page must not stop routing of the others
            log.warning("routing page %d failed: %s", page.number + 1, exc)
            reason = None if text_page.blocks else f"routing failed ({exc}); no text layer"
            return reason, engine_error("routing_failed", exc)

    def _ocr(
        self,
        engines: Sequence[PageEngine],
        window: PageWindow,
        doc_id: str,
        reasons: dict[int, str],
        text_pages: dict[int, Page],
    ) -> dict[int, Page]:
        """The window read by the first OCR engine; its failed pages by the next, and so on."""
        first, *rest = engines
        firsts = dict(zip(window.numbers, first.read(window), strict=True))
        out: dict[int, Page] = {}
        errors: dict[int, list[PageError]] = {}
        for number, page in firsts.items():
            if page.status is PageStatus.failed:
                errors[number] = list(page.errors)
                continue
            if self.cache is not None:
                self.cache.put(doc_id, self.cache_key(page.engine), page)
            out[number] = page
        for engine in rest:
            failed = list(errors)
            if not failed:
                break
            for number, page in zip(failed, engine.read(window.only(failed)), strict=True):
                if page.status is PageStatus.failed:
                    errors[number] += page.errors
                    continue
                page.status = PageStatus.fallback
                page.errors = errors.pop(number) + page.errors
                out[number] = page
        for number, earlier in errors.items():
            out[number] = _last_resort(firsts[number], text_pages[number], earlier)
        for number, page in out.items():
            page.route = reasons[number] if page.route is None else page.route
        return out


class _Done:
    """Gives each page to `on_page` once (the pages of one `PageReader.read`)."""

    def __init__(self, on_page: Callable[[Page], None] | None) -> None:
        self.on_page = on_page
        self.seen: set[int] = set()

    def __call__(self, page: Page) -> None:
        if self.on_page is not None and page.number not in self.seen:
            self.seen.add(page.number)
            self.on_page(page)

    def unless_failed(self, page: Page) -> None:
        """A page an OCR engine read: given now unless it failed (the next engine may read it)."""
        if page.status is not PageStatus.failed:
            self(page)


def _last_resort(failed: Page, text_page: Page, errors: list[PageError]) -> Page:
    """A page every OCR engine failed: the text layer when it has text, else failed."""
    if text_page.status is not PageStatus.failed and text_page.blocks:
        text_page.status = PageStatus.fallback
        text_page.errors = errors
        text_page.route = OCR_FAILED_ROUTE
        return text_page
    failed.errors = errors + text_page.errors
    return failed


def _routing_failed(page: Page, problem: PageError) -> Page:
    """The page with its routing error first; a page kept from the text layer says so."""
    route = ROUTING_FAILED_ROUTE if page.route == TEXT_LAYER_ROUTE else page.route
    return page.model_copy(update={"errors": [problem, *page.errors], "route": route})
