"""Font and position heuristics: split raw blocks, type them, and put them in reading order."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_engine.geometry import Box, union
from ocr_engine.layout.textlayer import RawBlock, TextLine
from ocr_engine.schema import BlockType

BULLET_RE = re.compile(r"^(?:[•·▪▫‣⁃◦○●■□➢➤►▶✓✔\-–—*]\s*|\(?(?:\d{1,2}|[a-z]|[ivx]{1,4})[.)]\s+)\S")
CAPTION_RE = re.compile(
    r"^(?:figure|fig\.?|table|tab\.?|chart|exhibit|listing|algorithm|图|表)\s*[0-9IVX]+[.:\-–]?",
    re.IGNORECASE,
)
NUMBERED_HEADING_RE = re.compile(r"^((?:\d{1,2}\.)*\d{1,2})\.?\s+\S")
PAGE_NUMBER_RE = re.compile(
    r"^(?:page\s+)?[\divxlc]{1,6}(?:\s*(?:/|of)\s*\d{1,6})?$", re.IGNORECASE
)

URL_RE = re.compile(r"(?:https?://|www\.|\w\.(?:com|org|net|gov|edu)\b|@\w+\.\w)", re.IGNORECASE)

BRAND_MARKS = ("™", "®", "℠")  # a line ending in one is a logo or product name, not a section
MARGIN_BAND = 0.075  # share of the page height treated as header/footer band


@dataclass(slots=True)
class LayoutBlock:
    """A typed group of visual lines (or a table/figure placeholder) on the displayed page."""

    type: BlockType
    lines: list[TextLine] = field(default_factory=list)
    level: int | None = None
    box: Box | None = None

    @property
    def bbox(self) -> Box:
        return self.box if self.box is not None else union(line.bbox for line in self.lines)

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)


@dataclass(frozen=True, slots=True)
class BodyStyle:
    """The font size and font carrying most characters on the page."""

    size: float
    font: str


def body_style(blocks: Sequence[RawBlock]) -> BodyStyle:
    """The page's body text style."""
    sizes: Counter[float] = Counter()
    fonts: Counter[str] = Counter()
    for block in blocks:
        for line in block.lines:
            sizes[round(line.size, 1)] += len(line.text)
            fonts[line.font] += len(line.text)
    if not sizes:
        return BodyStyle(10.0, "")
    return BodyStyle(float(sizes.most_common(1)[0][0]), fonts.most_common(1)[0][0])


def is_bullet(text: str) -> bool:
    """Whether a line starts with a bullet glyph or an enumeration marker."""
    if BULLET_RE.match(text):
        return True
    first = text[:1]
    return bool(first) and unicodedata.category(first) in _BULLET_CATEGORIES and len(text) > 2


_BULLET_CATEGORIES = {"So", "Sm", "Co", "Cc", "Cn"}


def _is_heading_like(line: TextLine, body: float) -> bool:
    return line.size >= 1.15 * body or (line.bold and len(line.text) < 120)


def split_block(block: RawBlock, body: float) -> list[list[TextLine]]:
    """Cut a MuPDF block where the style changes, a bullet starts, or a wide gap opens."""
    groups: list[list[TextLine]] = []
    for line in block.lines:
        if not groups:
            groups.append([line])
            continue
        prev = groups[-1][-1]
        gap = line.bbox[1] - prev.bbox[3]
        height = max(prev.bbox[3] - prev.bbox[1], 1.0)
        cut = (
            (
                _is_heading_like(prev, body) != _is_heading_like(line, body)
                and not _runs_on(prev, line)
            )
            or _size_break(prev.size, line.size, body)
            or is_bullet(line.text)
            or gap > 0.9 * height
            or line.bbox[1] < prev.bbox[3] - 0.5 * height
            or prev.horizontal != line.horizontal
        )
        if cut:
            groups.append([line])
        else:
            groups[-1].append(line)
    return groups


def _size_break(a: float, b: float, body: float) -> bool:
    """A font size change that starts a new block; display lines within ~12% stay together."""
    if abs(a - b) <= 0.2 * body:
        return False
    return not (min(a, b) >= 1.5 * body and abs(a - b) <= 0.12 * max(a, b))


def merge_paragraphs(groups: list[list[TextLine]], body: float) -> list[list[TextLine]]:
    """Join consecutive line groups that continue one paragraph (MuPDF splits wide leading)."""
    out: list[list[TextLine]] = []
    for group in groups:
        if out and _continues(out[-1], group, body):
            out[-1] = out[-1] + group
        else:
            out.append(group)
    return out


