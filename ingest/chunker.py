"""Structure-aware chunking: a Document becomes Chunks along its sections and tables.

Headings open sections and their trail travels with every chunk (`section_path`, and in front of
`embed_text` after the document's name). Small neighbouring text blocks of a section are merged up
to the token bound, an oversized block is split at line boundaries, tables are their own chunks
with their caption (row batches with the header repeated when they are large), page headers and
footers are left out. A paragraph cut by a page break stays in one chunk (its lines keep their
pages), and a table continued at the top of the next page joins the table it continues (same
columns), so its rows carry that table's caption and header. A chunk's text is built from its
blocks' lines, so every `ChunkLine` span points at a line's text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ocr_engine.geometry import union
from ocr_engine.schema import Block, BlockType, Document, Page
from retrieval.schema import BBox, Chunk, ChunkLine, Region

__all__ = ["ChunkStream", "chunk_document", "document_label"]

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]

_SKIPPED = {BlockType.page_header, BlockType.page_footer, BlockType.figure}
_HEADINGS = {BlockType.title, BlockType.section_header}
_LINE_JOINED = {BlockType.table, BlockType.code, BlockType.formula}
_TABLE_SEPARATOR = re.compile(r"^\s*\|?(\s*:?-{2,}:?\s*\|)*\s*:?-{2,}:?\s*\|?\s*$")
_TRAIL_SEPARATOR = " > "
_FLOWING = {BlockType.text, BlockType.list_item}
_SENTENCE_END = (*".!?:;。！？", '."', ".”", ".)")


@dataclass(frozen=True)
class _Piece:
    """A line of a block, or a word run of an overlong line, with its place on the page."""

    text: str
    page: int
    bbox: BBox


@dataclass
class _Unit:
    """Pieces of one block that travel together into a chunk and share one region."""

    block: Block
    pieces: list[_Piece]
    tokens: int
    whole: bool = False
    part: str = ""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.block.id, self.part, self.pieces[0].page)

    @property
    def joiner(self) -> str:
        return "\n" if self.block.type in _LINE_JOINED else " "

    @property
    def region(self) -> Region:
        bbox = self.block.bbox if self.whole else union([p.bbox for p in self.pieces])
        return Region(page=self.pieces[0].page, bbox=bbox)


@dataclass
class _Builder:
    """Collects units of one chunk kind and section until the token budget is used."""

    budget: int
    units: list[_Unit] = field(default_factory=list)
    tokens: int = 0

    def fits(self, unit: _Unit) -> bool:
        return self.tokens + unit.tokens <= self.budget

    def add(self, unit: _Unit) -> None:
        self.units.append(unit)
        self.tokens += unit.tokens

    def take(self) -> list[_Unit]:
        units, self.units, self.tokens = self.units, [], 0
        return units


def _pieces(block: Block, page: int) -> list[_Piece]:
    """The block's non-empty lines; a block without lines counts as one line of its text."""
    pieces = [_Piece(ln.text.strip(), page, ln.bbox) for ln in block.lines if ln.text.strip()]
    if not pieces and block.text.strip():
        text = block.text.strip()
        if block.type == BlockType.table:
            rows = [row.strip() for row in text.splitlines() if row.strip()]
            return [_Piece(row, page, block.bbox) for row in rows]
        pieces = [_Piece(" ".join(text.split()), page, block.bbox)]
    return pieces


def _join(pieces: Sequence[_Piece], joiner: str) -> str:
    return joiner.join(piece.text for piece in pieces)


