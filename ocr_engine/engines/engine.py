"""The page-engine protocol: what the text layer, the OCR engines and any new engine implement.

An engine reads a window of pages of one open document (`PageWindow`) and gives back one `Page`
per number, in order, each with its `status`, `engine` and `errors`: a page the engine cannot
read comes back `failed` with a `PageError`, never as an exception and never left out (an
exception is kept for a document that cannot be read at all). `PageReader` walks an ordered list
of engines (`ocr_engine.engines.reader.build_engines`); a new engine is one class and one line
there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

import pymupdf

from ocr_engine.geometry import Box
from ocr_engine.inputs.pdf import load_page
from ocr_engine.schema import Block, EngineInfo, Line, Page, PageError, PageStatus

__all__ = [
    "TEXT_LAYER_ROUTE",
    "FigureReader",
    "PageEngine",
    "PageWindow",
    "RegionReader",
    "engine_error",
    "failed_page",
    "figure_with_lines",
    "read_each",
    "read_page",
]

log = logging.getLogger(__name__)

TEXT_LAYER_ROUTE = "text layer"


@dataclass(frozen=True)
class PageWindow:
    """Pages `numbers` (1-based, in order) of the open `pdf`, whose bytes are `data`; `name`
    is the file's, for messages; `on_page` sees each page as the engine finishes it."""

    pdf: pymupdf.Document
    data: bytes
    numbers: tuple[int, ...]
    password: str | None = None
    name: str = ""
    on_page: Callable[[Page], None] | None = field(default=None, compare=False)

    def only(self, numbers: Sequence[int]) -> PageWindow:
        """The same document, other pages."""
        return replace(self, numbers=tuple(numbers))


@runtime_checkable
class PageEngine(Protocol):
    """Reads windows of pages; `info` names the engine, model and version its pages carry."""

    info: EngineInfo

    def read(self, window: PageWindow) -> list[Page]:
        """One page per number of the window, in order, failed pages included (each given to
        `window.on_page`, when set, as soon as it is read)."""
        ...

    def close(self) -> None:
        """Release what the engine started (worker processes, connections); it may be reused."""
        ...


@runtime_checkable
class RegionReader(Protocol):
    """An OCR engine that also reads one region of a page (the raster figures of text-layer
    pages): `read_region` gives its lines in reading order, boxes in displayed-page points, and
    raises `ocr_engine.errors.EngineError` when it cannot read it."""

    info: EngineInfo

    def read_region(self, page: pymupdf.Page, box: Box) -> list[Line]:
        """The lines of text inside `box` of the displayed page."""
        ...


@runtime_checkable
class FigureReader(Protocol):
    """A region reader that also reads a raster figure's structure: `read_figure` gives the
    blocks the figure block of a text-layer page is once read (the figure with its lines; or a
    `table` block with cells, after the figure with the lines outside the table when there are
    any), and raises `ocr_engine.errors.EngineError` when it cannot read it."""

    info: EngineInfo

    def read_figure(self, page: pymupdf.Page, block: Block) -> list[Block]:
        """The blocks the figure `block` of the displayed `page` is."""
        ...


def figure_with_lines(block: Block, lines: list[Line], info: EngineInfo) -> Block:
    """The figure `block` holding the `lines` the engine `info` read inside it."""
    text = "\n".join(line.text for line in lines)
    return block.model_copy(update={"text": text, "lines": lines, "engine": info})


def engine_error(code: str, exc: BaseException) -> PageError:
    return PageError(code=code, message=f"{type(exc).__name__}: {exc}")


def read_page(page: pymupdf.Page, info: EngineInfo, blocks: list[Block]) -> Page:
    """A page `info`'s engine read: the displayed page's size and rotation, and its blocks."""
    rect = page.rect
    return Page(
        number=page.number + 1,
        width=rect.width,
        height=rect.height,
        rotation=page.rotation,
        engine=info,
        blocks=blocks,
    )


def failed_page(page: pymupdf.Page, info: EngineInfo, errors: list[PageError]) -> Page:
    """A page `info`'s engine could not read: its size and the errors, no blocks."""
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


def read_each(
    info: EngineInfo, window: PageWindow, extract: Callable[[pymupdf.Page], Page]
) -> list[Page]:
    """`extract` on each page of the window; a page it raises on comes back failed (a page
    MuPDF cannot load from a damaged file is `BadInputError`, for the whole document)."""
    pages = []
    for number in window.numbers:
        page = load_page(window.pdf, number, window.name)
        try:
            pages.append(extract(page))
        except Exception as exc:
            log.warning("page %d failed in %s: %s", number, info.name, exc)
            pages.append(failed_page(page, info, [engine_error("engine_error", exc)]))
        if window.on_page is not None:
            window.on_page(pages[-1])
    return pages
