"""The extractive answer: sentence choice, [n] markers, and citation boxes tighter than chunks."""

from __future__ import annotations

import re

import numpy as np

from doubles.fakes import VocabularyEmbedder
from ocr_engine.char_widths import char_starts
from retrieval.answer import (
    AnswerOptions,
    Lookups,
    Scope,
    extractive_answer,
    following_ids,
)
from retrieval.schema import Chunk, ChunkLine, Region, ScoredChunk
from retrieval.text_terms import sentence_spans, stems

DOC = "a" * 64


def make_chunk(
    chunk_id: str, lines: list[tuple[int, str]], *, joiner: str = " ", doc_id: str = DOC
) -> Chunk:
    """A chunk whose lines sit one under another on their pages (x 72..72+5*len, 12 pt high)."""
    text = ""
    chunk_lines: list[ChunkLine] = []
    y: dict[int, float] = {}
    for page, line in lines:
        if text:
            text += joiner
        top = y.get(page, 100.0)
        bbox = (72.0, top, 72.0 + 5 * len(line), top + 12.0)
        y[page] = top + 14.0
        chunk_lines.append(
            ChunkLine(page=page, bbox=bbox, start=len(text), end=len(text) + len(line))
        )
        text += line
    regions = []
    for page in dict.fromkeys(p for p, _ in lines):
        boxes = [cl.bbox for cl in chunk_lines if cl.page == page]
        regions.append(
            Region(
                page=page,
                bbox=(
                    min(b[0] for b in boxes),
                    min(b[1] for b in boxes),
                    max(b[2] for b in boxes),
                    max(b[3] for b in boxes),
                ),
            )
        )
    return Chunk(
        chunk_id=chunk_id,
        doc_id=doc_id,
        source="report.pdf",
        kind="text",
        text=text,
        embed_text=text,
        regions=regions,
        lines=chunk_lines,
    )


COMPANY = make_chunk(
    "c0000",
    [
        (3, "The company was founded in 1998 in Oslo by two"),
        (3, "engineers. Revenue grew to 12.5 million euros in"),
        (3, "2023, driven by exports to Germany and Sweden."),
        (3, "The board approved a dividend of 2 euros per"),
        (3, "share. The chief executive is Kari Nordmann."),
    ],
)
HIRING = make_chunk(
    "c0001",
    [
        (4, "Headcount rose to 140 employees in 2023."),
        (4, "Most new hires joined the export sales team."),
    ],
)


def markers(text: str) -> set[int]:
    return {int(n) for n in re.findall(r"\[(\d+)\]", text)}


def area(b: tuple[float, float, float, float]) -> float:
    return (b[2] - b[0]) * (b[3] - b[1])


def test_citation_boxes_the_sentence_not_its_whole_lines() -> None:
    answer = extractive_answer(
        "How much did revenue grow in 2023?", [ScoredChunk(chunk=COMPANY, score=0.8)]
    )
    assert answer.text.startswith("Revenue grew to 12.5 million euros in 2023")
    assert answer.text.endswith("[1]")
    (citation,) = answer.citations
    assert citation.quote == (
        "Revenue grew to 12.5 million euros in 2023, driven by exports to Germany and Sweden."
    )
    second, third = COMPANY.lines[1].bbox, COMPANY.lines[2].bbox
    assert citation.bbox == (72.0, second[1], max(second[2], third[2]), third[3])
    assert citation.page == 3
    assert area(citation.bbox) < area(COMPANY.regions[0].bbox)
    assert [r.page for r in citation.regions] == [3]
    # the sentence starts after "engineers. " on its first line, mid-way in the space before it
    row = COMPANY.text[COMPANY.lines[1].start : COMPANY.lines[1].end]
    starts = char_starts(row, second)
    begins = len("engineers. ")
    first_part = ((starts[begins - 1] + starts[begins]) / 2, second[1], second[2], second[3])
    assert 72.0 < first_part[0] < 72.0 + 5 * begins
    drawn = ";".join(",".join(f"{v:.1f}" for v in box) for box in (first_part, third))
    assert citation.page_image_url == f"/documents/{DOC}/pages/3.png"
    assert citation.highlight_url == f"/documents/{DOC}/pages/3.png?highlight={drawn}"
    assert citation.viewer_url == f"/documents/{DOC}/pages/3/view?highlight={drawn}"
    assert citation.score == 0.8


