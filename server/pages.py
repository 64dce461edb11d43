"""Page images: PyMuPDF renders the page, Pillow draws the highlighted boxes; renders are cached.

A render never exceeds the renderer's pixel bound: a page (or a crop's region) too large for the
dpi asked is rendered at the largest whole dpi that fits, and the dpi used is reported
(`Render.dpi`, the `X-Folio-Render-Dpi` header). The cache is bounded by the bytes it holds."""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pymupdf
from PIL import Image, ImageDraw

from ocr_engine.errors import BadInputError
from ocr_engine.geometry import Box, fit_dpi, translate
from ocr_engine.inputs import open_stored

HIGHLIGHT_FILL = (255, 214, 0, 90)
HIGHLIGHT_EDGE = (220, 38, 38, 255)
DEFAULT_MAX_PIXELS = 20_000_000  # A3 or Tabloid at 300 dpi; 60 MB as RGB
DEFAULT_CACHE_BYTES = 256 << 20
_RECTS = 4096  # page sizes remembered, so that a cached render needs no PDF opened
_RULE = 3  # pixels of the rule between the parts of a stacked crop
_RULE_COLOUR = (160, 160, 160)


class PageOutOfRangeError(BadInputError, ValueError):
    """The document has no such page."""


class UnrenderablePageError(BadInputError):
    """MuPDF cannot render the page (damaged, or too large even at 1 dpi)."""


@dataclass(frozen=True)
class Render:
    """A plain render of a page or of a region of it: `dpi` is the resolution used (the one asked
    for, or less to stay within the pixel bound) and `origin` the region's top-left in points."""

    image: Image.Image
    dpi: int
    origin: tuple[float, float] = (0.0, 0.0)

    @property
    def nbytes(self) -> int:
        return self.image.width * self.image.height * len(self.image.getbands())

    def drawn(self, highlights: list[Box]) -> Image.Image:
        """The render with `highlights` (PDF points) drawn; the cached image is kept."""
        if not highlights:
            return self.image
        x, y = self.origin
        moved = [translate(box, -x, -y) for box in highlights]
        return draw_boxes(self.image, moved, scale=self.dpi / 72.0)

    def png(self, highlights: list[Box]) -> bytes:
        """The render as PNG with `highlights` (PDF points) drawn."""
        return _png(self.drawn(highlights))


@dataclass(frozen=True)
class Row:
    """Renders of regions of one page shown side by side, a rule between them (a table row's
    label and its cited cell, the columns between left out)."""

    parts: list[Render]

    @property
    def dpi(self) -> int:
        return min(part.dpi for part in self.parts)

    def drawn(self, highlights: list[Box]) -> Image.Image:
        """The parts as one image, each with `highlights` drawn where they fall on it."""
        images = [part.drawn(highlights) for part in self.parts]
        return _joined(images, across=True)


@dataclass(frozen=True)
class Stack:
    """Renders of regions of one page shown one under the other, a rule between them (a table
    cell's column headings over its row, the rows between left out); each may be a Row."""

    parts: list[Render | Row]

    @property
    def dpi(self) -> int:
        return min(part.dpi for part in self.parts)

    def png(self, highlights: list[Box]) -> bytes:
        """The parts as one PNG, each with `highlights` drawn where they fall on it."""
        return _png(_joined([part.drawn(highlights) for part in self.parts], across=False))


def _joined(images: list[Image.Image], *, across: bool) -> Image.Image:
    """`images` side by side (`across`) or one under the other, a grey rule between each two."""
    if len(images) == 1:
        return images[0]
    rules = _RULE * (len(images) - 1)
    if across:
        size = (sum(i.width for i in images) + rules, max(i.height for i in images))
    else:
        size = (max(i.width for i in images), sum(i.height for i in images) + rules)
    canvas = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    at = 0
    for i, image in enumerate(images):
        if i:
            rule = (at, 0, at + _RULE - 1, size[1]) if across else (0, at, size[0], at + _RULE - 1)
            draw.rectangle(rule, fill=_RULE_COLOUR)
            at += _RULE
        canvas.paste(image, (at, 0) if across else (0, at))
        at += image.width if across else image.height
    return canvas


def stacked(parts: list[Render | Row]) -> Render | Stack:
    """One render alone, or several shown one under the other."""
    only = parts[0]
    return only if len(parts) == 1 and isinstance(only, Render) else Stack(parts)


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


_Key = tuple[str, int, int, Box | None]
_Fact = TypeVar("_Fact")


