"""Document cards: read from the content at ingest, kept in the ledger and the index, and used to
route a question to the documents it names whatever their files are called."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pymupdf
import pytest

from doubles.fakes import HashEmbedder
from ingest.cards.cards import document_card
from ingest.pipeline.pipeline import FileStatus, IngestOptions
from ocr_engine.engines.extract import extract_document
from ocr_engine.options import ExtractOptions, OcrMode
from retrieval.doc_card import CARD_KIND, DocKind, DocumentCard
from server.services import Services, build_services
from server.settings import Settings

NEVER = ExtractOptions(ocr=OcrMode.never)
Line = tuple[float, str]  # font size, text
Placed = tuple[float, float, str]  # font size, baseline, text


def _filing(company: str, year: int, revenue: str) -> bytes:
    """A 10-K: the SEC cover naming the registrant, then a page of figures."""
    cover: list[Line] = [
        (10, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION"),
        (14, "FORM 10-K"),
        (10, f"For the fiscal year ended December 2, {year}"),
        (18, company.upper()),
        (8, "(Exact name of registrant as specified in its charter)"),
    ]
    body: list[Line] = [
        (10, "Item 7. Results of operations"),
        (10, f"Total revenue was {revenue} in fiscal {year}, driven by subscriptions."),
        (10, "Our products are sold through a direct sales force and online stores."),
    ]
    return _pdf([cover, body])


def _pdf(pages: list[list[Line]]) -> bytes:
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page(width=612, height=792)
        y = 72.0
        for size, text in lines:
            page.insert_text((72, y), text, fontsize=size)
            y += size * 2.2
    data = doc.tobytes()
    doc.close()
    return data


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    options = IngestOptions(extract=NEVER, extract_processes=0)
    svc = build_services(
        Settings(data_dir=tmp_path / "data", ocr=OcrMode.never),
        embedder=HashEmbedder(),
        options=options,
    )
    yield svc
    svc.close()


def _ingest(services: Services, folder: Path, files: dict[str, bytes]) -> dict[str, str]:
    """file name -> doc_id of the files, ingested."""
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    results = services.sync.ingest_paths(sorted(folder / name for name in files))
    assert all(r.status is FileStatus.ok for r in results), [r.error for r in results]
    return {r.source: str(r.doc_id) for r in results}


def test_a_filing_cover_gives_the_card(tmp_path: Path) -> None:
    pdf = tmp_path / "doc_0001.pdf"
    pdf.write_bytes(_filing("Adobe Inc.", 2022, "$17,606 million"))
    card = document_card(extract_document(pdf, options=NEVER))
    assert (card.organisation, card.kind, card.form) == ("Adobe Inc", DocKind.annual_report, "10-K")
    assert card.year == 2022 and str(card.period_end) == "2022-12-02" and card.language == "en"
    assert "adobe" in card.aliases


def test_the_title_is_the_first_heading_though_a_later_one_is_set_larger(tmp_path: Path) -> None:
    essay: list[Line] = [
        (13.5, "The Evolution of the Word Processor"),
        (10, "The concept of the word processor predates modern computers by a century."),
        (15, "Pre-Digital Era (19th - Early 20th Century)"),
        (10, "The origins of word processing can be traced back to the typewriter."),
        (15, "The Birth of Word Processing (1960s - 1970s)"),
        (10, "The term word processor first emerged in the 1960s."),
    ]
    pdf = tmp_path / "doc_0002.pdf"
    pdf.write_bytes(_pdf([essay]))
    card = document_card(extract_document(pdf, options=NEVER))
    assert card.title == "The Evolution of the Word Processor"


def _card_of(tmp_path: Path, name: str, pages: list[list[Placed]]) -> DocumentCard:
    """The card of a PDF whose lines are centred by hand: (font size, baseline, text) each."""
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page(width=612, height=792)
        for size, y, text in lines:
            x = (612 - pymupdf.get_text_length(text, fontsize=size)) / 2
            page.insert_text((x, y), text, fontsize=size)
    pdf = tmp_path / name
    pdf.write_bytes(doc.tobytes())
    doc.close()
    return document_card(extract_document(pdf, options=NEVER))


def test_a_name_read_in_capitals_is_spelt_as_the_text_spells_it(tmp_path: Path) -> None:
    cover: list[Placed] = [
        (10, 72, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION"),
        (14, 110, "FORM 10-Q"),
        (18, 150, "BEST BUY CO., INC."),
        (8, 175, "(Exact name of registrant as specified in its charter)"),
    ]
    body: list[Placed] = [(10, 72, "Best Buy Co., Inc. sells consumer electronics.")]
    card = _card_of(tmp_path, "doc_0001.pdf", [cover, body])
    assert card.organisation == "Best Buy Co., Inc", "not 'Best BUY Co., Inc'"
    assert "buy" not in card.aliases and "bestbuy" in card.aliases
    unspelt = _card_of(tmp_path, "doc_0002.pdf", [cover, [(10, 72, "Net sales rose.")]])
    assert unspelt.organisation == "Best BUY Co., Inc", "no spelling to follow: read from capitals"


def test_a_title_set_over_two_lines_is_read_whole(tmp_path: Path) -> None:
    first: list[Placed] = [
        (16, 100, "CLADDER: Assessing Causal Reasoning in"),
        (16, 120, "Language Models"),
        (10, 170, "Zhijing Jin, Yuen Chen, Felix Leeb"),
        (10, 220, "We investigate whether large language models can reason about causes."),
    ]
    card = _card_of(tmp_path, "doc_0003.pdf", [first])
    assert card.title == "CLADDER: Assessing Causal Reasoning in Language Models"


def test_a_sentence_end_is_not_inside_an_organisation(tmp_path: Path) -> None:
    references: list[Placed] = [
        (16, 100, "A Study of Causal Questions"),
        (10, 150, "In Proceedings of the 2015 Conference, pages 294-303, Edinburgh,"),
        (10, 165, "Scotland, UK. Association for Computational Linguistics."),
        (10, 180, "Scotland, UK. Association for Computational Linguistics."),
    ]
    card = _card_of(tmp_path, "doc_0004.pdf", [references])
    assert card.organisation != "UK. Association"


def test_a_help_guide_is_a_manual(tmp_path: Path) -> None:
    first: list[Placed] = [
        (14, 80, "Help Guide"),
        (10, 110, "Wireless Noise Canceling Stereo Headset"),
        (10, 140, "Read this guide if you encounter any problems, or have any questions."),
    ]
    assert _card_of(tmp_path, "doc_0005.pdf", [first]).kind is DocKind.manual


def test_a_recommended_citation_names_the_title(tmp_path: Path) -> None:
    """The cover's title is a picture; the citation it recommends quotes it."""
    first: list[Placed] = [
        (9, 200, "FOR RELEASE April 22 2021"),
        (9, 560, "Carroll Doherty, Director of Political Research"),
        (9, 575, "Jocelyn Kiley, Associate Director, Research"),
        (9, 660, "RECOMMENDED CITATION"),
        (9, 675, 'Pew Research Center, April, 2021, "Republicans'),
        (9, 690, "and Democrats Move Further Apart in Views of"),
        (9, 705, 'Voting Access"'),
    ]
    card = _card_of(tmp_path, "doc_0006.pdf", [first])
    assert card.title == "Republicans and Democrats Move Further Apart in Views of Voting Access"


