"""Tables: ruled ones through PyMuPDF's finder (gated on vector lines), unruled ones by aligning
the words of rows into columns of figures (gated on a count of numbers), cells with spans."""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pymupdf

from ocr_engine.schema import TableCell
from ocr_engine.textlayer import TEXT_FLAGS, Box, PageFrame, union

log = logging.getLogger(__name__)

RawBox = tuple[float, float, float, float]
MIN_RULES = 3  # horizontal or vertical rules a page needs before the finder runs


@dataclass(slots=True)
class TableRow:
    """One markdown row of a table and the box of its cells."""

    text: str
    bbox: Box


@dataclass(slots=True)
class FoundTable:
    """A detected table in displayed-page coordinates, rendered as markdown and HTML."""

    bbox: Box
    cells: list[TableCell]
    rows: list[TableRow]
    markdown: str
    html: str


def has_ruling(
    page: pymupdf.Page,
    min_rules: int = MIN_RULES,
    drawings: Sequence[dict[str, Any]] | None = None,
    *,
    shaded_cells: bool = True,
) -> bool:
    """Whether the page draws rules at enough distinct rows and columns to hold a ruled table;
    with `shaded_cells` false, filled boxes without a stroke do not count as rules."""
    rows: set[int] = set()
    cols: set[int] = set()
    band_width = 0.4 * page.rect.width
    for path in page.get_cdrawings() if drawings is None else drawings:
        outlined = shaded_cells or "s" in str(path.get("type", "s"))
        for item in path.get("items", ()):
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                if abs(x1 - x0) > 3.0 and abs(y1 - y0) > 3.0:  # a box: all four edges
                    # wide bands shade rows: they divide no columns
                    if outlined:
                        rows.update((round(y0), round(y1)))
                        if abs(x1 - x0) < band_width:
                            cols.update((round(x0), round(x1)))
                    continue
            else:
                continue
            if abs(y1 - y0) <= 3.0 and abs(x1 - x0) > 3.0:
                rows.add(round(y0))
            elif abs(x1 - x0) <= 3.0 and abs(y1 - y0) > 3.0:
                cols.add(round(x0))
        if len(rows) >= min_rules and len(cols) >= min_rules:
            return True
    return False


def find_tables(
    page: pymupdf.Page,
    frame: PageFrame,
    drawings: Sequence[dict[str, Any]] | None = None,
    *,
    shaded_cells: bool = True,
) -> list[FoundTable]:
    """Ruled tables on the page (none when the page draws no rules: the finder is costly)."""
    if not has_ruling(page, drawings=drawings, shaded_cells=shaded_cells):
        return []
    found: list[FoundTable] = []
    tables = page.find_tables(use_layout=False).tables
    if not tables:
        return found
    words = page.get_text("words", flags=TEXT_FLAGS)
    page_area = frame.rect.width * frame.rect.height
    for table in tables:
        rows = [row.cells for row in table.rows]
        converted = convert_table(rows, cell_texts(rows, words), frame)
        if converted is not None and plausible(converted, page_area):
            found.append(converted)
    return found


def cell_texts(
    rows: Sequence[Sequence[RawBox | None]], words: Sequence[Sequence[Any]]
) -> list[list[str | None]]:
    """Each cell's words in reading order (the finder's own text drops inter-word spaces)."""
    grid: list[list[str | None]] = []
    for row in rows:
        out: list[str | None] = []
        for box in row:
            if box is None:
                out.append(None)
                continue
            inside = [
                w
                for w in words
                if box[0] <= (w[0] + w[2]) / 2 <= box[2] and box[1] <= (w[1] + w[3]) / 2 <= box[3]
            ]
            inside.sort(key=lambda w: (w[5], w[6], w[7]))
            out.append(" ".join(str(w[4]) for w in inside))
        grid.append(out)
    return grid


def plausible(table: FoundTable, page_area: float) -> bool:
    """Reject layout boxes the finder mistakes for tables: mostly empty, headless or page-sized."""
    filled = sum(1 for c in table.cells if c.text) / len(table.cells)
    header_empty = not any(c.text for c in table.cells if c.row == 0)
    b = table.bbox
    huge = (b[2] - b[0]) * (b[3] - b[1]) > 0.5 * page_area and len(table.rows) <= 3
    # half-empty grids of merged boxes are forms and diagrams drawn with rectangles
    merged = sum(1 for c in table.cells if c.row_span > 1 or c.col_span > 1)
    form_like = filled < 0.6 and merged >= 0.1 * len(table.cells)
    return filled >= 0.5 and not header_empty and not huge and not form_like


def _span(edges: list[float], start: float, stop: float, tol: float = 2.0) -> int:
    return max(1, sum(1 for e in edges if start - tol <= e < stop - tol))


