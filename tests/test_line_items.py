"""A question naming a financial measure finds the statement whose line items compute it."""

from __future__ import annotations

from pathlib import Path

import pytest

from doubles.builders import one_line_chunk
from doubles.fakes import HashEmbedder
from retrieval.edge_store import EdgeStore
from retrieval.line_items import line_items, with_line_items
from retrieval.search import Retriever

DOC = "f" * 64
NOTES = (
    "Liquidity. Management watches the current ratio closely; the ratio stayed healthy in fiscal "
    "2021 and we expect it to remain so."
)
BALANCE_SHEET = (
    "Consolidated balance sheets. Cash and equivalents 9,889. Inventories 6,854. Total current "
    "assets 26,291. Accounts payable 2,836. Total current liabilities 9,674."
)
OTHER = [
    "Revenues grew 19% in fiscal 2021 on strong demand for footwear.",
    "The company repurchased shares under its four-year program.",
    "Employees numbered about 73,300 at the end of the year.",
]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is cash ratio in FY2021 for Nike?", "total current liabilities"),
        ("what is the FY2021 inventory turnover ratio for Nike?", "inventories"),
        ("What is EBITDA for Costco in FY2021?", "depreciation and amortization"),
        ("FY2019 cash conversion cycle (CCC) for General Mills?", "accounts payable"),
        ("What is the FY2018 capex amount for 3M?", "purchases of property plant and equipment"),
        ("Using the statement of financial position, what is ...", "total current assets"),
        ("Which region had the worst topline performance in 2022?", "net sales"),
        ("Which category performed best (by top line)?", "revenues"),
        ("How did the bottom line change in 2022?", "net income"),
        ("What was diluted EPS in Q2 of fiscal 2024?", "earnings per share"),
        ("How much was spent on R&D in 2015?", "research and development"),
        ("What were SG&A expenses in 2022?", "selling general and administrative"),
        ("Who is Best Buy's CEO?", "chief executive officer"),
    ],
)
def test_a_named_measure_brings_its_line_items(question: str, expected: str) -> None:
    assert any(expected in items for items in line_items(question))
    assert with_line_items(question).startswith(question)


@pytest.mark.parametrize(
    "question",
    [
        "Which road leads to the museum?",
        "Who founded it?",
        "Sign on the bottom lines below.",
        "Which steps do the EPSON printer's reps take?",
    ],
)
def test_words_that_merely_contain_a_measure_add_nothing(question: str) -> None:
    assert with_line_items(question) == question


def test_ebitdar_is_not_ebit() -> None:
    assert line_items("What was EBITDAR in 2022?") == line_items("What was EBITDA in 2022?")
    assert line_items("What was EBIT in 2022?") != line_items("What was EBITDA in 2022?")


def test_the_statement_outranks_a_note_that_repeats_the_measure_name(tmp_path: Path) -> None:
    embedder = HashEmbedder(dim=256)
    texts = [NOTES, BALANCE_SHEET, *OTHER]
    chunks = [
        one_line_chunk(i + 1, t, doc_id=DOC, source="annual-report.pdf")
        for i, t in enumerate(texts)
    ]
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
        question = "What is the current ratio in FY2021?"
        plain = store.search(embedder.embed_query(question), 5, None, text=question)
        assert plain[0].chunk.text == NOTES  # the measure's name alone finds the note
        hits = Retriever(embedder, store).search(question, 5)
        assert hits[0].chunk.text == BALANCE_SHEET
    finally:
        store.close()