def test_opaque_file_names_route_by_the_card(services: Services, tmp_path: Path) -> None:
    ids = _ingest(
        services,
        tmp_path / "inbox",
        {
            "doc_0001.pdf": _filing("Adobe Inc.", 2021, "$15,785 million"),
            "doc_0002.pdf": _filing("Adobe Inc.", 2022, "$17,606 million"),
            "doc_0003.pdf": _filing("Microsoft Corporation", 2022, "$198,270 million"),
        },
    )
    record = services.ledger.get(ids["doc_0002.pdf"])
    assert record.card is not None and record.card.organisation == "Adobe Inc"
    question = "What was Adobe's revenue in FY2022?"
    assert services.retriever.names is not None
    assert services.retriever.names.match(question).doc_ids == [ids["doc_0002.pdf"]]
    hits = services.retriever.search(question, 5)
    assert hits[0].chunk.doc_id == ids["doc_0002.pdf"]
    assert all(h.chunk.kind != CARD_KIND for h in hits), "a card routes, it is never a hit"
    cards = [c for c in services.store.chunks(ids["doc_0002.pdf"]) if c.kind == CARD_KIND]
    assert len(cards) == 1 and cards[0].card == record.card  # in the point's payload too


def test_a_capitalised_common_word_does_not_capture_the_search(
    services: Services, tmp_path: Path
) -> None:
    ids = _ingest(
        services,
        tmp_path / "inbox",
        {
            "Report.pdf": _pdf([[(18, "Report"), (10, "This report covers the harbour works.")]]),
            "Safety Data Sheet.pdf": _pdf([[(18, "Safety Data Sheet"), (10, "Keep dry.")]]),
            "report final v2.pdf": _pdf([[(10, "The bridge was painted green in May.")]]),
            "scan_0001.pdf": _pdf([[(10, "The ferry timetable changes in winter.")]]),
        },
    )
    assert services.retriever.names is not None
    for question in (
        "What does the Report say about the ferry?",
        "What does the Safety Data Sheet say about storage?",
        "Which Scan shows the ferry timetable?",
        "What changed in the Final V2 report?",
    ):
        assert services.retriever.names.match(question).doc_ids == [], question
    hits = services.retriever.search("What does the Report say about the ferry timetable?", 4)
    assert ids["scan_0001.pdf"] in {h.chunk.doc_id for h in hits}, "not held to Report.pdf"