class _Chunker:
    """One pass over a document's blocks in reading order, fed a window of pages at a time.

    Everything that spans windows travels in the instance: the heading trail, the text gathered
    for the next chunk, the chunk counter. Captions pair with blocks of their own page only, so
    feeding pages in windows gives the same chunks as feeding them all at once."""

    def __init__(
        self, doc_id: str, source: str, count_tokens: TokenCounter, max_tokens: int
    ) -> None:
        self.doc_id = doc_id
        self.source = source
        self.count = count_tokens
        self.max_tokens = max_tokens
        self.chunks: list[Chunk] = []
        self.emitted = 0
        self.trail: list[tuple[int, str]] = []
        self._trail_cache: dict[tuple[str, ...], tuple[str, int]] = {}
        self.label = source_label(source)
        self.builder = _Builder(self._budget())
        self.pending: _Table | None = None  # the last table seen, held until what follows is known

    def feed(self, pages: Sequence[Page]) -> list[Chunk]:
        """Chunks completed by these pages (text at the end may wait for the next window)."""
        blocks = [
            (page.number, block)
            for page in pages
            for block in page.blocks
            if block.type not in _SKIPPED
        ]
        table_captions, figure_captions = _assign_captions(blocks)
        used = set(table_captions.values())
        builder = self.builder
        for index, (page, block) in enumerate(blocks):
            if index in used:
                continue
            if block.type == BlockType.table:
                self._flush(builder, "text")
                caption = table_captions.get(index)
                table = _Table(page, block, blocks[caption] if caption is not None else None)
                first_on_page = index == 0 or blocks[index - 1][0] != page
                if first_on_page and self.pending and self.pending.continued_by(table):
                    self.pending.parts.append((page, block))
                else:
                    self._emit_pending()
                    self.pending = table
                continue
            self._emit_pending()  # anything but a table ends the table before it
            if block.type in _HEADINGS and self._is_heading(block):
                self._flush(builder, "text")
                self._open_section(block)
                builder.budget = self._budget()
            elif block.type == BlockType.caption and index in figure_captions:
                self._flush(builder, "text")
                self._pack("figure_caption", self._units(page, block, builder.budget))
            else:
                for unit in self._units(page, block, builder.budget):
                    if not builder.fits(unit):
                        carried = self._carry(builder, unit)
                        self._flush(builder, "text")
                        for kept in carried:
                            builder.add(kept)
                    builder.add(unit)
        return self._take()

    def finish(self) -> list[Chunk]:
        """The chunks still open after the last page."""
        self._emit_pending()
        self._flush(self.builder, "text")
        return self._take()

    def _carry(self, builder: _Builder, unit: _Unit) -> list[_Unit]:
        """The trailing units of the paragraph `unit` continues across a page break, taken out of
        `builder` so that they open the next chunk with it (when they fit there together)."""
        if not builder.units or not _continues(builder.units[-1], unit):
            return []
        block_id = builder.units[-1].block.id
        n = 0
        while n < len(builder.units) and builder.units[-1 - n].block.id == block_id:
            n += 1
        carried = builder.units[-n:]
        if n == len(builder.units) or sum(u.tokens for u in carried) + unit.tokens > builder.budget:
            return []
        del builder.units[-n:]
        builder.tokens -= sum(u.tokens for u in carried)
        return carried

    def _take(self) -> list[Chunk]:
        done, self.chunks = self.chunks, []
        return done

    # sections -----------------------------------------------------------------------------------

    def _is_heading(self, block: Block) -> bool:
        """A heading that is really a paragraph (too long for a trail) is treated as text."""
        return self.count(_heading_text(block)) <= self.max_tokens // 4

    def _open_section(self, block: Block) -> None:
        level = 0 if block.type == BlockType.title else (block.level or 1)
        while self.trail and self.trail[-1][0] >= level:
            self.trail.pop()
        text = _heading_text(block)
        if text:
            self.trail.append((level, text))

    def _trail_text(self) -> tuple[str, int]:
        """Document name and heading trail as embedded (outer headings dropped past a quarter of
        the bound)."""
        path = tuple(text for _, text in self.trail)
        if path not in self._trail_cache:
            parts = list(path)
            text = _TRAIL_SEPARATOR.join([self.label, *parts])
            while parts and self.count(text) > self.max_tokens // 4:
                parts.pop(0)
                text = _TRAIL_SEPARATOR.join([self.label, *parts])
            words = text.split()
            while words and self.count(" ".join(words)) > self.max_tokens // 4:
                words = words[: len(words) // 2]
            text = " ".join(words)
            self._trail_cache[path] = (text, self.count(text) if text else 0)
        return self._trail_cache[path]

    def _budget(self) -> int:
        return max(1, self.max_tokens - self._trail_text()[1])

    # units --------------------------------------------------------------------------------------

    def _units(self, page: int, block: Block, budget: int) -> list[_Unit]:
        """The block as one unit when it fits the budget, else one unit per line (or word run)."""
        pieces = _pieces(block, page)
        if not pieces:
            return []
        tokens = self.count(_join(pieces, "\n" if block.type in _LINE_JOINED else " "))
        if tokens <= budget:
            return [_Unit(block, pieces, tokens, whole=True)]
        return [
            _Unit(block, [part], part_tokens)
            for piece in pieces
            for part, part_tokens in self._split_piece(piece, budget)
        ]

    def _split_piece(self, piece: _Piece, budget: int) -> Iterator[tuple[_Piece, int]]:
        """A line as is when it fits, else runs of words that fit (each keeps the line's box)."""
        tokens = self.count(piece.text)
        if tokens <= budget:
            yield piece, tokens
            return
        words: list[str] = []
        used = 0
        for word in piece.text.split():
            n = self.count(word)
            if words and used + n > budget:
                yield _Piece(" ".join(words), piece.page, piece.bbox), used
                words, used = [], 0
            words.append(word)
            used += n
        if words:
            yield _Piece(" ".join(words), piece.page, piece.bbox), used

    # tables -------------------------------------------------------------------------------------

    def _emit_pending(self) -> None:
        table, self.pending = self.pending, None
        if table is not None:
            self._table(table)

    def _table(self, table: _Table) -> None:
        budget = self._budget()
        page, block = table.parts[0]
        caption = table.caption
        pieces = _pieces(block, page)
        more = [(b, _continuation_pieces(block, pieces, b, p)) for p, b in table.parts[1:]]
        parts = [(block, pieces), *((b, ps) for b, ps in more if ps)]
        if not any(ps for _, ps in parts):
            return
        caption_units = self._units(caption[0], caption[1], budget) if caption else []
        units = [_Unit(b, ps, self.count(_join(ps, "\n")), whole=True) for b, ps in parts if ps]
        tokens = self.count("\n".join(_join(ps, "\n") for _, ps in parts))
        caption_tokens = sum(unit.tokens for unit in caption_units)
        if caption_tokens + tokens <= budget:
            self._emit("table", [*caption_units, *units])
            return
        n_header = _header_lines(block, pieces)
        header_pieces = pieces[:n_header]
        rows = [(block, row) for row in pieces[n_header:]]
        rows += [(b, row) for b, ps in parts[1:] for row in ps]
        prefix = list(caption_units)
        if header_pieces:
            header_tokens = self.count(_join(header_pieces, "\n"))
            prefix.append(_Unit(block, header_pieces, header_tokens, part="header"))
        if sum(unit.tokens for unit in prefix) > budget // 2:
            self._pack("table_caption", caption_units)  # too long to repeat: a chunk of its own
            prefix = [u for u in prefix[len(caption_units) :] if u.tokens <= budget // 2]
        room = budget - sum(unit.tokens for unit in prefix)
        batch = _Builder(room)
        for row_block, row in rows:
            for part, part_tokens in self._split_piece(row, room):
                unit = _Unit(row_block, [part], part_tokens, part="rows")
                if not batch.fits(unit):
                    self._emit("table_rows", [*prefix, *batch.take()])
                batch.add(unit)
        if batch.units:
            self._emit("table_rows", [*prefix, *batch.take()])

    # chunks -------------------------------------------------------------------------------------

    def _pack(self, kind: str, units: Sequence[_Unit]) -> None:
        """Emit `units` as few chunks of `kind` as the budget allows."""
        builder = _Builder(self._budget())
        for unit in units:
            if not builder.fits(unit):
                self._flush(builder, kind)
            builder.add(unit)
        self._flush(builder, kind)

    def _flush(self, builder: _Builder, kind: str) -> None:
        if builder.units:
            self._emit(kind, builder.take())

    def _emit(self, kind: str, units: list[_Unit]) -> None:
        if not units:
            return
        text = ""
        lines: list[ChunkLine] = []
        previous: _Unit | None = None
        for unit in units:
            for i, piece in enumerate(unit.pieces):
                sep = unit.joiner if i else _separator(previous, unit) if text else ""
                if sep == " " and text.endswith("-") and text[-2:-1].isalpha():
                    sep = ""  # a word hyphenated across lines
                text += sep
                start = len(text)
                text += piece.text
                lines.append(
                    ChunkLine(page=piece.page, bbox=piece.bbox, start=start, end=len(text))
                )
            previous = unit
        trail_text, _ = self._trail_text()
        chunk = Chunk(
            chunk_id=f"c{self.emitted:04d}",
            doc_id=self.doc_id,
            source=self.source,
            section_path=[heading for _, heading in self.trail],
            kind=kind,
            text=text,
            embed_text=_embed_text(trail_text, text, kind),
            regions=_regions(units),
            lines=lines,
        )
        self.chunks.append(chunk)
        self.emitted += 1


@dataclass
class _Table:
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

    def continued_by(self, other: _Table) -> bool:
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


def _continuation_pieces(
    first: Block, first_pieces: list[_Piece], block: Block, page: int
) -> list[_Piece]:
    """The lines of a continuing table block without a repeat of the first block's header."""
    pieces = _pieces(block, page)
    n_header = _header_lines(first, first_pieces)
    header = [p.text for p in first_pieces[:n_header]]
    if header and [p.text for p in pieces[:n_header]] == header:
        return pieces[n_header:]
    return [p for p in pieces if not _TABLE_SEPARATOR.match(p.text)] if header else pieces


def _continues(previous: _Unit, unit: _Unit) -> bool:
    """`unit` opens a page with the rest of the paragraph `previous` left unfinished."""
    if previous.block.type not in _FLOWING or unit.block.type not in _FLOWING:
        return False
    if unit.pieces[0].page != previous.pieces[-1].page + 1:
        return False
    before = previous.pieces[-1].text.rstrip()
    after = unit.pieces[0].text.lstrip()
    return bool(before and after) and not before.endswith(_SENTENCE_END) and after[0].islower()


def document_label(doc: Document) -> str:
    """How a document is named in embedded text: its file name without extension or separators."""
    return source_label(doc.source)


def source_label(source: str) -> str:
    stem = source.rsplit(".", 1)[0] if "." in source else source
    return " ".join(stem.replace("_", " ").replace("-", " ").split())


def _embed_text(trail: str, text: str, kind: str) -> str:
    body = _compact_table(text) if kind in ("table", "table_rows") else text
    return f"{trail}\n\n{body}" if trail else body


def _compact_table(markdown: str) -> str:
    """Table rows without pipes, separator rows or empty cells, so tokens go to the content."""
    rows = []
    for line in markdown.splitlines():
        if _TABLE_SEPARATOR.match(line):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        rows.append(" ".join(cell for cell in cells if cell))
    return "\n".join(row for row in rows if row)


def _separator(previous: _Unit | None, unit: _Unit) -> str:
    """What goes between two units: the block's joiner inside a block, else a paragraph break."""
    if previous is None:
        return ""
    if previous.block.id == unit.block.id:
        return unit.joiner
    if previous.block.type == unit.block.type == BlockType.table:
        return "\n"  # a table continued on the next page
    if _continues(previous, unit):
        return " "  # a paragraph continued on the next page
    same_kind = previous.block.type == unit.block.type == BlockType.list_item
    into_table = previous.block.type == BlockType.caption and unit.block.type == BlockType.table
    return "\n" if same_kind or into_table else "\n\n"


def _regions(units: Sequence[_Unit]) -> list[Region]:
    """One region per contributing block, or per contiguous group of its lines when split."""
    regions: list[Region] = []
    previous: _Unit | None = None
    for unit in units:
        if previous is not None and previous.key == unit.key and not unit.whole:
            last = regions[-1]
            regions[-1] = Region(page=last.page, bbox=union([last.bbox, unit.region.bbox]))
        else:
            regions.append(unit.region)
        previous = unit
    return regions


def _heading_text(block: Block) -> str:
    text = " ".join(ln.text.strip() for ln in block.lines) or block.text
    return " ".join(text.lstrip("#").replace("**", "").split())


def _header_lines(block: Block, pieces: Sequence[_Piece]) -> int:
    """How many leading lines form the table header (header rows plus a markdown separator row)."""
    header_rows = max((c.row + c.row_span for c in block.cells if c.header), default=1)
    n = rows = 0
    while n < len(pieces):
        separator = bool(_TABLE_SEPARATOR.match(pieces[n].text))
        if not separator and rows >= header_rows:
            return n
        rows += not separator
        n += 1
    return 0  # every line looks like header: repeat nothing


def _assign_captions(blocks: Sequence[tuple[int, Block]]) -> tuple[dict[int, int], set[int]]:
    """Caption index for each table (the adjacent caption on its page, nearest first) and the
    indexes of captions that belong to a figure."""
    tables: dict[int, int] = {}
    used: set[int] = set()
    for index, (page, block) in enumerate(blocks):
        if block.type != BlockType.table:
            continue
        candidates = []
        for neighbour in (index - 1, index + 1):
            if 0 <= neighbour < len(blocks) and neighbour not in used:
                n_page, n_block = blocks[neighbour]
                if n_page == page and _is_caption_for(n_block, "table"):
                    candidates.append((_gap(block.bbox, n_block.bbox), neighbour))
        if candidates:
            tables[index] = min(candidates)[1]
            used.add(tables[index])
    figures = {
        index
        for index, (_, block) in enumerate(blocks)
        if index not in used and _is_caption_for(block, "figure")
    }
    return tables, figures


def _is_caption_for(block: Block, kind: str) -> bool:
    if block.type != BlockType.caption:
        return False
    head = block.text.lstrip("*_# ").lower()
    if kind == "table":
        return not head.startswith(("fig", "image", "chart"))
    return not head.startswith(("table", "tab."))


def _gap(a: BBox, b: BBox) -> float:
    return max(0.0, max(a[1], b[1]) - min(a[3], b[3]))


def chunk_document(
    doc: Document, *, count_tokens: Callable[[str], int], max_tokens: int = 256
) -> list[Chunk]:
    """Chunks of `doc` in document order, ids c0000, c0001, …; each `embed_text` fits the bound."""
    if max_tokens < 16:
        raise ValueError("max_tokens must be at least 16")
    chunker = _Chunker(doc.doc_id, doc.source, count_tokens, max_tokens)
    chunks = chunker.feed(doc.pages) + chunker.finish()
    logger.debug("%s: %d chunks from %d pages", doc.source, len(chunks), len(doc.pages))
    return chunks


class ChunkStream:
    """Chunks of one document from windows of its pages, the same as `chunk_document` gives."""

    def __init__(
        self, doc_id: str, source: str, *, count_tokens: TokenCounter, max_tokens: int = 256
    ) -> None:
        if max_tokens < 16:
            raise ValueError("max_tokens must be at least 16")
        self._chunker = _Chunker(doc_id, source, count_tokens, max_tokens)

    @property
    def emitted(self) -> int:
        """Chunks handed out so far."""
        return self._chunker.emitted

    def feed(self, pages: Sequence[Page]) -> list[Chunk]:
        return self._chunker.feed(pages)

    def finish(self) -> list[Chunk]:
        return self._chunker.finish()
