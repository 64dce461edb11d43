"""A question asking which of several things did best or worst is answered by comparing the
parallel statements of sibling sections, not by the first one the search found."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from doubles.builders import one_line_block, one_page_document, table_block
from doubles.fakes import HashEmbedder
from ingest.chunker import chunk_document
from ocr_engine.schema import Block, BlockType
from retrieval.answer import AnswerOptions, extractive_answer
from retrieval.compare import (
    asked_extreme,
    cell_value,
    parallel,
    parallel_labels,
    signed_change,
)
from retrieval.edge_store import EdgeStore
from retrieval.schema import Chunk, QueryRequest, ScoredChunk
from retrieval.search import Retriever

REGIONS = {
    "Las Vegas Strip Resorts": "$8.4 billion in the current year compared to $4.7 billion in the"
    " prior year, an increase of 77%",
    "Regional Operations": "$3.8 billion in the current year compared to $3.4 billion in the"
    " prior year, an increase of 12%",
    "MGM China": "$674 million in the current year compared to $1.2 billion in the prior year,"
    " a decrease of 44%",
}
WORST = "Which region had the worst net revenues performance during 2022?"


def test_the_question_names_the_extreme_it_asks_for() -> None:
    assert asked_extreme(WORST) == -1
    assert asked_extreme("Which product category performed the best in Q2?") == 1
    assert asked_extreme("Which activity brought in the most (or lost the least) cash?") == 1
    assert asked_extreme("Which segment had the highest and which the lowest margin?") == 0
    assert asked_extreme("What were the best net revenues ever?") == 0  # no "which"


def test_a_statement_states_its_change_with_its_sign() -> None:
    assert signed_change("Net revenues of $674 million ..., a decrease of 44%; and") == -44
    assert signed_change("Sales in Safety were up 10.2 percent in U.S. dollars.") == Decimal("10.2")
    assert signed_change("Net sales declined by 3.5% in 2022.") == Decimal("-3.5")
    assert signed_change("Net revenues of $3.8 billion, 12% of the total.") is None


def test_parallel_statements_open_alike_and_share_most_words() -> None:
    vegas = f"• Net revenues of {REGIONS['Las Vegas Strip Resorts']};"
    china = f"• Net revenues of {REGIONS['MGM China']}; and"
    assert parallel(vegas, china)
    assert not parallel(vegas, f"Consolidated net revenues of {REGIONS['MGM China']}")
    assert not parallel(vegas, "Net revenues rose in every region but one, led by the Strip.")
    quarter = (
        "• Net revenues of $991 million in the current quarter compared to $900 million in the"
        " prior year quarter, an increase of 10%;"
    )
    assert not parallel(vegas, quarter)  # a quarter is not compared with a year


def test_parallel_row_labels_open_and_end_alike() -> None:
    operating = "Total cash provided by operating activities"
    assert parallel_labels(operating, "Total cash used in financing activities")
    assert not parallel_labels(operating, "Total cash and cash equivalents")
    assert not parallel_labels(operating, "Net cash provided by operating activities")


def test_a_cell_reads_as_one_signed_number() -> None:
    assert cell_value("(1,806)") == -1806
    assert cell_value("$ 1,824") == 1824
    assert cell_value("-3.5%") == Decimal("-3.5")
    assert cell_value("—") is None
    assert cell_value("12 / 14") is None
    assert cell_value("(3") is None


CASH_FLOWS = [
    ["", "January 28, 2023", "January 29, 2022"],
    ["Net earnings", "1,419", "2,454"],
    ["Total cash provided by operating activities", "1,824", "3,252"],
    ["Additions to property and equipment", "(930)", "(737)"],
    ["Total cash used in investing activities", "(962)", "(1,372)"],
    ["Repurchase of common stock", "(1,014)", "(3,502)"],
    ["Total cash used in financing activities", "(1,806)", "(4,297)"],
]
MOST = (
    "Which activity brought in the most (or lost the least) cash in the year to January 28, 2023?"
)


def test_the_most_of_a_tables_parallel_rows_is_cited_first() -> None:
    """The question's words meet the financing row best; the operating row brought in most."""
    table = table_block("p1-b0", CASH_FLOWS, (72.0, 320.0, 440.0, 540.0), 100.0)
    document = one_page_document([table], doc_id="c" * 64, source="10-K.pdf")
    [chunk] = chunk_document(document, count_tokens=lambda t: len(t.split()), max_tokens=200)
    hits = [ScoredChunk(chunk=chunk, score=0.9)]
    asked = "What was the total cash used in financing activities in the year to January 28, 2023?"
    plain = extractive_answer(asked, hits, max_sentences=1)
    assert plain.text is not None and plain.text.startswith(
        "Total cash used in financing activities, January 28, 2023: (1,806)"
    )
    question = MOST.replace("activity", "financing activity")
    unasked = extractive_answer(question.replace("Which", "What"), hits)  # no "which": no compare
    assert unasked.text is not None and unasked.text.startswith("Total cash used in financing")
    most = extractive_answer(question, hits)
    assert most.text is not None
    assert most.text.startswith(
        "Total cash provided by operating activities, January 28, 2023: 1,824"
    )
    assert "Net earnings" not in most.text  # a row of another pattern is not compared
    labels = [c.quote.split(",")[0] for c in most.citations]  # most first, least last
    assert labels == [
        f"Total cash {kind} activities"
        for kind in ("provided by operating", "used in investing", "used in financing")
    ]


