"""The row a question asks for: its measure is what the row label names, not the statement the
figure is read from, the time words of its period, or the company it is about; and the cell
where measure and period meet is always weighed, however many other cells share its words."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from functools import cache

import numpy as np

from doubles.builders import one_line_block, one_page_document, table_block
from doubles.fakes import SameVector
from ingest.pipeline.chunker import chunk_document
from ocr_engine.schema import BlockType
from retrieval.answer import AnswerOptions, Lookups, Scope, extractive_answer
from retrieval.answer.cells import table_cells
from retrieval.doc_card import DocumentCard
from retrieval.index.embedder import SentenceTransformerEmbedder
from retrieval.schema import Chunk, ScoredChunk
from retrieval.text_terms import stems

X = (72.0, 300.0, 420.0, 540.0)


@cache
def _model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def _table(
    heading: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    edges: Sequence[float] = X,
) -> Chunk:
    """The one chunk of a page holding a heading and a table."""
    title = one_line_block("p1-b0", BlockType.section_header, (72, 90, 300, 104), heading)
    table = table_block("p1-b1", [header, *rows], edges, 120.0)
    document = one_page_document([title, table], doc_id="m" * 64, source="10-K.pdf")
    [chunk] = [c for c in chunk_document(document, count_tokens=lambda t: len(t.split()))]
    return chunk


def _first(question: str, *chunks: Chunk, options: AnswerOptions = AnswerOptions()) -> str:
    """The answer's first sentence, the `chunks` its hits (equal scores)."""
    hits = [ScoredChunk(chunk=chunk, score=0.9) for chunk in chunks]
    answer = extractive_answer(question, hits, embedder=_model(), options=options, max_sentences=1)
    assert answer.text is not None
    return answer.text


INCOME = _table(
    "Income Statements",
    ["", "2016", "2015"],
    [
        ["Product", "61,502", "75,956"],
        ["Service and other", "23,818", "17,624"],
        ["Total revenue", "85,320", "93,580"],
        ["Product", "17,880", "21,410"],
        ["Service and other", "14,900", "11,628"],
        ["Total cost of revenue", "32,780", "33,038"],
        ["Gross margin", "52,540", "60,542"],
        ["Research and development", "11,988", "12,046"],
        ["Operating income", "20,182", "18,161"],
        ["Other income (expense), net", "(431)", "346"],
        ["Income before income taxes", "19,751", "18,507"],
        ["Provision for income taxes", "2,953", "6,314"],
        ["Net income", "16,798", "12,193"],
    ],
)


CASH_AND_DEBT = _table(
    "Balance Sheets and Cash Flows",
    ["", "2023", "2022"],
    [
        ["Cash and cash equivalents, end of period", "34,704", "13,931"],
        ["Proceeds from issuance of debt", "0", "0"],
        ["Repayments of debt", "(2,750)", "(9,023)"],
        ["Current portion of long-term debt", "5,247", "2,749"],
        ["Long-term debt", "41,990", "47,032"],
        ["Total liabilities", "205,753", "198,298"],
    ],
)


def test_the_words_of_a_period_name_no_row() -> None:
    """ "Between FY2023 and the FY2022 period": "period" says when; "end of period" is not the
    row asked for, "Long-term debt" is."""
    question = "Has Microsoft increased its debt between FY2023 and the FY2022 period?"
    assert "debt" in _first(question, CASH_AND_DEBT)


def test_the_company_asked_about_names_no_row() -> None:
    """Every row of a company's filing is the company's: its name (a name term of the search)
    makes no sentence the one where measure and period meet."""
    note = CASH_AND_DEBT.model_copy(
        update={
            "chunk_id": "c0099",
            "kind": "text",
            "lines": CASH_AND_DEBT.lines[:1],
            "text": "In 2023 Contoso issued notes and repaid borrowings.",
        }
    )
    question = "What was Contoso's long-term debt in 2023?"
    names = AnswerOptions(scope=Scope(name_terms=frozenset(stems("Contoso"))))
    first = _first(question, note, CASH_AND_DEBT, options=names)
    assert first.startswith("Long-term debt, 2023: 41,990")


