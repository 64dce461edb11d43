"""DeepSeek-OCR grounding markdown -> typed blocks in PDF points. Pure functions, no I/O.

Grammar (OCR_FORMATS.md §1.2): each block is ``<|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2], …]
<|/det|>`` followed by its content; with special tokens stripped the tag reads
``label[[x1, y1, x2, y2]]`` on a line of its own. Coordinates are on a 0-999 grid of the image sent,
so ``x_pt = x / 999 * page_width + x0`` (likewise y), clamped to the page.

Decisions where the grammar leaves room:
- Several boxes on one tag (a paragraph continued in the next column): one block per box, the text
  split between them at word boundaries in proportion to box area. A table keeps one block with the
  union box (its HTML cannot be split); a figure gets one block per box.
- Text before the first tag (the model often leaves the page's first block, a paragraph continued
  from the previous page, untagged) becomes a text block with an estimated box: as wide as the first
  tagged text block, as many lines as the text needs at the page's median line pitch, ending one
  pitch above the first tagged block; the whole page when nothing else is on it.
- A ``table`` tag without ``<table>`` content takes the next ``<table>…</table>`` that follows (the
  model writes the table tag, the caption tag, the caption text, then the HTML). A table or figure
  whose caption tag comes next but lies above it is moved after the caption (reading order).
- Heading levels are the number of leading ``#`` (title 1 and sub_title 2 when there are none).
- Multi-line blocks get estimated line boxes (`ocr_engine.layout.line_boxes`), tables one line per
row.
"""

from __future__ import annotations

import logging
import math
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ocr_engine.errors import EngineOutputError
from ocr_engine.geometry import Box, from_grid, rounded, union
from ocr_engine.layout.html_table import TABLE_SPAN
from ocr_engine.layout.line_boxes import CHAR_RATIO, estimate_pitch, visible_length
from ocr_engine.layout.vlm_blocks import Draft, heading, make_block, smart_resize
from ocr_engine.schema import Block, BlockType

__all__ = [
    "DEEPSEEK_OCR",
    "DEEPSEEK_OCR_2",
    "GROUNDING_PROMPT",
    "OcrProfile",
    "detect_repetition",
    "parse_grounding",
    "profile_for",
    "strip_special_tokens",
]

log = logging.getLogger(__name__)

GRID = 999
GROUNDING_PROMPT = "<|grounding|>Convert the document to markdown."
_END_TOKENS = ("<｜end▁of▁sentence｜>", "<|end▁of▁sentence|>", "<|end_of_sentence|>")
_TAG = re.compile(
    r"<\|ref\|>(?P<label>[^\n]*?)<\|/ref\|>[ \t]*<\|det\|>(?P<boxes>[^<]*?)<\|/det\|>"
    r"|^[ \t]*(?P<slabel>[A-Za-z_]\w*)(?P<sboxes>\[\[[-\d\s.,\[\]]*\]\])[ \t]*$",
    re.M,
)
_BOX = re.compile(r"\[\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*\]")
_CENTER = re.compile(r"</?center>", re.I)

LABELS: dict[str, BlockType] = {
    "text": BlockType.text,
    "title": BlockType.title,
    "sub_title": BlockType.section_header,
    "table": BlockType.table,
    "table_caption": BlockType.caption,
    "image": BlockType.figure,
    "figure": BlockType.figure,
    "image_caption": BlockType.caption,
    "figure_caption": BlockType.caption,
    "equation": BlockType.formula,
    "header": BlockType.page_header,
    "footer": BlockType.page_footer,
    "page_number": BlockType.page_footer,
    "footnote": BlockType.footnote,
    "list_item": BlockType.list_item,
    "code": BlockType.code,
}


@dataclass(slots=True)
class _Segment:
    """One tag as written: label, boxes on the grid, the content up to the next tag."""

    label: str
    boxes: list[Box]
    content: str
    html: str | None = None


@dataclass(frozen=True, slots=True)
class _Frame:
    width: float
    height: float
    x0: float
    y0: float

    def box(self, grid: Box) -> Box:
        return rounded(from_grid(grid, GRID, self.width, self.height, self.x0, self.y0))

    @property
    def page(self) -> Box:
        return (self.x0, self.y0, self.x0 + self.width, self.y0 + self.height)


def strip_special_tokens(text: str) -> str:
    """The output without end-of-sentence tokens (kept by ``skip_special_tokens: false``)."""
    for token in _END_TOKENS:
        text = text.replace(token, "")
    return text


