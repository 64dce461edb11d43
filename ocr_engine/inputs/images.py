"""Images as documents: PNG, JPEG, TIFF (one page per frame), WebP and BMP wrapped into a PDF.

An image becomes a PDF in memory, one page per frame, the frame its page's only content, the page
size from the image's DPI (72 when it has none) and EXIF orientation applied, so everything after
the boundary (routing, OCR, the page cache, rendering, highlights, crops) treats it as a scanned
PDF page. The document id stays the sha256 of the image's own bytes, which are what is stored.
Bad images are refused with `BadInputError`: unknown or mismatched content, truncated, 0x0, over
`MAX_IMAGE_PIXELS` in a frame, over `MAX_FRAMES` frames, GIF (animated or not), animated
PNG/WebP.
"""

from __future__ import annotations

import io
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Literal

import numpy as np
import pymupdf
from PIL import Image, ImageOps

from ocr_engine.errors import BadInputError

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_FRAMES",
    "MAX_IMAGE_PIXELS",
    "Kind",
    "document_pdf_bytes",
    "image_to_pdf",
    "is_document_name",
    "sniff",
    "stored_pdf_bytes",
]

Kind = Literal["pdf", "png", "jpeg", "tiff", "webp", "bmp", "gif"]

# 256 MiB as RGB (Pillow's own bound): a 600 dpi A3 scan (70 MP) fits, 9,460 x 9,460 does not
MAX_IMAGE_PIXELS = 89_478_485
MAX_FRAMES = 5000
MAX_PAGE_POINTS = 14_400.0  # the largest page PDF allows; a tiny DPI is raised to fit
DEFAULT_DPI = 72.0

IMAGE_SUFFIXES: dict[str, Kind] = {
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".jpe": "jpeg",
    ".jfif": "jpeg",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".webp": "webp",
    ".bmp": "bmp",
    ".dib": "bmp",
}
_NAMED: dict[str, Kind] = {**IMAGE_SUFFIXES, ".pdf": "pdf", ".gif": "gif"}
_WORDS = {
    "pdf": "a PDF",
    "png": "a PNG image",
    "jpeg": "a JPEG image",
    "tiff": "a TIFF image",
    "webp": "a WebP image",
    "bmp": "a BMP image",
    "gif": "a GIF image",
}
_PDF_WINDOW = 1024  # readers accept %PDF- anywhere in the first KiB


def sniff(data: bytes) -> Kind | None:
    """What the bytes are, by their signature; None for anything else."""
    head = data[:16]
    if b"%PDF-" in data[:_PDF_WINDOW]:
        return "pdf"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        return "tiff"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:2] == b"BM":
        return "bmp"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    return None


def is_document_name(name: str) -> bool:
    """A PDF, an accepted image or a file rendered to pages (`ocr_engine.inputs.office`) by its name
    (what a folder scan picks up)."""
    from ocr_engine.inputs.office import OFFICE_SUFFIXES

    return Path(name).suffix.lower() in (".pdf", *IMAGE_SUFFIXES, *OFFICE_SUFFIXES)


def _check_name(kind: Kind, name: str) -> None:
    named = _NAMED.get(Path(name).suffix.lower())
    if named is not None and named != kind:
        raise BadInputError(
            f"{name}: named {Path(name).suffix} but is {_WORDS[kind]}; rename it to what it is"
        )


def _refuse_gif(data: bytes, name: str) -> None:
    try:
        with Image.open(io.BytesIO(data)) as image:
            frames = getattr(image, "n_frames", 1)
    except Exception:
        frames = 1
    if frames > 1:
        raise BadInputError(
            f"{name}: an animated GIF ({frames} frames) is not accepted (GIF is not a document "
            "format); save its frames as a multi-page TIFF or as PNGs"
        )
    raise BadInputError(f"{name}: GIF images are not accepted; save it as PNG")


def _dpi(image: Image.Image) -> tuple[float, float]:
    raw = image.info.get("dpi")
    try:
        x, y = (float(v) for v in raw) if raw else (0.0, 0.0)
    except (TypeError, ValueError):
        x, y = 0.0, 0.0
    if not (x > 1.0 and y > 1.0):  # absent, 0, 1 or NaN
        return DEFAULT_DPI, DEFAULT_DPI
    return x, y


def _orientation(image: Image.Image) -> int:
    try:
        return int(image.getexif().get(0x0112, 1))
    except Exception:
        return 1


def _flat(image: Image.Image) -> Image.Image:
    """The frame in a mode a PDF page holds as is: 1, L or RGB (alpha over white)."""
    if image.mode in ("1", "L", "RGB"):
        return image
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        values = np.asarray(image, dtype=np.float64)
        top = float(values.max()) or 1.0
        return Image.fromarray(np.clip(values * (255.0 / top), 0, 255).astype(np.uint8), "L")
    if image.mode == "P" or "A" in image.mode or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def _encoded(image: Image.Image, kind: Kind) -> bytes:
    out = io.BytesIO()
    if kind == "jpeg" and image.mode in ("L", "RGB"):
        image.save(out, format="JPEG", quality=95)
    else:
        image.save(out, format="PNG", compress_level=3)
    return out.getvalue()


def _add_page(pdf: pymupdf.Document, frame: Image.Image, kind: Kind, data: bytes | None) -> None:
    dpi_x, dpi_y = _dpi(frame)
    orientation = _orientation(frame)
    if orientation in (5, 6, 7, 8):
        dpi_x, dpi_y = dpi_y, dpi_x
    upright = ImageOps.exif_transpose(frame) if orientation != 1 else frame
    width_px, height_px = upright.size
    dpi_x = max(dpi_x, width_px * 72.0 / MAX_PAGE_POINTS)
    dpi_y = max(dpi_y, height_px * 72.0 / MAX_PAGE_POINTS)
    page = pdf.new_page(width=width_px * 72.0 / dpi_x, height=height_px * 72.0 / dpi_y)
    if data is not None and upright is frame and frame.mode in ("L", "RGB"):
        stream = data  # an upright JPEG goes in as it is, not encoded again
    else:
        stream = _encoded(_flat(upright), kind)
    page.insert_image(page.rect, stream=stream, keep_proportion=False)


