"""Page rendering for OCR engines: PNG bytes at a DPI, capped in pixels, plus the scale used."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pymupdf

__all__ = ["RenderedPage", "render_page"]


@dataclass(frozen=True)
class RenderedPage:
    """A page image; `width_pt`/`height_pt` and `x0`/`y0` are `page.rect` so boxes map back."""

    png: bytes
    width_px: int
    height_px: int
    width_pt: float
    height_pt: float
    x0: float = 0.0
    y0: float = 0.0

    @property
    def zoom(self) -> float:
        return self.width_px / self.width_pt


def render_page(page: pymupdf.Page, *, dpi: int = 144, max_pixels: int = 6_000_000) -> RenderedPage:
    """The displayed page (CropBox, /Rotate applied) as RGB PNG, scaled down to fit the cap."""
    rect = page.rect
    zoom = dpi / 72
    pixels = rect.width * zoom * rect.height * zoom
    if pixels > max_pixels:
        zoom *= math.sqrt(max_pixels / pixels)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace=pymupdf.csRGB)
    return RenderedPage(
        png=pix.tobytes("png"),
        width_px=pix.width,
        height_px=pix.height,
        width_pt=rect.width,
        height_pt=rect.height,
        x0=rect.x0,
        y0=rect.y0,
    )