def convert_table(
    raw_rows: Sequence[Sequence[RawBox | None]],
    grid: list[list[str | None]],
    frame: PageFrame,
) -> FoundTable | None:
    """Cells with row/col spans from the finder's cell grid and text; None when trivial."""
    n_rows = len(raw_rows)
    n_cols = max((len(r) for r in raw_rows), default=0)
    if n_rows < 2 or n_cols < 2:
        return None
    rows_y = [min((b[1] for b in row if b), default=float("inf")) for row in raw_rows]
    cols_x = [
        min((b[0] for row in raw_rows if c < len(row) and (b := row[c])), default=float("inf"))
        for c in range(n_cols)
    ]
    cells: list[TableCell] = []
    for r, row in enumerate(raw_rows):
        for c, b in enumerate(row):
            if b is None:
                continue
            value = grid[r][c] if r < len(grid) and c < len(grid[r]) else None
            cells.append(
                TableCell(
                    row=r,
                    col=c,
                    row_span=_span(rows_y, b[1], b[3]),
                    col_span=_span(cols_x, b[0], b[2]),
                    text=" ".join((value or "").split()),
                    bbox=frame.box(b),
                    header=r == 0,
                )
            )
    if sum(1 for cell in cells if cell.text) < 2:
        return None
    row_boxes = _row_boxes(cells, n_rows)
    md_rows = _markdown_rows(cells, n_rows, n_cols)
    rows = [TableRow(t, box) for t, box in zip(md_rows, row_boxes, strict=True) if box is not None]
    markdown = "\n".join([md_rows[0], "|" + " --- |" * n_cols, *md_rows[1:]])
    boxes = [b for row in raw_rows for b in row if b]
    return FoundTable(
        bbox=frame.box(_union_raw(boxes)),
        cells=cells,
        rows=rows,
        markdown=markdown,
        html=to_html(cells),
    )