def test_markers_in_the_answer_match_the_citations() -> None:
    hits = [ScoredChunk(chunk=COMPANY, score=0.7), ScoredChunk(chunk=HIRING, score=0.6)]
    answer = extractive_answer("How did revenue and headcount change in 2023?", hits)
    assert markers(answer.text) == {c.n for c in answer.citations} == {1, 2}
    assert [c.n for c in answer.citations] == [1, 2]
    assert answer.citations[1].page == 4
    assert "Headcount rose to 140" in answer.citations[1].quote
    assert answer.text.count("[") <= 3


def test_sentence_across_pages_gets_a_region_per_page() -> None:
    chunk = make_chunk(
        "c0002",
        [(5, "Net debt fell to 40 million at the end of"), (6, "the year after the bond repaid.")],
    )
    answer = extractive_answer("What was net debt?", [ScoredChunk(chunk=chunk, score=0.5)])
    (citation,) = answer.citations
    assert [r.page for r in citation.regions] == [5, 6]
    assert citation.page == 5
    assert citation.bbox == chunk.lines[0].bbox


def test_no_hits_give_no_answer_and_no_citations() -> None:
    answer = extractive_answer("Anything?", [])
    assert answer.text is None
    assert not answer.found
    assert answer.citations == []


def test_no_lexical_match_falls_back_to_the_top_hit() -> None:
    hits = [ScoredChunk(chunk=HIRING, score=0.3), ScoredChunk(chunk=COMPANY, score=0.2)]
    answer = extractive_answer("zebra quokka?", hits)
    assert answer.text == "Headcount rose to 140 employees in 2023. [1]"
    assert answer.citations[0].bbox == HIRING.lines[0].bbox


def test_at_most_three_sentences() -> None:
    chunk = make_chunk(
        "c0003", [(1, f"Revenue in region {i} grew by {i} percent.") for i in range(8)]
    )
    answer = extractive_answer("revenue region grew percent", [ScoredChunk(chunk=chunk, score=0.9)])
    assert len(answer.citations) == 3
    assert markers(answer.text) == {1, 2, 3}
    for citation in answer.citations:  # each sentence boxed to its own line
        assert citation.quote.startswith("Revenue in region")
        assert citation.bbox in [line.bbox for line in chunk.lines]


def test_sentence_spans_respect_abbreviations_and_decimals() -> None:
    text = "See Fig. 3 for details. Growth was 12.5 percent, e.g. in Oslo. Done!\n| a | b |"
    spans = [text[s:e] for s, e in sentence_spans(text)]
    assert spans == [
        "See Fig. 3 for details.",
        "Growth was 12.5 percent, e.g. in Oslo.",
        "Done!",
        "| a | b |",
    ]


def test_a_check_box_ends_the_question_it_answers() -> None:
    text = (
        "Indicate by check mark whether the filer is a shell company. Yes ☐ No ☒ "
        "4,120,000 shares of common stock were outstanding as of May 2, 2031. ☒ QUARTERLY REPORT "
        "under Section 13 ☐ TRANSITION REPORT under Section 13"
    )
    spans = [text[s:e] for s, e in sentence_spans(text)]
    assert spans == [
        "Indicate by check mark whether the filer is a shell company.",
        "Yes ☐ No ☒",
        "4,120,000 shares of common stock were outstanding as of May 2, 2031.",
        "☒ QUARTERLY REPORT under Section 13 ☐ TRANSITION REPORT under Section 13",
    ]


def test_numbers_weigh_in_the_choice() -> None:
    chunk = make_chunk(
        "c0004",
        [(1, "Revenue in 2021 was 9 million."), (1, "Revenue in 2022 was 11 million.")],
    )
    answer = extractive_answer("revenue 2022", [ScoredChunk(chunk=chunk, score=0.9)])
    assert answer.text.startswith("Revenue in 2022 was 11 million.")


class KeywordEmbedder(VocabularyEmbedder):
    """Similarity is shared keywords; the question's "customers" means the airlines and the
    government."""

    def __init__(self) -> None:
        super().__init__(("customer", "airline", "government", "service"), name="keywords")

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text + " airline government", {"customers": "x"})