OWN_NAME = _table(
    "Consolidated Balance Sheets",
    ["", "2021", "2020"],
    [
        ["Total current liabilities", "29,441", "24,844"],
        ["Long-term debt", "6,692", "7,514"],
        ["Total liabilities", "41,190", "36,851"],
        ["Total Contoso stockholders' equity", "17,564", "18,284"],
        ["Total equity", "18,078", "18,705"],
    ],
)


def test_the_organisation_of_the_document_names_no_row_however_it_is_written() -> None:
    """A company's own name in a row label ("Total Contoso stockholders' equity") says whose
    the row is, like every row of its filing: asked in lower case, where the search names no
    document, the card's organisation still makes no row the one asked for."""
    question = "What is total liabilities for contoso in FY 2021?"
    card = DocumentCard(organisation="Contoso Wholesale Corporation", year=2021)
    with_card = AnswerOptions(lookups=Lookups(card_of=lambda _doc_id: card))
    assert _first(question, OWN_NAME, options=with_card).startswith(
        "Total liabilities, 2021: 41,190"
    )
    without = _first(question, OWN_NAME)  # the fault it fixes: the name's rare word wins
    assert without.startswith("Total Contoso stockholders' equity, 2021: 17,564")


PLANT = _table(
    "Consolidated Statements of Financial Position and Cash Flows",
    ["", "2018", "2017"],
    [
        ["Property, plant and equipment additions", "(1,722)", "(1,739)"],
        ["Property, plant and equipment reductions", "120", "92"],
        ["Net cash provided by operating activities", "15,322", "13,344"],
        ["Property, plant and equipment, gross", "30,245", "29,240"],
        ["Less accumulated depreciation", "(17,600)", "(16,568)"],
        ["Property, plant and equipment, net", "12,645", "12,672"],
    ],
)


def test_the_row_holding_more_of_the_measure_wins_over_one_rare_word() -> None:
    """ "Net property, plant, and equipment" from the information provided: the row naming
    all of it answers, not "Net cash provided" for its one rarer word."""
    question = (
        "Using information provided within the balance sheet, what is the year end FY2018 "
        "net property, plant, and equipment (in USD millions)?"
    )
    assert _first(question, PLANT).startswith("Property, plant and equipment, net, 2018: 12,645")


QUARTER = _table(
    "Condensed Consolidated Balance Sheets",
    ["", "July 29, 2023", "January 28, 2023", "July 30, 2022"],
    [
        ["Cash and cash equivalents", "1,093", "1,874", "840"],
        ["Merchandise inventories", "5,651", "5,140", "6,715"],
        ["Accounts payable", "5,471", "5,687", "5,406"],
        ["Total current liabilities", "8,109", "8,979", "9,143"],
    ],
    (72.0, 240.0, 340.0, 440.0, 540.0),
)


def test_a_fiscal_quarter_meets_the_column_dated_in_its_calendar_year() -> None:
    """Best Buy's Q2 of FY2024 ended July 29, 2023: by the document's card, "Q2 FY2024" is
    the column of that date, not the fiscal year's end nor the quarter a year before."""
    card = DocumentCard(year=2024, quarter=2, period_end=date(2023, 7, 29))
    assert card.fiscal_calendar == ("2024", "2023")
    assert DocumentCard(year=2023, period_end=date(2023, 1, 28)).fiscal_calendar is None
    assert DocumentCard(year=2024).fiscal_calendar is None

    question = "What were accounts payable at the end of Q2 FY2024?"
    calendar = AnswerOptions(lookups=Lookups(card_of=lambda _doc_id: card))
    first = _first(question, QUARTER, options=calendar)
    assert first.startswith("Accounts payable, July 29, 2023: 5,471")


def test_a_question_naming_a_day_meets_the_column_of_that_day_not_another_of_its_year() -> None:
    """Two of a balance sheet's dates fall in 2023: the year meets both columns, the day one
    (NVIDIA's inventories "at October 30, 2022" were answered with January 30, 2022's)."""
    for day, figure in (("January 28, 2023", "5,140"), ("July 29, 2023", "5,651")):
        question = f"What were the merchandise inventories at {day}?"
        assert _first(question, QUARTER).startswith(f"Merchandise inventories, {day}: {figure}")