def _union_raw(boxes: list[tuple[float, float, float, float]]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _row_boxes(cells: list[TableCell], n_rows: int) -> list[Box | None]:
    out: list[Box | None] = []
    for r in range(n_rows):
        boxes = [c.bbox for c in cells if c.row == r and c.bbox is not None]
        out.append(_union_raw(boxes) if boxes else None)
    return out


def _cell_md(text: str) -> str:
    return text.replace("|", "\\|") or " "


def _markdown_rows(cells: list[TableCell], n_rows: int, n_cols: int) -> list[str]:
    grid = [[""] * n_cols for _ in range(n_rows)]
    for cell in cells:
        grid[cell.row][cell.col] = cell.text
    return ["| " + " | ".join(_cell_md(v) for v in row) + " |" for row in grid]


def to_html(cells: list[TableCell]) -> str:
    """An HTML table with th for header cells and rowspan/colspan attributes."""
    rows: dict[int, list[TableCell]] = {}
    for cell in cells:
        rows.setdefault(cell.row, []).append(cell)
    out = ["<table>"]
    for r in sorted(rows):
        out.append("<tr>")
        for cell in sorted(rows[r], key=lambda c: c.col):
            tag = "th" if cell.header else "td"
            attrs = ""
            if cell.row_span > 1:
                attrs += f' rowspan="{cell.row_span}"'
            if cell.col_span > 1:
                attrs += f' colspan="{cell.col_span}"'
            out.append(f"<{tag}{attrs}>{html.escape(cell.text)}</{tag}>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


# --- unruled tables: rows of words whose segments align into columns of numbers -------------

NUMERIC_RE = re.compile(
    r"^(?:[(\[]?[-–—+]?[$€£¥]?\(?\d[\d,.]*%?\)?[)\]]?%?\*?|[—–-]{1,3}|n/?a|nm|[ivxlc]{1,6})$",
    re.IGNORECASE,
)
# a cell holding one check-box or tick glyph is a value, like a figure (forms, feature matrices)
CHECK_RE = re.compile(r"^[*✓✔✗✘☐☑☒□■▢❑❒○●◯]$")
_CURRENCY = {"$", "€", "£", "¥", "US$"}
_LEADER_RE = re.compile(r"^[.·…_]+$")
MIN_NUMERIC_TOKENS = 10  # numeric tokens a page needs before its words are aligned
MIN_TABLE_ROWS = 3  # rows with a label and a number (or several numbers) a table needs


@dataclass(slots=True)
class _Segment:
    """Words of one row that sit close together: one cell's worth of text."""

    text: str
    box: Box

    @property
    def numeric(self) -> bool:
        text = self.text.replace(" ", "")
        return bool(NUMERIC_RE.match(text) or CHECK_RE.match(text))


@dataclass(slots=True)
class _Row:
    box: Box
    segments: list[_Segment]
    tabular: bool = False


def numeric_tokens(texts: Iterable[str]) -> int:
    """How many whitespace-separated tokens of the texts look like figures (or check boxes)."""
    return sum(
        1
        for text in texts
        for token in text.split()
        if (any(c.isdigit() for c in token) and NUMERIC_RE.match(token)) or CHECK_RE.match(token)
    )


def _rows_of(words: list[tuple[Box, str]]) -> list[_Row]:
    """Words grouped into visual rows (by vertical centre), each cut into segments at wide gaps."""
    rows: list[list[tuple[Box, str]]] = []
    for word in sorted(words, key=lambda w: ((w[0][1] + w[0][3]) / 2, w[0][0])):
        box = word[0]
        centre = (box[1] + box[3]) / 2
        if rows and rows[-1][0][0][1] <= centre <= rows[-1][0][0][3]:
            rows[-1].append(word)
        else:
            rows.append([word])
    return [_Row(union(w[0] for w in row), _segments(row)) for row in rows]


def _segments(row: list[tuple[Box, str]]) -> list[_Segment]:
    row = sorted(row, key=lambda w: w[0][0])
    height = sorted(w[0][3] - w[0][1] for w in row)[len(row) // 2]
    groups: list[list[tuple[Box, str]]] = []
    prev: Box | None = None
    leader = False
    for box, text in row:
        if _LEADER_RE.match(text):  # dot leaders (tables of contents) separate cells
            leader = True
            continue
        if groups and prev is not None and not leader and box[0] - prev[2] <= 0.8 * height:
            groups[-1].append((box, text))
        else:
            groups.append([(box, text)])
        prev, leader = box, False
    segments = [_Segment(" ".join(t for _, t in g), union(b for b, _ in g)) for g in groups]
    merged: list[_Segment] = []
    for seg in segments:  # "$ 1,234" where the currency sign stands apart; "12 %"
        if merged and (merged[-1].text in _CURRENCY or seg.text in (")", "%")):
            last = merged[-1]
            merged[-1] = _Segment(f"{last.text} {seg.text}", union((last.box, seg.box)))
        else:
            merged.append(seg)
    return merged


def _is_tabular(row: _Row) -> bool:
    """Two or more cells with a figure after the first, and no running text after a figure."""
    segs = row.segments
    if len(segs) < 2 or not any(s.numeric for s in segs[1:]):
        return False
    first_number = next(i for i, s in enumerate(segs) if s.numeric)
    return not any(len(s.text.split()) >= 5 for s in segs[first_number + 1 :])


def _runs(rows: list[_Row]) -> list[list[_Row]]:
    """Maximal runs of tabular rows, with label-only rows between them, close together."""
    runs: list[list[_Row]] = []
    current: list[_Row] = []
    for row in rows:
        row.tabular = _is_tabular(row)
        if current:
            last = current[-1]
            height = max(last.box[3] - last.box[1], 1.0)
            numbers = [s.box[0] for r in current if r.tabular for s in r.segments[1:] if s.numeric]
            label_only = (
                len(row.segments) == 1 and bool(numbers) and row.box[2] < min(numbers) - 2.0
            )
            if row.box[1] - last.box[3] <= 1.6 * height and (row.tabular or label_only):
                current.append(row)
                continue
            runs.append(current)
            current = []
        if row.tabular:
            current = [row]
    if current:
        runs.append(current)
    out = []
    for run in runs:
        while run and not run[-1].tabular:
            run.pop()
        if sum(1 for r in run if r.tabular) >= MIN_TABLE_ROWS:
            out.append(run)
    return out


def _columns(run: list[_Row]) -> list[tuple[float, float]]:
    """x-intervals of the figure columns: overlapping numeric segments merged."""
    spans = sorted(
        (s.box[0], s.box[2]) for r in run if r.tabular for s in r.segments[1:] if s.numeric
    )
    cols: list[tuple[float, float]] = []
    for x0, x1 in spans:
        if cols and x0 <= cols[-1][1]:
            cols[-1] = (cols[-1][0], max(cols[-1][1], x1))
        else:
            cols.append((x0, x1))
    return cols


def _headers(rows: list[_Row], start: int, cols: list[tuple[float, float]]) -> int:
    """How many rows just above the run belong to it: column headers (every segment centred over
    the figure columns), and label rows between them and the first figures."""
    left, right = cols[0][0] - 0.5 * (cols[0][1] - cols[0][0]) - 12.0, cols[-1][1] + 12.0
    count = taken = 0
    below = rows[start]
    for row in reversed(rows[max(0, start - 5) : start]):
        height = max(below.box[3] - below.box[1], 1.0)
        if below.box[1] - row.box[3] > 1.2 * height:
            break
        if all(left <= (s.box[0] + s.box[2]) / 2 <= right for s in row.segments):
            count += 1
            taken = count
        elif len(row.segments) == 1 and row.box[2] < cols[0][0] - 2.0 and count < 2:
            count += 1
        else:
            break
        below = row
    return taken


def _place(seg: _Segment, cols: list[tuple[float, float]]) -> tuple[int, int]:
    """(first column, span) of a segment among label column 0 and the figure columns 1..n."""
    centre = (seg.box[0] + seg.box[2]) / 2
    if centre < cols[0][0] and seg.box[2] <= cols[0][0] + 2.0:
        return 0, 1
    hit = [i + 1 for i, (x0, x1) in enumerate(cols) if seg.box[0] < x1 and seg.box[2] > x0]
    if not hit:
        nearest = min(range(len(cols)), key=lambda i: abs(centre - (cols[i][0] + cols[i][1]) / 2))
        return nearest + 1, 1
    return hit[0], hit[-1] - hit[0] + 1


def _build(rows: list[_Row], n_head: int, cols: list[tuple[float, float]]) -> FoundTable | None:
    cells: list[TableCell] = []
    for r, row in enumerate(rows):
        placed: dict[int, tuple[int, list[_Segment]]] = {}
        for seg in row.segments:
            col, span = _place(seg, cols)
            if col in placed:
                placed[col][1].append(seg)
            else:
                placed[col] = (span, [seg])
        for col, (span, segs) in sorted(placed.items()):
            cells.append(
                TableCell(
                    row=r,
                    col=col,
                    col_span=span,
                    text=" ".join(" ".join(s.text for s in segs).split()),
                    bbox=union(s.box for s in segs),
                    header=r < max(n_head, 1),
                )
            )
    used = sorted({c.col for c in cells})
    if len(used) < 2:
        return None
    remap = {c: i for i, c in enumerate(used)}
    for cell in cells:
        last = max(u for u in used if u <= cell.col + cell.col_span - 1)
        cell.col, cell.col_span = remap[cell.col], remap[last] - remap[cell.col] + 1
    n_cols = len(used)
    md_rows = _markdown_rows(cells, len(rows), n_cols)
    table_rows = [TableRow(t, row.box) for t, row in zip(md_rows, rows, strict=True)]
    return FoundTable(
        bbox=union(row.box for row in rows),
        cells=cells,
        rows=table_rows,
        markdown="\n".join([md_rows[0], "|" + " --- |" * n_cols, *md_rows[1:]]),
        html=to_html(cells),
    )


def find_unruled_tables(
    page: pymupdf.Page, frame: PageFrame, exclude: Sequence[Box] = ()
) -> list[FoundTable]:
    """Tables drawn without rules: runs of rows whose figures line up in columns."""
    words: list[tuple[Box, str]] = []
    for w in page.get_text("words", flags=TEXT_FLAGS):
        box = frame.box(w[:4])
        if box[2] > box[0] and box[3] > box[1] and not any(_inside(box, e) for e in exclude):
            words.append((box, str(w[4])))
    if not words:
        return []
    found: list[FoundTable] = []
    for side in _split_at_gutter(words, frame.rect.width):
        found += _tables_in(_rows_of(side))
    return found


def _split_at_gutter(words: list[tuple[Box, str]], width: float) -> list[list[tuple[Box, str]]]:
    """The words left and right of a full-height gutter in the middle of the page when both
    sides hold running text (a two-column page or a spread); otherwise all words together."""
    spans = sorted((b[0], b[2]) for b, _ in words)
    end, best = spans[0][1], (0.0, 0.0)
    for x0, x1 in spans[1:]:
        if x0 - end > best[1] - best[0] and 0.3 * width <= (x0 + end) / 2 <= 0.7 * width:
            best = (end, x0)
        end = max(end, x1)
    if best[1] - best[0] < 0.03 * width:
        return [words]
    cut = (best[0] + best[1]) / 2
    sides = [[w for w in words if w[0][2] <= cut], [w for w in words if w[0][0] >= cut]]
    for side in sides:
        prose = sum(
            1 for row in _rows_of(side) for seg in row.segments if len(seg.text.split()) >= 5
        )
        if prose < 3:
            return [words]
    return sides


def _tables_in(rows: list[_Row]) -> list[FoundTable]:
    found: list[FoundTable] = []
    for run in _runs(rows):
        cols = _columns(run)
        if not cols:
            continue
        start = rows.index(run[0])
        n_head = _headers(rows, start, cols)
        table = _build(rows[start - n_head : start] + run, n_head, cols)
        if table is not None:
            found.append(table)
    return found


def _inside(box: Box, outer: Box, pad: float = 1.0) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] - pad <= cx <= outer[2] + pad and outer[1] - pad <= cy <= outer[3] + pad