def parse_grounding(
    text: str,
    *,
    width: float,
    height: float,
    page_number: int,
    x0: float = 0.0,
    y0: float = 0.0,
) -> list[Block]:
    """Blocks in reading order, boxes in page points; an empty output is a page without blocks.

    Raises EngineOutputError when a non-empty output has no grounding tag at all (the model did
    not follow the grounding prompt, or the output is garbage)."""
    cleaned = strip_special_tokens(text)
    matches = list(_TAG.finditer(cleaned))
    if not matches:
        if cleaned.strip():
            sample = " ".join(cleaned.split())[:80]
            raise EngineOutputError(f"no grounding tags in {len(cleaned)} characters: {sample!r}")
        return []
    segments = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(cleaned)
        label = (match.group("label") or match.group("slabel") or "").strip().lower()
        boxes_text = match.group("boxes") or match.group("sboxes") or ""
        boxes: list[Box] = [
            (float(a), float(b), float(c), float(d)) for a, b, c, d in _BOX.findall(boxes_text)
        ]
        segments.append(_Segment(label, boxes, cleaned[match.end() : end]))
    _attach_tables(segments)
    _captions_first(segments)
    frame = _Frame(width, height, x0, y0)
    drafts = [draft for segment in segments for draft in _drafts(segment, frame)]
    lead = _tidy(cleaned[: matches[0].start()])
    if lead:
        drafts.insert(0, Draft(BlockType.text, _lead_box(lead, drafts, frame), lead))
    return [make_block(draft, page_number, index) for index, draft in enumerate(drafts)]


def _tidy(content: str) -> str:
    text = _CENTER.sub("", content)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _attach_tables(segments: list[_Segment]) -> None:
    """Give every table tag its HTML: its own, or the next ``<table>`` written after it."""
    pending: deque[_Segment] = deque()
    for segment in segments:
        if segment.label == "table":
            match = TABLE_SPAN.search(segment.content)
            if match is None:
                pending.append(segment)
            else:
                segment.html = match.group(0)
                segment.content = _cut(segment.content, match)
            continue
        while pending and (match := TABLE_SPAN.search(segment.content)):
            pending.popleft().html = match.group(0)
            segment.content = _cut(segment.content, match)
        match = TABLE_SPAN.search(segment.content)
        textual = LABELS.get(segment.label, BlockType.text) == BlockType.text
        if match and textual and not _cut(segment.content, match).strip():
            segment.label, segment.html, segment.content = "table", match.group(0), ""
    for segment in pending:
        log.warning("table tag without any <table> HTML after it: %s", segment.boxes)


def _cut(content: str, match: re.Match[str]) -> str:
    return content[: match.start()] + content[match.end() :]


def _captions_first(segments: list[_Segment]) -> None:
    """Swap a table/figure and the caption tag right after it when the caption lies above it."""
    i = 0
    while i + 1 < len(segments):
        body, caption = segments[i], segments[i + 1]
        kind = LABELS.get(body.label)
        if (
            kind in (BlockType.table, BlockType.figure)
            and LABELS.get(caption.label) == BlockType.caption
            and body.boxes
            and caption.boxes
            and min(b[1] for b in caption.boxes) < min(b[1] for b in body.boxes)
        ):
            segments[i], segments[i + 1] = caption, body
            i += 1
        i += 1


def _drafts(segment: _Segment, frame: _Frame) -> list[Draft]:
    kind = LABELS.get(segment.label, BlockType.text)
    boxes = [frame.box(b) for b in segment.boxes] or [frame.page]
    text = _tidy(segment.content)
    if kind == BlockType.table:
        box = union(boxes)
        table = Draft(kind, box, "", html=segment.html)
        return [table, Draft(BlockType.text, box, text)] if text else [table]
    if kind == BlockType.figure:
        return [Draft(kind, box, "") for box in boxes]
    text, level = heading(kind, text)
    if len(boxes) == 1:
        return [Draft(kind, boxes[0], text, level=level)]
    areas = [max((b[2] - b[0]) * (b[3] - b[1]), 1e-6) for b in boxes]
    parts = _split_text(text, areas)
    return [Draft(kind, box, part, level=level) for box, part in zip(boxes, parts, strict=True)]


def _split_text(text: str, weights: list[float]) -> list[str]:
    """`text` cut at word boundaries into len(weights) parts sized in proportion to `weights`."""
    words = re.findall(r"\S+\s*", text)
    total = sum(visible_length(w) for w in words) or 1.0
    scale = sum(weights)
    goals = []
    running = 0.0
    for weight in weights[:-1]:
        running += weight
        goals.append(total * running / scale)
    parts: list[list[str]] = [[] for _ in weights]
    done = 0.0
    index = 0
    for word in words:
        while index < len(goals) and done >= goals[index]:
            index += 1
        parts[index].append(word)
        done += visible_length(word)
    return ["".join(p).strip() for p in parts]


