"""Tables drawn with horizontal rules alone (the booktabs style of papers and reports): a stack
of rules of one width holds the table; its rows lie between the rules (or on the text lines of a
band where the first column labels several), its columns between the gutters of the body's words.
And tables ruled between their columns alone, whose rows PyMuPDF's finder reads as one
(`unstacked_rows`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median
from typing import Any

from ocr_engine.geometry import Box, area, intersection, union
from ocr_engine.layout.tables import (
    CellWords,
    FoundTable,
    assemble,
    cell_texts,
    cell_words,
    convert_table,
    cuts_running_text,
    plausible,
)
from ocr_engine.layout.textlayer import PageFrame, Word, WordKey, word_lines
from ocr_engine.layout.unruled_tables import NUMERIC_RE, YEAR_RE
from ocr_engine.numbering import numbers_a_name

RULE_SLACK = 2.0  # points: the rules of one table end this close to each other
MIN_RULE_WIDTH = 60.0  # points: shorter strokes underline words, they do not rule tables
MIN_FULL_RULES = 3  # a top rule, one below the header, a bottom rule
# of the page's width: narrower stacks rule the figures in a statement's columns
MIN_TABLE_WIDTH = 0.25
MAX_HEAD_WORDS = 12  # a column's heading is a few words, not a sentence
GUTTER_HEIGHTS = 0.8  # a gutter between columns is at least this many word heights wide


@dataclass(frozen=True, slots=True)
class Rule:
    """A horizontal stroke (a line or a thin filled box), in raw page coordinates."""

    y: float
    x0: float
    x1: float


def horizontal_rules(drawings: Sequence[dict[str, Any]]) -> list[Rule]:
    """The page's horizontal strokes at least `MIN_RULE_WIDTH` long, top to bottom."""
    rules: list[Rule] = []
    for path in drawings:
        for item in path.get("items", ()):
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                thin = abs(y1 - y0) <= 1.0
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                thin = abs(y1 - y0) <= 1.5
            else:
                continue
            if thin and abs(x1 - x0) >= MIN_RULE_WIDTH:
                rules.append(Rule((y0 + y1) / 2, min(x0, x1), max(x0, x1)))
    return sorted(rules, key=lambda r: (r.y, r.x0))


def _stacks(rules: list[Rule], words: Sequence[Word]) -> list[list[Rule]]:
    """Runs of at least `MIN_FULL_RULES` rules of one width with text between each two."""
    groups: list[list[Rule]] = []
    for rule in rules:
        group = next(
            (
                g
                for g in groups
                if abs(g[0].x0 - rule.x0) <= RULE_SLACK and abs(g[0].x1 - rule.x1) <= RULE_SLACK
            ),
            None,
        )
        if group is None:
            groups.append([rule])
        elif rule.y - group[-1].y > RULE_SLACK:  # a double rule counts once
            group.append(rule)
    stacks: list[list[Rule]] = []
    for group in groups:
        run: list[Rule] = [group[0]]
        for above, below in pairwise(group):
            if _words_between(words, above, below.y):
                run.append(below)
                continue
            stacks.append(run)
            run = [below]
        stacks.append(run)
    return [s for s in stacks if len(s) >= MIN_FULL_RULES]


def _words_between(words: Sequence[Word], rule: Rule, bottom: float) -> list[Word]:
    return [
        w
        for w in words
        if rule.y < _middle(w) < bottom
        and rule.x0 - RULE_SLACK <= w.raw[0]
        and w.raw[2] <= rule.x1 + RULE_SLACK
    ]


def _columns(body: list[list[Word]], x0: float, x1: float) -> list[tuple[float, float]]:
    """The x-ranges of the columns: cut at gaps that no line crosses, or one line of eight or more
    (a group's title set across the columns)."""
    heights = [w.raw[3] - w.raw[1] for line in body for w in line]
    if not heights:
        return []
    min_gap = GUTTER_HEIGHTS * median(heights)
    allowed = 1 if len(body) >= 8 else 0
    start = int(x0)
    covered = [0] * (int(x1) - start + 2)
    for line in body:
        marks: set[int] = set()
        for w in line:
            marks.update(
                range(max(0, int(w.raw[0]) - start), min(len(covered), int(w.raw[2]) - start + 1))
            )
        for i in marks:
            covered[i] += 1
    filled = [i for i, n in enumerate(covered) if n > allowed]
    if not filled:
        return []
    cuts: list[float] = []
    for left, right in pairwise(filled):
        if right - left > min_gap:
            cuts.append(start + (left + right) / 2)
    edges = [x0, *cuts, x1]
    return list(pairwise(edges))


def _middle(word: Word) -> float:
    """A word's vertical centre in raw page coordinates (the rules' own)."""
    return (word.raw[1] + word.raw[3]) / 2


@dataclass(slots=True)
class _Row:
    top: float
    bottom: float
    first_of_band: bool  # a rule (or the table's top) lies above it


