"""Read a page's text layer into visual lines and raw blocks, in displayed-page coordinates.

PyMuPDF 2.0's ``get_text`` reports boxes relative to the CropBox's top-left corner but in the
*unrotated* page; ``page.rotation_matrix`` maps them onto the page as displayed (``page.rect``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pymupdf

from ocr_engine.geometry import Box, clamp, union

LineKey = tuple[int, int]  # (block, line) numbers of a line in MuPDF's text page
WordKey = tuple[int, int, int]  # (block, line, word) numbers of a word in MuPDF's text page

# dict extraction without image binaries (figures come from get_image_info, which is cheap);
# ligatures are expanded ("ﬁ" -> "fi") so that text is searchable and quotable as people type it
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
_BOLD_FLAG = 16
_MONO_FLAG = 8
_MONO_NAMES = ("mono", "courier", "consola", "menlo", "inconsolata")


@dataclass(slots=True)
class TextLine:
    """One visual line: text, box, dominant font size, weight and direction."""

    text: str
    bbox: Box
    size: float
    bold: bool
    mono: bool
    horizontal: bool = True
    font: str = ""
    white: bool = False  # every glyph drawn in white (invisible unless something dark is under it)
    keys: tuple[LineKey, ...] = ()  # the text page's lines this visual line joins


@dataclass(frozen=True, slots=True)
class Word:
    """One word of the text layer: its place in the text page, text, raw and displayed boxes."""

    key: WordKey
    text: str
    raw: Box
    bbox: Box


@dataclass(slots=True)
class RawBlock:
    """A group of lines as MuPDF grouped them (roughly a paragraph)."""

    lines: list[TextLine] = field(default_factory=list)

    @property
    def bbox(self) -> Box:
        return union([line.bbox for line in self.lines])


class PageFrame:
    """Maps unrotated text-layer coordinates to the displayed page and clips to it."""

    def __init__(self, page: pymupdf.Page) -> None:
        self.rect = page.rect
        self.rotation = page.rotation % 360
        self.matrix = page.rotation_matrix

    def box(self, raw: Sequence[float]) -> Box:
        """A raw (unrotated) box as a displayed-page box, clipped to the page."""
        if self.rotation:
            r = pymupdf.Rect(raw) * self.matrix
            x0, y0, x1, y1 = r.x0, r.y0, r.x1, r.y1
        else:
            x0, y0, x1, y1 = raw[0], raw[1], raw[2], raw[3]
        return clamp((x0, y0, x1, y1), (0.0, 0.0, self.rect.width, self.rect.height))

    def horizontal(self, direction: Sequence[float]) -> bool:
        """Whether a text direction reads left to right on the displayed page."""
        dx, dy = direction[0], direction[1]
        if self.rotation:
            p = pymupdf.Point(dx, dy) * self.matrix
            dx, dy = p.x, p.y
        return dx > 0.9 and abs(dy) < 0.2


def _line_from_spans(
    spans: list[dict[str, Any]], frame: PageFrame, direction: Any, key: LineKey
) -> TextLine:
    text = "".join(s["text"] for s in spans)
    weights = [max(len(s["text"].strip()), 1) for s in spans]
    total = sum(weights)
    size_weight: dict[float, int] = {}
    font_weight: dict[str, int] = {}
    bold = mono = 0
    white = all(s.get("color") == 0xFFFFFF for s in spans)
    for s, w in zip(spans, weights, strict=True):
        size = round(s["size"], 1)
        size_weight[size] = size_weight.get(size, 0) + w
        font = s["font"].lower()
        font_weight[font] = font_weight.get(font, 0) + w
        if s["flags"] & _BOLD_FLAG or "bold" in font or "black" in font or "heavy" in font:
            bold += w
        if s["flags"] & _MONO_FLAG or any(m in font for m in _MONO_NAMES):
            mono += w
    size = max(size_weight.items(), key=lambda kv: (kv[1], kv[0]))[0]
    bbox = frame.box(union(s["bbox"] for s in spans))
    return TextLine(
        text=" ".join(text.split()),
        bbox=bbox,
        size=size,
        bold=bold >= 0.8 * total,
        mono=mono >= 0.8 * total,
        horizontal=frame.horizontal(direction),
        font=max(font_weight.items(), key=lambda kv: kv[1])[0],
        white=white,
        keys=(key,),
    )


def _merge_visual_lines(lines: list[TextLine]) -> list[TextLine]:
    """Join MuPDF lines that sit on the same visual line (same baseline band, side by side); a
    lone mark left of the text (a bullet glyph, set in a symbol font and often larger; a "$")
    leaves the joined line the text's size and font."""
    merged: list[TextLine] = []
    for line in lines:
        prev = merged[-1] if merged else None
        if prev is not None and prev.horizontal and line.horizontal and _same_row(prev, line):
            left, right = (prev, line) if prev.bbox[0] <= line.bbox[0] else (line, prev)
            glyph = len(left.text) == 1 and not left.text.isalnum()
            merged[-1] = TextLine(
                text=f"{left.text} {right.text}",
                bbox=union((prev.bbox, line.bbox)),
                size=right.size if glyph else max(prev.size, line.size),
                bold=prev.bold and line.bold,
                mono=prev.mono and line.mono,
                font=right.font if glyph else prev.font,
                white=prev.white and line.white,
                keys=left.keys + right.keys,
            )
        else:
            merged.append(line)
    return merged


