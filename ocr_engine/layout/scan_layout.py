"""A scanned page's structure: layout-model regions typed as blocks, OCR lines assigned to them.

The CDLA layout model (see `scan_models`) finds text, title, figure, figure/table caption, table,
header, footer, reference and equation regions on the upright page image. Each OCR line goes to the
region that holds most of it (the smallest when several do); text regions inside a figure or a
table give their lines to it. A title region is a title (the first page's largest heading in its
top third) or a section header, level 1 or 2 by its line height against the body's; a text region
is cut into list items at bullet lines; a figure keeps the text read inside it, in the order the
heuristics of `ocr_layout` read it; a table region goes to the table-structure model
(`scan_tables`), and so does a figure over `BIG_FIGURE` of the page whose rows nearly all line up
figures in columns beside their labels (`STATEMENT`): a statement set without rules, which the
layout model may take for one picture. Lines outside every region are laid out by those heuristics.
Blocks are ordered by the XY-cut on the regions' boxes (`reading_order`), so columns stay apart,
also around a picture set between them, and what the regions cut apart is joined again
(`ocr_joins`: a paragraph cut line by line, a figure printed big over its label). Everything is in
the upright page's points. A raster figure of a text-layer page, rendered alone, is a table when a
table region covers most of it (`figure_table`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ocr_engine.geometry import Box, area, intersection, iou
from ocr_engine.layout.layout import LayoutBlock, is_bullet
from ocr_engine.layout.ocr_joins import join_blocks
from ocr_engine.layout.ocr_layout import OcrLine, body_height, group_paragraphs, layout_page
from ocr_engine.layout.reading_order import reading_order
from ocr_engine.layout.scan_models import ScanModels
from ocr_engine.layout.scan_tables import ScanTable, read_table, split_words
from ocr_engine.layout.textlayer import TextLine, Word
from ocr_engine.layout.unruled_tables import tabular_share
from ocr_engine.schema import BlockType

__all__ = ["REGION_TYPES", "Region", "ScanLayout", "detect_regions", "figure_table", "lay_out"]

MIN_SCORE = 0.5  # the wheel's default confidence threshold
INPUT_SIZE = (800, 608)  # (height, width) the model sees
HOLDS = 0.5  # a line belongs to a region holding at least this share of its box
INSIDE = 0.8  # a text region this much inside a figure or table is part of it
BIG_FIGURE = 0.35  # share of the page area above which a figure does not swallow text regions
SAME = 0.7  # regions of different labels overlapping this much (IoU): the likelier one stays
FIGURE_TABLE = 0.5  # a picture is a table when a table region covers this share of it
STATEMENT = 0.75  # a big figure is a table when this share of its rows line up figures in columns

REGION_TYPES: dict[str, BlockType] = {
    "text": BlockType.text,
    "title": BlockType.section_header,
    "figure": BlockType.figure,
    "figure_caption": BlockType.caption,
    "table": BlockType.table,
    "table_caption": BlockType.caption,
    "header": BlockType.page_header,
    "footer": BlockType.page_footer,
    "reference": BlockType.text,
    "equation": BlockType.formula,
}
_HOLDERS = (BlockType.figure, BlockType.table)


@dataclass(frozen=True, slots=True)
class Region:
    """One region the layout model found: its block type, box (upright points) and score."""

    type: BlockType
    box: Box
    score: float
    label: str


@dataclass(slots=True)
class ScanLayout:
    """Typed blocks in reading order and the cells of the table blocks (by `id` of the block)."""

    blocks: list[LayoutBlock]
    tables: dict[int, ScanTable] = field(default_factory=dict)


def detect_regions(models: ScanModels, image: np.ndarray, zoom: float) -> list[Region]:
    """The layout model's regions of an upright RGB page image rendered at `zoom` (pixels per
    point), in points. Raises `EngineUnavailableError`."""
    from rapid_layout.model_handler.pp.post_process import PPPostProcess
    from rapid_layout.model_handler.pp.pre_process import PPPreProcess

    session = models.get("layout")
    feed = PPPreProcess(img_size=INPUT_SIZE)(image)
    outputs = session.run({session.input_name: feed})
    post = PPPostProcess(session.labels, MIN_SCORE, 0.5)
    boxes, scores, names = post(image.shape[:2], feed, outputs)
    regions = [
        Region(REGION_TYPES.get(name, BlockType.text), _points(box, zoom), float(score), name)
        for box, score, name in zip(boxes, scores, names, strict=True)
    ]
    return _distinct(regions, image.shape[0] * image.shape[1] / zoom / zoom)


def _points(box: list[float], zoom: float) -> Box:
    x0, y0, x1, y1 = (float(v) / zoom for v in box[:4])
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def _share_inside(inner: Box, outer: Box) -> float:
    part = intersection(inner, outer)
    return area(part) / max(area(inner), 1e-6) if part else 0.0


def _distinct(regions: list[Region], page_area: float) -> list[Region]:
    """Regions without cross-label duplicates, and without text regions inside a table or a
    figure (not one of `BIG_FIGURE` of the page: text regions inside those stay, nearly always
    running text the model took for a picture)."""
    kept: list[Region] = []
    for region in sorted(regions, key=lambda r: -r.score):
        if any(iou(region.box, other.box) >= SAME for other in kept):
            continue
        kept.append(region)
    holders = [
        r
        for r in kept
        if r.type == BlockType.table
        or (r.type == BlockType.figure and area(r.box) < BIG_FIGURE * page_area)
    ]
    return [
        r
        for r in kept
        if r.type in _HOLDERS or not any(_share_inside(r.box, h.box) >= INSIDE for h in holders)
    ]


def _assign(
    lines: list[OcrLine], regions: list[Region]
) -> tuple[list[list[OcrLine]], list[OcrLine]]:
    """Each line to the region holding most of it (the smallest of equals), or to the rest."""
    held: list[list[OcrLine]] = [[] for _ in regions]
    rest: list[OcrLine] = []
    for line in lines:
        best: tuple[float, float, int] | None = None
        for index, region in enumerate(regions):
            share = _share_inside(line.box, region.box)
            if share >= HOLDS:
                key = (round(share, 1), -area(region.box), index)
                if best is None or key > best:
                    best = key
        if best is None:
            rest.append(line)
        else:
            held[best[2]].append(line)
    return held, rest


def _text_lines(lines: list[OcrLine]) -> list[TextLine]:
    """OCR lines in rows from the top, each row from the left, as layout lines."""
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda ln: (ln.box[1], ln.box[0])):
        middle = (line.box[1] + line.box[3]) / 2
        if rows and rows[-1][0].box[1] <= middle <= rows[-1][0].box[3]:
            rows[-1].append(line)
        else:
            rows.append([line])
    ordered = [ln for row in rows for ln in sorted(row, key=lambda ln: ln.box[0])]
    return [
        TextLine(text=ln.text, bbox=ln.box, size=ln.height, bold=False, mono=False)
        for ln in ordered
    ]


def _text_blocks(lines: list[TextLine], box: Box | None) -> list[LayoutBlock]:
    """A text region's lines, cut into list items where a line starts with a bullet."""
    if not any(is_bullet(line.text) for line in lines):
        return [LayoutBlock(BlockType.text, lines, box=box)]
    blocks: list[LayoutBlock] = []
    for line in lines:
        if is_bullet(line.text) or not blocks:
            kind = BlockType.list_item if is_bullet(line.text) else BlockType.text
            blocks.append(LayoutBlock(kind, [line]))
        else:
            blocks[-1].lines.append(line)
    return blocks


