"""DeepSeek-OCR output for the simulator: grounding markdown from a text layer, token estimates.

The markdown imitates the recorded samples in `../shared/data/ocr_samples/deepseek_ocr__*.md`
(OCR_FORMATS.md §1.2): one block per layout element,
`<|ref|>{label}<|/ref|><|det|>[[x1, y1, x2, y2]]<|/det|>` then its content, a blank line between
blocks, text lines ending in two spaces, an `image` block with no content, a `table` whose det line
comes before its caption's block and whose HTML follows the caption text. Boxes are on the 0–999
grid of the page as displayed: `int(round(v / page_size * 999))`.

Token counting is a deterministic stand-in for DeepSeek's tokenizer (`TOKEN_RE`). One token each:
a special tag; a bare `<td>`, `</td>`, `<tr>`, `</tr>`, `<th>`, `</th>`, `<table>` or `</table>`; a
CJK character; up to 6 letters with their leading space; up to 3 digits; a run of spaces; a run of
newlines; any other character. Prose comes out near 4.5 characters per token, the recorded page
(table-heavy) at 3.3.
"""

from __future__ import annotations

import hashlib
import math
import re
from functools import lru_cache

from pydantic import BaseModel, Field

from ocr_engine.schema import Block, BlockType, Page

__all__ = [
    "EOS",
    "GARBAGE_TEXT",
    "PageImage",
    "cached_tokens",
    "count_tokens",
    "gundam_image_tokens",
    "page_markdown",
    "pdf_page_images",
    "prompt_tokens",
    "strip_special_tokens",
    "tokenize",
]

EOS = "<｜end▁of▁sentence｜>"
GRID = 999

TOKEN_RE = re.compile(
    r"<\|/?[a-z_]+\|>"
    r"|<｜end▁of▁sentence｜>"
    r"|</?(?:td|tr|th|table)>"
    r"|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]"
    r"| ?[^\W\d_]{1,6}"
    r"|\d{1,3}"
    r"|\n+"
    r"| +"
    r"|.",
    re.S,
)
_SPECIAL_RE = re.compile(r"<\|/?[a-z_]+\|>|<｜end▁of▁sentence｜>")

GARBAGE_TEXT = (
    "The image shows a page from a document. The text is printed in a small serif font and is "
    "arranged in paragraphs; some parts of the page are too blurry to read with confidence. "
    "There appears to be a heading near the top and a page number at the bottom."
)

# Gundam mode as fixed in upstream vLLM (OCR_FORMATS.md §1.4).
BASE_TOKENS = 256
TILE_TOKENS = 100
TILE_PX = 640
MIN_CROPS, MAX_CROPS = 2, 6


def tokenize(text: str) -> list[str]:
    """Pieces whose concatenation is `text`; see the module docstring for the rules."""
    return TOKEN_RE.findall(text)


@lru_cache(maxsize=4096)
def cached_tokens(text: str) -> tuple[str, ...]:
    """`tokenize` for texts served again and again (a registered page's output)."""
    return tuple(tokenize(text))


def count_tokens(text: str) -> int:
    return len(tokenize(text))


def strip_special_tokens(text: str) -> str:
    """What vLLM returns with `skip_special_tokens` true: `label[[..]]` lines, no EOS."""
    return _SPECIAL_RE.sub("", text)


def _tile_grid(width: int, height: int) -> tuple[int, int]:
    """The crop grid an aspect-ratio-fitted resize picks (closest ratio, 2 to 6 tiles)."""
    aspect = width / height
    best, best_diff = (1, MIN_CROPS), math.inf
    candidates = sorted(
        {
            (i, j)
            for n in range(MIN_CROPS, MAX_CROPS + 1)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if MIN_CROPS <= i * j <= MAX_CROPS
        },
        key=lambda g: g[0] * g[1],
    )
    for cols, rows in candidates:
        diff = abs(aspect - cols / rows)
        if diff < best_diff or (
            diff == best_diff and width * height > 0.5 * TILE_PX * TILE_PX * cols * rows
        ):
            best, best_diff = (cols, rows), diff
    return best


def gundam_image_tokens(width: int, height: int) -> int:
    """256 for the 1024² global view plus 100 per 640² tile; images within 640² are not tiled."""
    if width <= TILE_PX and height <= TILE_PX:
        return BASE_TOKENS
    cols, rows = _tile_grid(width, height)
    return BASE_TOKENS + TILE_TOKENS * cols * rows


def prompt_tokens(width: int, height: int, text: str) -> int:
    """BOS + image tokens + the `\\n` vLLM puts after the image placeholder + the text."""
    return 1 + gundam_image_tokens(width, height) + 1 + count_tokens(text)


def _grid(value: float, size: float) -> int:
    return min(GRID, max(0, round(value / size * GRID)))


def _det(label: str, block: Block, page: Page) -> str:
    x0, y0, x1, y1 = block.bbox
    box = (
        f"[[{_grid(x0, page.width)}, {_grid(y0, page.height)}, "
        f"{_grid(x1, page.width)}, {_grid(y1, page.height)}]]"
    )
    return f"<|ref|>{label}<|/ref|><|det|>{box}<|/det|>\n"


