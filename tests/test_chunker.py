"""The chunker on synthetic documents: sections, tables, headers and footers, bounds, provenance."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page, TableCell
from retrieval.index.embedder import SentenceTransformerEmbedder
from retrieval.schema import Chunk

LINE_HEIGHT = 12.0


@pytest.fixture(scope="module")
def count_tokens() -> Callable[[str], int]:
    """The real model tokenizer (no model weights are loaded for counting)."""
    return SentenceTransformerEmbedder().count_tokens


class Pages:
    """Builds blocks top to bottom on numbered pages with made-up but consistent boxes."""

    def __init__(self) -> None:
        self.pages: dict[int, list[Block]] = {}
        self.y: dict[int, float] = {}

    def add(
        self,
        page: int,
        kind: BlockType,
        texts: list[str],
        *,
        level: int | None = None,
        x0: float = 72.0,
        cells: list[TableCell] | None = None,
    ) -> Block:
        blocks = self.pages.setdefault(page, [])
        y = self.y.get(page, 72.0)
        lines = [
            Line(
                text=t, bbox=(x0, y + i * LINE_HEIGHT, x0 + 5.0 * len(t), y + (i + 1) * LINE_HEIGHT)
            )
            for i, t in enumerate(texts)
        ]
        bbox = (
            min(ln.bbox[0] for ln in lines),
            lines[0].bbox[1],
            max(ln.bbox[2] for ln in lines),
            lines[-1].bbox[3],
        )
        prefix = (
            "#" * (level or 1) + " " if kind in (BlockType.title, BlockType.section_header) else ""
        )
        text = prefix + ("\n" if kind == BlockType.table else " ").join(texts)
        block = Block(
            id=f"p{page}-b{len(blocks)}",
            type=kind,
            bbox=bbox,
            text=text,
            level=level,
            lines=lines,
            cells=cells or [],
        )
        blocks.append(block)
        self.y[page] = bbox[3] + 6.0
        return block

    def document(self) -> Document:
        pages = [
            Page(number=n, width=612, height=792, engine=EngineInfo(name="test"), blocks=blocks)
            for n, blocks in sorted(self.pages.items())
        ]
        return Document(doc_id="d" * 64, source="report.pdf", page_count=len(pages), pages=pages)


def sentences(n: int, topic: str) -> list[str]:
    return [f"Line {i} about {topic} keeps going with several plain words." for i in range(n)]


def all_blocks(doc: Document) -> list[tuple[int, Block]]:
    return [(p.number, b) for p in doc.pages for b in p.blocks]


def inside(inner: tuple[float, ...], outer: tuple[float, ...]) -> bool:
    eps = 1e-6
    return (
        inner[0] >= outer[0] - eps
        and inner[1] >= outer[1] - eps
        and inner[2] <= outer[2] + eps
        and inner[3] <= outer[3] + eps
    )


def assert_provenance(doc: Document, chunk: Chunk) -> None:
    """Every chunk line is (part of) a line of the document inside one of the chunk's regions,
    and the chunk text is nothing but its lines and the separators between them."""
    covered = 0
    for cl in chunk.lines:
        piece = chunk.text[cl.start : cl.end]
        assert piece
        assert any(r.page == cl.page and inside(cl.bbox, r.bbox) for r in chunk.regions)
        assert any(
            page == cl.page and ln.bbox == cl.bbox and piece in ln.text
            for page, block in all_blocks(doc)
            for ln in block.lines
        ), piece
        covered += cl.end - cl.start
    gaps = re.sub(r"\s", "", chunk.text)
    assert len(gaps) <= covered  # separators are whitespace (or a dropped hyphenation space)
    starts = [cl.start for cl in chunk.lines]
    assert starts == sorted(starts)


def mixed_document() -> Document:
    b = Pages()
    b.add(1, BlockType.page_header, ["ACME CONFIDENTIAL"])
    b.add(1, BlockType.title, ["Annual Report 2023"], level=1)
    b.add(1, BlockType.section_header, ["1 Results"], level=1)
    b.add(1, BlockType.text, ["Revenue grew strongly this year.", "Costs were flat."])
    b.add(1, BlockType.section_header, ["1.1 Revenue by region"], level=2)
    b.add(1, BlockType.text, ["Europe led the growth.", "Asia followed closely."])
    b.add(1, BlockType.caption, ["Table 1: Revenue by region (EUR m)"])
    b.add(
        1,
        BlockType.table,
        ["| Region | 2022 | 2023 |", "|---|---|---|", "| Europe | 10 | 12 |", "| Asia | 7 | 9 |"],
    )
    b.add(1, BlockType.page_footer, ["Page 1 of 2"])
    b.add(2, BlockType.page_header, ["ACME CONFIDENTIAL"])
    b.add(2, BlockType.section_header, ["2 Outlook"], level=1)
    b.add(2, BlockType.text, ["We expect further growth.", "Risks remain in supply."])
    b.add(2, BlockType.caption, ["Figure 1: Growth by quarter"])
    b.add(2, BlockType.list_item, ["- Hire more engineers"])
    b.add(2, BlockType.list_item, ["- Open an office in Lisbon"])
    b.add(2, BlockType.page_footer, ["Page 2 of 2"])
    return b.document()


def test_section_trail_travels_with_each_chunk(count_tokens: Callable[[str], int]) -> None:
    chunks = chunk_document(mixed_document(), count_tokens=count_tokens)
    by_start = {c.text.split()[0]: c for c in chunks}
    assert by_start["Revenue"].section_path == ["Annual Report 2023", "1 Results"]
    assert by_start["Europe"].section_path == [
        "Annual Report 2023",
        "1 Results",
        "1.1 Revenue by region",
    ]
    assert by_start["We"].section_path == ["Annual Report 2023", "2 Outlook"]
    europe = by_start["Europe"]
    assert europe.embed_text == (
        "report > Annual Report 2023 > 1 Results > 1.1 Revenue by region\n\n" + europe.text
    )


def test_headers_and_footers_are_kept_out(count_tokens: Callable[[str], int]) -> None:
    doc = mixed_document()
    chunks = chunk_document(doc, count_tokens=count_tokens)
    furniture = [
        b.bbox
        for _, b in all_blocks(doc)
        if b.type in (BlockType.page_header, BlockType.page_footer)
    ]
    for chunk in chunks:
        assert "CONFIDENTIAL" not in chunk.embed_text
        assert "of 2" not in chunk.embed_text
        assert all(r.bbox not in furniture for r in chunk.regions)


def test_tables_are_their_own_chunks_with_caption(count_tokens: Callable[[str], int]) -> None:
    doc = mixed_document()
    chunks = chunk_document(doc, count_tokens=count_tokens)
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) == 1
    table = tables[0]
    assert table.text.splitlines()[0] == "Table 1: Revenue by region (EUR m)"
    assert "| Europe | 10 | 12 |" in table.text.splitlines()
    assert len(table.regions) == 2  # caption block and table block
    assert all("Europe |" not in c.text for c in chunks if c.kind != "table")
    kinds = [c.kind for c in chunks]
    assert "figure_caption" in kinds


def test_small_blocks_merge_within_a_section_only(count_tokens: Callable[[str], int]) -> None:
    b = Pages()
    b.add(1, BlockType.section_header, ["Intro"], level=1)
    b.add(1, BlockType.text, ["First short paragraph."])
    b.add(1, BlockType.text, ["Second short paragraph."])
    b.add(1, BlockType.section_header, ["Method"], level=1)
    b.add(1, BlockType.text, ["Third short paragraph."])
    chunks = chunk_document(b.document(), count_tokens=count_tokens)
    assert [c.text for c in chunks] == [
        "First short paragraph.\n\nSecond short paragraph.",
        "Third short paragraph.",
    ]
    assert len(chunks[0].regions) == 2
    assert [c.section_path for c in chunks] == [["Intro"], ["Method"]]


def test_chunks_may_span_pages_with_a_region_per_page(count_tokens: Callable[[str], int]) -> None:
    b = Pages()
    b.add(1, BlockType.text, ["The end of page one."])
    b.add(2, BlockType.text, ["The start of page two."])
    (chunk,) = chunk_document(b.document(), count_tokens=count_tokens)
    assert [r.page for r in chunk.regions] == [1, 2]
    assert chunk.page == 1


@pytest.mark.parametrize("max_tokens", [32, 64, 256])
def test_token_bound_is_respected(count_tokens: Callable[[str], int], max_tokens: int) -> None:
    b = Pages()
    b.add(1, BlockType.title, ["A rather long document title for testing"], level=1)
    b.add(1, BlockType.section_header, ["Chapter one"], level=1)
    b.add(1, BlockType.text, sentences(40, "budgets"))
    b.add(1, BlockType.text, [" ".join(["supercalifragilistic"] * 80)])  # one overlong line
    b.add(2, BlockType.caption, ["Table 9: Many rows"])
    b.add(
        2,
        BlockType.table,
        ["| Item | Amount |", "|---|---|"] + [f"| Item {i} | {i * 100} |" for i in range(60)],
    )
    doc = b.document()
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=max_tokens)
    assert len(chunks) > 2
    for chunk in chunks:
        assert count_tokens(chunk.embed_text) <= max_tokens, chunk.embed_text
        assert_provenance(doc, chunk)


def test_oversized_block_is_split_at_line_boundaries(count_tokens: Callable[[str], int]) -> None:
    b = Pages()
    block = b.add(1, BlockType.text, sentences(30, "hedging"))
    doc = b.document()
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=64)
    assert len(chunks) > 2
    assert " ".join(c.text for c in chunks) == " ".join(ln.text for ln in block.lines)
    for chunk in chunks:
        (region,) = chunk.regions
        assert inside(region.bbox, block.bbox) and region.bbox != block.bbox
        first, last = chunk.lines[0].bbox, chunk.lines[-1].bbox
        assert region.bbox[1] == first[1] and region.bbox[3] == last[3]


def test_large_table_splits_into_row_batches_with_header(
    count_tokens: Callable[[str], int],
) -> None:
    b = Pages()
    header = "| Quarter | Region | Revenue |"
    rows = [f"| Q{i % 4 + 1} | Region {i} | {1000 + i} |" for i in range(50)]
    cells = [TableCell(row=0, col=c, text=t, header=True) for c, t in enumerate("QRV")]
    b.add(1, BlockType.caption, ["Table 2: Quarterly revenue"])
    table = b.add(1, BlockType.table, [header, "|---|---|---|", *rows], cells=cells)
    doc = b.document()
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=96)
    assert len(chunks) > 2
    assert {c.kind for c in chunks} == {"table_rows"}
    seen: list[str] = []
    for chunk in chunks:
        lines = chunk.text.splitlines()
        assert lines[:3] == ["Table 2: Quarterly revenue", header, "|---|---|---|"]
        seen.extend(lines[3:])
        assert len(chunk.regions) == 3  # caption, header rows, this batch's rows
        assert all(inside(r.bbox, table.bbox) for r in chunk.regions[1:])
        assert_provenance(doc, chunk)
    assert seen == rows


def test_a_years_label_row_heads_its_rows_and_is_not_repeated_over_others(
    count_tokens: Callable[[str], int],
) -> None:
    """A quarterly table's "2017" row closes the header its finder gives, and "2016" heads the
    rows below it: each goes with its year's rows, and "2017" is not repeated over 2016's (the
    rows of 2016 were read as 2017's)."""
    b = Pages()
    header = "| | December 31 | September 30 |"
    rows = []
    for year in (2017, 2016):
        rows.append(f"| {year} | | |")
        rows += [f"| Measure {year}-{i} | {i},000 | {i},500 |" for i in range(12)]
    cells = [
        TableCell(row=r, col=c, text=t, header=True) for r in (0, 1) for c, t in enumerate("Y12")
    ]
    b.add(1, BlockType.table, [header, *rows], cells=cells)
    chunks = chunk_document(b.document(), count_tokens=count_tokens, max_tokens=96)
    assert len(chunks) > 2 and {c.kind for c in chunks} == {"table_rows"}
    for chunk in chunks:
        lines = chunk.text.splitlines()
        assert lines[0] == header, lines  # the column headings alone are repeated
        assert not lines[-1].endswith("| | |") or len(lines) == 2, lines  # no label row last
        years = {line[2:6] for line in lines[1:] if line.startswith("| 20")}
        measures = {line.split()[2][:4] for line in lines[1:] if line.startswith("| Measure")}
        assert years <= measures, lines  # a year's label row only over that year's rows
    ordered = [ln for c in chunks for ln in c.text.splitlines()[1:]]
    assert ordered == rows


def test_a_group_label_row_goes_with_the_rows_it_names(count_tokens: Callable[[str], int]) -> None:
    """A statement names its row groups on rows of their own ("Cost of sales:"): a batch that
    would end on such a row leaves it to the next batch, over the rows it names (Apple's
    "Products" and "Services" percentages were read without "Gross margin percentage")."""
    b = Pages()
    header = "| | 2023 | 2022 |"
    rows = []
    for group in ("Net sales", "Cost of sales", "Operating expenses", "Other items"):
        rows.append(f"| {group}: | | |")
        rows += [f"| {group} item {i} | {i},000 | {i},500 |" for i in range(5)]
    cells = [TableCell(row=0, col=c, text=t, header=True) for c, t in enumerate("L12")]
    b.add(1, BlockType.table, [header, *rows], cells=cells)
    chunks = chunk_document(b.document(), count_tokens=count_tokens, max_tokens=96)
    assert len(chunks) > 2 and {c.kind for c in chunks} == {"table_rows"}
    for chunk in chunks:
        lines = chunk.text.splitlines()
        assert lines[0] == header and not lines[-1].endswith(": | | |"), lines
    assert [ln for c in chunks for ln in c.text.splitlines()[1:]] == rows


@pytest.mark.parametrize("stub", ["", "(In millions)"])
def test_the_years_under_a_tables_heading_are_repeated_with_it(
    count_tokens: Callable[[str], int], stub: str
) -> None:
    """The table finder gives "Three Months Ended December 31," as the header and "2022 | 2021"
    under it as a row (its first cell empty, or stating the table's unit): each row group repeats
    both, so that its cells have their years."""
    b = Pages()
    header = "| | Three Months Ended December 31, | |"
    years = f"| {stub} | 2022 | 2021 |"
    rows = [f"| Measure {i} | {i},000 | {i},500 |" for i in range(30)]
    cells = [TableCell(row=0, col=c, text=t, header=True) for c, t in enumerate("TMY")]
    b.add(1, BlockType.table, [header, years, *rows], cells=cells)
    chunks = chunk_document(b.document(), count_tokens=count_tokens, max_tokens=96)
    assert len(chunks) > 2 and {c.kind for c in chunks} == {"table_rows"}
    for chunk in chunks:
        assert chunk.text.splitlines()[:2] == [header, years], chunk.text
    assert [ln for c in chunks for ln in c.text.splitlines()[2:]] == rows


def test_every_chunk_text_is_found_in_the_lines_of_its_regions(
    count_tokens: Callable[[str], int],
) -> None:
    doc = mixed_document()
    chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=48)
    assert chunks
    for chunk in chunks:
        assert chunk.lines
        assert_provenance(doc, chunk)


