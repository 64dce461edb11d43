"""Per-page routing: the text layer where it is trustworthy, OCR otherwise, with fallbacks.

`auto` asks `routing.ocr_reason` about every page; `always` sends every page to OCR; `never`
keeps the text layer. OCR goes to the vLLM endpoint when one is configured, else to the CPU
engine. A page the endpoint cannot read is read by the CPU engine (or kept from the text layer)
and marked `fallback`; a page nothing can read is `failed`, with every engine's error on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import pymupdf

from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.pymupdf_engine import PyMuPDFEngine
from ocr_engine.schema import EngineInfo, Page, PageError, PageStatus

if TYPE_CHECKING:
    from ocr_engine.rapid_engine import RapidOCREngine
    from ocr_engine.vllm_engine import VLLMEngine

__all__ = ["PageCache", "PageReader", "engine_key"]

log = logging.getLogger(__name__)

TEXT_LAYER_ROUTE = "text layer"


class PageCache(Protocol):
    """Finished pages by document hash, page number and engine key (engine, model, prompt)."""

    def get(self, doc_id: str, number: int, engine_key: str) -> Page | None: ...

    def put(self, doc_id: str, engine_key: str, page: Page) -> None: ...


def engine_key(info: EngineInfo) -> str:
    return f"{info.name}|{info.model or ''}|{info.version or ''}"


def failed_page(page: pymupdf.Page, info: EngineInfo, errors: list[PageError]) -> Page:
    rect = page.rect
    return Page(
        number=page.number + 1,
        width=rect.width or 1.0,
        height=rect.height or 1.0,
        rotation=page.rotation,
        engine=info,
        status=PageStatus.failed,
        errors=errors,
    )


def _error(code: str, exc: BaseException) -> PageError:
    return PageError(code=code, message=f"{type(exc).__name__}: {exc}")


class PageReader:
    """Reads windows of pages of one open document; engines are built on first use and reused."""

    def __init__(
        self,
        options: ExtractOptions | None = None,
        *,
        text_engine: PyMuPDFEngine | None = None,
        cache: PageCache | None = None,
    ) -> None:
        self.options = options or ExtractOptions()
        self.text_engine = text_engine or PyMuPDFEngine()
        self.cache = cache
        self._lock = threading.Lock()
        self._vllm: VLLMEngine | None = None
        self._cpu: RapidOCREngine | None = None

    def close(self) -> None:
        """Stop the OCR engines' workers (render processes of the vLLM engine)."""
        with self._lock:
            vllm, self._vllm = self._vllm, None
        if vllm is not None:
            vllm.close()

    def __enter__(self) -> PageReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def ocr_info(self) -> EngineInfo | None:
        """The engine OCR pages go to first, or None when OCR is off or has no engine."""
        if self.options.ocr is OcrMode.never:
            return None
        if self.options.vllm is not None:
            return self._vllm_engine().info
        if self.options.cpu.enabled:
            return self._cpu_engine().info
        return None

    def _vllm_engine(self) -> VLLMEngine:
        with self._lock:
            if self._vllm is None:
                from ocr_engine.vllm_engine import VLLMEngine

                assert self.options.vllm is not None
                self._vllm = VLLMEngine(self.options.vllm)
            return self._vllm

    def _cpu_engine(self) -> RapidOCREngine:
        with self._lock:
            if self._cpu is None:
                from ocr_engine.rapid_engine import RapidOCREngine

                self._cpu = RapidOCREngine(self.options.cpu)
            return self._cpu

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
    ) -> list[Page]:
        """The pages `numbers` (1-based) of `pdf`, whose bytes are `data`, in that order."""
        ocr_info = self.ocr_info
        ocr_key = self.cache_key(ocr_info) if ocr_info is not None else None
        pages: dict[int, Page] = {}
        text_pages: dict[int, Page] = {}
        to_ocr: dict[int, str] = {}
        for number in numbers:
            cached = self._cached(doc_id, number, ocr_key) if ocr_key else None
            if cached is not None:
                pages[number] = cached
                continue
            text_page = self._text_page(pdf, doc_id, number)
            reason = self._ocr_reason(pdf[number - 1], text_page) if ocr_key else None
            if reason is None:
                pages[number] = text_page
            else:
                text_pages[number] = text_page
                to_ocr[number] = reason
        if to_ocr:
            pages.update(self._ocr(pdf, data, doc_id, to_ocr, text_pages, password))
        return [pages[n] for n in numbers]

    def _cached(self, doc_id: str, number: int, key: str) -> Page | None:
        return self.cache.get(doc_id, number, key) if self.cache is not None else None

    def _text_page(self, pdf: pymupdf.Document, doc_id: str, number: int) -> Page:
        key = self.cache_key(self.text_engine.info)
        cached = self._cached(doc_id, number, key)
        if cached is not None:
            return cached
        page = pdf[number - 1]
        try:
            result = self.text_engine.extract_page(page)
        except Exception as exc:
            log.warning("page %d failed in %s: %s", number, self.text_engine.name, exc)
            return failed_page(page, self.text_engine.info, [_error("engine_error", exc)])
        result.route = TEXT_LAYER_ROUTE
        if self.cache is not None:
            self.cache.put(doc_id, key, result)
        return result

    def _ocr_reason(self, page: pymupdf.Page, text_page: Page) -> str | None:
        if self.options.ocr is OcrMode.always:
            return "OCR forced (--ocr always)"
        from ocr_engine.routing import ocr_reason

        try:
            return ocr_reason(page, text_page)
        except Exception as exc:  # a broken page must not stop routing of the others
            log.warning("routing page %d failed: %s", page.number + 1, exc)
            return None if text_page.blocks else f"routing failed ({exc}); no text layer"

    def _ocr(
        self,
        pdf: pymupdf.Document,
        data: bytes,
        doc_id: str,
        reasons: dict[int, str],
        text_pages: dict[int, Page],
        password: str | None,
    ) -> dict[int, Page]:
        numbers = sorted(reasons)
        if self.options.vllm is not None:
            results = self._vllm_engine().read_pages_sync(data, numbers, password=password)
            first = dict(zip(numbers, results, strict=True))
        else:
            first = {n: self._cpu_page(pdf, n) for n in numbers}
        out: dict[int, Page] = {}
        for number in numbers:
            page = first[number]
            if page.status is PageStatus.failed:
                page = self._fallback(pdf, number, page, text_pages[number])
            elif self.cache is not None:
                self.cache.put(doc_id, self.cache_key(page.engine), page)
            page.route = reasons[number] if page.route is None else page.route
            out[number] = page
        return out

    def _cpu_page(self, pdf: pymupdf.Document, number: int) -> Page:
        engine = self._cpu_engine()
        page = pdf[number - 1]
        try:
            return engine.extract_page(page)
        except Exception as exc:
            log.warning("page %d failed in %s: %s", number, engine.info.name, exc)
            return failed_page(page, engine.info, [_error("engine_error", exc)])

    def _fallback(self, pdf: pymupdf.Document, number: int, failed: Page, text_page: Page) -> Page:
        """A page the first OCR engine failed: the CPU engine, else the text layer, else failed."""
        errors = list(failed.errors)
        if self.options.vllm is not None and self.options.cpu.enabled:
            page = self._cpu_page(pdf, number)
            if page.status is not PageStatus.failed:
                page.status = PageStatus.fallback
                page.errors = errors + page.errors
                return page
            errors += page.errors
        if text_page.status is not PageStatus.failed and text_page.blocks:
            text_page.status = PageStatus.fallback
            text_page.errors = errors
            text_page.route = f"{TEXT_LAYER_ROUTE} (OCR failed)"
            return text_page
        failed.errors = errors + (text_page.errors if text_page is not failed else [])
        return failed