def _report() -> list[Chunk]:
    """One page: a results section with a sub-section per region, each stating its revenues."""
    blocks: list[Block] = [
        one_line_block("p1-b0", BlockType.section_header, (72, 60, 400, 74), "Full Year Results")
    ]
    top = 90.0
    for n, (region, change) in enumerate(REGIONS.items()):
        box = (72, top, 300, top + 12)
        heading = one_line_block(f"p1-h{n}", BlockType.section_header, box, region)
        heading.level = 2
        text = f"• Net revenues of {change}; and"
        bullet = one_line_block(f"p1-t{n}", BlockType.text, (72, top + 16, 540, top + 28), text)
        blocks += [heading, bullet]
        top += 60
    document = one_page_document(blocks, doc_id="m" * 64, source="earnings.pdf")
    chunks = chunk_document(document, count_tokens=lambda t: len(t.split()), max_tokens=64)
    assert len(chunks) == len(REGIONS)
    return chunks


def _of(chunks: list[Chunk], region: str) -> Chunk:
    return next(c for c in chunks if c.section_path[-1] == region)


def test_the_worst_of_the_sibling_sections_is_cited_first() -> None:
    chunks = _report()
    hits = [ScoredChunk(chunk=_of(chunks, "Regional Operations"), score=0.9)]
    options = AnswerOptions(around=lambda c: chunks)
    answer = extractive_answer(WORST, hits, options=options)
    assert answer.text is not None
    assert answer.text.startswith("MGM China — Net revenues of $674 million")
    assert "decrease of 44%" in answer.citations[0].quote
    assert answer.citations[0].bbox[1] == 226  # the China bullet's line, not its heading
    assert "Regional Operations — Net revenues of $3.8 billion" in answer.text  # what it beat

    best = "Which region had the best net revenues performance during 2022?"
    top = extractive_answer(best, hits, options=options)
    assert top.text is not None and top.text.startswith("Las Vegas Strip Resorts — Net revenues")

    asked = "What were net revenues of Regional Operations during 2022?"  # no comparison asked
    plain = extractive_answer(asked, hits, options=options)
    assert plain.text is not None and plain.text.startswith("Net revenues of $3.8 billion")
    alone = extractive_answer(WORST, hits)  # nothing around the hit to compare it with
    assert alone.text is not None and alone.text.startswith("Net revenues of $3.8 billion")