CUSTOMERS = make_chunk(
    "c0005",
    [
        (7, "No customer must exercise its options."),
        (7, "Our customers are airlines and the government."),
        (7, "We sell mostly to airlines and the government."),
    ],
).model_copy(update={"section_path": ["Risk factors", "Customers"]})


def test_an_embedder_ranks_the_candidate_sentences_again_by_meaning() -> None:
    question = "Who are the main customers?"
    hits = [ScoredChunk(chunk=CUSTOMERS, score=0.9)]
    by_terms = extractive_answer(question, hits)
    assert by_terms.citations[0].quote == "No customer must exercise its options."
    embedder = KeywordEmbedder()
    by_meaning = extractive_answer(question, hits, embedder=embedder)
    assert by_meaning.citations[0].quote == "Our customers are airlines and the government."
    assert by_meaning.text.startswith("Our customers are airlines and the government. [1]")
    # each candidate is embedded after its section heading (and after the sentence before it in
    # its paragraph); the sentence without the question's terms is below the floor, however alike
    # in meaning
    assert sorted(embedder.embedded) == [
        "Customers: No customer must exercise its options.",
        "Customers: No customer must exercise its options. Our customers are airlines and the"
        " government.",
        "Customers: Our customers are airlines and the government.",
    ]
    assert all("We sell" not in c.quote for c in by_meaning.citations)


def test_the_dense_pool_bounds_the_sentences_embedded() -> None:
    embedder = KeywordEmbedder()
    hits = [ScoredChunk(chunk=CUSTOMERS, score=0.9)]
    extractive_answer(
        "customer options", hits, embedder=embedder, options=AnswerOptions(dense_pool=1)
    )
    assert embedder.embedded == ["Customers: No customer must exercise its options."]


def test_a_page_filter_keeps_the_citations_on_its_pages() -> None:
    chunk = make_chunk(
        "c0006",
        [(8, "Net debt fell to 40 million in 2023."), (9, "Net debt was 52 million in 2022.")],
    )
    hits = [ScoredChunk(chunk=chunk, score=0.9)]
    unfiltered = extractive_answer("net debt", hits)
    assert {c.page for c in unfiltered.citations} == {8, 9}
    on_nine = extractive_answer("net debt", hits, options=AnswerOptions(scope=Scope(pages=(9, 9))))
    assert [c.page for c in on_nine.citations] == [9]
    assert on_nine.text == "Net debt was 52 million in 2022. [1]"
    # a filter no sentence meets does not empty the answer
    assert extractive_answer(
        "net debt", hits, options=AnswerOptions(scope=Scope(pages=(20, None)))
    ).citations


def test_a_dense_pool_of_zero_ranks_by_terms_alone() -> None:
    embedder = KeywordEmbedder()
    hits = [ScoredChunk(chunk=CUSTOMERS, score=0.9)]
    no_pool = AnswerOptions(dense_pool=0, min_support=0.0)  # this embedder sees no likeness
    answer = extractive_answer(
        "Who are the main customers?", hits, embedder=embedder, options=no_pool
    )
    assert answer.citations[0].quote == "No customer must exercise its options."
    # only the best sentence by terms is embedded, to measure the answer's support
    assert embedder.embedded == ["Customers: No customer must exercise its options."]


def test_words_match_by_their_stems() -> None:
    assert stems("Cyclicality and cyclical members, 1,577 of them") == [
        "cyclic",
        "cyclic",
        "member",
        "1577",
    ]
    chunk = make_chunk(
        "c0007",
        [(2, "Demand follows the seasons of the year."), (2, "The airline industry is cyclical.")],
    )
    answer = extractive_answer(
        "Is the business subject to cyclicality?", [ScoredChunk(chunk=chunk, score=0.9)]
    )
    assert answer.citations[0].quote == "The airline industry is cyclical."


def test_a_lead_in_is_cited_with_the_rest_of_its_chunk() -> None:
    chunk = make_chunk(
        "c0010",
        [
            (5, "Comparable sales changes by category were as follows:"),
            (5, "Computing: a decline of 6.4%."),
            (5, "Services: growth of 7.6%."),
        ],
        joiner="\n",
    )
    answer = extractive_answer(
        "How did comparable sales change by category?", [ScoredChunk(chunk=chunk, score=0.9)]
    )
    assert answer.text.startswith("Comparable sales changes by category were as follows: [1]")
    first = answer.citations[0]
    assert first.bbox == chunk.regions[0].bbox
    assert first.quote.endswith("Services: growth of 7.6%.")