def _runs_on(a: TextLine, b: TextLine) -> bool:
    """Whether line `b` goes on with the sentence line `a` leaves open, in whatever weight: it
    starts with a word in lower case ("updates > Power off" under "… Settings > System &"; not
    "iOS" or "eBay")."""
    words = b.text.split()
    lower = bool(words) and words[0][0].islower() and words[0].islower()  # not "(amounts in …"
    return lower and not a.text.rstrip().endswith((".", "!", "?", ":"))


def _continues(prev: list[TextLine], nxt: list[TextLine], body: float) -> bool:
    a, b = prev[-1], nxt[0]
    if not (a.horizontal and b.horizontal) or is_bullet(b.text) or CAPTION_RE.match(b.text):
        return False
    weight_changes = a.bold != b.bold or _is_heading_like(a, body)
    if abs(a.size - b.size) > 0.5 or (weight_changes and not _runs_on(a, b)):
        return False
    height = max(a.bbox[3] - a.bbox[1], 1.0)
    gap = b.bbox[1] - a.bbox[3]
    if not -0.3 * height <= gap <= 0.8 * height:
        return False
    left = min(line.bbox[0] for line in prev)
    right = max(line.bbox[2] for line in prev)
    overlap = min(right, b.bbox[2]) - max(left, b.bbox[0])
    if overlap < 0.5 * min(right - left, b.bbox[2] - b.bbox[0]):
        return False
    indent = b.bbox[0] - a.bbox[0]
    if is_bullet(prev[0].text):
        return indent > -0.5 * a.size
    ended_short = a.bbox[2] < right - 2 * a.size
    return abs(indent) < 0.8 * a.size or (indent < 0 and not ended_short)


def classify(
    lines: list[TextLine],
    style: BodyStyle,
    page_w: float,
    page_h: float,
    first_page: bool,
    *,
    text_top: float | None = None,
) -> LayoutBlock:
    """Type one group of lines by position, font size, weight and leading text; `text_top` is
    where the page's highest line ends (a group under it is not at the page's edge)."""
    body = style.size
    box = union(line.bbox for line in lines)
    text = " ".join(line.text for line in lines)
    size = max(line.size for line in lines)
    under_text = text_top is not None and text_top <= box[1] + 1
    if _in_margin(lines, box, page_w, page_h, under_text=under_text):
        return LayoutBlock(BlockType.text, lines)
    if CAPTION_RE.match(text):
        return LayoutBlock(BlockType.caption, lines)
    level = _heading_level(lines, text, size, body)
    if level is None and _distinct_font_heading(lines, text, size, style):
        level = 3
    if level is not None:
        title_like = (
            size >= 1.5 * body and box[1] < page_h / 3 and not NUMBERED_HEADING_RE.match(text)
        )
        if first_page and level == 1 and title_like:
            return LayoutBlock(BlockType.title, lines, level=1)
        return LayoutBlock(BlockType.section_header, lines, level=level)
    if size <= 0.85 * body and box[1] > 0.6 * page_h and re.match(r"^[\d*†‡§¹²³]", text):
        return LayoutBlock(BlockType.footnote, lines)
    if is_bullet(text):
        return LayoutBlock(BlockType.list_item, lines)
    if all(line.mono for line in lines) and len(lines) >= 2:
        return LayoutBlock(BlockType.code, lines)
    return LayoutBlock(BlockType.text, lines)


def _in_margin(
    lines: list[TextLine], box: Box, page_w: float, page_h: float, *, under_text: bool
) -> bool:
    """A line or two in the top or bottom margin band, or vertical text along a side edge: plain
    text (no heading of the ground truth sits there), furniture only if it repeats. A line in the
    top band under other text (a manual's running header) is not at the edge: it may head."""
    if not all(line.horizontal for line in lines) and (
        box[2] < 0.1 * page_w or box[0] > 0.9 * page_w
    ):
        return True
    at_top = box[3] <= MARGIN_BAND * page_h and not under_text
    in_band = at_top or box[1] >= (1 - MARGIN_BAND) * page_h
    return in_band and len(lines) <= 2


def font_family(font: str) -> str:
    """A font name without its subset prefix and its cut: "ABCDEF+Janson-Italic" -> "janson"."""
    name = font.split("+", 1)[-1].lower()
    return re.split(r"[-,]", name, maxsplit=1)[0]