def _paragraphs(*texts: str) -> Chunk:
    """The one chunk of a page of paragraphs, one line each."""
    blocks = [
        one_line_block(f"b{i}", BlockType.text, (72.0, 100.0 + 30 * i, 540.0, 112.0 + 30 * i), t)
        for i, t in enumerate(texts)
    ]
    document = one_page_document(blocks, doc_id="m" * 64, source="10-Q.pdf")
    [chunk] = chunk_document(document, count_tokens=lambda t: len(t.split()))
    return chunk


def test_a_sentence_about_another_part_of_the_year_does_not_answer_for_the_quarter() -> None:
    """A 10-Q states the quarter's figure and the year to date's side by side: asked for the
    third quarter, the sentence naming only the first nine months is no answer (NVIDIA's $2.01
    billion provision was cited for the quarter's $702 million)."""
    chunk = _paragraphs(
        "The $2.01 billion inventory provision in the first nine months of fiscal year 2023"
        " consists of $942 million for inventory on hand and $1.07 billion for obligations.",
        "Gross margin for the third quarter was down 11.6% from a year earlier, primarily due"
        " to a $702 million inventory charge relating to lower demand.",
    )
    question = "How large was the inventory provision recorded in the third quarter?"
    assert "$702 million" in _first(question, chunk)
    asked = "How large was the inventory provision recorded in the first nine months?"
    assert "$2.01 billion" in _first(asked, chunk)


CASH_FLOWS = _table(
    "Condensed Consolidated Statements of Cash Flows",
    ["", "Six Months Ended July 29, 2023", "Six Months Ended July 30, 2022"],
    [
        ["Depreciation and amortization", "435", "443"],
        ["Accounts payable", "(206)", "(1,632)"],
    ],
)


QUALIFIED = _table(
    "Condensed Consolidated Statements",
    ["", "2023", "2022"],
    [
        ["Receivables, net", "1,875", "1,935"],
        ["Other, net", "11", "(54)"],
        ["Short-term debt", "48", "136"],
        ["Long-term debt", "6,840", "6,340"],
    ],
)


SPANS = _table(
    "Condensed Consolidated Statements of Earnings",
    ["", "Six Months Ended July 29, 2023", "Three Months Ended July 29, 2023"],
    [["Revenue", "$ 19,050", "$ 9,583"], ["Cost of sales", "14,680", "7,363"]],
)


def test_a_rows_qualifier_names_no_measure() -> None:
    """ "Receivables, net" counts receivables, and "Other, net" counts nothing a question of
    net debt asks for: "net" qualifies a row, it does not name what the row counts."""
    assert _first("What were receivables in 2023?", QUALIFIED).startswith(
        "Receivables, net, 2023: 1,875"
    )
    assert "debt" in _first("What was net debt in 2023?", QUALIFIED)


def _paragraph(heading: str, lines: Sequence[str]) -> Chunk:
    """The one chunk of a page holding a heading and a paragraph of `lines`."""
    blocks = [one_line_block("p1-b0", BlockType.section_header, (72, 90, 300, 104), heading)]
    blocks += [
        one_line_block(f"p1-b{i}", BlockType.text, (72, 110 + 16 * i, 500, 122 + 16 * i), line)
        for i, line in enumerate(lines, 1)
    ]
    document = one_page_document(blocks, doc_id="r" * 64, source="report.pdf")
    [chunk] = [c for c in chunk_document(document, count_tokens=lambda t: len(t.split()))]
    return chunk


ECONOMY = _paragraph(
    "General economic environment",
    [
        "Against a forecast GDP growth of 6.7%, India achieved a GDP growth of 4.3%.",
        "Agricultural output recorded one of the sharpest declines of the last 20 years.",
        "Industry recovered in 2002-03 and recorded an overall growth of 5.7%.",
    ],
)