def test_ids_are_deterministic(count_tokens: Callable[[str], int]) -> None:
    first = chunk_document(mixed_document(), count_tokens=count_tokens)
    second = chunk_document(mixed_document(), count_tokens=count_tokens)
    assert [c.chunk_id for c in first] == [f"c{i:04d}" for i in range(len(first))]
    assert [c.point_id for c in first] == [c.point_id for c in second]
    assert [c.model_dump() for c in first] == [c.model_dump() for c in second]


def test_heading_levels_pop_the_trail(count_tokens: Callable[[str], int]) -> None:
    b = Pages()
    b.add(1, BlockType.section_header, ["A"], level=1)
    b.add(1, BlockType.section_header, ["A.1"], level=2)
    b.add(1, BlockType.section_header, ["A.1.1"], level=3)
    b.add(1, BlockType.text, ["deep text"])
    b.add(1, BlockType.section_header, ["A.2"], level=2)
    b.add(1, BlockType.text, ["sibling text"])
    b.add(1, BlockType.section_header, ["B"])  # no level: top level
    b.add(1, BlockType.text, ["top text"])
    chunks = chunk_document(b.document(), count_tokens=count_tokens)
    assert [c.section_path for c in chunks] == [["A", "A.1", "A.1.1"], ["A", "A.2"], ["B"]]


