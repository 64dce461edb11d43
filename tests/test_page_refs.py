"""A question that names a page or a figure ("on page 17", "slide 4", "Figure 3") is
searched and answered there: the page as the document prints its numbers, a figure by its
caption, in the first of the search's documents that has it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest

from doubles.builders import one_line_chunk
from doubles.fakes import HashEmbedder
from ingest.cards.cards import document_card
from ingest.pipeline.pipeline import FileStatus, IngestOptions
from ocr_engine.engines.extract import extract_document
from ocr_engine.layout.furniture import printed_number
from ocr_engine.options import ExtractOptions, OcrMode
from retrieval.answer.retriever import Retriever
from retrieval.doc_card import Contents, DocumentCard, PrintedRun
from retrieval.index.edge_store import EdgeStore
from retrieval.schema import QueryRequest
from retrieval.search.doc_names import Named, NamedDocuments
from retrieval.search.page_refs import PageRef, caption_label, page_ref
from retrieval.search.search import Place
from server.services import Services, build_services
from server.settings import Settings

NEVER = ExtractOptions(ocr=OcrMode.never)


@pytest.mark.parametrize(
    ("question", "ref"),
    [
        ("What does the chart on page 12 show?", PageRef(printed=(12, 12))),
        ("Summarise pages 4-6 of the report.", PageRef(printed=(4, 6))),
        ("What is listed on pages 8 to 9?", PageRef(printed=(8, 9))),
        ("Which items does slide 3 show?", PageRef(nth=3)),
        ("What does Figure 5 plot?", PageRef(label="figure 5")),
        ("What does Fig. 7 compare?", PageRef(label="figure 7")),
        ("What is the last row of table 4?", PageRef(label="table 4")),
    ],
)
def test_the_place_a_question_names(question: str, ref: PageRef) -> None:
    assert page_ref(question) == ref


@pytest.mark.parametrize(
    "question",
    [
        "What was Netflix's revenue in 2017?",
        "How many pages does the website address appear on?",
        "What page has an eight-pointed snowflake image?",
        "What was the first quarter's operating income?",
        "What is written on the second page?",
        "What does the cover page show?",
        "What is on page two?",
    ],
)
def test_questions_that_name_no_place(question: str) -> None:
    assert page_ref(question) is None


def test_a_place_is_read_as_the_document_numbers_its_pages() -> None:
    report = Contents(
        pages=30,
        printed=[PrintedRun(first=4, last=24, offset=3)],  # cover and contents unnumbered
        captions={"figure 3": 12},
    )
    assert PageRef(printed=(17, 17)).pages(report) == (20, 20)
    assert PageRef(printed=(26, 26)).pages(report) == (26, 26), "a number it prints nowhere"
    assert PageRef(nth=2).pages(report) == (2, 2), "the second page is counted, not printed"
    assert PageRef(nth=-1).pages(report) == (30, 30)
    assert PageRef(label="figure 3").pages(report) == (12, 12)
    assert PageRef(label="figure 4").pages(report) is None
    assert PageRef(printed=(40, 40)).pages(report) is None, "past its last page"
    assert PageRef(printed=(17, 17)).pages(Contents()) == (17, 17), "contents unknown: counted"


@pytest.mark.parametrize(
    ("text", "number"),
    [("17", 17), ("- 17 -", 17), ("Page 17 of 40", 17), ("xii", None), ("17 Net sales", None)],
)
def test_the_number_a_page_prints(text: str, number: int | None) -> None:
    assert printed_number(text) == number


@pytest.mark.parametrize(
    ("text", "caption", "label"),
    [
        ("Figure 3: Comparison of querying methods.", True, ("figure 3", True)),
        ("Fig. 1. Technology tree of RAG research.", True, ("figure 1", True)),
        ("FIG.2.", False, ("figure 2", True)),
        ("Table 11 shows the prompt used for summarization.", True, ("table 11", False)),
        ("Table 6, RAPTOR paired with UnifiedQA sets a new state of the art.", False, None),
        ("Table 2.1: Regional sales", True, None),
    ],
)
def test_a_caption_label(text: str, caption: bool, label: tuple[str, bool] | None) -> None:
    assert caption_label(text, caption=caption) == label


def _report(tmp_path: Path) -> Path:
    """A cover, then five pages that print their numbers 1-5 at the foot; a figure captioned on
    printed page 3, a table mentioned on page 1 and captioned on page 4."""
    doc = pymupdf.open()
    cover = doc.new_page(width=612, height=792)
    cover.insert_text((72, 120), "Annual Review of Harbour Operations", fontsize=20)
    bodies = {  # the words of each question stand on other pages more often than on its own
        1: [
            "Table 2, below, gives the tonnage.",
            "What does Table 2 show? Table 2 is given below.",
        ],
        2: [
            "Figure 2 shows what the berths show.",
            "What does the last page say? What is on page 5?",
        ],
        3: ["Figure 2: Berths occupied by month.", "The figure shows 2 berths, as figures show."],
        4: ["Table 2: Tonnage by terminal", "North terminal 41,200 tonnes."],
        5: ["The warranty on the new cranes runs for five years.", "Contact the harbour office."],
    }
    for number, lines in bodies.items():
        page = doc.new_page(width=612, height=792)
        for i, text in enumerate(lines):
            page.insert_text((72, 100 + 20 * i), text, fontsize=11)
        page.insert_text((300, 770), str(number), fontsize=9)
    path = tmp_path / "scan_0001.pdf"
    path.write_bytes(doc.tobytes())
    doc.close()
    return path


def test_ingest_reads_the_printed_numbers_and_the_captions(tmp_path: Path) -> None:
    contents = document_card(extract_document(_report(tmp_path), options=NEVER)).contents
    assert contents.pages == 6
    assert [(r.first, r.last, r.offset) for r in contents.printed] == [(2, 6, 1)]
    assert contents.captions == {"figure 2": 4, "table 2": 5}, "set-off captions, not mentions"


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    svc = build_services(
        Settings(data_dir=tmp_path / "data", ocr=OcrMode.never),
        embedder=HashEmbedder(),
        options=IngestOptions(extract=NEVER, extract_processes=0),
    )
    yield svc
    svc.close()


@pytest.mark.parametrize(
    ("question", "page"),
    [
        ("What does Figure 2 show?", 4),
        ("What is on page 5?", 6),
        ("What is given in Table 2?", 5),
    ],
)
def test_a_named_place_is_searched_and_cited_there(
    services: Services, tmp_path: Path, question: str, page: int
) -> None:
    results = services.sync.ingest_paths([_report(tmp_path)])
    assert results[0].status is FileStatus.ok, results[0].error
    services.retriever.min_support = 0.0  # the hashing embedder's similarities are noise
    response = services.retriever.query(QueryRequest(question=question))
    assert page in {region.page for region in response.hits[0].regions}, "a chunk may span pages"
    assert all(hit.chunk_id != "card" for hit in response.hits), "a card point is never a hit"
    assert response.citations and response.citations[0].page == page
    if "Figure" in question:  # a figure the question names: its caption is cited first
        assert response.citations[0].quote.startswith("Figure 2:")


def _chunks_on(doc_id: str, pages: int, text: str) -> list:  # type: ignore[type-arg]
    return [
        one_line_chunk(p, f"{text} ({'x' * p})", doc_id=doc_id, source=f"{doc_id[0]}.pdf")
        for p in range(1, pages + 1)
    ]


def test_the_place_is_sought_in_the_first_document_that_has_it(tmp_path: Path) -> None:
    short, long = "a" * 64, "b" * 64
    chunks = _chunks_on(short, 3, "Harbour cranes lift containers.") + _chunks_on(
        long, 12, "Tugboats moor at the berths."
    )
    embedder = HashEmbedder(dim=32)
    store = EdgeStore(tmp_path / "index", embedder.dim)
    store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
    cards = {
        short: Named("a.pdf", DocumentCard(contents=Contents(pages=3))),
        long: Named("b.pdf", DocumentCard(contents=Contents(pages=12))),
    }
    retriever = Retriever(embedder, store, names=NamedDocuments(lambda: cards))
    plain = retriever.search("What do harbour cranes lift?", 3)
    assert plain[0].chunk.doc_id == short, "the short document matches the words best"
    ranked = retriever.ranked("What do harbour cranes lift on page 9?", 3)
    assert (ranked.hits[0].chunk.doc_id, ranked.hits[0].chunk.page) == (long, 9)
    assert ranked.place == Place(long, 9, 9)
    store.close()


def test_the_chunk_holding_a_named_figures_caption_comes_first(tmp_path: Path) -> None:
    doc_id = "c" * 64
    prose = "What does Figure 3 show? Figure 3 shows the results; figure 3 again."
    texts = [*(f"{prose} ({'x' * i})" for i in range(5)), "Figure 3: Comparison of methods."]
    chunks = [
        one_line_chunk(6, text, doc_id=doc_id, source="paper.pdf").model_copy(
            update={"chunk_id": f"c{i:04d}"}
        )
        for i, text in enumerate(texts)
    ]
    embedder = HashEmbedder(dim=32)
    store = EdgeStore(tmp_path / "index", embedder.dim)
    store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
    contents = Contents(pages=9, captions={"figure 3": 6})
    cards = {doc_id: Named("paper.pdf", DocumentCard(contents=contents))}
    retriever = Retriever(embedder, store, names=NamedDocuments(lambda: cards))
    assert retriever.search("What does the paper show?", 6)[0].chunk.text != texts[-1]
    ranked = retriever.ranked("What does Figure 3 show?", 5)
    assert ranked.hits[0].chunk.text == texts[-1], "the caption's chunk, not the best match"
    store.close()
