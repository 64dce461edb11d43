"""The simulator's answers for dots.ocr and MinerU2.5, synthesised from a text layer.

The served model's family (`ocr_engine.options.ocr_family`) picks what a registered PDF answers:
- DeepSeek-OCR: grounding markdown for each page image (`doubles.grounding_synth`).
- dots.ocr: the page image answers a JSON array of ``{"bbox", "category", "text"}`` in reading
  order, boxes in pixels of the image after `smart_resize` (OCR_FORMATS.md §2), tables as HTML,
  titles and section headers with ``#``, no text for pictures.
- MinerU2.5: the page image stretched to 1036² (`mineru.layout_png`) answers the layout lines
  (``<|box_start|>x1 y1 x2 y2<|box_end|><|ref_start|>type<|ref_end|><|rotate_up|>``, 0-1000,
  three digits), and each region's crop, rendered exactly as the client renders it
  (`vllm_regions.render_crops` of `mineru.region_box`), answers its text: plain text, tables in
  OTSL, equations as ``\\[..\\]``.
"""

from __future__ import annotations

import hashlib
import json

import pymupdf

from doubles.grounding_synth import PageImage, pdf_page_images
from ocr_engine.engines.mineru import (
    GRID,
    content_prompt,
    layout_png,
    parse_layout,
    region_box,
)
from ocr_engine.engines.vllm_regions import render_crops
from ocr_engine.layout.vlm_blocks import smart_resize
from ocr_engine.options import OcrFamily
from ocr_engine.schema import Block, BlockType, Page

__all__ = ["dots_json", "mineru_layout", "mineru_text", "otsl", "sim_page_images"]

_DOTS = {
    BlockType.title: "Title",
    BlockType.section_header: "Section-header",
    BlockType.text: "Text",
    BlockType.list_item: "List-item",
    BlockType.table: "Table",
    BlockType.figure: "Picture",
    BlockType.caption: "Caption",
    BlockType.formula: "Formula",
    BlockType.page_header: "Page-header",
    BlockType.page_footer: "Page-footer",
    BlockType.footnote: "Footnote",
    BlockType.code: "Text",
}
_MINERU = {
    BlockType.title: "doc_title",
    BlockType.section_header: "title",
    BlockType.text: "text",
    BlockType.list_item: "list_item",
    BlockType.table: "table",
    BlockType.figure: "image",
    BlockType.formula: "equation",
    BlockType.page_header: "header",
    BlockType.page_footer: "footer",
    BlockType.footnote: "page_footnote",
    BlockType.code: "code",
}


def _flat(block: Block) -> str:
    lines = [ln.text for ln in block.lines] if block.lines else block.text.splitlines()
    return " ".join(part.strip() for part in lines if part.strip())


def _html(block: Block) -> str:
    if block.html:
        return "".join(line.strip() for line in block.html.splitlines())
    rows: dict[int, list[str]] = {}
    for cell in sorted(block.cells, key=lambda c: (c.row, c.col)):
        spans = f' rowspan="{cell.row_span}"' if cell.row_span > 1 else ""
        spans += f' colspan="{cell.col_span}"' if cell.col_span > 1 else ""
        rows.setdefault(cell.row, []).append(f"<td{spans}>{cell.text}</td>")
    if not rows:
        return (
            "<table>" + "".join(f"<tr><td>{ln.text}</td></tr>" for ln in block.lines) + "</table>"
        )
    return (
        "<table>" + "".join(f"<tr>{''.join(r)}</tr>" for _, r in sorted(rows.items())) + "</table>"
    )


def otsl(block: Block) -> str:
    """A table block's cells in OTSL, as MinerU2.5 answers ``Table Recognition``."""
    if not block.cells:
        return _html(block)
    n_rows = max(c.row + c.row_span for c in block.cells)
    n_cols = max(c.col + c.col_span for c in block.cells)
    grid = [["<ecel>"] * n_cols for _ in range(n_rows)]
    for cell in block.cells:
        for r in range(cell.row, cell.row + cell.row_span):
            for c in range(cell.col, cell.col + cell.col_span):
                up, left = r > cell.row, c > cell.col
                grid[r][c] = (
                    "<xcel>" if up and left else "<ucel>" if up else "<lcel>" if left else ""
                )
        text = cell.text.strip()
        grid[cell.row][cell.col] = f"<fcel>{text}" if text else "<ecel>"
    return "".join("".join(row) + "<nl>" for row in grid)


def _heading(block: Block) -> str:
    text = _flat(block)
    if block.type == BlockType.title:
        return f"# {text}"
    if block.type == BlockType.section_header:
        return "#" * min(6, max(2, block.level or 2)) + " " + text
    return text