def test_a_sentence_meets_when_it_names_the_measure_best() -> None:
    """The report's year in a sentence with one word of the measure ("growth") does not make
    it the sentence where measure and period meet, since another names more of the measure:
    the one naming the forecast, GDP and India answers, though it names no year."""
    question = (
        "What was the shortfall in India's GDP growth from 2002 to 2003 compared to the forecast?"
    )
    assert _first(question, ECONOMY).startswith("Against a forecast GDP growth of 6.7%")


PLANT_ONLY = _table(
    "Supplemental Balance Sheet Information",
    ["", "2018", "2017"],
    [
        ["Land", "340", "348"],
        ["Buildings and leasehold improvements", "7,517", "7,681"],
        ["Machinery and equipment", "15,680", "15,907"],
        ["Gross property, plant and equipment", "24,873", "25,313"],
        ["Accumulated depreciation", "(16,135)", "(16,048)"],
        ["Property, plant and equipment - net", "8,738", "8,866"],
    ],
)


GEOGRAPHY = [
    ["", "", "Year ended December 31, 2018", "", "", "", ""],
    ["", "", "", "Europe,", "Latin", "", ""],
    ["", "United", "Asia", "Middle East", "America/", "Other", ""],
    ["", "States", "Pacific", "& Africa", "Canada", "Unallocated", "Worldwide"],
    ["Net sales (millions)", "$ 12,840", "$ 10,254", "$ 6,654", "$ 3,024", "$ (7)", "$ 32,765"],
    ["% of worldwide sales", "39.2 %", "31.3 %", "20.3 %", "9.2 %", "—", "100.0 %"],
]
GEOGRAPHY_EDGES = (57.0, 300.0, 340.0, 380.0, 420.0, 460.0, 500.0, 540.0)


def test_a_row_label_wrapped_onto_the_next_line_is_read_whole() -> None:
    """A label too long for its column goes on in the next row, which holds the figures: the
    cell is labelled with all of it, not with its last line ("customers" alone is no row)."""
    chunk = _table(
        "Consolidated Statements of Cash Flows",
        ["", "2023", "2022"],
        [
            ["Depreciation and amortization", "918", "869"],
            ["Additions to property and equipment, net of non-cash", "", ""],
            ["capital expenditures", "(930)", "(737)"],
            ["Purchases of investments", "(46)", "(233)"],
        ],
    )
    labels = {cell.label for cell in table_cells(chunk)}
    assert "Additions to property and equipment, net of non-cash capital expenditures" in labels
    assert "capital expenditures" not in labels
    assert "Purchases of investments" in labels  # a capitalised label starts a row of its own


def test_an_amount_is_not_answered_by_a_share_of_it() -> None:
    """ "Total revenues in 2022" is an amount: a segment's "% of total company revenues" row
    names both words too, but holds a share; a question about a share still gets it."""
    segment = _table(
        "Commercial Airplanes",
        ["", "2022", "2021"],
        [["Revenues", "$25,867", "$19,493"], ["% of total company revenues", "39 %", "31 %"]],
    )
    location = _table(
        "Revenues by customer location",
        ["", "2022", "2021"],
        [["Asia", "$8,393", "$5,845"], ["Total revenues", "$66,608", "$62,286"]],
    )
    assert _first("What were Boeing's total revenues in 2022?", segment, location).startswith(
        "Total revenues, 2022: $66,608"
    )
    share = "What percentage of total company revenues did Commercial Airplanes make in 2022?"
    assert _first(share, segment, location).startswith("% of total company revenues, 2022: 39 %")


def test_a_total_row_counts_what_its_column_names() -> None:
    """A store table names what it counts in its columns ("Stores at End of Quarter") and its
    rows by banner, the last "Total": that row meets a question of how many stores the company
    had, where no row label names stores (the banner named like the company is no answer)."""
    stores = _table(
        "Domestic segment stores",
        ["", "Fiscal 2024 Stores at Beginning of Quarter", "Fiscal 2024 Stores at End of Quarter"],
        [
            ["Best Buy", "932", "930"],
            ["Outlet Centers", "20", "22"],
            ["Yardbird", "13", "17"],
            ["Total", "965", "969"],
        ],
    )
    plans = _paragraph(
        "Store plans",
        ["In fiscal 2024 we plan to close 20 to 30 large format stores and open 5 outlets."],
    )
    question = "How many stores did Best Buy have at the end of the quarter in fiscal 2024?"
    company = AnswerOptions(scope=Scope(name_terms=frozenset(stems("Best Buy"))))
    for chunks in [(stores, plans), (plans, stores)]:
        answer = _first(question, *chunks, options=company)
        assert answer.startswith("Total, Fiscal 2024 Stores at End of Quarter: 969"), answer