def wordy(text: str) -> bool:
    """Whether a heading candidate is made of words: more letters than digits once its leading
    section number is set aside, no URL and no trademark sign at its end."""
    numbered = NUMBERED_HEADING_RE.match(text)
    rest = text[numbered.end(1) :] if numbered else text
    letters = sum(1 for c in rest if c.isalpha())
    digits = sum(1 for c in rest if c.isdigit())
    return letters > digits and not URL_RE.search(text) and not text.endswith(BRAND_MARKS)


def _heading_level(lines: list[TextLine], text: str, size: float, body: float) -> int | None:
    long_or_sentence = len(lines) > 3 or len(text) > 160 or text.endswith((".", ",", ";"))
    if len(text) < 2 or (long_or_sentence and not (size >= 1.5 * body and len(lines) <= 4)):
        return None
    if not wordy(text):
        return None
    bold = all(line.bold for line in lines)
    if size < 1.12 * body and not (bold and size >= 0.95 * body):
        return None
    numbered = NUMBERED_HEADING_RE.match(text)
    if numbered is not None:
        return min(numbered.group(1).count(".") + 1, 6)
    if size >= 1.6 * body:
        return 1
    if size >= 1.25 * body:
        return 2
    return 3


def _distinct_font_heading(lines: list[TextLine], text: str, size: float, style: BodyStyle) -> bool:
    """A single short line, slightly larger and in another font family than the body text
    (the italic or bold cut of the body font is emphasis)."""
    return (
        len(lines) == 1
        and len(text) < 80
        and size >= 1.05 * style.size
        and font_family(lines[0].font) != font_family(style.font)
        and not text.endswith((".", ",", ";", ":"))
        and wordy(text)
    )


HEADING_TYPES = (BlockType.title, BlockType.section_header)


def demote_heading_runs(blocks: list[LayoutBlock], min_run: int = 3) -> None:
    """Turn into text the stacks of same-style headings that introduce (almost) no content.

    Three or more headings in one style (size and font family, whatever the cut), aligned (left
    or right) and at most a few lines apart, are a list of phrases (cover blurbs, sidebars, the
    labels of a diagram), not sections.
    """
    by_style: dict[tuple[float, str], list[LayoutBlock]] = {}
    for b in blocks:
        if b.type in HEADING_TYPES and b.lines:
            first = b.lines[0]
            by_style.setdefault((first.size, font_family(first.font)), []).append(b)
    for items in by_style.values():
        items.sort(key=lambda b: b.bbox[1])
        run: list[LayoutBlock] = []
        for item in [*items, None]:
            if run and item is not None:
                prev = run[-1]
                gap = item.bbox[1] - prev.bbox[3]
                height = max(prev.lines[0].bbox[3] - prev.lines[0].bbox[1], 1.0)
                aligned = min(abs(item.bbox[0] - prev.bbox[0]), abs(item.bbox[2] - prev.bbox[2]))
                if aligned <= 5.0 and gap <= 3.5 * height:
                    run.append(item)
                    continue
            if len(run) >= min_run:
                for b in run:
                    b.type, b.level = BlockType.text, None
            run = [item] if item is not None else []


def demote_subtitles(blocks: list[LayoutBlock]) -> None:
    """A smaller, non-bold line set directly under a heading (less than half a line below it)
    is the heading's subtitle: text, not a section of its own."""
    heads = [b for b in blocks if b.type in HEADING_TYPES and b.lines]
    for b in heads:
        if len(b.lines) != 1 or b.lines[0].bold:
            continue
        line = b.lines[0]
        height = max(line.bbox[3] - line.bbox[1], 1.0)
        for above in heads:
            a = above.bbox
            overlap = min(a[2], b.bbox[2]) - max(a[0], b.bbox[0])
            if (
                above is not b
                and above.lines[-1].size > line.size
                and overlap > 0.5 * (b.bbox[2] - b.bbox[0])
                and -0.5 * height <= b.bbox[1] - a[3] <= 0.5 * height
            ):
                b.type, b.level = BlockType.text, None
                break


def demote_invisible(blocks: list[LayoutBlock], backgrounds: Sequence[Box]) -> None:
    """Headings drawn in white with no filled shape or image under them are invisible text."""
    for b in blocks:
        if b.type in HEADING_TYPES and b.lines and all(line.white for line in b.lines):
            box = b.bbox
            if not any(
                g[0] <= box[0] + 1
                and g[1] <= box[1] + 1
                and box[2] - 1 <= g[2]
                and box[3] - 1 <= g[3]
                for g in backgrounds
            ):
                b.type, b.level = BlockType.text, None
