"""Page images: PyMuPDF renders the page, Pillow draws the highlighted boxes; renders are cached."""

from __future__ import annotations

import io
import math
import threading
from collections import OrderedDict
from pathlib import Path

import pymupdf
from PIL import Image, ImageDraw

BBox = tuple[float, float, float, float]

HIGHLIGHT_FILL = (255, 214, 0, 90)
HIGHLIGHT_EDGE = (220, 38, 38, 255)
MAX_HIGHLIGHTS = 50
MAX_COORDINATE = 14_400.0  # the largest page PDF allows, in points


class PageOutOfRangeError(ValueError):
    """The document has no such page."""


def parse_highlight(value: str | None) -> list[BBox]:
    """`x0,y0,x1,y1[;x0,...]` -> boxes; raises ValueError with a message a user can act on."""
    if not value:
        return []
    boxes: list[BBox] = []
    for part in value.split(";"):
        if not part.strip():
            continue
        numbers = part.split(",")
        if len(numbers) != 4:
            raise ValueError(f"highlight box {part!r} needs four numbers x0,y0,x1,y1")
        try:
            x0, y0, x1, y1 = (float(n) for n in numbers)
        except ValueError:
            raise ValueError(f"highlight box {part!r} has a value that is not a number") from None
        if not all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in (x0, y0, x1, y1)):
            raise ValueError(
                f"highlight box {part!r} is out of bounds: coordinates are PDF points "
                f"within ±{MAX_COORDINATE:.0f}"
            )
        boxes.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
    if len(boxes) > MAX_HIGHLIGHTS:
        raise ValueError(f"at most {MAX_HIGHLIGHTS} highlight boxes per image")
    return boxes


class PageRenderer:
    """Renders page `n` (1-based) of a PDF at a dpi, caching the plain render in memory."""

    def __init__(self, cache_pages: int = 64) -> None:
        self._cache: OrderedDict[tuple[str, int, int], Image.Image] = OrderedDict()
        self._capacity = cache_pages
        self._lock = threading.Lock()

    def _base(self, pdf: Path, number: int, dpi: int) -> Image.Image:
        key = (str(pdf), number, dpi)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        with pymupdf.open(pdf) as doc:
            if not 1 <= number <= doc.page_count:
                raise PageOutOfRangeError(
                    f"page {number} is out of range: the document has {doc.page_count} pages"
                )
            pix = doc[number - 1].get_pixmap(dpi=dpi, alpha=False)
            image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        with self._lock:
            self._cache[key] = image
            while len(self._cache) > self._capacity:
                self._cache.popitem(last=False)
        return image

    def image(self, pdf: Path, number: int, dpi: int) -> Image.Image:
        """The plain render of page `number`, shared with the cache: copy it before drawing."""
        return self._base(pdf, number, dpi)

    def render_png(self, pdf: Path, number: int, dpi: int, highlights: list[BBox]) -> bytes:
        image = self._base(pdf, number, dpi)
        if highlights:
            image = draw_boxes(image, highlights, scale=dpi / 72.0)
        out = io.BytesIO()
        image.save(out, format="PNG", compress_level=1)
        return out.getvalue()


def draw_boxes(image: Image.Image, boxes: list[BBox], *, scale: float) -> Image.Image:
    """A copy of `image` with each PDF-point box filled translucent yellow and outlined in red."""
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width = max(2, round(scale))
    for x0, y0, x1, y1 in boxes:
        rect = (x0 * scale - width, y0 * scale - width, x1 * scale + width, y1 * scale + width)
        draw.rectangle(rect, fill=HIGHLIGHT_FILL, outline=HIGHLIGHT_EDGE, width=width)
    return Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")
