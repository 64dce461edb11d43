"""A question of a section as a whole is answered by the section's heading, cited with what it
heads (boxed, the heading drawn and shown above it in the crop), when the heading is more like the
question than any sentence under it; otherwise the sentence that answers leads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page, TableCell
from retrieval.answer import Answer, AnswerOptions, Lookups, Scope, answer_texts, extractive_answer
from retrieval.answer.page_layout import PageLayouts
from retrieval.index.embedder import Embedder
from retrieval.schema import ScoredChunk

Box = tuple[float, float, float, float]
HEADING = "Button functions during a workout"
HEADING_BOX: Box = (57.0, 100.0, 300.0, 114.0)
STEPS = [
    "Press the Up button to pause or resume the workout.",
    "Press the Down button to switch between the workout screens.",
    "Press and hold the Up button to end the workout.",
]
STEPS_BOX: Box = (57.0, 120.0, 400.0, 174.0)
CHARGING = [
    "Connect the charging cradle to a power adapter before you charge the watch.",
    "The battery charges fully in about two hours.",
]


def _block(index: int, kind: BlockType, box: Box, lines: list[str]) -> Block:
    height = (box[3] - box[1]) / len(lines)
    return Block(
        id=f"p1-b{index}",
        type=kind,
        bbox=box,
        text="\n".join(lines),
        lines=[
            Line(text=text, bbox=(box[0], box[1] + i * height, box[2], box[1] + (i + 1) * height))
            for i, text in enumerate(lines)
        ],
    )


def _document() -> Document:
    blocks = [
        _block(0, BlockType.section_header, HEADING_BOX, [HEADING]),
        _block(1, BlockType.text, STEPS_BOX, STEPS),
        _block(2, BlockType.section_header, (57.0, 300.0, 300.0, 314.0), ["Charging the watch"]),
        _block(3, BlockType.text, (57.0, 320.0, 500.0, 350.0), CHARGING),
    ]
    page = Page(number=1, width=612, height=792, engine=EngineInfo(name="test"), blocks=blocks)
    return Document(doc_id="e" * 64, source="watch.pdf", page_count=1, pages=[page])


DOCUMENT = _document()
OPTIONS = AnswerOptions(
    lookups=Lookups(layout=PageLayouts(lambda _doc_id, n: DOCUMENT.pages[n - 1]))
)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    from retrieval.index.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def _answer(question: str, embedder: Embedder, options: AnswerOptions = OPTIONS) -> Answer:
    chunks = chunk_document(DOCUMENT, count_tokens=lambda t: len(t.split()))
    hits = [ScoredChunk(chunk=c, score=1.0) for c in chunks]
    return extractive_answer(question, hits, embedder=embedder, options=options)


def test_a_question_of_a_whole_section_is_answered_by_its_heading_and_what_it_heads(
    embedder: Embedder,
) -> None:
    answer = _answer("How many button functions are there during a workout?", embedder)
    first = answer.citations[0]
    assert first.quote == f"{HEADING} — {' '.join(STEPS)}"
    assert answer.text is not None and answer.text.startswith(f"{HEADING} — {STEPS[0]} [1]")
    assert first.bbox == STEPS_BOX  # the evidence is what the heading heads
    drawn = first.highlight_url.split("highlight=")[1].split(";")
    assert drawn == ["57.0,100.0,300.0,114.0", "57.0,120.0,400.0,174.0"]  # heading, then steps
    assert "57.0,100.0,400.0,174.0" in first.crop_url  # the crop shows the heading above them


def test_a_sentence_that_answers_leads_over_its_sections_heading(embedder: Embedder) -> None:
    answer = _answer("How long does the battery take to charge fully?", embedder)
    assert answer.citations[0].quote == CHARGING[1]


def test_without_the_page_layout_no_heading_is_cited(embedder: Embedder) -> None:
    answer = _answer(
        "How many button functions are there during a workout?", embedder, AnswerOptions()
    )
    assert all(not c.quote.startswith(HEADING) for c in answer.citations)


def test_a_heading_off_the_pages_asked_about_is_not_cited(embedder: Embedder) -> None:
    options = replace(OPTIONS, scope=Scope(pages=(2, 3)))  # a page range the chunks do not reach
    answer = _answer("How many button functions are there during a workout?", embedder, options)
    assert all(not c.quote.startswith(HEADING) for c in answer.citations)


def test_a_chunks_heading_is_among_the_texts_embedded_ahead() -> None:
    chunks = chunk_document(DOCUMENT, count_tokens=lambda t: len(t.split()))
    under = next(c for c in chunks if c.section_path[-1:] == [HEADING])
    assert HEADING in answer_texts(under)


def test_a_heading_far_above_a_chunk_that_goes_on_its_section_is_not_cited(
    embedder: Embedder,
) -> None:
    chunks = chunk_document(DOCUMENT, count_tokens=lambda t: len(t.split()))
    under = next(c for c in chunks if c.section_path[-1:] == [HEADING])
    lower = [
        line.model_copy(update={"bbox": (b[0], b[1] + 300, b[2], b[3] + 300)})
        for line in under.lines
        if (b := line.bbox)
    ]  # the rest of a long section, far down the page under the same heading
    rest = under.model_copy(update={"lines": lower})
    question = "How many button functions are there during a workout?"
    hits = [ScoredChunk(chunk=rest, score=1.0)]
    answer = extractive_answer(question, hits, embedder=embedder, options=OPTIONS)
    assert answer.citations and not answer.citations[0].quote.startswith(HEADING)
    near = extractive_answer(
        question, [ScoredChunk(chunk=under, score=1.0)], embedder=embedder, options=OPTIONS
    )
    assert near.citations[0].quote.startswith(HEADING)


def test_a_heading_heads_all_of_the_table_under_it_where_a_title_names_the_part_under_it() -> None:
    heading: Box = (45.0, 442.0, 121.0, 458.0)
    table: Box = (45.0, 461.0, 558.0, 602.0)
    prose = "wakes up the voice assistant when the screen is on and the watch is unlocked"
    cells = [
        TableCell(row=r, col=c, text=text, bbox=(x0, 465.0 + 40 * r, x1, 495.0 + 40 * r))
        for r in range(3)
        for c, (x0, x1, text) in enumerate([(45.0, 120.0, "Press and hold"), (130.0, 550.0, prose)])
    ]
    blocks = [
        _block(0, BlockType.section_header, heading, ["Down button"]),
        Block(id="p1-b1", type=BlockType.table, bbox=table, text="| |", cells=cells),
    ]
    page = Page(number=1, width=612, height=792, engine=EngineInfo(name="test"), blocks=blocks)
    layout = PageLayouts(lambda _doc_id, _n: page)
    assert layout.headed("d", 1, heading) == table
    assert layout.titled("d", 1, heading, False) == (45.0, 461.0, 125.0, 602.0)  # a chart's cut


def _workout_answer(embedder: Embedder, functions: list[tuple[str, str]]) -> Answer:
    """The answer to a workout question over a page whose heading heads a table of
    `functions` (operation, function)."""
    heading: Box = (57.0, 100.0, 300.0, 114.0)
    rows = ["| Operation | Function |", "| --- | --- |"]
    rows += [f"| {operation} | {function} |" for operation, function in functions]
    bottom = 120.0 + 20 * len(rows)
    table = Block(
        id="p1-b1",
        type=BlockType.table,
        bbox=(57.0, 120.0, 500.0, bottom),
        text="\n".join(rows),
        lines=[
            Line(text=row, bbox=(57.0, 120.0 + 20 * i, 500.0, 140.0 + 20 * i))
            for i, row in enumerate(rows)
        ],
    )
    charging = [
        b.model_copy(
            update={"bbox": (b.bbox[0], b.bbox[1] + bottom, b.bbox[2], b.bbox[3] + bottom)}
        )
        for b in DOCUMENT.pages[0].blocks[2:]
    ]
    blocks = [
        _block(0, BlockType.section_header, heading, [HEADING]),
        table,
        *charging,  # the charging section: sentences to weigh the heading by
    ]
    page = Page(number=1, width=612, height=1600, engine=EngineInfo(name="test"), blocks=blocks)
    document = Document(doc_id="d" * 64, source="t.pdf", page_count=1, pages=[page])
    chunks = chunk_document(document, count_tokens=lambda t: len(t.split()), max_tokens=400)
    options = AnswerOptions(lookups=Lookups(layout=PageLayouts(lambda _doc_id, _n: page)))
    return extractive_answer(
        "How many button functions are there during a workout?",
        [ScoredChunk(chunk=c, score=1.0) for c in chunks],
        embedder=embedder,
        options=options,
    )


def test_a_heading_over_a_table_quotes_its_rows(embedder: Embedder) -> None:
    functions = [
        ("Press the Up button", "Pause the workout."),
        ("Press the Down button", "Switch screens. Only on the Pro"),
        ("Press and hold the Up button", "Finish the workout"),
    ]
    answer = _workout_answer(embedder, functions)
    first = answer.citations[0]
    assert first.bbox == (57.0, 120.0, 500.0, 220.0)
    rows_said = (  # a row's cells a comma apart, rows a semicolon apart, no closing stop
        f"{HEADING} — Operation, Function; Press the Up button, Pause the workout; "
        "Press the Down button, Switch screens. Only on the Pro; "
        "Press and hold the Up button, Finish the workout"
    )
    assert first.quote == rows_said
    # every row: a full stop inside a cell does not end what the answer says
    assert answer.text is not None and answer.text.startswith(f"{rows_said} [1]")


def test_a_long_tables_rows_are_said_in_part_and_quoted_whole(embedder: Embedder) -> None:
    functions = [
        (f"Press the button {n} times", f"Open the workout screen number {n}") for n in range(2, 14)
    ]
    answer = _workout_answer(embedder, functions)
    assert answer.text is not None and answer.text.startswith(f"{HEADING} — Operation, Function;")
    said = answer.text.split(" [1]")[0]
    assert said.endswith(" …") and len(said.split()) <= 60 + 12
    assert "Open the workout screen number 13" in answer.citations[0].quote