def _frames(image: Image.Image, kind: Kind, name: str) -> int:
    frames = getattr(image, "n_frames", 1)
    if frames > 1 and kind != "tiff":
        raise BadInputError(
            f"{name}: an animated {kind.upper()} ({frames} frames) is not accepted; only TIFF "
            "frames are read as pages"
        )
    if frames > MAX_FRAMES:
        raise BadInputError(f"{name}: {frames} frames, more than the {MAX_FRAMES} pages allowed")
    return frames


def _header_size(data: bytes, kind: Kind) -> tuple[int, int] | None:
    """The size a PNG or BMP header states (Pillow refuses a 0x0 one without saying so)."""
    if kind == "png" and len(data) >= 24 and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if kind == "bmp" and len(data) >= 26:
        width = int.from_bytes(data[18:22], "little", signed=True)
        return width, abs(int.from_bytes(data[22:26], "little", signed=True))
    return None


def _check_size(image: Image.Image, name: str, frame: int, frames: int) -> None:
    width, height = image.size
    where = f" (frame {frame + 1} of {frames})" if frames > 1 else ""
    if width < 1 or height < 1:
        raise BadInputError(f"{name}: the image has no pixels ({width}x{height}){where}")
    if width * height > MAX_IMAGE_PIXELS:
        raise BadInputError(
            f"{name}: pixel bomb: {width}x{height} = {width * height:,} pixels{where}, over the "
            f"limit of {MAX_IMAGE_PIXELS:,} pixels per image; not read"
        )


def image_to_pdf(data: bytes, name: str, *, check_name: bool = True) -> bytes:
    """The image `data` as PDF bytes, one page per frame; `BadInputError` when it cannot be.

    With `check_name`, a known suffix of `name` must agree with the content."""
    kind = sniff(data)
    if kind == "gif":
        _refuse_gif(data, name)
    if kind is None or kind == "pdf":
        raise BadInputError(f"{name}: not an image folio reads (PNG, JPEG, TIFF, WebP, BMP)")
    if check_name:
        _check_name(kind, name)
    stated = _header_size(data, kind)
    if stated is not None and min(stated) < 1:
        raise BadInputError(f"{name}: the image has no pixels ({stated[0]}x{stated[1]})")
    pdf = pymupdf.open()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                frames = _frames(image, kind, name)
                for index in range(frames):
                    image.seek(index)
                    _check_size(image, name, index, frames)
                    image.load()
                    passthrough = data if kind == "jpeg" else None
                    _add_page(pdf, image, kind, passthrough)
        return pdf.tobytes(garbage=1, deflate=True)
    except BadInputError:
        raise
    except Image.DecompressionBombError as exc:
        raise BadInputError(
            f"{name}: pixel bomb ({exc}); the limit is {MAX_IMAGE_PIXELS:,} pixels per image"
        ) from None
    except (OSError, SyntaxError, ValueError, EOFError, Image.UnidentifiedImageError) as exc:
        raise BadInputError(
            f"{name}: {_WORDS[kind]} that is truncated or damaged and cannot be read ({exc})"
        ) from None
    finally:
        pdf.close()


def document_pdf_bytes(
    data: bytes, name: str, *, cache_dir: Path | None = None, password: str | None = None
) -> bytes:
    """PDF bytes of a document file: a PDF as it is, an image wrapped, an Office, HTML or
    Markdown file rendered (kept in `cache_dir`, decrypted with `password` when it is protected,
    `ocr_engine.inputs.office`); the name must agree with the content when it has a known suffix (a
    .png that holds a JPEG or a PDF is refused)."""
    from ocr_engine.inputs.office import is_office_name, render_pdf

    if is_office_name(name):
        return render_pdf(data, name, password=password, cache_dir=cache_dir)
    kind = sniff(data)
    named = _NAMED.get(Path(name).suffix.lower())
    if kind is None and named is not None and named != "pdf" and data:
        raise BadInputError(
            f"{name}: named {Path(name).suffix} but is not {_WORDS[named]} "
            f"(no {named.upper()} signature: damaged, or another kind of file)"
        )
    if kind is None:
        return data  # open_pdf says what it is instead
    _check_name(kind, name)
    return data if kind == "pdf" else image_to_pdf(data, name)


_CACHE_BYTES = 64 << 20
_cache: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()
_cache_lock = threading.Lock()


def stored_pdf_bytes(path: Path) -> bytes | None:
    """The PDF bytes of a stored copy holding an image (recent ones cached); None for a PDF."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _cache_lock:
        if (hit := _cache.get(key)) is not None:
            _cache.move_to_end(key)
            return hit
    with path.open("rb") as handle:
        head = handle.read(_PDF_WINDOW)
    kind = sniff(head)
    if kind == "pdf":
        return None
    if kind is None:
        from ocr_engine.inputs.office import stored_rendering

        rendered = stored_rendering(path)  # an Office file's copy: its rendering, kept beside it
        if rendered is None:
            return None
        made = rendered
    else:
        made = image_to_pdf(path.read_bytes(), path.name, check_name=False)
    with _cache_lock:
        _cache[key] = made
        while sum(len(v) for v in _cache.values()) > _CACHE_BYTES and len(_cache) > 1:
            _cache.popitem(last=False)
    return made