def test_a_lead_in_is_cited_with_the_lines_under_it_in_its_column() -> None:
    """Steps under "To replace the grille:", then the labels of the figure beside them in the
    same chunk: the citation boxes the steps, not the figure."""
    rows = [
        ("To remove the grille:", (115.0, 100.0, 212.0, 114.0)),
        ("1. Open both doors.", (116.0, 115.0, 203.0, 128.0)),
        ("To replace the grille:", (115.0, 183.0, 212.0, 195.0)),
        ("1. Line up grille support tabs with metal", (116.0, 195.0, 289.0, 209.0)),
        ("clips.", (127.0, 207.0, 149.0, 221.0)),
        ("2. Push firmly to snap into place.", (116.0, 220.0, 260.0, 234.0)),
        ("Metal clips", (331.0, 146.0, 354.0, 160.0)),
        ("Base grille", (507.0, 193.0, 528.0, 206.0)),
    ]
    text = ""
    lines = []
    for words, box in rows:
        text += "\n" if text else ""
        lines.append(ChunkLine(page=17, bbox=box, start=len(text), end=len(text) + len(words)))
        text += words
    chunk = Chunk(
        chunk_id="c0033",
        doc_id=DOC,
        source="manual.pdf",
        kind="text",
        text=text,
        embed_text=text,
        regions=[Region(page=17, bbox=(115.0, 100.0, 528.0, 234.0))],
        lines=lines,
    )
    answer = extractive_answer(
        "How to replace the grille?", [ScoredChunk(chunk=chunk, score=0.9)], max_sentences=1
    )
    first = answer.citations[0]
    assert first.quote.startswith("To replace the grille:")
    assert first.quote.endswith("2. Push firmly to snap into place.")
    assert first.bbox == (115.0, 183.0, 289.0, 234.0)


def _table_after_lead_in(table_id: str) -> tuple[Chunk, Chunk]:
    lead_in = make_chunk(
        "c0020", [(11, "The following table presents the Company's debt investments:")]
    )
    table = make_chunk(
        table_id,
        [(11, "| Corporate bonds | 416,420 |"), (11, "| Government securities | 57,696 |")],
        joiner="\n",
    )
    table = table.model_copy(update={"kind": "table"})
    lines = [
        ln.model_copy(update={"bbox": (72.0, 200.0 + 14 * i, 300.0, 212.0 + 14 * i)})
        for i, ln in enumerate(table.lines)
    ]
    region = Region(page=11, bbox=(72.0, 200.0, 300.0, 226.0))
    return lead_in, table.model_copy(update={"lines": lines, "regions": [region]})


def test_a_lead_in_is_cited_with_the_chunk_that_follows_it() -> None:
    question = "Which debt investments does the Company hold?"
    lead_in, table = _table_after_lead_in("c0022")  # c0021, a table header, is not a hit
    hits = [ScoredChunk(chunk=lead_in, score=0.9), ScoredChunk(chunk=table, score=0.5)]
    cited = extractive_answer(question, hits, max_sentences=1).citations[0]
    assert cited.quote.startswith("The following table presents")
    assert cited.quote.endswith("| Government securities | 57,696 |")
    assert cited.bbox == (72.0, 100.0, lead_in.lines[0].bbox[2], 226.0)
    assert [r.page for r in cited.regions] == [11]
    assert cited.highlight_url.endswith(";72.0,200.0,300.0,226.0")
    # a chunk further on is not what the lead-in introduces
    lead_in, far = _table_after_lead_in("c0030")
    hits = [ScoredChunk(chunk=lead_in, score=0.9), ScoredChunk(chunk=far, score=0.5)]
    alone = extractive_answer(question, hits, max_sentences=1).citations[0]
    assert alone.bbox == lead_in.lines[0].bbox
    assert alone.quote == "The following table presents the Company's debt investments:"


