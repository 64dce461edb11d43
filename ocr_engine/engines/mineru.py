"""MinerU2.5 (opendatalab/MinerU2.5-2509-1.2B): a layout request, then one request a region.

The protocol of mineru-vl-utils (OCR_FORMATS.md §3):
1. The page stretched to 1036 x 1036 pixels is sent with ``\\nLayout Detection:``; the answer has
   one line a region, ``<|box_start|>x1 y1 x2 y2<|box_end|><|ref_start|>type<|ref_end|>`` then
   ``<|rotate_up|>`` (right, down, left: 90, 180, 270), boxes on a 0-1000 grid of the page.
   Boxes outside the grid or without area are dropped, corners put in order, a region that
   repeats a kept one of the same type and angle (IoU > 0.9) dropped, and so is text inside a
   table (`parse_layout`).
2. Each region but figures and containers is cropped from the page (turned upright when rotated)
   and sent with ``\\nTable Recognition:`` (tables, OTSL or HTML), ``\\nFormula Recognition:``
   (equations, LaTeX) or ``\\nText Recognition:`` (the rest).
A ``list`` container's text regions become list items; boxes become PDF points at the engine.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

import pymupdf

from ocr_engine.engines.deepseek import OcrProfile
from ocr_engine.engines.render import RenderedPage, encode_png
from ocr_engine.errors import EngineOutputError
from ocr_engine.geometry import Box, area, from_grid, intersection, iou, rounded
from ocr_engine.layout.vlm_blocks import Draft, heading, make_block
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import Block, BlockType

__all__ = [
    "LAYOUT_PROMPT",
    "LAYOUT_SIZE",
    "MINERU25",
    "SYSTEM_PROMPT",
    "LayoutRegion",
    "content_prompt",
    "layout_png",
    "mineru_blocks",
    "mineru_request",
    "otsl_to_html",
    "parse_layout",
    "region_box",
    "render_crop",
]

GRID = 1000
LAYOUT_SIZE = 1036
SYSTEM_PROMPT = "You are a helpful assistant."
LAYOUT_PROMPT = "\nLayout Detection:"
TABLE_PROMPT = "\nTable Recognition:"
FORMULA_PROMPT = "\nFormula Recognition:"
TEXT_PROMPT = "\nText Recognition:"
NO_REPEAT_NGRAM_SIZE = 100
STRICT_NO_REPEAT_NGRAM_SIZE = 30
LAYOUT_MAX_TOKENS = 4096
CONTENT_MAX_TOKENS = 4096
MIN_EDGE_PX = 28  # mineru-vl-utils scales a crop up until its short side has this many pixels
_DUPLICATE_IOU = 0.9
_INSIDE = 0.9

_LINE = re.compile(
    r"<\|box_start\|>\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*<\|box_end\|>"
    r"<\|ref_start\|>\s*(\w+?)\s*<\|ref_end\|>(.*)$"
)
_ANGLES = {
    "<|rotate_up|>": 0,
    "<|rotate_right|>": 90,
    "<|rotate_down|>": 180,
    "<|rotate_left|>": 270,
}
_CONTINUED = "txt_contd_tgt"
_OTSL = re.compile(r"<(fcel|ecel|lcel|ucel|xcel|nl)>")
_DISPLAY_MATH = re.compile(r"^\s*(?:\$\$|\\\[)\s*(.*?)\s*(?:\$\$|\\\])\s*$", re.S)

LABELS: dict[str, BlockType] = {
    "text": BlockType.text,
    "doc_title": BlockType.title,
    "title": BlockType.section_header,
    "paragraph_title": BlockType.section_header,
    "list_item": BlockType.list_item,
    "table": BlockType.table,
    "table_caption": BlockType.caption,
    "image_caption": BlockType.caption,
    "code_caption": BlockType.caption,
    "caption": BlockType.caption,
    "table_footnote": BlockType.footnote,
    "image_footnote": BlockType.footnote,
    "footnote": BlockType.footnote,
    "page_footnote": BlockType.footnote,
    "equation": BlockType.formula,
    "code": BlockType.code,
    "algorithm": BlockType.code,
    "header": BlockType.page_header,
    "footer": BlockType.page_footer,
    "page_number": BlockType.page_footer,
    "image": BlockType.figure,
    "chart": BlockType.figure,
    "unknown": BlockType.figure,
}
CONTAINERS = frozenset({"list", "image_block", "equation_block"})
_NO_CONTENT = frozenset({"image", "chart", "unknown", *CONTAINERS})


@dataclass(frozen=True, slots=True)
class LayoutRegion:
    """One region of the layout answer: its type, box on the 0-1000 grid, angle, and whether it
    continues the previous region's text (``txt_contd_tgt``)."""

    label: str
    grid: Box
    angle: int = 0
    continues: bool = False


