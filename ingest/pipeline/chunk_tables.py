"""The parts chunks are built of (lines of blocks, units that share a region, a token-bounded
builder) and the table pieces of chunking: continued tables, header rows, captions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_engine.geometry import union
from ocr_engine.schema import Block, BlockType
from retrieval.schema import BBox, Region
from retrieval.table_rows import dates_columns, is_period_row

__all__ = [
    "LINE_JOINED",
    "TABLE_SEPARATOR",
    "Builder",
    "Piece",
    "Table",
    "Unit",
    "assign_captions",
    "block_pieces",
    "compact_table",
    "continuation_pieces",
    "header_lines",
    "join_pieces",
]

_MAX_DATE_ROWS = 2
LINE_JOINED = {BlockType.table, BlockType.code, BlockType.formula, BlockType.figure}
TABLE_SEPARATOR = re.compile(r"^\s*\|?(\s*:?-{2,}:?\s*\|)*\s*:?-{2,}:?\s*\|?\s*$")


@dataclass(frozen=True)
class Piece:
    """A line of a block, or a word run of an overlong line, with its place on the page."""

    text: str
    page: int
    bbox: BBox


@dataclass
class Unit:
    """Pieces of one block that travel together into a chunk and share one region."""

    block: Block
    pieces: list[Piece]
    tokens: int
    whole: bool = False
    part: str = ""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.block.id, self.part, self.pieces[0].page)

    @property
    def joiner(self) -> str:
        return "\n" if self.block.type in LINE_JOINED else " "

    @property
    def region(self) -> Region:
        bbox = self.block.bbox if self.whole else union([p.bbox for p in self.pieces])
        return Region(page=self.pieces[0].page, bbox=bbox)


@dataclass
class Builder:
    """Collects units of one chunk kind and section until the token budget is used."""

    budget: int
    units: list[Unit] = field(default_factory=list)
    tokens: int = 0

    def fits(self, unit: Unit) -> bool:
        return self.tokens + unit.tokens <= self.budget

    def add(self, unit: Unit) -> None:
        self.units.append(unit)
        self.tokens += unit.tokens

    def take(self) -> list[Unit]:
        units, self.units, self.tokens = self.units, [], 0
        return units


def block_pieces(block: Block, page: int) -> list[Piece]:
    """The block's non-empty lines; a block without lines counts as one line of its text."""
    pieces = [Piece(ln.text.strip(), page, ln.bbox) for ln in block.lines if ln.text.strip()]
    if not pieces and block.text.strip():
        text = block.text.strip()
        if block.type == BlockType.table:
            rows = [row.strip() for row in text.splitlines() if row.strip()]
            return [Piece(row, page, block.bbox) for row in rows]
        pieces = [Piece(" ".join(text.split()), page, block.bbox)]
    return pieces


def join_pieces(pieces: Sequence[Piece], joiner: str) -> str:
    return joiner.join(piece.text for piece in pieces)


@dataclass
class Table:
    """A table and its caption, with the blocks that continue it on the following pages."""

    page: int
    block: Block
    caption: tuple[int, Block] | None
    parts: list[tuple[int, Block]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.parts:
            self.parts.append((self.page, self.block))

    @property
    def last_page(self) -> int:
        return self.parts[-1][0]

    def continued_by(self, other: Table) -> bool:
        """`other` opens the next page, has no caption of its own and the same columns."""
        return (
            other.page == self.last_page + 1
            and other.caption is None
            and _columns(other.block) == _columns(self.block) > 1
        )


def _columns(block: Block) -> int:
    """Columns of a table: from its cells, else from the pipes of its first markdown row."""
    if block.cells:
        return max(c.col + c.col_span for c in block.cells)
    first = next((ln for ln in block.text.splitlines() if ln.strip()), "")
    return max(0, first.strip().strip("|").count("|") + 1) if "|" in first else 0


def continuation_pieces(
    first: Block, first_pieces: list[Piece], block: Block, page: int
) -> list[Piece]:
    """The lines of a continuing table block without a repeat of the first block's header."""
    pieces = block_pieces(block, page)
    n_header = header_lines(first, first_pieces)
    header = [p.text for p in first_pieces[:n_header]]
    if header and [p.text for p in pieces[:n_header]] == header:
        return pieces[n_header:]
    return [p for p in pieces if not TABLE_SEPARATOR.match(p.text)] if header else pieces


def header_lines(block: Block, pieces: Sequence[Piece]) -> int:
    """How many leading lines form the table header (header rows plus a markdown separator row),
    less the rows closing it that hold only a year ("2017" over that year's rows dates them,
    and is not repeated over the rows of 2016), and with the rows just under it that give the
    columns their years or dates only (the table finder takes "Three Months Ended December 31,"
    for the header and "2022 | 2021" for a row)."""
    header_rows = max((c.row + c.row_span for c in block.cells if c.header), default=1)
    n = rows = 0
    while n < len(pieces):
        separator = bool(TABLE_SEPARATOR.match(pieces[n].text))
        if not separator and rows >= header_rows:
            break
        rows += not separator
        n += 1
    else:
        return 0  # every line looks like header: repeat nothing
    while n > 1 and is_period_row(pieces[n - 1].text):
        n -= 1
    extra = 0  # "| | 2022 | 2021 |" under "Three Months Ended December 31,": the columns' years
    while n < len(pieces) - 1 and extra < _MAX_DATE_ROWS and dates_columns(pieces[n].text):
        n += 1
        extra += 1
    return n


def compact_table(markdown: str) -> str:
    """Table rows without pipes, separator rows or empty cells, so tokens go to the content."""
    rows = []
    for line in markdown.splitlines():
        if TABLE_SEPARATOR.match(line):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        rows.append(" ".join(cell for cell in cells if cell))
    return "\n".join(row for row in rows if row)


def assign_captions(
    blocks: Sequence[tuple[int, Block]],
) -> tuple[dict[int, int], dict[int, int], set[int]]:
    """Caption index for each table and each figure (the adjacent caption of its kind on its
    page, nearest first; tables choose first), and the indexes of the other figure captions."""
    tables = _adjacent_captions(blocks, BlockType.table, "table", set())
    used = set(tables.values())
    figures = _adjacent_captions(blocks, BlockType.figure, "figure", used)
    used |= set(figures.values())
    others = {
        index
        for index, (_, block) in enumerate(blocks)
        if index not in used and _is_caption_for(block, "figure")
    }
    return tables, figures, others


def _adjacent_captions(
    blocks: Sequence[tuple[int, Block]], block_type: BlockType, kind: str, used: set[int]
) -> dict[int, int]:
    captions: dict[int, int] = {}
    taken = set(used)
    for index, (page, block) in enumerate(blocks):
        if block.type != block_type:
            continue
        candidates = []
        for neighbour in (index - 1, index + 1):
            if 0 <= neighbour < len(blocks) and neighbour not in taken:
                n_page, n_block = blocks[neighbour]
                if n_page == page and _is_caption_for(n_block, kind):
                    candidates.append((_gap(block.bbox, n_block.bbox), neighbour))
        if candidates:
            captions[index] = min(candidates)[1]
            taken.add(captions[index])
    return captions


def _is_caption_for(block: Block, kind: str) -> bool:
    if block.type != BlockType.caption:
        return False
    head = block.text.lstrip("*_# ").lower()
    if kind == "table":
        return not head.startswith(("fig", "image", "chart"))
    return not head.startswith(("table", "tab."))


def _gap(a: BBox, b: BBox) -> float:
    return max(0.0, max(a[1], b[1]) - min(a[3], b[3]))
