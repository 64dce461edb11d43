"""Images made in the tests: text drawn with Pillow, encoded as PNG, JPEG, TIFF frames and more."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pymupdf
from PIL import Image, ImageDraw, ImageFont


def text_image(lines: list[str], *, size: tuple[int, int] = (1000, 360)) -> Image.Image:
    """Black text lines on white, 40 px type, one line every 90 px from the top-left margin."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=40)
    for i, line in enumerate(lines):
        draw.text((60, 60 + 90 * i), line, fill="black", font=font)
    return image


def encode(image: Image.Image, fmt: str, **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def tiff_frames(images: list[Image.Image], **options: Any) -> bytes:
    """A multi-page TIFF, one frame per image."""
    out = io.BytesIO()
    images[0].save(out, format="TIFF", save_all=True, append_images=images[1:], **options)
    return out.getvalue()


def page_png(pdf: bytes, number: int, dpi: int = 144) -> Image.Image:
    """A page of a PDF rendered as an RGB image (saved with its dpi, it is that page again)."""
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        pix = doc[number - 1].get_pixmap(dpi=dpi, alpha=False)
        return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def dark_share_inside(
    image: Image.Image, boxes: list[tuple[float, float, float, float]], scale: float
) -> float:
    """The share of the image's dark pixels that lie inside `boxes` (PDF points x `scale`)."""
    dark = np.asarray(image.convert("L")) < 128
    inside = np.zeros_like(dark)
    for x0, y0, x1, y1 in boxes:
        a, b = max(0, int(x0 * scale) - 2), max(0, int(y0 * scale) - 2)
        inside[b : int(y1 * scale) + 3, a : int(x1 * scale) + 3] = True
    total = int(dark.sum())
    return float((dark & inside).sum()) / total if total else 0.0