def test_a_comparable_sentence_chosen_after_another_still_leads() -> None:
    """The best-supported sentence states no change (a release's dateline): the first chosen
    one that has parallels is compared, and the extreme leads."""
    chunks = _report()
    dateline = chunks[0].model_copy(
        update={
            "chunk_id": "c0090",
            "section_path": ["Full Year Results"],
            "text": "The region results were reported for 2022.",
        }
    )
    hits = [
        ScoredChunk(chunk=dateline, score=0.95),
        ScoredChunk(chunk=_of(chunks, "Regional Operations"), score=0.9),
    ]
    alone = extractive_answer(WORST, hits)
    assert alone.text is not None and alone.text.startswith("The region results")
    answer = extractive_answer(WORST, hits, options=AnswerOptions(around=lambda c: chunks))
    assert answer.text is not None
    assert answer.text.startswith("MGM China — Net revenues of $674 million")
    order = ["MGM China", "Regional Operations", "Las Vegas Strip Resorts"]  # worst first
    assert len(answer.citations) == len(order)
    for citation, region in zip(answer.citations, order, strict=True):
        assert REGIONS[region] in citation.quote
        assert f"{region} — Net revenues of {REGIONS[region]} [" in answer.text  # no "; and"
    assert "The region results" not in answer.text  # three regions compared fill the answer


def test_the_retriever_compares_the_sections_around_its_hit(tmp_path: Path) -> None:
    chunks = _report()
    embedder = HashEmbedder(dim=128)
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
        retriever = Retriever(embedder, store, min_support=0.0)  # hash vectors are barely alike
        home = _of(chunks, "Regional Operations")
        assert {c.chunk_id for c in retriever.around(home)} == {
            c.chunk_id for c in chunks if c is not home
        }
        response = retriever.query(QueryRequest(question=WORST, top_k=1))
        assert response.answer is not None and response.answer.startswith("MGM China — ")
        assert "decrease of 44%" in response.citations[0].quote
    finally:
        store.close()


RESULTS = [
    ["Model", "Overall Acc.", "Commonsense Acc."],
    ["Random", "49.27", "50.28"],
    ["LLaMa", "44.03", "48.23"],
    ["GPT-4", "62.03", "63.01"],
    ["+ CausalCoT", "70.40", "83.35"],
    ["Average", "56.43", "61.22"],
]


def _results_hits(rows: list[list[str]]) -> list[ScoredChunk]:
    table = table_block("p1-b0", rows, (72.0, 200.0, 320.0, 440.0), 100.0)
    caption = one_line_block(
        "p1-b1", BlockType.caption, (72, 240, 540, 252), "Table 2: Performance of all models."
    )
    document = one_page_document([table, caption], doc_id="r" * 64, source="paper.pdf")
    chunks = chunk_document(document, count_tokens=lambda t: len(t.split()), max_tokens=200)
    return [ScoredChunk(chunk=c, score=0.9) for c in chunks]


def test_a_results_tables_column_named_by_the_question_is_compared() -> None:
    """The rows are things (models), the column the question's measure: the answer is the
    extreme row's cell, not the caption; a whole's row ("Average") is none of the things."""
    hits = _results_hits(RESULTS)
    lowest = extractive_answer("Which model had the lowest overall accuracy in Table 2?", hits)
    assert lowest.text is not None
    assert lowest.text.startswith("LLaMa, Overall Acc.: 44.03 [1] Random, Overall Acc.: 49.27 [2]")
    highest = extractive_answer("Which model had the highest overall accuracy?", hits)
    assert highest.text is not None and highest.text.startswith("+ CausalCoT, Overall Acc.: 70.40")
    assert "Average" not in highest.text
    plain = extractive_answer("What overall accuracy did the models have in Table 2?", hits)
    assert plain.text is not None and not plain.text.startswith("LLaMa")  # nothing compared


def test_a_column_of_line_items_is_not_compared() -> None:
    """Rows that name the question's measure are line items of one thing, not things to rank."""
    rows = [["", "Sales growth"], ["Net sales", "4"], ["Net sales in Europe", "2"]]
    lowest = "Which region had the lowest net sales growth?"  # compared, Europe's 2 would lead
    answer = extractive_answer(lowest, _results_hits(rows))
    assert answer.text is not None and answer.text.startswith("Net sales, Sales growth: 4 [1]")