def _grid_box(values: tuple[str, ...]) -> Box | None:
    x1, y1, x2, y2 = (int(v) for v in values)
    if any(v < 0 or v > GRID for v in (x1, y1, x2, y2)):
        return None
    x1, x2 = sorted((x1, x2))
    y1, y2 = sorted((y1, y2))
    if x1 == x2 or y1 == y2:
        return None
    return (float(x1), float(y1), float(x2), float(y2))


def parse_layout(text: str) -> list[LayoutRegion]:
    """The regions of a layout answer in its order (see the module docstring for what is dropped).

    Raises EngineOutputError when a non-empty answer has no region line (special tokens were
    stripped, or the model did not follow the prompt)."""
    regions: list[LayoutRegion] = []
    matched = False
    for line in text.splitlines():
        match = _LINE.search(line)
        if match is None:
            continue
        matched = True
        box = _grid_box(match.groups()[:4])
        if box is None:
            continue
        tail = match.group(6)
        angle = next((a for token, a in _ANGLES.items() if token in tail), 0)
        regions.append(LayoutRegion(match.group(5).lower(), box, angle, _CONTINUED in tail))
    if not matched and text.strip():
        sample = " ".join(text.split())[:80]
        raise EngineOutputError(f"no layout regions in {len(text)} characters: {sample!r}")
    kept: list[LayoutRegion] = []
    for region in regions:
        if any(
            k.label == region.label
            and k.angle == region.angle
            and iou(k.grid, region.grid) > _DUPLICATE_IOU
            for k in kept
        ):
            continue
        kept.append(region)
    tables = [r.grid for r in kept if r.label == "table"]
    return [r for r in kept if r.label != "text" or not any(_inside(r.grid, t) for t in tables)]


def _inside(inner: Box, outer: Box) -> bool:
    common = intersection(inner, outer)
    return common is not None and area(common) >= _INSIDE * max(area(inner), 1e-9)


def region_box(
    region: LayoutRegion, width: float, height: float, x0: float = 0.0, y0: float = 0.0
) -> Box:
    """The region's box in points of the `width` x `height` area at (x0, y0) the page showed."""
    return rounded(from_grid(region.grid, GRID, width, height, x0, y0))


def content_prompt(region: LayoutRegion) -> str | None:
    """The prompt its crop is sent with; None for figures and containers (no request)."""
    if region.label in _NO_CONTENT:
        return None
    if region.label == "table":
        return TABLE_PROMPT
    if region.label == "equation":
        return FORMULA_PROMPT
    return TEXT_PROMPT


