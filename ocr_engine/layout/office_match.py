"""A rendering's pages given the structure its source states, matched to the rendered lines.

A block whose text is a source heading becomes a heading of the source's level, a list item's
text a list item; where the source is (or was read as) a Word, PowerPoint, HTML or Markdown file,
a block the layout guessed to be a heading that the source does not call one is text again. A
source table whose cells are found on a page as lines becomes a table block with those cells
(their boxes the lines' boxes), in place of the blocks it covers; a laid-out sheet page is matched
with its own sheet's table cut to the columns it shows. The source's hyperlinks go on the blocks
whose lines hold their text (`ocr_engine.inputs.office_links`). Pages of any other PDF are left as
they are.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

import pymupdf

from ocr_engine.geometry import Box, centre_inside, rounded, union
from ocr_engine.inputs.office_links import linked
from ocr_engine.inputs.office_structure import EMBEDDED_NAME, Item, SourceTable, Structure
from ocr_engine.layout.tables import assemble
from ocr_engine.schema import Block, BlockType, Line, Page, TableCell

__all__ = ["norm", "shape_pages", "structure_of"]

log = logging.getLogger(__name__)

_MARK = re.compile(
    r"^\s*(?:[\u2022\uf0b7\uf0a7\u25aa\u25cf\u25e6\u2013\u2043\-*·▪]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s*"
)
_AUTHORITATIVE = {"docx", "pptx", "html", "md"}
_HEADINGS = (BlockType.title, BlockType.section_header)
_KEEP = (BlockType.page_header, BlockType.page_footer, BlockType.figure)
_JOINABLE = (BlockType.text, *_HEADINGS)
_MIN_CELLS = 3
_SPLIT_ROWS = 500  # tables up to this many rows have lines joined across cells cut apart
_PURITY = 0.7  # at least this share of the lines inside a matched table's box are its cells


def norm(text: str) -> str:
    """Letters and digits only, lower case: how texts are compared."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


def structure_of(pdf: pymupdf.Document) -> Structure | None:
    """The source structure a rendering carries, None for any other PDF."""
    try:
        if EMBEDDED_NAME not in pdf.embfile_names():
            return None
        return Structure.model_validate_json(pdf.embfile_get(EMBEDDED_NAME))
    except Exception as exc:  # a PDF of someone else's with a damaged embedded file
        log.info("no readable structure in the rendering: %s", exc)
        return None


class _Said(NamedTuple):
    """What the source says of its texts, read once for all its pages: its headings and list
    items by their `norm`, its paragraphs' `norm`s (sorted, and as a set), and whether its
    headings are the only ones (`_AUTHORITATIVE`)."""

    items: dict[str, Item]
    paragraphs: list[str]
    whole: frozenset[str]
    authoritative: bool


def _said(structure: Structure) -> _Said:
    items: dict[str, Item] = {}
    for said in structure.items:
        if said.type != "text":
            items.setdefault(norm(said.text), said)
    paragraphs = sorted({norm(said.text) for said in structure.items if said.type == "text"})
    authoritative = (structure.read_as or structure.kind) in _AUTHORITATIVE
    return _Said(items, paragraphs, frozenset(paragraphs), authoritative)


def _typed(page: Page, said: _Said) -> Page:
    items, authoritative = said.items, said.authoritative
    blocks = []
    for block in _joined(page.blocks, said):
        if block.type in (*_KEEP, BlockType.table):
            blocks.append(block)
            continue
        key = norm(block.text)
        item: Item | None = items.get(key) or items.get(norm(_MARK.sub("", block.text, count=1)))
        if item is None and (split := _split_list(block, items)):
            blocks.extend(split)
            continue
        if item is not None and (item.type != "list_item" or block.type not in _HEADINGS):
            kind = BlockType(item.type)
            level = (item.level or 1) if kind in _HEADINGS else None
            blocks.append(block.model_copy(update={"type": kind, "level": level}))
        elif authoritative and block.type in _HEADINGS:
            blocks.append(block.model_copy(update={"type": BlockType.text, "level": None}))
        else:
            blocks.append(block)
    return page.model_copy(update={"blocks": blocks})


def _joined(blocks: list[Block], said: _Said) -> list[Block]:
    """The blocks, those that in a row make up one paragraph of the source joined into one text
    block: a rendering wraps a paragraph over lines that the layout may read as blocks of their
    own (a shape's centred text, "A rectangle shape with this text" over "inside.")."""
    paragraphs, whole = said.paragraphs, said.whole
    out: list[Block] = []
    i = 0
    while i < len(blocks):
        key, end = norm(blocks[i].text), i
        if blocks[i].type in _JOINABLE and key not in whole and _begins(paragraphs, key):
            for j in range(i + 1, len(blocks)):
                key += norm(blocks[j].text)
                if blocks[j].type not in _JOINABLE or not _begins(paragraphs, key):
                    break
                if key in whole:
                    end = j
                    break
        parts = blocks[i : end + 1]
        if len(parts) > 1:
            lines = [line for part in parts for line in part.lines]
            text = "\n".join(part.text for part in parts)
            update = {"type": BlockType.text, "level": None, "text": text, "lines": lines}
            out.append(parts[0].model_copy(update={**update, "bbox": union(p.bbox for p in parts)}))
        else:
            out.append(blocks[i])
        i = end + 1
    return out


