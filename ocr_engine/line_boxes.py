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
import unicodedata
from collections.abc import Iterable

from ocr_engine.schema import Line

__all__ = ["CHAR_RATIO", "estimate_lines", "estimate_pitch", "visible_length"]

Box = tuple[float, float, float, float]

CHAR_RATIO = 0.41  # average character advance / line pitch
_FULL_LINE = 0.8  # a line holding this share of the capacity spans the whole width
_MIN_PITCH = 3.0  # points: no line of text is drawn smaller
_MARKUP = re.compile(r"\\[()\[\]]|</?[a-zA-Z][^>]*>|\*\*|__|^#+\s*|^[-*]\s+")


def visible_length(text: str) -> float:
    """Characters as they print: markdown/LaTeX/HTML markup dropped, wide (CJK) characters x2."""
    plain = _MARKUP.sub("", text)
    wide = sum(1 for ch in plain if ord(ch) > 0x2E7F and unicodedata.east_asian_width(ch) in "WF")
    return len(plain) + wide


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


def _fill(words: list[str], lines: int) -> list[str]:
    """Words in `lines` lines, all full but the last, which is about half full (ragged)."""
    if lines <= 1 or len(words) <= 1:
        return [" ".join(words)]
    capacity = visible_length(" ".join(words)) / (lines - 0.5)
    out: list[str] = []
    current: list[str] = []
    used = 0.0
    for word in words:
        size = visible_length(word) + (1 if current else 0)
        if current and used + size > capacity * 1.04 and len(out) < lines - 1:
            out.append(" ".join(current))
            current, used = [], 0.0
            size -= 1
        current.append(word)
        used += size
    out.append(" ".join(current))
    return out


def estimate_lines(text: str, bbox: Box) -> list[Line]:
    """The block's visual lines with estimated boxes filling `bbox` top to bottom: full width
    except a paragraph's last line, which is as wide as its share of a full line; a block of
    one line keeps the whole box."""
    paragraphs = [p.split() for p in text.splitlines() if p.strip()]
    if not paragraphs:
        return []
    x0, y0, x1, y1 = bbox
    width, height = x1 - x0, y1 - y0
    lengths = [visible_length(" ".join(words)) for words in paragraphs]
    _, counts = _line_count(lengths, width, height)
    texts: list[str] = []
    last_of_paragraph: set[int] = set()
    for words, count in zip(paragraphs, counts, strict=True):
        texts.extend(_fill(words, count))
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
