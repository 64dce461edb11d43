"""Estimated visual lines for a block whose model gave only one box (OCR models that ground blocks).

The model's box is tight around the block's text, so the text fills it: with `L` lines the line
pitch is ``h / L`` and a line holds about ``w / (CHAR_RATIO * h / L)`` characters. Solving
``chars = L * w * L / (CHAR_RATIO * h)`` gives the number of lines; words are then filled into
lines of that capacity. Calibrated on the text layer of arXiv 2305.03393 p.9 (LNCS, Times 10 pt):
average character advance (spaces included) is ~0.41 of the line pitch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from ocr_engine.char_widths import WIDE as _WIDE
from ocr_engine.geometry import Box
from ocr_engine.schema import Line

__all__ = ["CHAR_RATIO", "estimate_lines", "estimate_pitch", "visible_length"]

CHAR_RATIO = 0.41  # average character advance / line pitch
_FULL_LINE = 0.8  # a line holding this share of the capacity spans the whole width
_MIN_PITCH = 3.0  # points: no line of text is drawn smaller
_WORD = re.compile(r"\S+")
_MARKUP = re.compile(r"\\[()\[\]]|</?[a-zA-Z][^>]*>|\*\*|__|^#+\s*|^[-*]\s+")


def visible_length(text: str) -> float:
    """Characters as they print: markdown/LaTeX/HTML markup dropped, wide (CJK) characters x2."""
    plain = _MARKUP.sub("", text)
    if plain.isascii():
        return len(plain)
    return len(plain) + len(_WIDE.findall(plain))


def _line_count(lengths: list[float], width: float, height: float) -> tuple[int, list[int]]:
    """Lines per paragraph line such that all text fits the box (at least one each)."""
    per_source = len(lengths)
    total = sum(lengths)
    if width <= 0 or height <= 0 or total <= 0:
        return per_source, [1] * per_source
    guess = math.sqrt(total * CHAR_RATIO * height / width)
    limit = max(per_source, int(height / _MIN_PITCH))
    n = max(per_source, round(guess))
    while True:
        capacity = width * n / (CHAR_RATIO * height)
        counts = [max(1, math.ceil(length / capacity - 0.15)) for length in lengths]
        if sum(counts) <= n or n >= limit:
            return n, counts
        n += 1


def _size(piece: str) -> float:
    return len(piece) if piece.isascii() else visible_length(piece)


def _pieces(paragraph: str, capacity: float) -> list[tuple[int, int]]:
    """Spans of the words, runs longer than a line (CJK has no spaces) cut to fit one."""
    spans = []
    for match in _WORD.finditer(paragraph):
        start, end = match.span()
        size = _size(match.group())
        if size <= capacity:
            spans.append((start, end))
            continue
        step = max(1, int(capacity * (end - start) / size))
        spans.extend((i, min(i + step, end)) for i in range(start, end, step))
    return spans


def _fill(paragraph: str, lines: int) -> list[str]:
    """The paragraph in `lines` lines, all full but the last, which is about half full (ragged);
    each line is a slice of the paragraph, so the text is kept as written."""
    if lines <= 1:
        return [paragraph.strip()]
    capacity = _size(paragraph.strip()) / (lines - 0.5)
    spans = _pieces(paragraph, capacity)
    out: list[str] = []
    first = spans[0][0]
    used = 0.0
    previous_end = first
    for start, end in spans:
        size = _size(paragraph[start:end]) + (1 if start > previous_end else 0)
        if start > first and used + size > capacity * 1.04 and len(out) < lines - 1:
            out.append(paragraph[first:previous_end])
            first, used = start, 0.0
            size = _size(paragraph[start:end])
        used += size
        previous_end = end
    out.append(paragraph[first:previous_end])
    return out


def estimate_lines(text: str, bbox: Box) -> list[Line]:
    """The block's visual lines with estimated boxes filling `bbox` top to bottom: full width
    except a paragraph's last line, which is as wide as its share of a full line; a block of
    one line keeps the whole box."""
    paragraphs = [p.strip() for p in text.splitlines() if p.strip()]
    if not paragraphs:
        return []
    x0, y0, x1, y1 = bbox
    width, height = x1 - x0, y1 - y0
    lengths = [visible_length(p) for p in paragraphs]
    _, counts = _line_count(lengths, width, height)
    texts: list[str] = []
    last_of_paragraph: set[int] = set()
    for paragraph, count in zip(paragraphs, counts, strict=True):
        texts.extend(_fill(paragraph, count))
        last_of_paragraph.add(len(texts) - 1)
    if len(texts) == 1:  # the model's box is tight around it
        return [Line(text=texts[0], bbox=_rounded(bbox))]
    step = height / len(texts)
    capacity = width / (CHAR_RATIO * step) if step > 0 else 1.0
    lines = []
    for i, line_text in enumerate(texts):
        share = visible_length(line_text) / capacity if capacity else 1.0
        right = x1
        if i in last_of_paragraph and share < _FULL_LINE:
            right = x0 + width * min(1.0, share)
        top = y0 + i * step
        box = (x0, top, max(right, x0), min(top + step, y1))
        lines.append(Line(text=line_text, bbox=_rounded(box)))
    return lines


def estimate_pitch(boxes_and_texts: Iterable[tuple[Box, str]]) -> float | None:
    """The median line pitch of several text blocks (None without any)."""
    pitches = []
    for (x0, y0, x1, y1), text in boxes_and_texts:
        lengths = [visible_length(p) for p in text.splitlines() if p.strip()]
        if lengths and x1 > x0 and y1 > y0:
            _, counts = _line_count(lengths, x1 - x0, y1 - y0)
            pitches.append((y1 - y0) / sum(counts))
    if not pitches:
        return None
    pitches.sort()
    return pitches[len(pitches) // 2]


def _rounded(box: Box) -> Box:
    return (round(box[0], 2), round(box[1], 2), round(box[2], 2), round(box[3], 2))