def dots_json(page: Page, width_px: int, height_px: int) -> str:
    """dots.ocr's answer for a text-layer page shown in a `width_px` x `height_px` image."""
    input_h, input_w = smart_resize(height_px, width_px)
    sx, sy = input_w / page.width, input_h / page.height
    items = []
    for block in page.blocks:
        x0, y0, x1, y1 = block.bbox
        item: dict[str, object] = {
            "bbox": [round(x0 * sx), round(y0 * sy), round(x1 * sx), round(y1 * sy)],
            "category": _DOTS[block.type],
        }
        if block.type == BlockType.table:
            item["text"] = _html(block)
        elif block.type == BlockType.formula:
            item["text"] = f"$${_flat(block)}$$"
        elif block.type != BlockType.figure:
            item["text"] = _heading(block)
        if block.type == BlockType.figure or item.get("text"):
            items.append(item)
    return json.dumps(items, ensure_ascii=False)


def _mineru_label(blocks: list[Block], index: int) -> str:
    block = blocks[index]
    if block.type == BlockType.caption:
        near = [blocks[i].type for i in (index + 1, index - 1) if 0 <= i < len(blocks)]
        return "table_caption" if BlockType.table in near else "image_caption"
    if block.type == BlockType.page_footer and _flat(block).isdigit():
        return "page_number"
    return _MINERU[block.type]


def _grid(value: float, size: float) -> str:
    return f"{min(GRID, max(0, round(value / size * GRID))):03d}"


def mineru_layout(page: Page) -> list[tuple[str, Block]]:
    """MinerU2.5's layout lines for a text-layer page, each with the block it stands for."""
    out = []
    for index, block in enumerate(page.blocks):
        x0, y0, x1, y1 = block.bbox
        box = " ".join(
            (
                _grid(x0, page.width),
                _grid(y0, page.height),
                _grid(x1, page.width),
                _grid(y1, page.height),
            )
        )
        label = _mineru_label(page.blocks, index)
        out.append(
            (f"<|box_start|>{box}<|box_end|><|ref_start|>{label}<|ref_end|><|rotate_up|>", block)
        )
    return out


def mineru_text(block: Block) -> str:
    """What MinerU2.5 answers for a block's crop."""
    if block.type == BlockType.table:
        return otsl(block)
    if block.type == BlockType.formula:
        return f"\\[{_flat(block)}\\]"
    return _flat(block)


def _mineru_images(
    pdf: bytes, pdf_page: pymupdf.Page, page: Page, png: bytes, dpi: int, max_pixels: int, name: str
) -> list[PageImage]:
    """The layout image's answer, then each crop's, for one page. The crops are rendered by the
    client's own `render_crops`, from a document of their own and in the client's order: MuPDF
    caches decoded images, so a crop of a scan rendered after the whole page can differ."""
    lines = mineru_layout(page)
    layout_text = "\n".join(line for line, _ in lines)
    image = layout_png(png)
    number = pdf_page.number + 1
    out = [
        PageImage(
            key=hashlib.sha256(image).hexdigest(),
            width_px=1036,
            height_px=1036,
            text=layout_text,
            origin=f"{name} page {number} layout (synthesised from the text layer)",
        )
    ]
    by_line = {parse_layout(line)[0]: block for line, block in lines if parse_layout(line)}
    rect = pdf_page.rect
    asked = [r for r in parse_layout(layout_text) if content_prompt(r) is not None]
    boxes = [(region_box(r, rect.width, rect.height, rect.x0, rect.y0), r.angle) for r in asked]
    crops = render_crops(pdf, None, number, dpi, max_pixels, boxes)
    for region, crop in zip(asked, crops, strict=True):
        block = by_line.get(region)
        out.append(
            PageImage(
                key=hashlib.sha256(crop.png).hexdigest(),
                width_px=crop.width_px,
                height_px=crop.height_px,
                text=mineru_text(block) if block is not None else "",
                origin=f"{name} page {number} {region.label} region (synthesised)",
            )
        )
    return out


def sim_page_images(
    pdf: bytes,
    *,
    family: OcrFamily,
    dpi: int,
    max_pixels: int,
    text_source: bytes | None = None,
    name: str = "<bytes>",
) -> tuple[list[PageImage], list[PageImage]]:
    """One image a page as the client sends it first, and the further images it sends (MinerU's
    crops), with the answers of the family's model."""
    if family is OcrFamily.deepseek:
        return pdf_page_images(
            pdf, dpi=dpi, max_pixels=max_pixels, text_source=text_source, name=name
        ), []
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
        pages: list[PageImage] = []
        extra: list[PageImage] = []
        for number in range(doc.page_count):
            rendered = render_page(doc[number], dpi=dpi, max_pixels=max_pixels)
            page = engine.extract_page(source[number])
            if family is OcrFamily.dots:
                pages.append(
                    PageImage(
                        key=hashlib.sha256(rendered.png).hexdigest(),
                        width_px=rendered.width_px,
                        height_px=rendered.height_px,
                        text=dots_json(page, rendered.width_px, rendered.height_px),
                        origin=f"{name} page {number + 1} (synthesised from the text layer)",
                    )
                )
                continue
            first, *crops = _mineru_images(
                pdf, doc[number], page, rendered.png, dpi, max_pixels, name
            )
            pages.append(first)
            extra.extend(crops)
        return pages, extra
    finally:
        if source is not doc:
            source.close()
        doc.close()
