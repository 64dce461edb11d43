"""Evidence below the chunk: the lines that support a claim, and the boxes they give."""

from __future__ import annotations

from retrieval.evidence import locate, supporting_lines
from retrieval.schema import Chunk, ChunkLine, Region

ROWS = [
    "Consolidated Statement of Cash Flows",
    "Net income 5,363 4,869",
    "Depreciation and amortization 1,488 1,544",
    "Purchases of property, plant and equipment (1,577) (1,373)",
    "Proceeds from sale of PP&E 262 49",
]


def _chunk(rows: list[str], pages: list[int], ys: list[float]) -> Chunk:
    lines, start = [], 0
    for row, page, y in zip(rows, pages, ys, strict=True):
        lines.append(
            ChunkLine(page=page, bbox=(72.0, y, 300.0, y + 10.0), start=start, end=start + len(row))
        )
        start += len(row) + 1
    regions = [
        Region(page=p, bbox=(72.0, min(ys), 300.0, max(ys) + 10.0)) for p in sorted(set(pages))
    ]
    return Chunk(
        chunk_id="c0001",
        doc_id="d" * 64,
        source="r.pdf",
        kind="table_rows",
        text="\n".join(rows),
        embed_text="\n".join(rows),
        regions=regions,
        lines=lines,
    )


def test_the_line_holding_the_claim_is_the_evidence() -> None:
    chunk = _chunk(ROWS, [1] * 5, [100.0, 112.0, 124.0, 136.0, 148.0])
    lines = supporting_lines(chunk, "How much were purchases of property and equipment?")
    assert [chunk.text[ln.start : ln.end] for ln in lines] == [ROWS[3]]
    where = locate(chunk, lines)
    assert where.page == 1 and where.bbox == (72.0, 136.0, 300.0, 146.0)
    assert where.highlight == [(72.0, 136.0, 300.0, 146.0)]


def test_numbers_as_typed_find_their_line() -> None:
    chunk = _chunk(ROWS, [1] * 5, [100.0, 112.0, 124.0, 136.0, 148.0])
    lines = supporting_lines(chunk, "Which item was 1577?")
    assert [chunk.text[ln.start : ln.end] for ln in lines] == [ROWS[3]]


def test_no_shared_term_gives_no_lines() -> None:
    chunk = _chunk(ROWS, [1] * 5, [100.0, 112.0, 124.0, 136.0, 148.0])
    assert supporting_lines(chunk, "dividends declared") == []


def test_evidence_over_two_pages_has_a_region_per_page() -> None:
    chunk = _chunk(ROWS[:4], [1, 1, 2, 2], [700.0, 712.0, 72.0, 84.0])
    where = locate(chunk, chunk.lines[1:3])
    assert [(r.page, r.bbox) for r in where.regions] == [
        (1, (72.0, 712.0, 300.0, 722.0)),
        (2, (72.0, 72.0, 300.0, 82.0)),
    ]
    assert where.page == 1


def test_distant_lines_of_one_column_are_boxed_apart() -> None:
    chunk = _chunk(ROWS, [1] * 5, [100.0, 112.0, 124.0, 300.0, 312.0])
    where = locate(chunk, [chunk.lines[0], chunk.lines[3], chunk.lines[4]])
    assert where.highlight == [(72.0, 100.0, 300.0, 110.0), (72.0, 300.0, 300.0, 322.0)]
    assert where.highlight_param() == "72.0,100.0,300.0,110.0;72.0,300.0,300.0,322.0"
    assert where.highlight_url("d" * 64).startswith(f"/documents/{'d' * 64}/pages/1.png?")