def _lead_box(text: str, drafts: list[Draft], frame: _Frame) -> Box:
    """Where untagged text at the top of the output probably is (see the module docstring)."""
    if not drafts:
        return frame.page
    below = drafts[0].bbox
    column = next((d.bbox for d in drafts if d.type == BlockType.text and d.text), below)
    pitch = estimate_pitch((d.bbox, d.text) for d in drafts if d.type == BlockType.text)
    if pitch is None:
        pitch = frame.height / 66  # 12 pt on a Letter page
    width = column[2] - column[0]
    per_line = width / (CHAR_RATIO * pitch) if width > 0 else 1.0
    lines = sum(max(1, math.ceil(visible_length(p) / per_line - 0.15)) for p in text.splitlines())
    bottom = max(below[1] - pitch, frame.y0 + pitch)
    top = max(frame.y0, bottom - lines * pitch)
    return (column[0], round(top, 2), column[2], round(bottom, 2))


def detect_repetition(text: str, *, min_span: int = 200, min_repeats: int = 8) -> bool:
    """Whether the output ends in a runaway loop: its last `min_span` characters (at least
    `min_repeats` copies of the unit) repeat one unit of up to 200 characters, or it ends in a run
    of whitespace that long. The end is checked, not the middle: a page that stopped by itself
    after a legitimately repetitive stretch (dot leaders, empty table cells) is not a loop."""
    body = strip_special_tokens(text)
    stripped = body.rstrip()
    if len(body) - len(stripped) >= min_span:
        return True
    for unit in range(1, 201):
        span = max(min_span, unit * min_repeats)
        if span + unit > len(stripped):
            break
        if stripped[-span:] == stripped[-span - unit : -unit]:
            return True
    return False


@dataclass(frozen=True, slots=True)
class OcrProfile:
    """A model family: the prompt, the parser of its output, and how many tokens an image costs.

    Image tokens follow the model's dynamic tiling (its "Gundam" mode, the one vLLM serves): a
    global view plus, for an image larger than one tile, between `min_tiles` and `max_tiles`
    tiles in the grid whose aspect ratio is closest to the image's."""

    name: str
    prompt: str
    prompt_version: str
    parser: Callable[..., list[Block]]
    global_tokens: int
    tile_px: int
    tile_tokens: int
    row_tokens: int
    min_tiles: int = 2
    max_tiles: int = 6
    text_tokens: int = 20
    patch_px: int = 0  # > 0: a Qwen2-VL vision tower, one token a patch of the smart-resized image
    pixel_boxes: bool = False  # the parser also takes the image's `width_px` and `height_px`
    two_step: bool = False  # layout first, then one request a region (MinerU2.5)

    def prompt_tokens(self, width_px: int, height_px: int) -> int:
        """An upper estimate of the prompt's tokens (image and text) for an image of this size."""
        if self.patch_px:
            height, width = smart_resize(height_px, width_px, factor=self.patch_px)
            return height * width // self.patch_px**2 + self.text_tokens
        if width_px <= self.tile_px and height_px <= self.tile_px:
            cols = rows = 0
        else:
            aspect = width_px / max(height_px, 1)
            grids = [
                (c, r)
                for c in range(1, self.max_tiles + 1)
                for r in range(1, self.max_tiles + 1)
                if self.min_tiles <= c * r <= self.max_tiles
            ]
            cols, rows = min(grids, key=lambda g: (abs(aspect - g[0] / g[1]), -g[0] * g[1]))
        image = self.global_tokens + cols * rows * self.tile_tokens + rows * self.row_tokens
        return image + self.text_tokens


DEEPSEEK_OCR = OcrProfile(
    name="deepseek-ocr",
    prompt=GROUNDING_PROMPT,
    prompt_version="deepseek-ocr/grounding-markdown/1",
    parser=parse_grounding,
    # 1024 px global view: 16 x 16 tokens + a newline token per row + a separator; 640 px tiles
    # of 10 x 10 tokens, a newline token per token row
    global_tokens=16 * 17 + 1,
    tile_px=640,
    tile_tokens=100,
    row_tokens=10,
)
DEEPSEEK_OCR_2 = OcrProfile(
    name="deepseek-ocr-2",
    prompt=GROUNDING_PROMPT,
    prompt_version="deepseek-ocr-2/grounding-markdown/1",
    parser=parse_grounding,
    # "(0-6) x 144 + 256 visual tokens" (768 px tiles), with the same newline allowance
    global_tokens=256 + 17,
    tile_px=768,
    tile_tokens=144,
    row_tokens=12,
)


def profile_for(model: str) -> OcrProfile:
    """The profile for a served model name; DeepSeek-OCR (with a warning) when it is not known,
    since vLLM may serve the model under any ``--served-model-name``."""
    name = model.lower().replace("_", "-")
    if "deepseek-ocr-2" in name or "deepseek-ocr2" in name or "deepseekocr2" in name:
        return DEEPSEEK_OCR_2
    if "deepseek-ocr" in name or "deepseekocr" in name:
        return DEEPSEEK_OCR
    log.warning("unknown OCR model %r: assuming DeepSeek-OCR's prompt and grammar", model)
    return DEEPSEEK_OCR