class PageRenderer:
    """Renders page `n` (1-based) of a PDF, or a region of it, at a dpi lowered where needed to
    stay within `max_pixels`; plain renders are cached in memory up to `cache_bytes` in all."""

    def __init__(
        self, *, max_pixels: int = DEFAULT_MAX_PIXELS, cache_bytes: int = DEFAULT_CACHE_BYTES
    ) -> None:
        self.max_pixels = max_pixels
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[_Key, Render] = OrderedDict()
        self._cached = 0
        self._rects: OrderedDict[tuple[str, int], pymupdf.Rect] = OrderedDict()
        self._lines: OrderedDict[tuple[str, int], list[Box]] = OrderedDict()
        self._words: OrderedDict[tuple[str, int], list[Box]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def cached_bytes(self) -> int:
        """What the cached renders hold, in bytes."""
        return self._cached

    def render(self, pdf: Path, number: int, dpi: int, region: Box | None = None) -> Render:
        """Page `number`, or the part of it within `region` (PDF points, clamped to the page;
        ValueError when nothing of it is on the page), at `dpi` or the most that fits."""
        try:
            rect = self._page_rect(pdf, number)
            clip = rect if region is None else _clamp(region, rect)
            fitted = fit_dpi(clip.width, clip.height, dpi, self.max_pixels)
            if fitted < 1:
                raise UnrenderablePageError(
                    f"page {number} is too large to render within {self.max_pixels} pixels"
                )
            key = (str(pdf), number, fitted, None if region is None else _box(clip))
            with self._lock:
                if (hit := self._cache.get(key)) is not None:
                    self._cache.move_to_end(key)
                    return hit
            made = _render(pdf, number, fitted, None if region is None else clip)
        except (pymupdf.mupdf.FzErrorBase, pymupdf.FileDataError) as exc:
            raise UnrenderablePageError(f"page {number} cannot be rendered: {exc}") from None
        self._keep(key, made)
        return made

    def text_lines(self, pdf: Path, number: int) -> list[Box]:
        """The boxes of the text layer's lines on page `number` (none on a scanned page)."""

        def read(page: pymupdf.Page) -> list[Box]:
            found = page.get_text("dict", flags=0)["blocks"]
            return [tuple(line["bbox"]) for block in found for line in block.get("lines", [])]

        try:
            return self._page_fact(self._lines, pdf, number, read)
        except (pymupdf.mupdf.FzErrorBase, pymupdf.FileDataError) as exc:
            raise UnrenderablePageError(f"page {number} cannot be read: {exc}") from None

    def text_words(self, pdf: Path, number: int) -> list[Box]:
        """The boxes of the text layer's words on page `number` (none on a scanned page)."""

        def read(page: pymupdf.Page) -> list[Box]:
            return [tuple(word[:4]) for word in page.get_text("words")]

        try:
            return self._page_fact(self._words, pdf, number, read)
        except (pymupdf.mupdf.FzErrorBase, pymupdf.FileDataError) as exc:
            raise UnrenderablePageError(f"page {number} cannot be read: {exc}") from None

    def _page_rect(self, pdf: Path, number: int) -> pymupdf.Rect:
        return self._page_fact(self._rects, pdf, number, lambda page: page.rect)

    def _page_fact(
        self,
        kept: OrderedDict[tuple[str, int], _Fact],
        pdf: Path,
        number: int,
        read: Callable[[pymupdf.Page], _Fact],
    ) -> _Fact:
        """What `read` gives of page `number`, remembered for the last `_RECTS` pages."""
        key = (str(pdf), number)
        with self._lock:
            if (fact := kept.get(key)) is not None:
                return fact
        with open_stored(pdf) as doc:
            _check_range(doc, number)
            fact = read(doc[number - 1])
        with self._lock:
            kept[key] = fact
            while len(kept) > _RECTS:
                kept.popitem(last=False)
        return fact

    def _keep(self, key: _Key, made: Render) -> None:
        if made.nbytes > self.cache_bytes:
            return
        with self._lock:
            if key in self._cache:
                return
            self._cache[key] = made
            self._cached += made.nbytes
            while self._cached > self.cache_bytes:
                self._cached -= self._cache.popitem(last=False)[1].nbytes


def _check_range(doc: pymupdf.Document, number: int) -> None:
    if not 1 <= number <= doc.page_count:
        raise PageOutOfRangeError(
            f"page {number} is out of range: the document has {doc.page_count} pages"
        )


def _clamp(region: Box, rect: pymupdf.Rect) -> pymupdf.Rect:
    clip = pymupdf.Rect(region) & rect
    if clip.width < 1 or clip.height < 1:
        raise ValueError(
            f"bbox {region} is outside the page ({rect.width:.0f} x {rect.height:.0f} points)"
        )
    return clip


def _box(rect: pymupdf.Rect) -> Box:
    return (rect.x0, rect.y0, rect.x1, rect.y1)


def _render(pdf: Path, number: int, dpi: int, clip: pymupdf.Rect | None) -> Render:
    with open_stored(pdf) as doc:
        _check_range(doc, number)
        pix = doc[number - 1].get_pixmap(dpi=dpi, clip=clip, alpha=False)
        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples_mv)
    origin = (0.0, 0.0) if clip is None else (clip.x0, clip.y0)
    return Render(image, dpi, origin)


def draw_boxes(image: Image.Image, boxes: list[Box], *, scale: float) -> Image.Image:
    """A copy of `image` with each PDF-point box filled translucent yellow and outlined in red."""
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width = max(2, round(scale))
    for x0, y0, x1, y1 in boxes:
        rect = (x0 * scale - width, y0 * scale - width, x1 * scale + width, y1 * scale + width)
        draw.rectangle(rect, fill=HIGHLIGHT_FILL, outline=HIGHLIGHT_EDGE, width=width)
    return Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")