class _YearAlike(SameVector):
    """Texts of 2022 nearer the question than the rest: an embedding that favours the wrong year."""

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        rows = [[0.8, 0.6] if "2022" in text else [0.6, 0.8] for text in texts]
        return np.array(rows, dtype=np.float32)


def test_after_the_cell_asked_for_no_cell_of_another_year_follows() -> None:
    """The cell where measure and year meet answers; a cell of the same row in another year,
    however alike in meaning, does not follow it into the answer as a second figure."""
    sheet = _table(
        "Balance Sheets",
        ["", "2023", "2022"],
        [["Accounts payable", "5,471", "5,406"], ["Long-term debt", "1,145", "1,184"]],
    )
    hits = [ScoredChunk(chunk=sheet, score=0.9)]
    answer = extractive_answer("What were accounts payable in 2023?", hits, embedder=_YearAlike())
    assert answer.text == "Accounts payable, 2023: 5,471 [1]"


def test_of_rows_naming_the_measure_alike_the_one_saying_least_else_is_met() -> None:
    """ "Cash and cash equivalents" is asked for. The cash flow statement's rows name it as well
    ("cash, cash equivalents and restricted cash") and come first among the hits, but say what
    the question does not ("increase", "restricted"): the row that names it alone is met."""
    changes = _table(
        "Consolidated Statements of Cash Flows",
        ["", "January 28, 2023", "January 29, 2022"],
        [
            ["Increase (decrease) in cash, cash equivalents and restricted cash", "(952)", "(20)"],
            ["Cash, cash equivalents and restricted cash at end of period", "$ 2,253", "$ 3,205"],
        ],
    )
    note = _table(
        "Cash, Cash Equivalents and Restricted Cash",
        ["", "January 28, 2023", "January 29, 2022"],
        [
            ["Cash and cash equivalents", "$ 1,874", "$ 2,936"],
            ["Restricted cash included in Other current assets", "379", "269"],
        ],
    )
    question = "What is Cash and cash equivalents for the fiscal year ending January 28, 2023?"
    hits = [ScoredChunk(chunk=c, score=0.9) for c in (changes, note)]
    answer = extractive_answer(question, hits, embedder=SameVector(), max_sentences=1)
    assert answer.text is not None
    assert answer.text.startswith("Cash and cash equivalents, January 28, 2023: $ 1,874")


def test_a_date_the_question_names_is_no_measure_and_a_total_row_is_the_whole() -> None:
    """ "Revenue for the three months ended July 29, 2023": "July" and "29" name the column,
    not a row, so a restructuring table's "Total" row under that date does not meet the
    question; and of the rows named "Revenue", the segment note's "Total revenue" is the
    company's, where a segment's own table reads "Revenue" too."""
    header = ["", "Three Months Ended July 29, 2023", "Three Months Ended July 30, 2022"]
    charges = _table(
        "Restructuring", header, [["Domestic", "$ (7)", "$ 34"], ["Total", "$ (7)", "$ 34"]]
    )
    segment = _table(
        "International Segment Performance Summary",
        header,
        [["Revenue", "$ 693", "$ 724"], ["Operating income", "$ 19", "$ 28"]],
    )
    note = _table(
        "Segments",
        header,
        [
            ["Total Domestic revenue", "$ 8,890", "$ 9,605"],
            ["Total International revenue", "693", "724"],
            ["Total revenue", "$ 9,583", "$ 10,329"],
        ],
    )
    question = "What was Best Buy's revenue for the three months ended July 29, 2023?"
    hits = [ScoredChunk(chunk=c, score=0.9) for c in (charges, segment, note)]
    answer = extractive_answer(question, hits, embedder=SameVector(), max_sentences=1)
    assert answer.text is not None
    assert answer.text.startswith("Total revenue, Three Months Ended July 29, 2023: $ 9,583")