def _rows(bands: list[tuple[float, float, list[Word]]], col0: tuple[float, float]) -> list[_Row]:
    """A row per band, or per text line that starts a label in the first column where the
    first column of the band labels more than one line (lines without a label continue a row)."""
    rows: list[_Row] = []
    for index, (top, bottom, words) in enumerate(bands):
        lines = word_lines(words, raw=True)
        starts = [
            i
            for i, line in enumerate(lines)
            if any(col0[0] <= (w.raw[0] + w.raw[2]) / 2 < col0[1] for w in line)
        ]
        if index == 0 or (len(starts) <= 1 and not _stacked_figures(lines)):
            rows.append(_Row(top, bottom, True))
            continue
        if len(starts) <= 1:
            starts = list(range(len(lines)))
        starts[0] = 0
        edges = [top]
        edges += [(lines[i - 1][0].raw[3] + lines[i][0].raw[1]) / 2 for i in starts[1:]]
        edges.append(bottom)
        rows += [_Row(a, b, i == 0) for i, (a, b) in enumerate(pairwise(edges))]
    return rows


def _figure(text: str) -> bool:
    """Whether a word is a figure (a year is a heading's word, "[12]" a reference's mark)."""
    if text.startswith("[") or YEAR_RE.match(text):
        return False
    return bool(NUMERIC_RE.match(text)) and any(ch.isdigit() for ch in text)


def _stacked_figures(lines: list[list[Word]]) -> bool:
    """Whether two lines or more of a band hold figures: a figure per line is a row per line."""
    return sum(1 for line in lines if any(_figure(w.text) for w in line)) >= 2


MIN_STACKED_LINES = 3  # lines every filled cell of a row holds, level, before they are rows


def unstacked_rows(rows: Sequence[Sequence[Box | None]], grid: CellWords) -> list[list[Box | None]]:
    """The rows, each cut into one row per text line where all its filled cells (two or more)
    hold the same number of lines (`MIN_STACKED_LINES` or more) on the same heights and one of
    them a figure on each line: a table ruled between its columns and not its rows, which
    PyMuPDF's finder reads as one tall row (the first row, the headings, stays whole)."""
    out: list[list[Box | None]] = []
    for row, (boxes, cells) in enumerate(zip(rows, grid, strict=True)):
        filled = [cell for cell in cells if cell]
        levels = [_line_centres(cell) for cell in filled]
        first = levels[0] if levels else []
        stacked = (
            row > 0
            and len(levels) >= 2
            and any(_figure_lines(cell) for cell in filled)
            and len(first) >= MIN_STACKED_LINES
            and all(
                len(lv) == len(first)
                and all(abs(a - b) <= 2.0 for a, b in zip(lv, first, strict=True))
                for lv in levels
            )
        )
        present = [b for b in boxes if b is not None]
        if not stacked or not present:
            out.append(list(boxes))
            continue
        cuts = [(a + b) / 2 for a, b in pairwise(first)]
        edges = [min(b[1] for b in present), *cuts, max(b[3] for b in present)]
        for top, bottom in pairwise(edges):
            out.append([None if b is None else (b[0], top, b[2], bottom) for b in boxes])
    return out


def _line_centres(cell: Sequence[Word]) -> list[float]:
    """The vertical centres of the text lines the words make, top to bottom (raw coordinates)."""
    return [
        sum((w.raw[1] + w.raw[3]) / 2 for w in line) / len(line)
        for line in word_lines(cell, raw=True)
    ]


def _figure_lines(cell: Sequence[Word]) -> bool:
    """Whether each text line of the cell holds a figure."""
    return all(any(_figure(w.text) for w in line) for line in word_lines(cell, raw=True))


def _cut(rules: list[Rule], y: float, x: float) -> bool:
    return any(
        abs(r.y - y) <= RULE_SLACK and r.x0 - RULE_SLACK <= x <= r.x1 + RULE_SLACK for r in rules
    )


def _grid(
    rows: list[_Row], cols: list[tuple[float, float]], rules: list[Rule], words: list[Word]
) -> list[list[Box | None]]:
    """Cell boxes, row by row; an empty cell below a rule that does not cross its column joins
    the cell above it (a label set once for the rows it heads) and stands as None."""

    def holds(box: Box) -> bool:
        return any(
            box[0] <= (w.raw[0] + w.raw[2]) / 2 < box[2] and box[1] <= _middle(w) < box[3]
            for w in words
        )

    grid: list[list[Box | None]] = []
    owner: list[tuple[int, int] | None] = [None] * len(cols)
    for r, row in enumerate(rows):
        cells: list[Box | None] = []
        for c, (x0, x1) in enumerate(cols):
            box = (x0, row.top, x1, row.bottom)
            above = owner[c]
            if (
                r > 1
                and row.first_of_band
                and above is not None
                and not _cut(rules, row.top, (x0 + x1) / 2)
                and not holds(box)
            ):
                b = grid[above[0]][above[1]]
                assert b is not None
                grid[above[0]][above[1]] = (b[0], b[1], b[2], row.bottom)
                cells.append(None)
                continue
            owner[c] = (r, c)
            cells.append(box)
        grid.append(cells)
    return grid