def test_a_heading_right_under_another_names_a_part_of_it(
    count_tokens: Callable[[str], int],
) -> None:
    """Two headings of one level with nothing between nest; text between keeps them siblings;
    a third heading in a row closes both (a run of headings is not a deepening trail)."""
    b = Pages()
    b.add(1, BlockType.section_header, ["Item 7. Management's Discussion"], level=1)
    b.add(1, BlockType.section_header, ["Results of Operations"], level=1)
    b.add(1, BlockType.text, ["Revenue rose on higher unit sales."])
    b.add(2, BlockType.section_header, ["Liquidity"], level=1)
    b.add(2, BlockType.text, ["Cash was ample."])
    b.add(3, BlockType.section_header, ["Contents"], level=1)
    b.add(3, BlockType.section_header, ["Part I"], level=1)
    b.add(3, BlockType.section_header, ["Part II"], level=1)
    b.add(3, BlockType.text, ["Exhibits follow."])
    chunks = chunk_document(b.document(), count_tokens=count_tokens)
    assert [c.section_path for c in chunks] == [
        ["Item 7. Management's Discussion", "Results of Operations"],
        ["Liquidity"],
        ["Part II"],
    ]


def test_empty_document_gives_no_chunks(count_tokens: Callable[[str], int]) -> None:
    doc = Document(doc_id="e" * 64, source="empty.pdf", page_count=0, pages=[])
    assert chunk_document(doc, count_tokens=count_tokens) == []


def test_table_embed_text_spends_no_tokens_on_markup(count_tokens: Callable[[str], int]) -> None:
    chunks = chunk_document(mixed_document(), count_tokens=count_tokens)
    table = next(c for c in chunks if c.kind == "table")
    assert "| Europe | 10 | 12 |" in table.text
    assert "Europe 10 12" in table.embed_text
    assert "|" not in table.embed_text and "---" not in table.embed_text


def test_real_pdfs_chunk_text_is_found_in_the_lines_of_its_regions(
    count_tokens: Callable[[str], int],
) -> None:
    from ocr_engine.engines.extract import extract_document
    from tests.conftest import shared_path

    folder = shared_path("docling", "pdf")
    for name in ("2305.03393v1-pg9.pdf", "redp5110_sampled.pdf", "right_to_left_01.pdf"):
        doc = extract_document(folder / name)
        chunks = chunk_document(doc, count_tokens=count_tokens, max_tokens=254)
        assert chunks, name
        for chunk in chunks:
            assert chunk.lines, (name, chunk.chunk_id)
            assert_provenance(doc, chunk)