def _heading(
    lines: list[TextLine], box: Box, body: float, page_h: float, first_page: bool, tallest: float
) -> LayoutBlock:
    height = float(np.median([ln.bbox[3] - ln.bbox[1] for ln in lines]))
    if first_page and box[1] < page_h / 3 and height >= 1.5 * body and height >= tallest:
        return LayoutBlock(BlockType.title, lines, level=1, box=box)
    level = 1 if height >= 1.25 * body else 2
    return LayoutBlock(BlockType.section_header, lines, level=level, box=box)


def lay_out(
    models: ScanModels,
    image: np.ndarray,
    zoom: float,
    lines: list[OcrLine],
    page_w: float,
    page_h: float,
    *,
    first_page: bool = False,
    tables: bool = True,
) -> ScanLayout:
    """The upright page's OCR lines (points) laid out on the layout model's regions of `image`
    (upright, rendered at `zoom`). Raises `EngineUnavailableError`."""
    lines = [ln for ln in lines if ln.text.strip()]
    regions = detect_regions(models, image, zoom)
    held, rest = _assign(lines, regions)
    body = body_height(lines) if lines else 10.0
    heights = [
        float(np.median([ln.height for ln in inside]))
        for region, inside in zip(regions, held, strict=True)
        if region.type == BlockType.section_header and inside
    ]
    tallest = max(heights, default=0.0)
    out = ScanLayout([])
    for region, inside in zip(regions, held, strict=True):
        text_lines = _text_lines(inside)
        big = region.type == BlockType.figure and area(region.box) >= BIG_FIGURE * page_w * page_h
        statement = big and _is_statement(inside)
        if (region.type == BlockType.table or statement) and inside and tables:
            table = read_table(models, image, zoom, region.box, inside)
            if table is not None:
                block = LayoutBlock(BlockType.table, text_lines, box=table.bbox)
                out.tables[id(block)] = table
                out.blocks.append(block)
                continue
        if region.type == BlockType.table:
            rest.extend(inside)  # a table the model cannot read is laid out as text
        elif big:
            rest.extend(inside)  # mostly running text the model took for a picture
            out.blocks.append(LayoutBlock(BlockType.figure, box=region.box))
        elif region.type == BlockType.figure:
            read = [ln for b in layout_page(inside, page_w, page_h) for ln in b.lines]
            out.blocks.append(LayoutBlock(BlockType.figure, read, box=region.box))
        elif not text_lines:
            continue
        elif region.type == BlockType.section_header:
            out.blocks.append(_heading(text_lines, region.box, body, page_h, first_page, tallest))
        elif region.type == BlockType.text:
            paras = group_paragraphs(inside)  # a region may hold several paragraphs
            whole = region.box if len(paras) == 1 else None
            for para in paras:
                out.blocks.extend(_text_blocks(_text_lines(para), whole))
        else:
            out.blocks.append(LayoutBlock(region.type, text_lines, box=region.box))
    out.blocks.extend(layout_page(rest, page_w, page_h, first_page=first_page))
    out.blocks = join_blocks(reading_order(out.blocks))
    for block in out.blocks:
        if block.type not in _HOLDERS and block.lines:
            block.box = None  # a block of text is as wide as its lines
    return out