def otsl_to_html(text: str) -> str:
    """An OTSL table (``<fcel>`` cell, ``<ecel>`` empty, ``<lcel>``/``<ucel>``/``<xcel>`` merged
    left/up/both, ``<nl>`` row end) as HTML with colspan/rowspan; HTML is returned as it is."""
    if "<table" in text.lower() or not _OTSL.search(text):
        return text.strip()
    rows: list[list[tuple[str, str]]] = [[]]
    parts = _OTSL.split(text)
    for index in range(1, len(parts), 2):
        tag, content = parts[index], parts[index + 1].strip()
        if tag == "nl":
            rows.append([])
        else:
            rows[-1].append((tag, content))
    rows = [row for row in rows if row]
    out = ["<table>"]
    for r, row in enumerate(rows):
        out.append("<tr>")
        for c, (tag, content) in enumerate(row):
            if tag not in ("fcel", "ecel"):
                continue
            cols = 1
            while c + cols < len(row) and row[c + cols][0] in ("lcel", "xcel"):
                cols += 1
            spans = 1
            while (
                r + spans < len(rows)
                and c < len(rows[r + spans])
                and rows[r + spans][c][0] in ("ucel", "xcel")
            ):
                spans += 1
            attrs = (f' rowspan="{spans}"' if spans > 1 else "") + (
                f' colspan="{cols}"' if cols > 1 else ""
            )
            out.append(f"<td{attrs}>{content}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _draft(region: LayoutRegion, box: Box, content: str, in_list: bool) -> Draft | None:
    kind = LABELS.get(region.label, BlockType.text)
    text = content.strip()
    if kind == BlockType.table:
        html = otsl_to_html(text) if text else None
        return Draft(kind, box, "", html=html)
    if kind == BlockType.figure:
        return Draft(kind, box, "")
    if kind == BlockType.formula:
        match = _DISPLAY_MATH.match(text)
        return Draft(kind, box, match.group(1) if match else text)
    if kind == BlockType.text and in_list:
        kind = BlockType.list_item
    text, level = heading(kind, text)
    if kind == BlockType.title and region.label == "doc_title":
        level = 1
    return Draft(kind, box, text, level=level) if text else None


def mineru_blocks(
    regions: list[LayoutRegion],
    contents: list[str | None],
    *,
    width: float,
    height: float,
    page_number: int,
    x0: float = 0.0,
    y0: float = 0.0,
) -> list[Block]:
    """Blocks in the layout's order from the regions and the answers to their crops (None where
    no request was made), boxes in points of the `width` x `height` area at (x0, y0)."""
    lists = [r.grid for r in regions if r.label == "list"]
    drafts = []
    for region, content in zip(regions, contents, strict=True):
        if region.label in CONTAINERS:
            continue
        in_list = any(_inside(region.grid, outer) for outer in lists)
        draft = _draft(region, region_box(region, width, height, x0, y0), content or "", in_list)
        if draft is not None:
            drafts.append(draft)
    return [make_block(draft, page_number, index) for index, draft in enumerate(drafts)]


def layout_png(png: bytes) -> bytes:
    """A page image stretched to LAYOUT_SIZE x LAYOUT_SIZE, as mineru-vl-utils sends it."""
    source = pymupdf.Pixmap(png)
    if source.alpha or source.n != 3:
        source = pymupdf.Pixmap(pymupdf.csRGB, source)
        if source.alpha:
            source = pymupdf.Pixmap(source, 0)
    pix = pymupdf.Pixmap(source, LAYOUT_SIZE, LAYOUT_SIZE, None)
    return encode_png(pix.width, pix.height, pix.samples, pix.stride)


def render_crop(
    page: pymupdf.Page, box: Box, *, dpi: int, max_pixels: int, angle: int = 0
) -> RenderedPage:
    """`box` (displayed-page points) of the page as RGB PNG at `dpi` (its short side at least
    MIN_EDGE_PX, W*H at most `max_pixels`), turned counter-clockwise by `angle` as
    mineru-vl-utils turns a rotated region's crop upright."""
    x0, y0, x1, y1 = box
    w, h = max(x1 - x0, 1e-3), max(y1 - y0, 1e-3)
    zoom = max(dpi / 72, MIN_EDGE_PX / min(w, h))
    zoom = min(zoom, (max_pixels / (w * h)) ** 0.5)
    rect = page.rect
    clip = pymupdf.Rect(x0 + rect.x0, y0 + rect.y0, x1 + rect.x0, y1 + rect.y0)
    matrix = pymupdf.Matrix(zoom, zoom).prerotate(-angle % 360)
    pix = page.get_pixmap(matrix=matrix, clip=clip, alpha=False, colorspace=pymupdf.csRGB)
    return RenderedPage(
        png=encode_png(pix.width, pix.height, pix.samples, pix.stride),
        width_px=pix.width,
        height_px=pix.height,
        width_pt=w,
        height_pt=h,
        x0=x0,
        y0=y0,
    )


MINERU25 = OcrProfile(
    name="mineru2.5",
    prompt=LAYOUT_PROMPT,
    prompt_version="mineru2.5/two-step/1",
    parser=mineru_blocks,
    global_tokens=0,
    tile_px=0,
    tile_tokens=0,
    row_tokens=0,
    text_tokens=40,
    patch_px=28,
    two_step=True,
)


def mineru_request(
    options: VLLMOptions,
    image_url: str,
    width_px: int,
    height_px: int,
    *,
    prompt: str = LAYOUT_PROMPT,
    strict: bool = False,
) -> dict[str, Any]:
    """The chat-completions body for one image (mineru-vl-utils' http client): the layout request
    by default, a region's with its `prompt`; `strict` lowers the no-repeat n-gram size."""
    budget = max(256, options.context_tokens - MINERU25.prompt_tokens(width_px, height_px))
    default = LAYOUT_MAX_TOKENS if prompt == LAYOUT_PROMPT else CONTENT_MAX_TOKENS
    table = prompt == TABLE_PROMPT
    return {
        "model": options.model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_url}},
                    {"type": "text", "text": prompt},
                ],
            },
        ],
        "temperature": 0.0,
        "top_p": 0.01,
        "top_k": 1,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0 if prompt == LAYOUT_PROMPT else 1.0,
        "frequency_penalty": 0.0 if prompt == LAYOUT_PROMPT else (0.005 if table else 0.05),
        "max_tokens": min(options.max_tokens or default, budget),
        "skip_special_tokens": False,
        "vllm_xargs": {
            "no_repeat_ngram_size": STRICT_NO_REPEAT_NGRAM_SIZE if strict else NO_REPEAT_NGRAM_SIZE,
            "debug": False,
        },
    }


def layout_request(
    options: VLLMOptions, image_url: str, width_px: int, height_px: int, *, strict: bool = False
) -> dict[str, Any]:
    """The layout request for a page image of any size: the image stretched to LAYOUT_SIZE²."""
    head, _, data = image_url.partition(",")
    try:
        png = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not a base64 image URL: {head!r}") from exc
    url = "data:image/png;base64," + base64.b64encode(layout_png(png)).decode("ascii")
    return mineru_request(options, url, LAYOUT_SIZE, LAYOUT_SIZE, strict=strict)