def test_a_product_named_by_a_short_title_routes_the_question(
    services: Services, tmp_path: Path
) -> None:
    """ "WATCH D" names its manual though its text writes "watch" in lower case (a common word):
    the run of a short title's words is an alias, as a run of a question's name words is."""
    steps = "Put the watch on the charging cradle. The watch shows the battery level."
    ids = _ingest(
        services,
        tmp_path / "inbox",
        {
            "doc_0001.pdf": _pdf([[(24, "WATCH D"), (10, steps), (10, "Press the watch button.")]]),
            "doc_0002.pdf": _pdf(
                [[(24, "HONOR Watch GS Pro Online Help"), (10, steps), (10, "Wear the watch.")]]
            ),
        },
    )
    record = services.ledger.get(ids["doc_0001.pdf"])
    assert record.card is not None and "watchd" in record.card.aliases
    assert services.retriever.names is not None
    match = services.retriever.names.match("How do I charge the Watch D?")
    assert match.doc_ids == [ids["doc_0001.pdf"]]


def test_the_card_is_in_the_document_detail(services: Services, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from server.serve.app import create_app

    ids = _ingest(services, tmp_path / "inbox", {"x.pdf": _filing("Acme Corp", 2020, "$5")})
    with TestClient(create_app(services, watch=False)) as client:
        body = client.get(f"/documents/{ids['x.pdf']}").json()
    assert body["card"]["organisation"] == "Acme Corp" and body["card"]["year"] == 2020


def test_every_chunk_embeds_what_the_card_says_the_document_is(
    services: Services, tmp_path: Path
) -> None:
    """An opaque file name says nothing; the card's organisation, kind and year travel in every
    chunk's embedded heading trail, as `chunk_document` gives them with the same card."""
    from ingest.pipeline.chunker import chunk_document

    ids = _ingest(
        services, tmp_path / "inbox", {"doc_0007.pdf": _filing("Adobe Inc.", 2022, "$17,606 M")}
    )
    doc_id = ids["doc_0007.pdf"]
    record = services.ledger.get(doc_id)
    stored = sorted(
        (c for c in services.store.chunks(doc_id) if c.kind != CARD_KIND),
        key=lambda c: c.chunk_id,
    )
    assert stored
    label = "doc 0007 (Adobe Inc · annual report (10-K) · FY2022"
    assert all(c.embed_text.startswith(label) for c in stored), stored[0].embed_text
    expected = chunk_document(
        services.files.load_document(doc_id),
        count_tokens=services.embedder.count_tokens,
        max_tokens=min(256, services.embedder.max_tokens),
        card=record.card,
    )
    assert [c.embed_text for c in stored] == [c.embed_text for c in expected]


@pytest.mark.parametrize(
    ("card", "line"),
    [
        (DocumentCard(title="Volcanic Activity Report"), "Volcanic Activity Report"),
        (
            DocumentCard(
                title="UNITED STATES SECURITIES AND EXCHANGE COMMISSION",
                organisation="Best Buy Co., Inc",
                kind=DocKind.quarterly_report,
                form="10-Q",
                year=2024,
                quarter=2,
                period_end=date(2023, 7, 29),
            ),
            "Best Buy Co., Inc · quarterly report (10-Q) · Q2 FY2024 2023-07-29",
        ),
        (
            DocumentCard(title="WATCH D User Guide", organisation="Huawei", kind=DocKind.manual),
            "WATCH D User Guide · Huawei · manual",
        ),
        (
            DocumentCard(title="QACheck", organisation="ACL", kind=DocKind.paper, year=2023),
            "QACheck · paper · 2023",
        ),
    ],
)
def test_the_card_reads_in_one_line(card: DocumentCard, line: str) -> None:
    """A filing is known by organisation, kind and period (its title is the SEC's letterhead);
    a manual leads with its title; a paper is its title; a card of no kind is its title."""
    assert card.summary == line
    assert DocumentCard.model_validate_json(card.model_dump_json()).summary == line  # kept whole
