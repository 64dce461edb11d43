"""Documents a question names: matched by their file names, searched alone."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from doubles.builders import one_line_chunk
from doubles.fakes import HashEmbedder
from retrieval.answer.retriever import Retriever
from retrieval.doc_card import DocKind, DocumentCard
from retrieval.index.edge_store import EdgeStore
from retrieval.schema import Chunk, QueryRequest, SearchFilter
from retrieval.search.doc_names import Named, NamedDocuments, name_words

SOURCES = {
    "a" * 64: "3M_2018_10K.pdf",
    "b" * 64: "3M_2022_10K.pdf",
    "c" * 64: "BESTBUY_2023_10K.pdf",
    "d" * 64: "MGMRESORTS_2022Q4_EARNINGS.pdf",
    "e" * 64: "User_Manual_1500S_Classic_EN.pdf",
    "f" * 64: "san-francisco-11-contents.pdf",
    "9" * 64: "COCACOLA_2017_10K.pdf",
}


def _named(question: str) -> list[str]:
    return [SOURCES[d] for d in NamedDocuments(lambda: SOURCES).match(question).doc_ids]


def test_name_words_drop_numbers_stopwords_and_short_words() -> None:
    assert name_words("3M_2018_10K.pdf") == {"3m", "10k"}
    assert name_words("User_Manual_1500S_Classic_EN.pdf") == {"user", "manual", "1500s", "classic"}
    assert name_words("reports/san-francisco-11-contents.pdf") == {"san", "francisco", "contents"}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the FY2018 capital expenditure amount for 3M?", ["3M_2018_10K.pdf"]),
        ("Is 3M a capital-intensive business based on FY2022 data?", ["3M_2022_10K.pdf"]),
        ("Are Best Buy's gross margins consistent?", ["BESTBUY_2023_10K.pdf"]),
        ("Highest EBITDAR for MGM during FY2022?", ["MGMRESORTS_2022Q4_EARNINGS.pdf"]),
        ("What is the FY2017 return on assets for Coca Cola?", ["COCACOLA_2017_10K.pdf"]),
        ("Which lines run in San Francisco?", ["san-francisco-11-contents.pdf"]),
    ],
)
def test_questions_that_name_a_file(question: str, expected: list[str]) -> None:
    assert _named(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "how does the user reset the manual settings?",  # lower case: ordinary words, not names
        "What is the total revenue in 2022?",  # a year alone names nothing
        "What Is The Objective Of The Plan?",  # stopwords and words no file name holds
        "",
    ],
)
def test_questions_that_name_no_file(question: str) -> None:
    assert _named(question) == []


def test_names_follow_the_index() -> None:
    sources = {"a" * 64: "NIKE_2021_10K.pdf"}
    names = NamedDocuments(lambda: dict(sources))
    assert names.match("What did Nike earn?").doc_ids == ["a" * 64]
    sources["b" * 64] = "COSTCO_2021_10K.pdf"
    del sources["a" * 64]
    assert names.match("What did Nike earn?").doc_ids == []
    assert names.match("What did Costco earn?").doc_ids == ["b" * 64]


@pytest.mark.parametrize(
    ("question", "rest"),
    [
        ("What is Best Buy's FY2019 inventory?", "What is FY2019 inventory?"),
        ("Which region led MGM's EBITDAR in 2022?", "Which region led EBITDAR in 2022?"),
        ("Is 3M capital-intensive?", "Is capital-intensive?"),
        ("What is the total revenue?", "What is the total revenue?"),
    ],
)
def test_the_rest_of_the_question_leaves_out_the_names(question: str, rest: str) -> None:
    assert NamedDocuments(lambda: SOURCES).match(question).rest == rest


def _chunk(doc_id: str, source: str, page: int, text: str) -> Chunk:
    return one_line_chunk(page, text, doc_id=doc_id, source=source)


def _index(tmp_path: Path, chunks: list[Chunk]) -> tuple[HashEmbedder, EdgeStore]:
    embedder = HashEmbedder(dim=32)
    store = EdgeStore(tmp_path / "index", embedder.dim)
    store.upsert(chunks, embedder.embed_documents([c.embed_text for c in chunks]))
    return embedder, store


def test_a_named_document_is_searched_alone_and_a_filter_wins(tmp_path: Path) -> None:
    other, named = "a" * 64, "b" * 64
    sources = {other: "BOEING_2022_10K.pdf", named: "PFIZER_2021_10K.pdf"}
    text = "Property, plant and equipment grew to 13,745 million dollars."
    chunks = [_chunk(other, sources[other], p, text + " Aircraft." * p) for p in range(1, 4)] + [
        _chunk(named, sources[named], 7, "Vaccines and medicines. Plant equipment grew.")
    ]
    embedder, store = _index(tmp_path, chunks)
    names = NamedDocuments(lambda: sources)
    question = "Did Pfizer grow its property, plant and equipment?"

    plain = Retriever(embedder, store).search(question, 3)
    assert plain[0].chunk.doc_id == other  # the text of the other filing matches better
    first = Retriever(embedder, store, names=names).ranked(question, 3)
    # one page of its own, and still no page of the other filing: it would answer for Pfizer
    assert [h.chunk.doc_id for h in first.hits] == [named]
    assert first.names is not None and first.names.doc_ids == [named]  # the answer reuses it

    chosen = SearchFilter(doc_ids=[other])
    filtered = Retriever(embedder, store, names=names).search(question, 3, chosen)
    assert {h.chunk.doc_id for h in filtered} == {other}
    store.close()


def test_a_name_the_content_does_not_back_is_ignored(tmp_path: Path) -> None:
    other, named = "a" * 64, "b" * 64
    sources = {other: "cloud_report.pdf", named: "US-Views-on-China.pdf"}
    text = "The largest cloud provider runs data centers in many cities."
    chunks = [_chunk(other, sources[other], p, f"{text} Site {p}.") for p in range(1, 13)]
    chunks.append(_chunk(named, sources[named], 1, "Survey of opinions on trade and tariffs."))
    embedder, store = _index(tmp_path, chunks)
    question = "How many data centers does China's largest cloud provider have?"
    assert NamedDocuments(lambda: sources).match(question).doc_ids == [named]

    hits = Retriever(embedder, store, names=NamedDocuments(lambda: sources)).search(question, 5)
    assert {h.chunk.doc_id for h in hits} == {other}
    store.close()


def _card(organisation: str, year: int, *aliases: str) -> DocumentCard:
    return DocumentCard(
        organisation=organisation, kind=DocKind.annual_report, year=year, aliases=list(aliases)
    )


CARDED: dict[str, str | Named] = {
    "1" * 64: Named("doc_0001.pdf", _card("Adobe Inc", 2021, "adobe")),
    "2" * 64: Named("doc_0002.pdf", _card("Adobe Inc", 2022, "adobe")),
    "3" * 64: Named("doc_0003.pdf", _card("Best Buy Co., Inc", 2023, "bestbuy")),
    "4" * 64: Named("scan_0001.pdf", _card("MGM Resorts International", 2022, "mgm", "mgmresorts")),
    "5" * 64: "Report.pdf",
    "6" * 64: "Safety Data Sheet.pdf",
    "7" * 64: "report final v2.pdf",
}


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What was Adobe's revenue in FY2022?", ["2" * 64]),  # the card's year breaks the tie
        ("What was Adobe's revenue in FY2021?", ["1" * 64]),
        ("Are Best Buy's gross margins consistent?", ["3" * 64]),
        ("Which region led MGM Resorts' EBITDAR?", ["4" * 64]),
        ("What does the Report say about margins?", []),  # a word of kind names no file
        ("What does the Safety Data Sheet say about storage?", []),
        ("What changed in the Final V2 report?", []),
        ("Which Scan shows the ferry timetable?", []),
    ],
)
def test_cards_name_documents_whatever_their_files_are_called(
    question: str, expected: list[str]
) -> None:
    assert NamedDocuments(lambda: CARDED).match(question).doc_ids == expected


def test_a_word_most_documents_share_names_none() -> None:
    sources = {str(i) * 64: Named(f"doc_{i}.pdf", _card("Acme", 2020, "acme")) for i in range(4)}
    sources["9" * 64] = Named("doc_9.pdf", _card("Zeta", 2020, "zeta"))
    assert NamedDocuments(lambda: sources).match("What did Acme earn?").doc_ids == []
    assert NamedDocuments(lambda: sources).match("What did Zeta earn?").doc_ids == ["9" * 64]


def test_a_quarter_or_a_form_the_question_names_breaks_ties() -> None:
    annual = _card("Best Buy Co., Inc", 2023, "bestbuy")
    quarterly = DocumentCard(
        organisation="Best Buy Co., Inc",
        kind=DocKind.quarterly_report,
        form="10-Q",
        year=2024,
        quarter=2,
        aliases=["bestbuy"],
    )
    sources = {
        "a" * 64: Named("doc_1.pdf", annual),
        "b" * 64: Named("doc_2.pdf", quarterly),
        "c" * 64: Named("doc_3.pdf", _card("Best Buy Co., Inc", 2024, "bestbuy")),
    }
    for i, other in enumerate(("Nike", "Pfizer", "Boeing")):  # Best Buy: not most documents
        sources[str(i) * 64] = Named(f"doc_{4 + i}.pdf", _card(other, 2024, other.lower()))
    names = NamedDocuments(lambda: sources)
    question = "Did Best Buy's store count change between Q2 of FY2024 and FY2023?"
    assert names.match(question).doc_ids == ["b" * 64]
    for quarter in ("the second quarter of fiscal year 2024", "the second quarter of fiscal 2024"):
        asked = f"What was Best Buy's revenue in {quarter}?"  # as filings write it
        assert names.match(asked).doc_ids == ["b" * 64], asked
    assert names.match("What was Best Buy's capex in its FY2024 10-K?").doc_ids == ["c" * 64]


def test_inside_a_named_document_its_name_still_ranks_pages(tmp_path: Path) -> None:
    """The name the question writes keeps counting in the lexical search inside the named
    document: a page that prints the name and is most like the question in meaning, though it
    shares no other word with it, comes first (a filing's statements print the company's name,
    its notes seldom do)."""
    nike, other = "a" * 64, "b" * 64
    sources = {nike: "NIKE_2021_10K.pdf", other: "ADIDAS_2021_ANNUAL.pdf"}
    chunks = [
        _chunk(nike, sources[nike], 61, "What is NIKE for"),
        _chunk(nike, sources[nike], 8, "Turnover of suppliers and of customers."),
        _chunk(nike, sources[nike], 9, "Receivables turnover of customers."),
        _chunk(other, sources[other], 5, "Inventory of the group."),
    ]
    embedder, store = _index(tmp_path, chunks)
    question = "What is payables turnover for Nike?"
    assert NamedDocuments(lambda: sources).match(question).doc_ids == [nike]
    hits = Retriever(embedder, store, names=NamedDocuments(lambda: sources)).search(question, 3)
    assert hits[0].chunk.page == 61
    store.close()


def test_the_answer_reads_a_documents_fiscal_calendar_from_its_card(tmp_path: Path) -> None:
    quarter = "8" * 64
    card = DocumentCard(
        organisation="Best Buy Co., Inc", year=2024, quarter=2, period_end=date(2023, 7, 29)
    )
    sources: dict[str, str | Named] = {**CARDED, quarter: Named("doc_0008.pdf", card)}
    names = NamedDocuments(lambda: sources)
    embedder, store = _index(tmp_path, [_chunk(quarter, "doc_0008.pdf", 1, "Balance sheets.")])
    retriever = Retriever(embedder, store, names=names)
    options = retriever.answer_options(QueryRequest(question="Best Buy's Q2 FY2024 payables?"))
    assert options.lookups.card_of is not None
    read = options.lookups.card_of(quarter)
    assert read is not None and read.fiscal_calendar == ("2024", "2023")
    annual = options.lookups.card_of("3" * 64)  # an annual report ending in its year
    assert annual is None or annual.fiscal_calendar is None
    assert (
        Retriever(embedder, store)
        .answer_options(QueryRequest(question="Payables?"))
        .lookups.card_of
        is None
    )
    store.close()


def test_an_owner_no_document_names_or_writes_is_not_answered_for(tmp_path: Path) -> None:
    """ "Apple's iPhone revenue" asked of Best Buy's filings: no document is named Apple and
    no hit writes it, so the documents do not answer (they gave Best Buy's revenue). An owner
    a hit writes is answered for ("Apple" in a line of products), as is a named document's."""
    best_buy = "3" * 64
    lines = [
        "Revenue in fiscal 2022 was 51,761 million dollars.",
        "Revenue of the Domestic segment was 47,830 million dollars in fiscal 2022.",
    ]
    chunks = [_chunk(best_buy, "doc_0003.pdf", p, line) for p, line in enumerate(lines, 1)]
    embedder, store = _index(tmp_path, chunks)
    retriever = Retriever(embedder, store, names=NamedDocuments(lambda: CARDED), min_support=0.0)
    apple = retriever.query(
        QueryRequest(question="What was Apple's iPhone revenue in fiscal 2022?")
    )
    assert apple.mode == "not_found" and apple.answer is None and apple.hits
    ours = retriever.query(QueryRequest(question="What was Best Buy's revenue in fiscal 2022?"))
    assert ours.mode == "extractive" and ours.answer is not None
    products = _chunk(best_buy, "doc_0003.pdf", 3, "Apple products made up 20% of revenue in 2022.")
    store.upsert([products], embedder.embed_documents([products.embed_text]))
    sold = retriever.query(QueryRequest(question="What share of revenue were Apple's products?"))
    assert sold.mode == "extractive" and sold.answer is not None
    store.close()


def test_chosen_documents_do_not_answer_for_another_documents_company(tmp_path: Path) -> None:
    """A request that chose Fabrikam's report and asks about Contoso, whose report is indexed
    too: the question is about a document not chosen, and Fabrikam's lines do not write
    Contoso, so it is not answered (it would quote Fabrikam's revenue). Chosen Contoso, or
    asked without a company, it is answered; a chosen line that writes Contoso answers."""
    contoso, fabrikam = "c" * 64, "f" * 64
    sources: dict[str, str | Named] = {
        contoso: Named("doc_c.pdf", _card("Contoso Ltd", 2022, "contoso")),
        fabrikam: Named("doc_f.pdf", _card("Fabrikam Inc", 2022, "fabrikam")),
    }
    chunks = [
        _chunk(contoso, "doc_c.pdf", 1, "Revenue in 2022 was 9,120 million dollars."),
        _chunk(fabrikam, "doc_f.pdf", 1, "Revenue in 2022 was 4,480 million dollars."),
    ]
    embedder, store = _index(tmp_path, chunks)
    names = NamedDocuments(lambda: sources)
    retriever = Retriever(embedder, store, names=names, min_support=0.0)
    question = "What was Contoso's revenue in 2022?"
    other = retriever.query(QueryRequest(question=question, doc_ids=[fabrikam]))
    assert other.mode == "not_found" and other.answer is None and other.hits
    own = retriever.query(QueryRequest(question=question, doc_ids=[contoso]))
    assert own.answer is not None and "9,120" in own.answer
    both = retriever.query(QueryRequest(question=question, doc_ids=[contoso, fabrikam]))
    assert both.answer is not None and "9,120" in both.answer
    plain = retriever.query(QueryRequest(question="What was revenue in 2022?", doc_ids=[fabrikam]))
    assert plain.answer is not None and "4,480" in plain.answer
    assert names.named_outside(question, [fabrikam]) == ("Contoso",)
    assert names.named_outside(question, [contoso]) == ()
    mention = _chunk(fabrikam, "doc_f.pdf", 2, "Sales to Contoso made up 12% of revenue in 2022.")
    store.upsert([mention], embedder.embed_documents([mention.embed_text]))
    told = retriever.query(
        QueryRequest(question="What share of revenue came from Contoso?", doc_ids=[fabrikam])
    )
    assert told.answer is not None and "12%" in told.answer
    store.close()


def test_an_organisation_written_as_a_web_domain_is_named_by_its_label() -> None:
    """ "Rivermark.com, Inc." is called "Rivermark": a question about Rivermark's figures names its
    filing (its card's run of words, "rivermarkcom", is never written in a question), so the
    answer is not held back as being about an organisation no document is by."""
    sources: dict[str, str | Named] = {
        "r" * 64: Named("2022 Q3 RVMK.pdf", _card("Rivermark.com, Inc.", 2022, "rivermarkcom")),
        "n" * 64: Named("doc_2.pdf", _card("Northwind Traders", 2022, "northwind")),
    }
    names = NamedDocuments(lambda: sources)
    assert names.match("What were Rivermark's fulfillment costs in 2022?").doc_ids == ["r" * 64]
    assert names.unknown_subjects("What were Rivermark's fulfillment costs in 2022?") == ()
    assert names.unknown_subjects("What were Contoso's fulfillment costs in 2022?") == ("Contoso",)