def _same_row(a: TextLine, b: TextLine) -> bool:
    overlap = min(a.bbox[3], b.bbox[3]) - max(a.bbox[1], b.bbox[1])
    height = min(a.bbox[3] - a.bbox[1], b.bbox[3] - b.bbox[1])
    gap = max(a.bbox[0], b.bbox[0]) - min(a.bbox[2], b.bbox[2])
    return height > 0 and overlap > 0.6 * height and gap < 2.5 * max(a.size, b.size)


def word_lines(words: Sequence[Word], raw: bool = False) -> list[list[Word]]:
    """Words grouped into text lines, top to bottom: a word whose vertical centre lies within the
    first word of a line joins it (boxes as displayed, or `raw` page coordinates)."""

    def box(word: Word) -> Box:
        return word.raw if raw else word.bbox

    lines: list[list[Word]] = []
    for word in sorted(words, key=lambda w: ((box(w)[1] + box(w)[3]) / 2, box(w)[0])):
        centre = (box(word)[1] + box(word)[3]) / 2
        if lines and box(lines[-1][0])[1] <= centre <= box(lines[-1][0])[3]:
            lines[-1].append(word)
        else:
            lines.append([word])
    return lines


def text_page(page: pymupdf.Page) -> pymupdf.TextPage:
    """The page's text layer, parsed once for its lines and its words."""
    return page.get_textpage(flags=TEXT_FLAGS)


def read_blocks(
    page: pymupdf.Page, frame: PageFrame, textpage: pymupdf.TextPage | None = None
) -> list[RawBlock]:
    """The page's text blocks with visual lines in displayed coordinates; blank lines dropped,
    and lines that lie wholly outside the displayed page."""
    data = page.get_text("dict", flags=TEXT_FLAGS, sort=False, textpage=textpage)
    blocks: list[RawBlock] = []
    for block_no, raw in enumerate(data["blocks"]):
        if raw.get("type", 0) != 0:
            continue
        lines: list[TextLine] = []
        for line_no, raw_line in enumerate(raw["lines"]):
            spans = [s for s in raw_line["spans"] if s["text"]]
            if not spans or not "".join(s["text"] for s in spans).strip():
                continue
            line = _line_from_spans(spans, frame, raw_line["dir"], (block_no, line_no))
            if line.bbox[2] > line.bbox[0] and line.bbox[3] > line.bbox[1]:
                lines.append(line)
        if lines:
            blocks.append(RawBlock(_merge_visual_lines(lines)))
    return blocks


def read_words(
    page: pymupdf.Page, frame: PageFrame, textpage: pymupdf.TextPage | None = None
) -> list[Word]:
    """The words of the text layer, keyed as the lines of `read_blocks` are."""
    return [
        Word(
            (int(w[5]), int(w[6]), int(w[7])), str(w[4]), (w[0], w[1], w[2], w[3]), frame.box(w[:4])
        )
        for w in page.get_text("words", flags=TEXT_FLAGS, sort=False, textpage=textpage)
    ]


def image_boxes(page: pymupdf.Page, frame: PageFrame) -> list[Box]:
    """Boxes of the images drawn on the page, skipping tiny marks and full-page backgrounds."""
    area = frame.rect.width * frame.rect.height
    boxes: list[Box] = []
    for info in page.get_image_info():
        b = frame.box(info["bbox"])
        a = (b[2] - b[0]) * (b[3] - b[1])
        if area and 0.004 * area <= a <= 0.85 * area and b not in boxes:
            boxes.append(b)
    return boxes