AMCOR_SALES = _table(
    "Condensed Consolidated Statements of Income",
    ["", "Three Months Ended December 31, 2022", "Three Months Ended December 31, 2021"],
    [["Net sales", "$ 3,642", "$ 3,507"], ["Cost of sales", "(2,911)", "(2,829)"]],
)
AMCOR_CHANGE = _paragraph(
    "Net sales",
    [
        "Net sales increased by $135 million, or 4%, for the three months ended December 31,"
        " 2022, compared to the three months ended December 31, 2021.",
        "Excluding currency impacts, the increase in net sales for the three months ended"
        " December 31, 2022 was $39 million, or 1%.",
    ],
)


DIVIDENDS = _table(
    "Share Repurchases and Dividends",
    ["", "Three Months Ended", "", "Six Months Ended", ""],
    [
        ["", "July 29, 2023", "July 30, 2022", "July 29, 2023", "July 30, 2022"],
        ["Total cost of shares repurchased", "$ 69", "$ 10", "$ 150", "$ 452"],
        ["Regular quarterly cash dividend per share", "$ 0.92", "$ 0.88", "$ 1.84", "$ 1.76"],
        ["Cash dividends declared and paid", "$ 200", "$ 198", "$ 402", "$ 396"],
    ],
    (72.0, 260.0, 330.0, 400.0, 470.0, 540.0),
)


def test_a_column_of_another_part_of_the_year_does_not_answer_for_the_quarter() -> None:
    """A 10-Q's statement of income has the quarter's column and the half year's side by side,
    both ending on one day: asked for the second quarter, the three months' cell answers, and
    asked for the first six months, the six months' cell."""
    income = _table(
        "Statements of Income",
        ["", "Three Months Ended Jul 1, 2023", "Six Months Ended Jul 1, 2023"],
        [
            ["Net revenue", "12,949", "24,664"],
            ["Earnings (loss) per share, diluted", "$ 0.35", "$ (0.31)"],
        ],
    )
    quarter = _first("What were diluted earnings per share in the second quarter of 2023?", income)
    assert quarter.startswith("Earnings (loss) per share, diluted, Three Months Ended")
    assert "0.35" in quarter
    half = _first("What were diluted earnings per share in the first six months of 2023?", income)
    assert "(0.31)" in half


def test_a_rows_own_label_not_its_section_and_no_qualifier_unasked_is_closest() -> None:
    """Asked for "additions to property, plant and equipment", the cash flow statement's row of
    that name is the answer, though it sits under "Cash flows used for investing activities"
    (words of its section, not of the row) and a reconciliation's "Net additions to property,
    plant, and equipment" names the measure as well; "the first six months" names a period, so
    a sentence dated in it that shares no word of the measure does not meet the question."""
    header = ["", "Six Months Ended Jul 1, 2023", "Six Months Ended Jul 2, 2022"]
    statement = _table(
        "Statements of Cash Flows",
        header,
        [
            ["Cash flows used for investing activities:", "", ""],
            ["Additions to property, plant, and equipment", "(13,301)", "(11,846)"],
            ["Purchases of short-term investments", "(25,696)", "(25,514)"],
            ["Net cash used for investing activities", "(11,329)", "(2,419)"],
        ],
    )
    reconciliation = _table(
        "Free Cash Flow",
        header,
        [
            ["Net cash provided by operating activities", "1,023", "6,700"],
            ["Net additions to property, plant, and equipment", "(12,418)", "(11,793)"],
        ],
    )
    estimate = _paragraphs(
        "We estimate this change resulted in an approximate $930 million increase to gross"
        " margin in the first six months of 2023.",
    )
    question = (
        "What were additions to property, plant and equipment in the first six months of 2023?"
    )
    hits = [ScoredChunk(chunk=c, score=0.9) for c in (estimate, reconciliation, statement)]
    answer = extractive_answer(question, hits, embedder=SameVector(), max_sentences=1)
    assert answer.text is not None
    assert "(13,301)" in answer.text, answer.text
