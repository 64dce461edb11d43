"""A cited chart title or figure caption is boxed with the chart or figure it names (only the part
under the title, when the chart was read together with the prose beside it); a paragraph's last
words are not a title."""

from __future__ import annotations

from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page, TableCell
from retrieval.answer import AnswerOptions, Lookups, extractive_answer
from retrieval.answer.page_layout import PageLayouts
from retrieval.schema import Citation, ScoredChunk

Box = tuple[float, float, float, float]
LEFT_BODY = (
    "Clear partisan gaps emerge on this question. Republicans are about twice as likely as "
    "Democrats to expect that American influence will grow after the outbreak, and the gap "
    "has widened since the spring"
)
CHART_TITLE = "% who say the U.S. will have more influence in world affairs after the outbreak"
CHART_BOX: Box = (67.0, 463.0, 525.0, 636.0)  # the engine read the chart and the text beside it
FIGURE_BOX: Box = (108.0, 72.0, 504.0, 304.0)


def _block(index: int, kind: BlockType, box: Box, text: str, lines: int = 1) -> Block:
    height = (box[3] - box[1]) / lines
    words = text.split()
    per_line = max(1, len(words) // lines)
    parts = [" ".join(words[i * per_line : (i + 1) * per_line]) for i in range(lines)]
    parts[-1] = " ".join(words[(lines - 1) * per_line :])
    return Block(
        id=f"p1-b{index}",
        type=kind,
        bbox=box,
        text=text,
        lines=[
            Line(text=part, bbox=(box[0], box[1] + i * height, box[2], box[1] + (i + 1) * height))
            for i, part in enumerate(parts)
        ],
    )


def _chart() -> Block:
    """A chart read as a table together with the prose beside it: its cells left of the chart
    hold the other column's lines."""
    prose = LEFT_BODY.split(". ")[1].split(", ")
    cells = [
        TableCell(row=r, col=0, text=text, bbox=(67.0, 463.0 + 20 * r, 290.0, 475.0 + 20 * r))
        for r, text in enumerate(prose)
    ]
    cells += [
        TableCell(
            row=r, col=1, text="29% 41% 29%", bbox=(402.0, 463.0 + 20 * r, 514.0, 475.0 + 20 * r)
        )
        for r in range(len(prose))
    ]
    block = _block(4, BlockType.table, CHART_BOX, "| Total | 29% | 41% |\n| --- | --- | --- |", 4)
    return block.model_copy(update={"cells": cells})


def _document() -> Document:
    blocks = [
        Block(id="p1-b0", type=BlockType.figure, bbox=FIGURE_BOX, text=""),  # not read by OCR
        _block(
            1,
            BlockType.caption,
            (108.0, 314.0, 504.0, 330.0),
            "Figure 1: Growth of the partisan gap in expected influence",
        ),
        _block(2, BlockType.text, (67.0, 375.0, 298.0, 460.0), LEFT_BODY, lines=6),
        _block(3, BlockType.text, (314.0, 406.0, 523.0, 440.0), CHART_TITLE, lines=3),
        _chart(),
        _block(
            5,
            BlockType.text,
            (67.0, 640.0, 298.0, 700.0),
            "In general Americans who have completed higher levels of education are more "
            "likely to say so than those with less education in every party",
            lines=4,
        ),
    ]
    page = Page(number=1, width=612, height=792, engine=EngineInfo(name="test"), blocks=blocks)
    return Document(doc_id="f" * 64, source="influence.pdf", page_count=1, pages=[page])


DOCUMENT = _document()
OPTIONS = AnswerOptions(
    lookups=Lookups(layout=PageLayouts(lambda _doc_id, n: DOCUMENT.pages[n - 1]))
)


def _first_citation(question: str, options: AnswerOptions = OPTIONS) -> Citation:
    chunks = chunk_document(DOCUMENT, count_tokens=lambda t: len(t.split()))
    hits = [ScoredChunk(chunk=c, score=1.0) for c in chunks]
    answer = extractive_answer(question, hits, options=options, max_sentences=1)
    assert answer.citations, answer
    return answer.citations[0]


def test_a_cited_chart_title_is_boxed_with_the_chart_in_its_column() -> None:
    cited = _first_citation("who say the U.S. will have more influence in world affairs")
    assert cited.quote == CHART_TITLE
    assert cited.bbox == (310.0, 406.0, 525.0, 636.0)  # the title and the chart under it
    assert [r.bbox for r in cited.regions] == [cited.bbox]


def test_without_the_layout_the_title_is_boxed_alone() -> None:
    cited = _first_citation(
        "who say the U.S. will have more influence in world affairs", AnswerOptions()
    )
    assert cited.bbox == (314.0, 406.0, 523.0, 440.0)


def test_a_caption_is_boxed_with_the_figure_above_it() -> None:
    cited = _first_citation("What is shown in Figure 1?")
    assert cited.quote.startswith("Figure 1: Growth of the partisan gap")
    assert cited.bbox == (108.0, 72.0, 504.0, 330.0)


def test_the_end_of_a_paragraph_above_a_chart_is_not_a_title() -> None:
    cited = _first_citation("has the partisan gap widened since the spring")
    assert "widened since the spring" in cited.quote
    assert cited.bbox[3] <= 460.0  # the paragraph's own lines, not the chart below


def test_a_short_title_over_a_wide_table_of_figures_names_all_of_it() -> None:
    title: Box = (72.0, 100.0, 200.0, 112.0)
    table: Box = (72.0, 120.0, 540.0, 300.0)
    cells = [
        TableCell(row=r, col=c, text=text, bbox=(x0, 120.0 + 20 * r, x0 + 80, 132.0 + 20 * r))
        for r in range(6)
        for c, (x0, text) in enumerate([(72.0, "Net sales"), (300.0, "14,694"), (420.0, "(1.5)")])
    ]
    page = Page(
        number=1,
        width=612,
        height=792,
        engine=EngineInfo(name="test"),
        blocks=[
            _block(0, BlockType.text, title, "Revenue by segment"),
            Block(id="p1-b1", type=BlockType.table, bbox=table, text="| |", cells=cells),
        ],
    )
    layouts = PageLayouts(lambda _doc_id, _number: page)
    assert layouts.titled("a" * 64, 1, title, caption=False) == table