def _is_statement(lines: list[OcrLine]) -> bool:
    """Whether most of the lines' rows line up figures in columns beside their labels: a
    statement set without rules, which the layout model may take for one big picture."""
    words = [
        Word((0, i, j), text, box, box)
        for i, line in enumerate(lines)
        for j, (text, box) in enumerate(split_words(line))
    ]
    return tabular_share(words) >= STATEMENT


def figure_table(
    models: ScanModels, image: np.ndarray, zoom: float, lines: list[OcrLine]
) -> tuple[ScanTable, list[OcrLine]] | None:
    """The table that a picture (an upright raster figure rendered alone at `zoom`, its OCR
    `lines` in points) mostly is, and the lines outside it; None when the layout model finds no
    table over `FIGURE_TABLE` of the picture or the table model reads no grid in it. Raises
    `EngineUnavailableError`."""
    whole = image.shape[0] * image.shape[1] / zoom / zoom
    tables = [
        region
        for region in detect_regions(models, image, zoom)
        if region.type == BlockType.table and area(region.box) >= FIGURE_TABLE * whole
    ]
    if not tables:
        return None
    region = max(tables, key=lambda r: area(r.box))
    (inside,), rest = _assign([ln for ln in lines if ln.text.strip()], [region])
    table = read_table(models, image, zoom, region.box, inside) if inside else None
    return (table, rest) if table is not None else None
