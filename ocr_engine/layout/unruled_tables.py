"""Tables drawn without rules: rows of words cut into segments at wide gaps, runs of rows whose
figures line up in columns (gated on a count of numbers on the page)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from ocr_engine.geometry import Box, centre_inside, union
from ocr_engine.layout.tables import FoundTable, assemble
from ocr_engine.layout.textlayer import PageFrame, Word, WordKey, word_lines
from ocr_engine.schema import TableCell

__all__ = [
    "MIN_NUMERIC_TOKENS",
    "NUMERIC_RE",
    "YEAR_RE",
    "Segment",
    "VisualRow",
    "find_unruled_tables",
    "heads_columns",
    "notes_only",
    "numeric_tokens",
    "over_labels",
    "tabular_share",
    "visual_rows",
]

NUMERIC_RE = re.compile(
    r"^(?:[(\[]?[-–—+]?[$€£¥]?\(?\d[\d,.]*%?\)?[)\]]?%?\*?|[—–-]{1,3}|n/?a|nm|[ivxlc]{1,6})$",
    re.IGNORECASE,
)
# a cell holding one check-box or tick glyph is a value, like a figure (forms, feature matrices)
CHECK_RE = re.compile(r"^[*✓✔✗✘☐☑☒□■▢❑❒○●◯]$")
_CURRENCY = {"$", "€", "£", "¥", "US$"}
YEAR_RE = re.compile(r"^(?:FY\s?|fiscal\s)?(?:19|20)\d{2}$", re.IGNORECASE)
_LEADER_RE = re.compile(r"^[.·…_]+$")
MIN_NUMERIC_TOKENS = 10  # numeric tokens a page needs before its words are aligned
MIN_TABLE_ROWS = 3  # rows with a label and a number (or several numbers) a table needs


@dataclass(slots=True)
class Segment:
    """Words of one row that sit close together: one cell's worth of text."""

    text: str
    box: Box
    keys: tuple[WordKey, ...] = ()

    @property
    def numeric(self) -> bool:
        text = self.text.replace(" ", "")
        return bool(NUMERIC_RE.match(text) or CHECK_RE.match(text))


@dataclass(slots=True)
class VisualRow:
    box: Box
    segments: list[Segment]
    tabular: bool = False


def numeric_tokens(texts: Iterable[str]) -> int:
    """How many whitespace-separated tokens of the texts look like figures (or check boxes)."""
    return sum(
        1
        for text in texts
        for token in text.split()
        if (any(c.isdigit() for c in token) and NUMERIC_RE.match(token)) or CHECK_RE.match(token)
    )


def visual_rows(words: list[Word]) -> list[VisualRow]:
    """Words grouped into visual rows (by vertical centre), each cut into segments at wide gaps."""
    return [VisualRow(union(w.bbox for w in row), _segments(row)) for row in word_lines(words)]


