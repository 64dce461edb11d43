"""Structure-aware chunking: a Document becomes Chunks along its sections, tables and figures.

Headings open sections and their trail travels with every chunk (`section_path`, and in front of
`embed_text` after the document's name and what its card says it is). Small neighbouring text
blocks of a section are merged up to the token bound, an oversized block is split at line
boundaries, tables are their own chunks with their caption (row batches with the header repeated
when they are large), page headers and footers are left out. A figure whose text was read by OCR
is a chunk of its own (kind `figure`) behind its caption; figures without text are left out and
their captions are chunks alone. A paragraph cut by a page break stays in one chunk (its lines
keep their pages), and a table continued at the top of the next page joins the table it
continues (same columns), so its rows carry that table's caption and header. A chunk's text is
built from its blocks' lines, so every `ChunkLine` span points at a line's text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence

from ingest.pipeline.chunk_joins import (
    continues,
    document_label,
    embed_text_of,
    heading_text,
    separator,
    unit_regions,
)
from ingest.pipeline.chunk_tables import (
    LINE_JOINED,
    Builder,
    Piece,
    Table,
    Unit,
    assign_captions,
    block_pieces,
    continuation_pieces,
    header_lines,
    join_pieces,
)
from ocr_engine.schema import Block, BlockType, Document, Page
from retrieval.doc_card import DocumentCard
from retrieval.schema import TABLE_ROWS_KIND, Chunk, ChunkLine
from retrieval.table_rows import heads_rows

__all__ = ["ChunkStream", "chunk_document"]

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]

_SKIPPED = {BlockType.page_header, BlockType.page_footer}
_HEADINGS = {BlockType.title, BlockType.section_header}
_TRAIL_SEPARATOR = " > "


class _Chunker:
    """One pass over a document's blocks in reading order, fed a window of pages at a time.

    Everything that spans windows travels in the instance: the heading trail, the text gathered
    for the next chunk, the chunk counter. Captions pair with blocks of their own page only, so
    feeding pages in windows gives the same chunks as feeding them all at once."""

    def __init__(
        self,
        doc_id: str,
        source: str,
        count_tokens: TokenCounter,
        max_tokens: int,
        card: DocumentCard | None = None,
    ) -> None:
        self.doc_id = doc_id
        self.source = source
        self.count = count_tokens
        self.max_tokens = max_tokens
        self.chunks: list[Chunk] = []
        self.emitted = 0
        self.trail: list[tuple[int, str]] = []
        self._trail_cache: dict[tuple[str, ...], tuple[str, int]] = {}
        self.label = document_label(source, card)
        self.builder = Builder(self._budget())
        self.pending: Table | None = None  # the last table seen, held until what follows is known
        self.headed = False  # the last block was a heading: the next one may nest under it
        self.stacked = False  # the last heading was nested under the one right above it

    def feed(self, pages: Sequence[Page]) -> list[Chunk]:
        """Chunks completed by these pages (text at the end may wait for the next window)."""
        blocks = [
            (page.number, block)
            for page in pages
            for block in page.blocks
            if block.type not in _SKIPPED and (block.type != BlockType.figure or block.lines)
        ]
        table_captions, figure_of, figure_captions = assign_captions(blocks)
        used = {*table_captions.values(), *figure_of.values()}
        builder = self.builder
        for index, (page, block) in enumerate(blocks):
            if index in used:
                continue
            heading = block.type in _HEADINGS and self._is_heading(block)
            self.headed = self.headed and heading
            if block.type == BlockType.table:
                self._flush(builder, "text")
                caption = table_captions.get(index)
                table = Table(page, block, blocks[caption] if caption is not None else None)
                first_on_page = index == 0 or blocks[index - 1][0] != page
                if first_on_page and self.pending and self.pending.continued_by(table):
                    self.pending.parts.append((page, block))
                else:
                    self._emit_pending()
                    self.pending = table
                continue
            self._emit_pending()  # anything but a table ends the table before it
            if block.type == BlockType.figure:
                self._flush(builder, "text")
                caption = figure_of.get(index)
                self._figure(page, block, blocks[caption] if caption is not None else None)
            elif heading:
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

    def _carry(self, builder: Builder, unit: Unit) -> list[Unit]:
        """The trailing units of the paragraph `unit` continues across a page break, taken out of
        `builder` so that they open the next chunk with it (when they fit there together)."""
        if not builder.units or not continues(builder.units[-1], unit):
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
        return self.count(heading_text(block)) <= self.max_tokens // 4

    def _open_section(self, block: Block) -> None:
        """A heading right under another with nothing between names a part of it, whatever level
        its type gives ("Item 7" over "Results of Operations"); a third in a row closes both."""
        level = 0 if block.type == BlockType.title else (block.level or 1)
        self.stacked = self.headed and not self.stacked and level > 0 and bool(self.trail)
        if self.stacked:
            level = max(level, self.trail[-1][0] + 1)
        while self.trail and self.trail[-1][0] >= level:
            self.trail.pop()
        text = heading_text(block)
        if text:
            self.trail.append((level, text))
        self.headed = True

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

    def _units(self, page: int, block: Block, budget: int) -> list[Unit]:
        """The block as one unit when it fits the budget, else one unit per line (or word run)."""
        pieces = block_pieces(block, page)
        if not pieces:
            return []
        tokens = self.count(join_pieces(pieces, "\n" if block.type in LINE_JOINED else " "))
        if tokens <= budget:
            return [Unit(block, pieces, tokens, whole=True)]
        return [
            Unit(block, [part], part_tokens)
            for piece in pieces
            for part, part_tokens in self._split_piece(piece, budget)
        ]

    def _split_piece(self, piece: Piece, budget: int) -> Iterator[tuple[Piece, int]]:
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
                yield Piece(" ".join(words), piece.page, piece.bbox), used
                words, used = [], 0
            words.append(word)
            used += n
        if words:
            yield Piece(" ".join(words), piece.page, piece.bbox), used

    # tables -------------------------------------------------------------------------------------

    def _emit_pending(self) -> None:
        table, self.pending = self.pending, None
        if table is not None:
            self._table(table)

    def _table(self, table: Table) -> None:
        budget = self._budget()
        page, block = table.parts[0]
        caption = table.caption
        pieces = block_pieces(block, page)
        more = [(b, continuation_pieces(block, pieces, b, p)) for p, b in table.parts[1:]]
        parts = [(block, pieces), *((b, ps) for b, ps in more if ps)]
        if not any(ps for _, ps in parts):
            return
        caption_units = self._units(caption[0], caption[1], budget) if caption else []
        units = [
            Unit(b, ps, self.count(join_pieces(ps, "\n")), whole=True) for b, ps in parts if ps
        ]
        tokens = self.count("\n".join(join_pieces(ps, "\n") for _, ps in parts))
        caption_tokens = sum(unit.tokens for unit in caption_units)
        if caption_tokens + tokens <= budget:
            self._emit("table", [*caption_units, *units])
            return
        n_header = header_lines(block, pieces)
        header_pieces = pieces[:n_header]
        rows = [(block, row) for row in pieces[n_header:]]
        rows += [(b, row) for b, ps in parts[1:] for row in ps]
        prefix = list(caption_units)
        if header_pieces:
            header_tokens = self.count(join_pieces(header_pieces, "\n"))
            prefix.append(Unit(block, header_pieces, header_tokens, part="header"))
        if sum(unit.tokens for unit in prefix) > budget // 2:
            self._pack("table_caption", caption_units)  # too long to repeat: a chunk of its own
            prefix = [u for u in prefix[len(caption_units) :] if u.tokens <= budget // 2]
        room = budget - sum(unit.tokens for unit in prefix)
        batch = Builder(room)
        for row_block, row in rows:
            for part, part_tokens in self._split_piece(row, room):
                unit = Unit(row_block, [part], part_tokens, part="rows")
                if not batch.fits(unit):
                    units = batch.take()
                    heads: list[Unit] = []  # a year's or a label's row goes on with its rows
                    while len(units) > 1 and heads_rows(units[-1].pieces[0].text):
                        heads.insert(0, units.pop())
                    self._emit(TABLE_ROWS_KIND, [*prefix, *units])
                    for head in heads:
                        batch.add(head)
                batch.add(unit)
        if batch.units:
            self._emit(TABLE_ROWS_KIND, [*prefix, *batch.take()])

    # figures ------------------------------------------------------------------------------------

    def _figure(self, page: int, block: Block, caption: tuple[int, Block] | None) -> None:
        """A figure's text read by OCR behind its caption: one chunk when they fit the budget,
        else batches of its lines, each behind the caption (alone first when it is too long)."""
        budget = self._budget()
        prefix = self._units(caption[0], caption[1], budget) if caption else []
        prefix_tokens = sum(unit.tokens for unit in prefix)
        if prefix_tokens > budget // 2:
            self._pack("figure_caption", prefix)
            prefix, prefix_tokens = [], 0
        batch = Builder(budget - prefix_tokens)
        for unit in self._units(page, block, batch.budget):
            if not batch.fits(unit):
                self._emit("figure", [*prefix, *batch.take()])
            batch.add(unit)
        if batch.units:
            self._emit("figure", [*prefix, *batch.take()])

    # chunks -------------------------------------------------------------------------------------

    def _pack(self, kind: str, units: Sequence[Unit]) -> None:
        """Emit `units` as few chunks of `kind` as the budget allows."""
        builder = Builder(self._budget())
        for unit in units:
            if not builder.fits(unit):
                self._flush(builder, kind)
            builder.add(unit)
        self._flush(builder, kind)

    def _flush(self, builder: Builder, kind: str) -> None:
        if builder.units:
            self._emit(kind, builder.take())

    def _emit(self, kind: str, units: list[Unit]) -> None:
        if not units:
            return
        text = ""
        lines: list[ChunkLine] = []
        previous: Unit | None = None
        for unit in units:
            for i, piece in enumerate(unit.pieces):
                sep = unit.joiner if i else separator(previous, unit) if text else ""
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
            embed_text=embed_text_of(trail_text, text, kind),
            regions=unit_regions(units),
            lines=lines,
        )
        self.chunks.append(chunk)
        self.emitted += 1


def chunk_document(
    doc: Document,
    *,
    count_tokens: Callable[[str], int],
    max_tokens: int = 256,
    card: DocumentCard | None = None,
) -> list[Chunk]:
    """Chunks of `doc` in document order, ids c0000, c0001, …; each `embed_text` fits the bound;
    with its `card`, as ingest gives them."""
    if max_tokens < 16:
        raise ValueError("max_tokens must be at least 16")
    chunker = _Chunker(doc.doc_id, doc.source, count_tokens, max_tokens, card)
    chunks = chunker.feed(doc.pages) + chunker.finish()
    logger.debug("%s: %d chunks from %d pages", doc.source, len(chunks), len(doc.pages))
    return chunks


class ChunkStream:
    """Chunks of one document from windows of its pages, the same as `chunk_document` gives."""

    def __init__(
        self,
        doc_id: str,
        source: str,
        *,
        count_tokens: TokenCounter,
        max_tokens: int = 256,
        card: DocumentCard | None = None,
    ) -> None:
        if max_tokens < 16:
            raise ValueError("max_tokens must be at least 16")
        self._chunker = _Chunker(doc_id, source, count_tokens, max_tokens, card)

    @property
    def emitted(self) -> int:
        """Chunks handed out so far."""
        return self._chunker.emitted

    def feed(self, pages: Sequence[Page]) -> list[Chunk]:
        return self._chunker.feed(pages)

    def finish(self) -> list[Chunk]:
        return self._chunker.finish()