def _begins(paragraphs: list[str], key: str) -> bool:
    """Whether a paragraph's `norm` starts with `key` (`paragraphs` sorted)."""
    at = bisect_left(paragraphs, key)
    return bool(key) and at < len(paragraphs) and paragraphs[at].startswith(key)


def _split_list(block: Block, items: dict[str, Item]) -> list[Block]:
    """A block of several lines each of which is a source list item: one list item per line."""
    if len(block.lines) < 2:
        return []
    keys = [norm(_MARK.sub("", line.text, count=1)) for line in block.lines]
    if not all(k in items and items[k].type == "list_item" for k in keys):
        return []
    return [
        block.model_copy(
            update={
                "type": BlockType.list_item,
                "text": line.text,
                "bbox": line.bbox,
                "lines": [line],
            }
        )
        for line in block.lines
    ]


def _lines(page: Page) -> list[tuple[Line, str]]:
    found = [
        (line, norm(line.text))
        for block in page.blocks
        if block.type not in _KEEP
        for line in block.lines
    ]
    found = [(line, key) for line, key in found if key]
    return sorted(found, key=lambda x: (round(x[0].bbox[1]), x[0].bbox[0]))


def _match_table(table: SourceTable, lines: list[tuple[Line, str]]) -> list[TableCell] | None:
    """The table's cells found among `lines`, or None when too few are, or not as a table."""
    lines = _split_rows(table, lines)
    index: dict[str, list[int]] = {}
    for i, (_, key) in enumerate(lines):
        index.setdefault(key, []).append(i)
    used: set[int] = set()
    cells: list[TableCell] = []
    matched: list[Box] = []
    spans = {(s.row, s.col): (s.rows, s.cols) for s in table.spans}
    for r, row in enumerate(table.rows):
        for c, text in enumerate(row):
            key = norm(text)
            if not key:
                continue
            picked = _pick(key, lines, index, used)
            if not picked:
                continue
            box = union([lines[i][0].bbox for i in picked])
            matched.append(box)
            rows, cols = spans.get((r, c), (1, 1))
            cells.append(
                TableCell(
                    row=r, col=c, row_span=rows, col_span=cols, text=text, bbox=box, header=r == 0
                )
            )
    if len(cells) < _MIN_CELLS:
        return None
    region = union(matched)
    inside = [i for i, (line, _) in enumerate(lines) if centre_inside(line.bbox, region)]
    if not inside or len(used & set(inside)) < _PURITY * len(inside):
        return None
    return cells


def _with_strays(cells: list[TableCell], strays: list[Line]) -> tuple[list[TableCell], list[Line]]:
    """`cells` with the lines of the blocks the table replaces that no cell took (a cell whose text
    the layout broke or reworded) made the cell of the row and column they lie in, where no cell
    was found; the lines that lie in a found cell are given back (to stay beside the table)."""
    tops: dict[int, float] = {}
    spans: dict[int, tuple[float, float]] = {}
    for cell in cells:
        if cell.bbox is None:
            continue
        tops[cell.row] = min(tops.get(cell.row, cell.bbox[1]), cell.bbox[1])
        x0, x1 = spans.get(cell.col, (cell.bbox[0], cell.bbox[2]))
        spans[cell.col] = (min(x0, cell.bbox[0]), max(x1, cell.bbox[2]))
    at = {(c.row, c.col): c for c in cells}
    found_at = set(at)
    left: list[Line] = []
    for line in strays:
        x, y = (line.bbox[0] + line.bbox[2]) / 2, (line.bbox[1] + line.bbox[3]) / 2
        row = max(
            (r for r, top in tops.items() if top <= y), key=tops.__getitem__, default=min(tops)
        )
        col = min(spans, key=lambda k: max(spans[k][0] - x, x - spans[k][1], 0.0))
        found = at.get((row, col))
        if (row, col) in found_at:
            left.append(line)
        elif found is None or found.bbox is None:
            at[row, col] = TableCell(
                row=row, col=col, text=line.text, bbox=line.bbox, header=row == 0
            )
        else:
            text, box = f"{found.text} {line.text}", union([found.bbox, line.bbox])
            at[row, col] = found.model_copy(update={"text": text, "bbox": box})
    return sorted(at.values(), key=lambda c: (c.row, c.col)), left


def _split_rows(table: SourceTable, lines: list[tuple[Line, str]]) -> list[tuple[Line, str]]:
    """Lines that hold several cells of a row side by side (the layout joined them), cut into one
    line per cell, each its share of the line's width by its letters."""
    if len(table.rows) > _SPLIT_ROWS:
        return lines
    runs: dict[str, list[str]] = {}
    for row in table.rows:
        texts = [t for t in row if norm(t)]
        for a in range(len(texts)):
            for b in range(a + 2, len(texts) + 1):
                runs.setdefault("".join(norm(t) for t in texts[a:b]), texts[a:b])
    out: list[tuple[Line, str]] = []
    for line, key in lines:
        cells = runs.get(key)
        if cells is None:
            out.append((line, key))
            continue
        x0, y0, x1, y1 = line.bbox
        total = sum(len(norm(t)) for t in cells)
        at = x0
        for text in cells:
            width = (x1 - x0) * len(norm(text)) / total
            out.append((Line(text=text, bbox=(at, y0, at + width, y1)), norm(text)))
            at += width
    return out