def _segments(row: list[Word]) -> list[Segment]:
    """A row's words cut at wide gaps; dot leaders (tables of contents) separate cells and go
    with the segment after them."""
    row = sorted(row, key=lambda w: w.bbox[0])
    height = sorted(w.bbox[3] - w.bbox[1] for w in row)[len(row) // 2]
    groups: list[list[Word]] = []
    extra: list[list[WordKey]] = []  # the leaders before each group
    leaders: list[WordKey] = []
    prev: Box | None = None
    for word in row:
        if _LEADER_RE.match(word.text):
            leaders.append(word.key)
            continue
        box = word.bbox
        if groups and prev is not None and not leaders and box[0] - prev[2] <= 0.8 * height:
            groups[-1].append(word)
        else:
            groups.append([word])
            extra.append([])
        extra[-1] += leaders
        leaders = []
        prev = box
    if leaders and extra:
        extra[-1] += leaders
    segments = [
        Segment(" ".join(w.text for w in g), union(w.bbox for w in g), (*(w.key for w in g), *x))
        for g, x in zip(groups, extra, strict=True)
    ]
    merged: list[Segment] = []
    for seg in segments:  # "$ 1,234" where the currency sign stands apart; "12 %"
        if merged and (merged[-1].text in _CURRENCY or seg.text in (")", "%")):
            last = merged[-1]
            merged[-1] = Segment(
                f"{last.text} {seg.text}", union((last.box, seg.box)), last.keys + seg.keys
            )
        else:
            merged.append(seg)
    return merged


def tabular_share(words: list[Word]) -> float:
    """The share of the words' visual rows that lie in runs of rows whose figures line up."""
    rows = visual_rows(words)
    return sum(len(run) for run in _runs(rows)) / len(rows) if rows else 0.0


def _is_tabular(row: VisualRow) -> bool:
    """Two or more cells with a figure after the first, and no running text after a figure."""
    segs = row.segments
    if len(segs) < 2 or not any(s.numeric for s in segs[1:]):
        return False
    first_number = next(i for i, s in enumerate(segs) if s.numeric)
    return not any(len(s.text.split()) >= 5 for s in segs[first_number + 1 :])


def _runs(rows: list[VisualRow]) -> list[list[VisualRow]]:
    """Maximal runs of tabular rows, with label-only rows between them, close together."""
    runs: list[list[VisualRow]] = []
    current: list[VisualRow] = []
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


def _columns(run: list[VisualRow]) -> list[tuple[float, float]]:
    """x-intervals of the figure columns: overlapping numeric segments merged."""
    return _bands(s.box for r in run if r.tabular for s in r.segments[1:] if s.numeric)


def _bands(boxes: Iterable[Box]) -> list[tuple[float, float]]:
    """The x-intervals the boxes cover, overlapping ones merged, left to right."""
    bands: list[tuple[float, float]] = []
    for x0, x1 in sorted((box[0], box[2]) for box in boxes):
        if bands and x0 <= bands[-1][1]:
            bands[-1] = (bands[-1][0], max(bands[-1][1], x1))
        else:
            bands.append((x0, x1))
    return bands


def heads_columns(
    row: VisualRow, cols: list[tuple[float, float]], labels_from: float, least: int = 1
) -> bool:
    """Whether a row heads the figure columns `cols`: every segment centred over them, at least
    `least` of them, and no running text; or a stub heading over the labels (left of the
    columns, starting where the labels do: by `labels_from`, the latest start of a label; not
    a line going on a sentence, in lower case, of a text column beside the table) and two such
    segments at least ("Years ended December 31, | 2022 | 2021")."""
    left, right = cols[0][0] - 0.5 * (cols[0][1] - cols[0][0]) - 12.0, cols[-1][1] + 12.0
    segments = row.segments
    if not segments:  # a row of dot leaders alone
        return False
    stub = segments[0]
    if len(segments) > 1 and over_labels(stub, cols, labels_from) and not stub.text[:1].islower():
        segments = segments[1:]
        least = max(least, 2)
    return (
        len(segments) >= least
        and all(left <= (s.box[0] + s.box[2]) / 2 <= right for s in segments)
        and not any(len(s.text.split()) >= 8 for s in segments)
    )


def over_labels(segment: Segment, cols: list[tuple[float, float]], labels_from: float) -> bool:
    """Whether a segment stands over a table's labels: left of its figure columns `cols`,
    starting where the labels do (by `labels_from`, the latest start of a label)."""
    return segment.box[2] < cols[0][0] - 2.0 and segment.box[0] <= labels_from + 2.0


def notes_only(row: VisualRow, cols: list[tuple[float, float]], labels_from: float) -> bool:
    """Whether a row holds only bracketed notes over the columns ("(In millions)", a statement's
    unit under its headings), after a label over the labels ("Inventories:")."""
    first = row.segments[:1]
    stub = bool(first) and first[0].box[2] < cols[0][0] - 2.0 and first[0].box[0] <= labels_from
    notes = [s.text for s in row.segments[1 if stub else 0 :] if s.box[2] >= cols[0][0] - 2.0]
    return len(notes) == len(row.segments) - stub > 0 and all(
        t[:1] + t[-1:] == "()" and not any(c.isdigit() for c in t) for t in notes
    )


def _headers(rows: list[VisualRow], run: list[VisualRow], cols: list[tuple[float, float]]) -> int:
    """How many rows just above the run belong to it: column headers (`heads_columns`), and
    label rows between them and the first figures."""
    start = rows.index(run[0])
    starts = [s.box[0] for r in run for s in r.segments if _place(s, cols) == (0, 1)]
    labels_from = max(starts, default=float("-inf"))
    count = taken = 0
    below = rows[start]
    for row in reversed(rows[max(0, start - 5) : start]):
        height = max(below.box[3] - below.box[1], 1.0)
        if below.box[1] - row.box[3] > 1.2 * height:
            break
        if heads_columns(row, cols, labels_from):
            count += 1
            taken = count
        elif count < 2 and (
            (len(row.segments) == 1 and row.box[2] < cols[0][0] - 2.0)
            or notes_only(row, cols, labels_from + 2.0)
        ):
            count += 1
        else:
            break
        below = row
    return taken


def _place(seg: Segment, cols: list[tuple[float, float]]) -> tuple[int, int]:
    """(first column, span) of a segment among label column 0 and the figure columns 1..n."""
    centre = (seg.box[0] + seg.box[2]) / 2
    if centre < cols[0][0] and seg.box[2] <= cols[0][0] + 2.0:
        return 0, 1
    hit = [i + 1 for i, (x0, x1) in enumerate(cols) if seg.box[0] < x1 and seg.box[2] > x0]
    if not hit:
        nearest = min(range(len(cols)), key=lambda i: abs(centre - (cols[i][0] + cols[i][1]) / 2))
        return nearest + 1, 1
    return hit[0], hit[-1] - hit[0] + 1


def _build(
    rows: list[VisualRow], n_head: int, cols: list[tuple[float, float]]
) -> FoundTable | None:
    cells: list[TableCell] = []
    for r, row in enumerate(rows):
        placed: dict[int, tuple[int, list[Segment]]] = {}
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
    words = frozenset(key for row in rows for seg in row.segments for key in seg.keys)
    return assemble(cells, len(rows), len(used), union(row.box for row in rows), words)


def find_unruled_tables(
    frame: PageFrame, words: Sequence[Word], exclude: Sequence[Box] = ()
) -> list[FoundTable]:
    """Tables drawn without rules: runs of rows whose figures line up in columns."""
    words = [
        w
        for w in words
        if w.bbox[2] > w.bbox[0]
        and w.bbox[3] > w.bbox[1]
        and not any(centre_inside(w.bbox, e) for e in exclude)
    ]
    if not words:
        return []
    found: list[FoundTable] = []
    for side in _split_at_gutter(words, frame.rect.width):
        found += _tables_in(visual_rows(side))
    return found


def _split_at_gutter(words: list[Word], width: float) -> list[list[Word]]:
    """The words left and right of a full-height gutter in the middle of the page when both
    sides hold running text (a two-column page or a spread); otherwise all words together."""
    spans = sorted((w.bbox[0], w.bbox[2]) for w in words)
    end, best = spans[0][1], (0.0, 0.0)
    for x0, x1 in spans[1:]:
        if x0 - end > best[1] - best[0] and 0.3 * width <= (x0 + end) / 2 <= 0.7 * width:
            best = (end, x0)
        end = max(end, x1)
    if best[1] - best[0] < 0.03 * width:
        return [words]
    cut = (best[0] + best[1]) / 2
    sides = [[w for w in words if w.bbox[2] <= cut], [w for w in words if w.bbox[0] >= cut]]
    for side in sides:
        prose = sum(
            1 for row in visual_rows(side) for seg in row.segments if len(seg.text.split()) >= 5
        )
        if prose < 3:
            return [words]
    return sides


def _tables_in(rows: list[VisualRow]) -> list[FoundTable]:
    found: list[FoundTable] = []
    taken = 0  # rows before this belong to the table above: never a header of the next
    for run in _runs(rows):
        cols = _columns(run)
        if not cols:
            continue
        start = rows.index(run[0])
        n_head = min(_headers(rows, run, cols), start - taken)
        kept, n_head = _without_text_beside(rows[start - n_head : start] + run, n_head, cols)
        while n_head < len(kept) - MIN_TABLE_ROWS and _years_only(kept[n_head], cols):
            n_head += 1
        table = _build(kept, n_head, cols)
        if table is not None:
            found.append(table)
            taken = start + len(run)
    return found


def _years_only(row: VisualRow, cols: list[tuple[float, float]]) -> bool:
    """Whether a row holds nothing but years over the figure columns ("2022 2021 2020"): the
    last row of the headings, though its numbers line up with the figures."""
    return bool(row.segments) and all(
        _place(s, cols) != (0, 1) and YEAR_RE.match(s.text) for s in row.segments
    )


def _without_text_beside(
    rows: list[VisualRow], n_head: int, cols: list[tuple[float, float]]
) -> tuple[list[VisualRow], int]:
    """The rows without a column of running text that stands left of the labels, apart from
    them (a paragraph beside a chart whose labels and figures line up, as in Pew's reports):
    its lines, read into the label cells otherwise, stay text. It is running text, not a table's
    first text column, when three of its lines hold four words or more, two rows hold nothing
    else, and half of its lines (three at least) begin in lower case, going on a sentence; with
    the number of header rows left."""
    labels = [
        (i, s) for i, row in enumerate(rows) for s in row.segments if _place(s, cols) == (0, 1)
    ]
    bands = _bands(s.box for _, s in labels)
    if len(bands) < 2:
        return rows, n_head
    left_end, right_start = max(pairwise(bands), key=lambda p: p[1][0] - p[0][1])
    cut = (left_end[1] + right_start[0]) / 2
    beside = [(i, s) for i, s in labels if s.box[2] <= cut]
    alone = {i for i, _ in beside if all(s.box[2] <= cut for s in rows[i].segments)}
    wrapped = sum(s.text[:1].islower() for _, s in beside)  # a line that goes on a sentence
    if sum(len(s.text.split()) >= 4 for _, s in beside) < 3 or len(alone) < 2:
        return rows, n_head
    if wrapped < 3 or wrapped < 0.5 * len(beside):  # labels: a second text column of a table
        return rows, n_head
    dropped = {id(s) for _, s in beside}
    kept: list[VisualRow] = []
    heads = 0
    for i, row in enumerate(rows):
        segments = [s for s in row.segments if id(s) not in dropped]
        if segments:
            kept.append(VisualRow(union(s.box for s in segments), segments, row.tabular))
            heads += i < n_head
    return kept, heads