def _rows_go_on_outside(body: list[list[Word]], words: Sequence[Word], rule: Rule) -> bool:
    """Whether half the body's lines go on beyond the rules' ends, on their very line (the rules
    then span some columns of a wider table, its figures, say, and not its labels)."""
    outside = [w for w in words if w.raw[2] <= rule.x0 or w.raw[0] >= rule.x1]
    went_on = 0
    for line in body:
        if any(abs(_middle(w) - _middle(line[0])) <= 1.0 for w in outside):
            went_on += 1
    return went_on >= max(1, len(body) / 2)


def _headed(table: FoundTable) -> bool:
    """Whether the first row heads columns: two cells or more, each a few words and no figure but
    a word's number ("Rung 1", "Layer 2") (a line of code or prose between rules fills one cell
    or runs long; a statement's rules under its totals put rows of figures first)."""
    heads = [c.text.split() for c in table.cells if c.row == 0 and c.text]
    short = all(len(h) <= MAX_HEAD_WORDS for h in heads)
    figures = any(_figure(t) and not numbers_a_name(h, i) for h in heads for i, t in enumerate(h))
    return len(heads) >= 2 and short and not figures


def find_rule_tables(
    frame: PageFrame,
    words: Sequence[Word],
    drawings: Sequence[dict[str, Any]],
    taken: frozenset[WordKey] = frozenset(),
) -> list[FoundTable]:
    """Tables in stacks of horizontal rules on the page, where no word is `taken` already."""
    rules = horizontal_rules(drawings)
    page_area = frame.rect.width * frame.rect.height
    found: list[FoundTable] = []
    held = set(taken)
    # the tallest stack first: a stack inside a table's rows is part of that table
    stacks = [
        s for s in _stacks(rules, words) if s[0].x1 - s[0].x0 >= MIN_TABLE_WIDTH * frame.rect.width
    ]
    for stack in sorted(stacks, key=lambda s: s[0].y - s[-1].y):
        top, bottom = stack[0], stack[-1]
        if any(w.key in held for w in _words_between(words, top, bottom.y)):
            continue
        inner = [
            r
            for r in rules
            if top.y < r.y < bottom.y
            and r.x0 >= top.x0 - RULE_SLACK
            and r.x1 <= top.x1 + RULE_SLACK
        ]
        ys = sorted({round(r.y, 1) for r in [top, *inner, bottom]})
        edges = [ys[0]] + [b for a, b in pairwise(ys) if b - a > RULE_SLACK]
        bands = [
            (a, b, _words_between(words, Rule(a, top.x0, top.x1), b)) for a, b in pairwise(edges)
        ]
        body = [w for _, _, band in bands[1:] for w in band]
        cols = _columns(word_lines(body, raw=True), top.x0, top.x1)
        if len(cols) < 2 or _rows_go_on_outside(word_lines(body, raw=True), words, top):
            continue
        rows = _rows(bands, cols[0])
        region = [w for _, _, band in bands for w in band]
        boxes = _grid(rows, cols, [top, *inner, bottom], region)
        grid = cell_words(boxes, region)
        if cuts_running_text(grid):
            continue
        table = convert_table(boxes, cell_texts(grid), frame)
        if table is not None and plausible(table, page_area) and _headed(table):
            table = _fitted(table, grid, len(boxes), len(cols))
            table.words = frozenset(w.key for row in grid for cell in row for w in cell or ())
            held |= table.words
            found.append(table)
    return found


def _fitted(table: FoundTable, grid: CellWords, n_rows: int, n_cols: int) -> FoundTable:
    """The table with each cell's box grown to hold its words: a word wider than its column
    reaches past the gutter's middle, where the column's box ends."""
    cells = []
    for cell in table.cells:
        words = grid[cell.row][cell.col] or []
        boxes = [cell.bbox] if cell.bbox is not None else []
        grown = union([*boxes, *(w.bbox for w in words)]) if words else cell.bbox
        cells.append(cell.model_copy(update={"bbox": grown}))
    return assemble(cells, n_rows, n_cols, union([table.bbox, *(c.bbox for c in cells if c.bbox)]))


def with_unruled(rows_ruled: list[FoundTable], unruled: list[FoundTable]) -> list[FoundTable]:
    """Both kinds of tables on one page: a table ruled across its rows takes the place of the
    unruled tables that lie inside it (runs of its rows whose figures line up), and gives way to
    one that it cuts (a statement read by its figures, with rules under some rows)."""
    kept: list[FoundTable] = []
    dropped: set[int] = set()
    for table in rows_ruled:
        met = [
            i
            for i, other in enumerate(unruled)
            if (shared := intersection(table.bbox, other.bbox)) is not None and area(shared) > 0
        ]
        inside = [i for i in met if _inside(unruled[i].bbox, table.bbox)]
        if len(inside) == len(met):
            kept.append(table)
            dropped.update(inside)
    return [t for i, t in enumerate(unruled) if i not in dropped] + kept


def _inside(box: Box, outer: Box) -> bool:
    shared = intersection(box, outer)
    return shared is not None and area(shared) >= 0.9 * area(box)