def test_a_look_alike_sentence_does_not_outrank_the_one_the_question_names() -> None:
    from retrieval.index.embedder import SentenceTransformerEmbedder

    kelud = make_chunk(
        "c0000", [(1, "The Kelud volcano erupted in February 2014 and ash fell on Yogyakarta.")]
    ).model_copy(update={"section_path": ["Eruption history"]})
    merapi = make_chunk(
        "c0000", [(1, "The Merapi volcano erupted in 2010.")], doc_id="b" * 64
    ).model_copy(update={"section_path": ["History"]})
    hits = [ScoredChunk(chunk=kelud, score=0.9), ScoredChunk(chunk=merapi, score=0.8)]
    question = "When did the Merapi volcano erupt?"
    answer = extractive_answer(question, hits, embedder=SentenceTransformerEmbedder())
    # both share "volcano" and "erupt" (stems) with the question, so both are ranked by meaning
    assert answer.citations[0].quote == "The Merapi volcano erupted in 2010."
    assert answer.citations[0].doc_id == "b" * 64


def test_a_lead_in_whose_table_is_no_hit_is_cited_with_the_chunks_the_store_has_after_it() -> None:
    assert following_ids("c0041", 3) == ["c0042", "c0043", "c0044"]
    assert following_ids("c9999", 1) == ["c10000"]
    assert following_ids("intro", 2) == []
    question = "Which debt investments does the Company hold?"
    lead_in, table = _table_after_lead_in("c0022")
    header = make_chunk("c0021", [(11, "June 30, 2023")])
    asked: list[str] = []

    def following(chunk: Chunk) -> list[Chunk]:
        asked.append(chunk.chunk_id)
        return [header, table]

    hits = [ScoredChunk(chunk=lead_in, score=0.9)]  # one chunk per page: the table is no hit
    options = AnswerOptions(lookups=Lookups(following=following))
    cited = extractive_answer(question, hits, options=options, max_sentences=1).citations[0]
    assert asked == ["c0020"]
    assert cited.quote == (
        "The following table presents the Company's debt investments: … June 30, 2023 … "
        "| Corporate bonds | 416,420 | | Government securities | 57,696 |"
    )
    assert cited.bbox == (72.0, 100.0, lead_in.lines[0].bbox[2], 226.0)
    # what starts two pages on is not what the lead-in introduces
    far = table.model_copy(
        update={
            "lines": [ln.model_copy(update={"page": 13}) for ln in table.lines],
            "regions": [r.model_copy(update={"page": 13}) for r in table.regions],
        }
    )
    options = AnswerOptions(lookups=Lookups(following=lambda chunk: [far]))
    alone = extractive_answer(question, hits, options=options, max_sentences=1).citations[0]
    assert alone.quote == "The following table presents the Company's debt investments:"
    assert [r.page for r in alone.regions] == [11]


def test_a_bullet_does_not_lead_the_answer_text_and_a_step_number_does() -> None:
    """A list item is said without its bullet; a step keeps its number, which shows the order
    of steps the answer gives best first. The citation quotes either whole."""
    steps = make_chunk(
        "c0002",
        [
            (5, "1 Press the Up button to open the app list."),
            (5, "2 Touch Settings and then Blood pressure to start the measurement."),
            (5, "• Keep 10 minutes between two blood pressure measurements."),
            (5, "· Not being quiet during the blood pressure measurement"),
        ],
        joiner="\n",
    )
    answer = extractive_answer(
        "How do I start the blood pressure measurement?", [ScoredChunk(chunk=steps, score=0.9)]
    )
    assert answer.text.startswith("2 Touch Settings and then Blood pressure to start")
    assert "• " not in answer.text and "Keep 10 minutes" in answer.text, answer.text
    assert "· " not in answer.text, "a middle dot leads a list item too (Watch D's)"
    quoted = [c.quote for c in answer.citations]
    assert "• Keep 10 minutes between two blood pressure measurements." in quoted


def test_an_answer_says_and_quotes_no_control_character() -> None:
    chunk = make_chunk("c0000", [(1, "Touch the Main menu pad \x99 The main menu is displayed.")])
    answer = extractive_answer("Where is the main menu?", [ScoredChunk(chunk=chunk, score=1.0)])
    assert answer.text is not None and "\x99" not in answer.text
    assert answer.citations[0].quote == "Touch the Main menu pad The main menu is displayed."
