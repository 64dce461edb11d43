"""dots.ocr (rednote-hilab/dots.ocr): one request a page, a JSON layout with text -> typed blocks.

The model answers `prompt_layout_all_en` (OCR_FORMATS.md §2) with a JSON array of
``{"bbox": [x1, y1, x2, y2], "category": ..., "text": ...}`` in reading order:
- Boxes are pixels of the image the model saw, the one sent after the processor's
  `smart_resize` (factor 28, 3136..11289600 pixels): ``x_pt = x * page_width_pt / input_w``.
- Categories: Caption, Footnote, Formula, List-item, Page-footer, Page-header, Picture,
  Section-header, Table, Text, Title. Table text is HTML, Formula LaTeX, Picture has no text,
  the others markdown (Title and Section-header with leading ``#``).
- The output is often not valid JSON: the closing ``]`` missing (both recorded samples), text
  around it, a cut last object. It is repaired as docling does (cut at the last ``}`` and close
  the array), and failing that every complete object is salvaged.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from ocr_engine.engines.deepseek import OcrProfile
from ocr_engine.errors import EngineOutputError
from ocr_engine.geometry import Box, clamp, normalised, rounded
from ocr_engine.layout.vlm_blocks import Draft, heading, make_block, smart_resize
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import Block, BlockType

__all__ = [
    "CATEGORIES",
    "DOTS_OCR",
    "IMAGE_PREFIX",
    "LAYOUT_ALL_PROMPT",
    "dots_request",
    "parse_dots",
    "repair_json",
]

log = logging.getLogger(__name__)

LAYOUT_ALL_PROMPT = """Please output the layout information from the PDF image, including each \
layout element's bbox, its category, and the corresponding text content within the bbox.

1. Bbox format: [x1, y1, x2, y2]

2. Layout Categories: The possible categories are ['Caption', 'Footnote', 'Formula', \
'List-item', 'Page-footer', 'Page-header', 'Picture', 'Section-header', 'Table', 'Text', 'Title'].

3. Text Extraction & Formatting Rules:
    - Picture: For the 'Picture' category, the text field should be omitted.
    - Formula: Format its text as LaTeX.
    - Table: Format its text as HTML.
    - All Others (Text, Title, etc.): Format their text as Markdown.

4. Constraints:
    - The output text must be the original text from the image, with no translation.
    - All layout elements must be sorted according to human reading order.

