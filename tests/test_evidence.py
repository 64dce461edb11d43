"""Evidence below the chunk: the lines that support a claim, and the boxes they give."""

from __future__ import annotations

from ocr_engine.char_widths import char_starts
from retrieval.schema import Chunk, ChunkLine, Region
from retrieval.search.evidence import locate, supporting_lines

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
    assert where.highlight_url("d" * 64) == (
        f"/documents/{'d' * 64}/pages/1.png?highlight=72.0,100.0,300.0,110.0;72.0,300.0,300.0,322.0"
    )


def test_a_line_running_on_under_the_next_column_is_boxed_apart() -> None:
    """Two lines of a narrow column, then the paragraph's next line, which runs on under the
    column beside it: two boxes, not one over both columns."""
    chunk = _chunk(ROWS[:4], [1] * 4, [100.0, 112.0, 124.0, 136.0])
    narrow, wide = (67.0, 215.0), (67.0, 516.0)
    for line, (x0, x1) in zip(chunk.lines, [narrow, narrow, wide, (67.0, 110.0)], strict=True):
        line.bbox = (x0, line.bbox[1], x1, line.bbox[3])
    where = locate(chunk, chunk.lines)
    assert where.highlight == [
        (67.0, 100.0, 215.0, 122.0),
        (67.0, 124.0, 516.0, 146.0),  # the short last line joins the wide one above it
    ]
    assert where.bbox == (67.0, 100.0, 516.0, 146.0)  # the region is still all of them


def _prose(rows: list[str]) -> Chunk:
    """A text chunk of `rows`, one line each, 5 pt per character from x 72, 12 pt apart."""
    chunk = _chunk(rows, [1] * len(rows), [100.0 + 12 * i for i in range(len(rows))])
    lines = [
        ln.model_copy(
            update={"bbox": (72.0, ln.bbox[1], 72.0 + 5 * (ln.end - ln.start), ln.bbox[3])}
        )
        for ln in chunk.lines
    ]
    return chunk.model_copy(update={"kind": "text", "lines": lines})


def test_evidence_starting_and_ending_inside_lines_is_boxed_like_a_selection() -> None:
    rows = ["Sales rose. Margins fell by two", "points in the year, and costs", "rose. Cash held."]
    chunk = _prose(rows)
    start = chunk.text.index("Margins")
    end = chunk.text.index("rose. Cash") + len("rose.")
    where = locate(chunk, chunk.lines, [(start, end)])
    first, middle, last = (ln.bbox for ln in chunk.lines)
    opening, closing = char_starts(rows[0], first), char_starts(rows[2], last)
    begins, ends = len("Sales rose. "), len("rose.")  # in the space before / after, mid-way
    assert where.highlight == [
        ((opening[begins - 1] + opening[begins]) / 2, first[1], first[2], first[3]),
        middle,
        (72.0, last[1], (closing[ends] + closing[ends + 1]) / 2, last[3]),
    ]
    assert where.bbox == (72.0, first[1], first[2], last[3])


def test_whole_lines_still_merge_into_one_box() -> None:
    chunk = _prose(["Margins fell by two", "points in the year."])
    where = locate(chunk, chunk.lines, [(0, len(chunk.text))])
    assert where.highlight == [(72.0, 100.0, 72.0 + 5 * len("Margins fell by two"), 122.0)]


def test_table_rows_are_boxed_whole() -> None:
    chunk = _chunk(ROWS, [1] * 5, [100.0, 112.0, 124.0, 136.0, 148.0])
    row = chunk.lines[3]
    where = locate(chunk, [row], [(row.start + 10, row.end - 5)])
    assert where.highlight == [row.bbox]
