"""Chunks and table blocks built by hand for tests, as the chunker and the engines build them."""

from __future__ import annotations

from collections.abc import Sequence

from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page, TableCell
from retrieval.schema import Chunk, ChunkLine, Region


def one_line_chunk(page: int, text: str, *, doc_id: str, source: str) -> Chunk:
    """Chunk `c{page - 1:04d}` of one line, the whole of the page's text."""
    box = (10.0, 10.0, 200.0, 20.0)
    return Chunk(
        chunk_id=f"c{page - 1:04d}",
        doc_id=doc_id,
        source=source,
        kind="text",
        text=text,
        embed_text=text,
        regions=[Region(page=page, bbox=box)],
        lines=[ChunkLine(page=page, bbox=box, start=0, end=len(text))],
    )


def table_block(
    block_id: str,
    rows: Sequence[Sequence[str]],
    edges: Sequence[float],
    top: float,
    row_height: float = 14.0,
) -> Block:
    """A table block whose first row is its header: a box for every cell between the column
    `edges`, a markdown line a row, rows `row_height` points apart from `top`."""
    cells: list[TableCell] = []
    lines: list[Line] = []
    for r, row in enumerate(rows):
        y0 = top + r * row_height
        for c, text in enumerate(row):
            box = (edges[c] + 2, y0 + 1, edges[c + 1] - 2, y0 + row_height - 1)
            cells.append(TableCell(row=r, col=c, text=text, bbox=box, header=r == 0))
        markdown_row = "| " + " | ".join(v or " " for v in row) + " |"
        lines.append(
            Line(text=markdown_row, bbox=(edges[0] + 2, y0 + 1, edges[-1] - 2, y0 + row_height - 1))
        )
    rule = "|" + " --- |" * len(rows[0])
    return Block(
        id=block_id,
        type=BlockType.table,
        bbox=(edges[0], top, edges[-1], top + len(rows) * row_height),
        text="\n".join([lines[0].text, rule, *(ln.text for ln in lines[1:])]),
        lines=lines,
        cells=cells,
    )


def one_line_block(
    block_id: str, kind: BlockType, box: tuple[float, float, float, float], text: str
) -> Block:
    """A block of one line (a heading, a caption) at `box`."""
    return Block(id=block_id, type=kind, bbox=box, text=text, lines=[Line(text=text, bbox=box)])


def one_page_document(blocks: Sequence[Block], *, doc_id: str, source: str) -> Document:
    """A document of one US-letter page holding `blocks`."""
    page = Page(
        number=1, width=612, height=792, engine=EngineInfo(name="test"), blocks=list(blocks)
    )
    return Document(doc_id=doc_id, source=source, page_count=1, pages=[page])


def rows_chunk(rows: list[str]) -> Chunk:
    """A table chunk of `rows` (markdown rows or caption lines), one line each on page 1."""
    text = "\n".join(rows)
    lines, start = [], 0
    for i, row in enumerate(rows):
        box = (72.0, 100.0 + 14 * i, 500.0, 112.0 + 14 * i)
        lines.append(ChunkLine(page=1, bbox=box, start=start, end=start + len(row)))
        start += len(row) + 1
    region = Region(page=1, bbox=(72.0, 100.0, 500.0, 112.0 + 14 * len(rows)))
    return Chunk(
        chunk_id="c0000",
        doc_id="s" * 64,
        source="sales.pdf",
        kind="table",
        text=text,
        embed_text=text,
        regions=[region],
        lines=lines,
    )