5. Final Output: The entire output must be a single JSON object.
"""
# dots' own client puts the image tokens in the text itself, else vLLM adds a "\n" (inference.py)
IMAGE_PREFIX = "<|img|><|imgpad|><|endofimg|>"
MAX_TOKENS = 24000  # docling's budget; dots' parser uses 16384, its client 32768
STRICT_REPETITION_PENALTY = 1.05  # a looping page is asked again with this (not in dots' docs)

CATEGORIES: dict[str, BlockType] = {
    "caption": BlockType.caption,
    "footnote": BlockType.footnote,
    "formula": BlockType.formula,
    "list-item": BlockType.list_item,
    "page-footer": BlockType.page_footer,
    "page-header": BlockType.page_header,
    "picture": BlockType.figure,
    "section-header": BlockType.section_header,
    "table": BlockType.table,
    "text": BlockType.text,
    "title": BlockType.title,
}
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*|\s*```\s*$")
_DISPLAY_MATH = re.compile(r"^\s*(?:\$\$|\\\[)\s*(.*?)\s*(?:\$\$|\\\])\s*$", re.S)


def repair_json(text: str) -> list[dict[str, Any]]:
    """The layout objects of an output: parsed as JSON after docling's repair (text before the
    first ``[`` dropped; no closing ``]``: cut after the last ``}`` and closed), else every
    complete ``{...}`` object in it. Raises EngineOutputError when no object can be read from a
    non-empty output; an empty output or ``[]`` is a page without elements."""
    cleaned = _FENCE.sub("", text.strip())
    if not cleaned:
        return []
    start = cleaned.find("[")
    body = cleaned[start:] if start >= 0 else cleaned
    if not body.rstrip().endswith("]"):
        cut = body.rfind("}")
        body = body[: cut + 1] + "]" if cut >= 0 else body
    if not body.startswith("["):
        body = "[" + body
    try:
        loaded = json.loads(body)
    except json.JSONDecodeError:
        loaded = _salvage(cleaned)
    if isinstance(loaded, dict):
        loaded = [loaded]
    objects = (
        [item for item in loaded if isinstance(item, dict)] if isinstance(loaded, list) else []
    )
    if not objects and "".join(cleaned.split()) != "[]":
        sample = " ".join(cleaned.split())[:80]
        raise EngineOutputError(f"no layout objects in {len(cleaned)} characters: {sample!r}")
    return objects


def _salvage(text: str) -> list[Any]:
    """Every complete JSON object that starts at a ``{`` of `text`, outermost first."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    index = text.find("{")
    while index >= 0:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        found.append(value)
        index = text.find("{", end)
    return found


def _box(raw: Any, frame: tuple[float, float, float, float, float, float]) -> Box | None:
    """A bbox of the model's input pixels in page points, clamped to the page; None if unusable."""
    if not isinstance(raw, list | tuple) or len(raw) != 4:
        return None
    try:
        x0, y0, x1, y1 = (float(v) for v in raw)
    except (TypeError, ValueError):
        return None
    sx, sy, ox, oy, width, height = frame
    box = normalised((ox + x0 * sx, oy + y0 * sy, ox + x1 * sx, oy + y1 * sy))
    box = clamp(box, (ox, oy, ox + width, oy + height))
    if box[2] - box[0] <= 0 or box[3] - box[1] <= 0:
        return None
    return rounded(box)


def _formula(text: str) -> str:
    match = _DISPLAY_MATH.match(text)
    return match.group(1) if match else text.strip()


def parse_dots(
    text: str,
    *,
    width: float,
    height: float,
    page_number: int,
    width_px: int,
    height_px: int,
    x0: float = 0.0,
    y0: float = 0.0,
) -> list[Block]:
    """Blocks in the model's reading order, boxes in page points, from a dots.ocr output for an
    image of `width_px` x `height_px` showing the `width` x `height` points at (x0, y0).

    Raises EngineOutputError when a non-empty output holds no layout object. An element without
    a usable box or with an unknown category is kept as text when it has text (logged)."""
    input_h, input_w = smart_resize(height_px, width_px)
    frame = (width / input_w, height / input_h, x0, y0, width, height)
    drafts: list[Draft] = []
    for item in repair_json(text):
        category = str(item.get("category") or "").strip()
        kind = CATEGORIES.get(category.lower())
        content = item.get("text")
        content = content.strip() if isinstance(content, str) else ""
        box = _box(item.get("bbox"), frame)
        if kind is None:
            log.warning("dots.ocr: unknown category %r read as text", category)
            kind = BlockType.text
        if box is None:
            if not content:
                continue
            log.warning("dots.ocr: %s without a usable bbox %r", category, item.get("bbox"))
            box = (x0, y0, x0 + width, y0 + height)
        if kind == BlockType.table:
            html = content if "<table" in content.lower() else None
            drafts.append(Draft(kind, box, "" if html else content, html=html))
        elif kind == BlockType.figure:
            drafts.append(Draft(kind, box, ""))
        elif kind == BlockType.formula:
            drafts.append(Draft(kind, box, _formula(content)))
        else:
            stripped, level = heading(kind, content)
            if stripped or kind != BlockType.text:
                drafts.append(Draft(kind, box, stripped, level=level))
    return [make_block(draft, page_number, index) for index, draft in enumerate(drafts)]


DOTS_OCR = OcrProfile(
    name="dots.ocr",
    prompt=LAYOUT_ALL_PROMPT,
    prompt_version="dots.ocr/layout-all-en/1",
    parser=parse_dots,
    global_tokens=0,
    tile_px=0,
    tile_tokens=0,
    row_tokens=0,
    text_tokens=300,  # the prompt, the chat template and the image delimiters
    patch_px=28,
    pixel_boxes=True,
)


def dots_request(
    options: VLLMOptions, image_url: str, width_px: int, height_px: int, *, strict: bool = False
) -> dict[str, Any]:
    """The chat-completions body for one page (dots' `inference.py`, temperature 0 as for the
    other models; OCR_FORMATS.md §2). `strict` adds a repetition penalty, for a looping page."""
    prompt = DOTS_OCR.prompt_tokens(width_px, height_px)
    budget = max(256, options.context_tokens - prompt)
    max_tokens = min(options.max_tokens or MAX_TOKENS, budget)
    body: dict[str, Any] = {
        "model": options.model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_url}},
                    {"type": "text", "text": IMAGE_PREFIX + DOTS_OCR.prompt},
                ],
            }
        ],
        "temperature": 0.0,
        "top_p": 1.0,
        "max_tokens": max_tokens,
        "skip_special_tokens": False,
    }
    if strict:
        body["repetition_penalty"] = STRICT_REPETITION_PENALTY
    return body