def _pick(
    key: str, lines: list[tuple[Line, str]], index: dict[str, list[int]], used: set[int]
) -> list[int]:
    """The line(s) holding one cell's text: one line that is it, or lines in a row that make it."""
    for i in index.get(key, ()):
        if i not in used:
            used.add(i)
            return [i]
    for i, (_, first) in enumerate(lines):
        if i in used or len(first) < 3 or not key.startswith(first):
            continue
        picked, text = [i], first
        for j in range(i + 1, len(lines)):
            if j in used:
                continue
            nxt = text + lines[j][1]
            if key.startswith(nxt):
                picked.append(j)
                text = nxt
            if text == key:
                used.update(picked)
                return picked
        break
    return []


def _table_block(cells: list[TableCell], page: int) -> Block:
    n_rows = max(c.row for c in cells) + 1
    n_cols = max(c.col for c in cells) + 1
    rows = sorted({c.row for c in cells})
    cols = sorted({c.col for c in cells})
    packed = [  # rows and columns none of whose cells were found are left out
        c.model_copy(
            update={
                "row": rows.index(c.row),
                "col": cols.index(c.col),
                "row_span": max(1, sum(c.row <= r < c.row + c.row_span for r in rows)),
                "col_span": max(1, sum(c.col <= k < c.col + c.col_span for k in cols)),
                "header": c.row == rows[0],
            }
        )
        for c in cells
    ]
    n_rows, n_cols = len(rows), len(cols)
    boxes = [c.bbox for c in packed if c.bbox is not None]
    found = assemble(packed, n_rows, n_cols, union(boxes))
    # one line a markdown row, as every engine writes a table: the answer reads rows, not cells
    lines = [Line(text=row.text, bbox=rounded(row.bbox)) for row in found.rows]
    return Block(
        id=f"p{page}-b0",
        type=BlockType.table,
        bbox=found.bbox,
        text=found.markdown,
        lines=lines,
        html=found.html,
        cells=packed,
    )


def _tabled(page: Page, tables: Sequence[SourceTable]) -> Page:
    blocks = list(page.blocks)
    for table in tables:
        probe = page.model_copy(update={"blocks": blocks})
        cells = _match_table(table, _lines(probe))
        if cells is None:
            continue
        made = _table_block(cells, page.number)
        covered = [
            i
            for i, b in enumerate(blocks)
            if b.type not in _KEEP and centre_inside(b.bbox, made.bbox)
        ]
        if not covered:
            continue
        strays = [  # kept in the table: its blocks' text is not lost
            line
            for i in covered
            for line in blocks[i].lines
            if norm(line.text)
            and not any(c.bbox and centre_inside(line.bbox, c.bbox) for c in cells)
        ]
        cells, left = _with_strays(cells, strays)
        made = _table_block(cells, page.number) if strays else made
        at = covered[0]
        blocks = [b for i, b in enumerate(blocks) if i not in set(covered)]
        blocks.insert(at, made)
        if left:  # text the source's cells do not hold, kept as text after the table
            text = " ".join(line.text for line in left)
            box = union([line.bbox for line in left])
            rest = Block(
                id=f"p{page.number}-b0", type=BlockType.text, bbox=box, text=text, lines=left
            )
            blocks.insert(at + 1, rest)
    return page.model_copy(update={"blocks": blocks})


def _page_tables(structure: Structure, number: int) -> Sequence[SourceTable]:
    """The source tables page `number` may show: a laid-out sheet page's table, cut to the
    columns it shows (its header row kept), else all of them."""
    if not structure.sheet_pages:
        return structure.tables
    plan = next((p for p in structure.sheet_pages if p.page == number), None)
    table = next((t for t in structure.tables if plan and t.name == plan.sheet), None)
    if plan is None or table is None:
        return []
    if not plan.cols:
        return [table]
    rows = [[row[c] if c < len(row) else "" for c in plan.cols] for row in table.rows]
    spans = [
        s.model_copy(update={"col": plan.cols.index(s.col), "cols": cols})
        for s in table.spans
        if s.col in plan.cols and (cols := sum(s.col <= c < s.col + s.cols for c in plan.cols))
    ]
    return [table.model_copy(update={"rows": rows, "spans": spans})]


def shape_pages(pdf: pymupdf.Document, pages: list[Page]) -> list[Page]:
    """`pages` of `pdf` with its source's structure, when `pdf` is a rendering; else as they are."""
    structure = structure_of(pdf)
    if structure is None:
        return pages
    said = _said(structure)
    out = []
    for page in pages:
        tabled = _tabled(_typed(page, said), _page_tables(structure, page.number))
        shaped = linked(tabled, structure.links)
        out.append(shaped.renumbered() if shaped.blocks != page.blocks else page)
    return out