def _flat(block: Block) -> str:
    """The block's text on one line, as the model writes a paragraph."""
    lines = [ln.text for ln in block.lines] if block.lines else block.text.splitlines()
    return " ".join(part.strip() for part in lines if part.strip())


def _table_html(block: Block) -> str:
    if block.html:
        return "".join(line.strip() for line in block.html.splitlines())
    rows: dict[int, list[str]] = {}
    for cell in sorted(block.cells, key=lambda c: (c.row, c.col)):
        spans = ""
        if cell.row_span > 1:
            spans += f' rowspan="{cell.row_span}"'
        if cell.col_span > 1:
            spans += f' colspan="{cell.col_span}"'
        rows.setdefault(cell.row, []).append(f"<td{spans}>{cell.text}</td>")
    if not rows:
        body = "".join(f"<tr><td>{ln.text}</td></tr>" for ln in block.lines)
        return f"<table>{body}</table>"
    return (
        "<table>" + "".join(f"<tr>{''.join(r)}</tr>" for _, r in sorted(rows.items())) + "</table>"
    )


def _caption_label(blocks: list[Block], index: int) -> str:
    """table_caption or image_caption by the neighbouring table/figure, else by the wording."""
    neighbours = [blocks[i].type for i in (index + 1, index - 1) if 0 <= i < len(blocks)]
    for kind in neighbours:
        if kind == BlockType.table:
            return "table_caption"
        if kind == BlockType.figure:
            return "image_caption"
    text = blocks[index].text.lstrip().lower()
    if text.startswith("table"):
        return "table_caption"
    if text.startswith(("fig", "image", "chart", "photo")):
        return "image_caption"
    return "text"


def _text_content(block: Block) -> str:
    text = _flat(block)
    if block.type == BlockType.title:
        return f"# {text}"
    if block.type == BlockType.section_header:
        return "#" * min(6, max(2, block.level or 2)) + " " + text
    if block.type == BlockType.list_item and text[:1] in "•●▪◦‣∙·*–":
        return "- " + text[1:].lstrip()
    return text


_LABELS = {BlockType.title: "title", BlockType.section_header: "sub_title"}


def page_markdown(page: Page) -> str:
    """Tagged grounding markdown (special tokens kept, no EOS) for a text-layer page."""
    blocks = page.blocks
    out: list[str] = []
    skip: set[int] = set()
    for index, block in enumerate(blocks):
        if index in skip:
            continue
        if block.type == BlockType.figure:
            out.append(_det("image", block, page))
        elif block.type == BlockType.table:
            out.append(_det("table", block, page) + _table_html(block) + "\n\n")
        elif block.type == BlockType.formula:
            out.append(_det("equation", block, page) + f"\\[{_flat(block)}\\]  \n\n")
        elif block.type == BlockType.caption:
            label = _caption_label(blocks, index)
            text = _flat(block)
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if label == "table_caption" and following and following.type == BlockType.table:
                # The recorded quirk: table det line, caption block, then the table's HTML.
                out.append(
                    _det("table", following, page)
                    + _det(label, block, page)
                    + f"{text}  \n\n"
                    + _table_html(following)
                    + "\n\n"
                )
                skip.add(index + 1)
            elif label == "image_caption":
                out.append(_det(label, block, page) + f"<center>{text}</center>  \n\n")
            else:
                out.append(_det(label, block, page) + f"{text}  \n\n")
        else:
            content = _text_content(block)
            if content:
                out.append(_det(_LABELS.get(block.type, "text"), block, page) + f"{content}  \n\n")
    return "".join(out).rstrip(" \n")


class PageImage(BaseModel):
    """A rendered page as the client will send it, and the output the simulator gives for it."""

    key: str = Field(description="sha256 hex of the image bytes")
    width_px: int
    height_px: int
    text: str = Field(description="tagged grounding markdown, special tokens kept, no EOS")
    origin: str = Field(description="where the text comes from, for messages")


def pdf_page_images(
    pdf: bytes,
    *,
    dpi: int,
    max_pixels: int,
    text_source: bytes | None = None,
    name: str = "<bytes>",
) -> list[PageImage]:
    """Each page rendered like the client renders it, with output synthesised from a text layer."""
    from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
    from ocr_engine.engines.render import render_page
    from ocr_engine.inputs.pdf import open_pdf

    doc = open_pdf(pdf, name=name)
    source = open_pdf(text_source, name=f"text source of {name}") if text_source else doc
    try:
        if source.page_count != doc.page_count:
            raise ValueError(
                f"{name}: text source has {source.page_count} pages, the PDF {doc.page_count}"
            )
        engine = PyMuPDFEngine()
        out = []
        for number in range(doc.page_count):
            rendered = render_page(doc[number], dpi=dpi, max_pixels=max_pixels)
            page = engine.extract_page(source[number])
            out.append(
                PageImage(
                    key=hashlib.sha256(rendered.png).hexdigest(),
                    width_px=rendered.width_px,
                    height_px=rendered.height_px,
                    text=page_markdown(page),
                    origin=f"{name} page {number + 1} (synthesised from the text layer)",
                )
            )
        return out
    finally:
        if source is not doc:
            source.close()
        doc.close()
