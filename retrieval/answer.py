"""Extractive answers: the best-supported sentences of the top hits, each cited to its lines.

Sentences of the top hits are scored by the question terms they contain (word stems, weighted by
an IDF over the candidate sentences, numbers weigh more) times the hit's relative score; given the
index's embedding model, the best of them are ranked again by the similarity of the sentence, led
by its section heading, to the question (docs/benchmarks.md measures both). The answer gives them
best first, each with a citation of its own that points at the sentence's part of the chunk lines
it spans, not at the whole chunk; a lead-in ("... are as follows:") is cited with what it
introduces. When even the best of them is less like the question than `MIN_SUPPORT` (measured in
docs/benchmarks.md against questions asked of the wrong documents), there is no answer: the
documents do not answer the question.

Table rows are never quoted as rows: each value cell is a candidate of its own, in words ("Net
sales, 2023: 14,694 (in millions)", `retrieval.cells`), cited to the cell's box. A candidate
where the question's measure and period meet (a sentence naming the year and the measure best
among the sentences; a cell whose column header names the year and whose row label names the
measure best among such cells) weighs `_MEET` times as much.
"""

from __future__ import annotations

import calendar
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple

from ocr_engine.geometry import centre_inside, union
from retrieval.cells import (
    TableCellText,
    is_table_row,
    periods,
    row_words,
    stated_unit,
    table_cells,
    year_row_above,
)
from retrieval.compare import asked_extreme, cell_value, parallel, parallel_labels, signed_change
from retrieval.doc_card import DocKind, DocumentCard
from retrieval.evidence import Evidence, locate
from retrieval.line_items import measure_text, other_names, with_line_items
from retrieval.page_layout import TITLE_GAP, Layout, is_caption, is_title
from retrieval.page_refs import captions
from retrieval.schema import TABLE_ROWS_KIND, BBox, Chunk, Citation, Region, ScoredChunk, Support
from retrieval.text_terms import said, sentence_spans, stems, terms

if TYPE_CHECKING:
    from retrieval.embedder import Embedder

__all__ = [
    "DENSE_POOL",
    "FOLLOW_AHEAD",
    "MIN_SUPPORT",
    "RANK_PRIOR",
    "SIBLING_REACH",
    "TABLE_REACH",
    "Answer",
    "AnswerOptions",
    "PageRange",
    "answer_texts",
    "around_ids",
    "cite",
    "extractive_answer",
    "following_ids",
    "sentence_spans",
    "table_pieces",
    "table_unit",
    "terms",
]

DENSE_POOL = 8
MIN_SUPPORT = 0.4  # the best sentence's cosine to the question below which nothing answers it
_DENSE_FLOOR = 0.3
_SHARE = re.compile(r"%|\bpercent", re.I)  # a cell that holds a share of something
_ASKS_SHARE = re.compile(
    r"%|\bpercent|\bshare\b|\bproportion|\bratio\b|\brate\b|\bmargin|\bgrowth|\bchange"
    r"|\bincrease|\bdecrease|\bdecline|\byield",
    re.I,
)
_ABOUT = r"(?:approximately\s+|about\s+|nearly\s+)?[$€£¥]?\s?\d"
_STATES_CHANGE = re.compile(  # "Net sales increased by $135 million": a change, not the amount
    r"\b(?:increased|decreased|rose|fell|grew|declined|dropped|was\s+(?:up|down))\s+(?:by\s+)?"
    + _ABOUT
    + r"|\b(?:increase|decrease|decline|growth|change)s?\s+in\s+[^.;:]{0,80}?\b(?:was|were)\s+"
    + _ABOUT,
    re.I,
)
_ASKS_CHANGE = re.compile(
    r"\b(?:increas|decreas|chang|grow|grew|declin|rise|rose|fall|fell|drop|differ|compar"
    r"|year[- ]over[- ]year|yoy\b)",
    re.I,
)
_DENSE_WORDS = 48  # a long sentence is embedded by its opening: the cost grows with its length
_DENSE_KEEP = 0.8
FOLLOW_AHEAD = 3  # chunks after a lead-in that may hold what it introduces
TABLE_REACH = 4  # row-group chunks of a table on either side of a hit that its answer reads
SIBLING_REACH = 8  # chunks on either side of an answer's chunk whose sections it is compared with
_SUBSTANCE_WORDS = 8  # a shorter chunk after a lead-in (a table's column header) is passed over
_ORDINAL = re.compile(r"\d+$")
_PARENTHESES = re.compile(r"\([^()]*\)")
_PART_OF_YEAR = re.compile(
    r"\b(?:three|six|nine|3|6|9|13|26|39)[- ](?:months?|weeks?)\b|\bquarters?\b|\bQ[1-4]\b"
    r"|\bH[12]\b|\b(?:first|second|third|fourth) half\b",
    re.IGNORECASE,
)
_QUARTERLY = re.compile(r"\bquarterly\b|\bquarters?\b", re.I)
_AT_A_DATE = re.compile(r"\b(?:at|as of) (?:the )?(?:end|close) of\b|\bas of\b", re.I)
_DURATION = re.compile(r"\b(?:months?|weeks?|years?|quarters?|periods?) (?:ended|ending)\b", re.I)
_SPANS = [
    (re.compile(p, re.I), re.compile(c, re.I))
    for p, c in (
        (
            r"\bQ[1-4]\b|\bquarter|\b(?:three|3|13)[- ](?:months?|weeks?)\b",
            r"\b(?:three|3|13)[- ](?:months?|weeks?)\b|\bquarter",
        ),
        (
            r"\b(?:six|6|26)[- ](?:months?|weeks?)\b|\bH[12]\b|\b(?:first|second) half\b",
            r"\b(?:six|6|26)[- ](?:months?|weeks?)\b|\bhalf\b",
        ),
        (r"\b(?:nine|9|39)[- ](?:months?|weeks?)\b", r"\b(?:nine|9|39)[- ](?:months?|weeks?)\b"),
    )
]  # the span of time a question asks for, and a column header covering it
_FIGURE = re.compile(r"\d")
_PERIOD_WORDS = re.compile(  # what dates a sentence, which states no figure of the measure
    r"(?<!\d)(?:19|20)\d{2}(?:[-/]\d{2})?(?!\d)|\b(?:FY|Q|H)\s?'?\d{1,2}\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b",
    re.I,
)
_QUARTER_NAMED = re.compile(r"\bQ([1-4])\b|\b(first|second|third|fourth) quarter\b", re.I)
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_MEET = 1.5
_OTHER_SPAN = 0.8  # a cell whose column covers another span of time than the question asks for
_QUALIFIERS = frozenset(stems("net gross"))  # a row label's last word that names no measure
_WHOLE = frozenset(stems("total worldwide consolidated combined"))  # a column of the whole
_WHEN = frozenset(stems("period year fiscal fy quarter month annual end ended ending beginning"))
_MONTHS = frozenset(
    stems("January February March April May June July August September October November December")
    + stems("Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec")
)
_EDGES = frozenset(stems("end beginning"))  # which edge of a period: "Stores at End of Quarter"
HEADING_LEAD = 0.05  # how much more like the question than any sentence a heading must be to lead
_SAID_WORDS = 60  # the words of a table's rows an answer led by its heading says (all are quoted)
RANK_PRIOR = 1.0  # with a re-ranker: the second hit's sentences count half, the third's a third

PageRange = tuple[int | None, int | None]
"""First and last page (either open) that cited sentences must touch."""


@dataclass(frozen=True)
class AnswerOptions:
    """How an extractive answer is drawn: from the top `max_hits` hits; the `dense_pool` best
    sentences by terms ranked again by embedding (0: by terms alone); cited on `pages` (a
    request's page filter) while any sentence is; `following` gives the chunks after a chunk in
    its document (a store lookup), for a lead-in whose table is not among the hits; below
    `min_support` (the best pooled sentence's similarity to the question) there is no answer;
    with `cells`, table rows are read as cells, boxed by the `layout` (else by their row), and
    a title or caption is cited with the figure or table the layout says it names;
    `name_terms` (stems of the words the question names its documents by) lend no support, since
    every page of those documents carries them (a signature block would win on them); with a
    `rank_prior`, a sentence's score is divided by 1 + `rank_prior` times its hit's rank (0 for
    the first hit), so that a re-ranker's first page is cited first unless another is much
    better supported (measured in docs/benchmarks.md); `table_rest` gives the other pieces, on
    its page, of a table chunked in row groups (a store lookup), whose cells are candidates as
    if they were the hit's own: the search keeps one chunk a page, and the row that answers can
    lie in its neighbour; `card_of` gives, by doc_id, a document's card: where its fiscal year is
    not the calendar year it ends in, "Q2 FY2024" meets a column dated "July 29, 2023" in it,
    and a quarterly report's quarter dates a question naming that quarter alone ("at the end of
    Q2"); `subjects` are names the question gives as the owner of what it asks that name no
    document: an answer must come from hits whose text writes one of them, else there is none
    ("Apple's iPhone revenue" is not answered from Best Buy's revenue); `unit_of` gives the
    unit a table's neighbours state (`table_unit`, a store lookup), for a cited cell whose own
    lines name none; `caption` is the label of a figure or table the question names ("figure
    3"): a sentence of the hits that captions it is cited first (with what it captions, as any
    caption), since what the question asks is in that figure or table; a section heading over a
    hit's chunk leads the answer when it is more like the question than the best sentence by
    `heading_lead` (`_heading_lead`; measured in docs/benchmarks.md); `around` gives the chunks
    around a chunk in its document (a store lookup), whose sibling sections a superlative
    question compares (`_compared`)."""

    max_hits: int = 5
    dense_pool: int = DENSE_POOL
    min_support: float = MIN_SUPPORT
    pages: PageRange = (None, None)
    following: Callable[[Chunk], Sequence[Chunk]] | None = None
    cells: bool = True
    layout: Layout | None = None
    name_terms: frozenset[str] = frozenset()
    rank_prior: float = 0.0
    table_rest: Callable[[Chunk], Sequence[Chunk]] | None = None
    card_of: Callable[[str], DocumentCard | None] | None = None
    subjects: tuple[str, ...] = ()
    unit_of: Callable[[Chunk], str] | None = None
    caption: str = ""
    heading_lead: float = HEADING_LEAD
    around: Callable[[Chunk], Sequence[Chunk]] | None = None


class Answer(NamedTuple):
    text: str | None
    """None when the documents do not answer the question."""
    citations: list[Citation]
    support: float | None = None
    """The best pooled sentence's similarity to the question (None without an embedder)."""

    @property
    def found(self) -> bool:
        return self.text is not None


@dataclass(frozen=True)
class _Sentence:
    hit: int
    start: int
    end: int
    text: str
    terms: frozenset[str]
    cell: TableCellText | None = None
    heading: BBox | None = None
    """Where the section heading is that this candidate is (its chunk's text does not hold it)."""
    compared: str = ""
    """The heading of its section, said before it, when it was chosen among parallel sections."""
    heads: BBox | None = None
    """For a heading over a figure or table: its box (what the citation boxes; a table's rows are
    what it quotes)."""


def _candidates(
    hits: Sequence[ScoredChunk], pages: PageRange = (None, None), cells: bool = True
) -> list[_Sentence]:
    """The sentences of the hits, and with `cells` the value cells of their table rows in place
    of the rows; with a page range, those with a line on one of its pages."""
    low, high = pages
    sentences = []
    for index, hit in enumerate(hits):
        chunk = hit.chunk
        text = chunk.text
        rows = [ln for ln in chunk.lines if is_table_row(text[ln.start : ln.end])] if cells else []
        for start, end in sentence_spans(text):
            if (low or high) and not _on_pages(chunk, start, end, low, high):
                continue
            if any(ln.start < end and ln.end > start for ln in rows):
                continue
            shown = said(text[start:end])
            sentences.append(_Sentence(index, start, end, shown, frozenset(stems(shown))))
        for cell in table_cells(chunk) if rows else []:
            line = chunk.lines[cell.line]
            if (low or high) and not _on_pages(chunk, line.start, line.end, low, high):
                continue
            terms = frozenset(stems(cell.text))
            sentences.append(_Sentence(index, line.start, line.end, cell.text, terms, cell))
    return sentences


def _meet(
    question: str,
    sentences: list[_Sentence],
    hits: Sequence[ScoredChunk],
    ignored: frozenset[str] = frozenset(),
    card_of: Callable[[str], DocumentCard | None] | None = None,
) -> list[float]:
    """`_MEET` for a candidate where the question's measure and period meet, else 1: a
    sentence naming the question's year and the measure's terms best among the sentences (a
    report's year beside one word of the measure is not where they meet), and stating a figure
    that is not the measure's change unless the question asks for one ("Net sales increased by
    $135 million" is no answer to what net sales were); a cell whose column
    header names the year and whose row label holds the measure's terms best among such cells
    (two of them at least, all of a one-word label, or the label's last word, which names what
    a row counts: "Merchandise inventories"). Terms are weighed by IDF over the candidates. The
    measure is the question's `measure_text` (no statement it names) without its dates, the
    words of a period ("year end", "period") and the `ignored` name terms (the company a filing
    is about names every row of it), and the `other_names` of a line item it names, which a row
    label counts only whole ("Gross property, plant and equipment" is no capex). In a document
    whose fiscal year is not the calendar year it ends in (its card, `card_of`), a column dated
    in that calendar year is dated in the fiscal year too ("July 29, 2023" is Q2 FY2024 at Best
    Buy); a question naming a quarter but no year is dated by the quarterly reports of that
    quarter among the hits. A question of a balance "at the end of" a period meets a column of
    its date, not one of the months or years ended then (a cash flow statement's change in the
    same row). A cell that does not meet, in a column covering another span of time than the
    one the question names ("three months" for "six months"), gets `_OTHER_SPAN`."""
    cards = {d: card_of(d) for d in {h.chunk.doc_id for h in hits}} if card_of else {}
    years = periods(question) or _years_of_quarter(question, cards)
    if not years:
        return [1.0] * len(sentences)
    own = set(stems(_PART_OF_YEAR.sub(" ", measure_text(question)))) - years - _WHEN - ignored
    own = {t for t in own if t not in _MONTHS and not t.isdigit()}  # "July 29" is no measure
    names = [frozenset(stems(name)) for name in other_names(question)]
    measure = own.union(*names)
    calendars = {d: card.fiscal_calendar for d, card in cards.items() if card is not None}
    dated_as = {
        doc_id: years | {calendar[1]}
        for doc_id, calendar in calendars.items()
        if calendar is not None and calendar[0] in years
    }

    def years_of(s: _Sentence) -> set[str]:
        return dated_as.get(hits[s.hit].chunk.doc_id, years)

    df = Counter(t for s in sentences for t in s.terms & measure)
    n = len(sentences)

    def weight(terms: Iterable[str]) -> float:
        return sum(math.log(1.0 + n / df[t]) for t in terms if df[t])

    def label_weight(cell: TableCellText) -> float:
        words = stems(cell.label, keep_stopwords=True)  # "Other, net" is no one-word label
        label = set(words)
        if label and label <= _WHOLE:  # a "Total" row counts what its column names ("Stores")
            return weight(set(stems(_PARENTHESES.sub(" ", cell.header))) & own)
        counted = own.union(*(name for name in names if name <= label))  # another name, whole
        matched = label & counted
        named = [w for w in words if w not in _QUALIFIERS]  # "Receivables, net" counts receivables
        head = bool(named) and named[-1] in counted
        if len(matched) < min(2, len(label)) and not head:  # another single word is no match
            return 0.0
        return weight(matched)

    cells = {i: s.cell for i, s in enumerate(sentences) if s.cell is not None}
    dated = {i: c for i, c in cells.items() if periods(c.header) & years_of(sentences[i])}
    if not _PART_OF_YEAR.search(question):  # a question naming no quarter asks for the year
        quarterly = {  # "Selected Quarterly Financial Data": its columns are quarters
            n
            for n, hit in enumerate(hits)
            if _QUARTERLY.search(" ".join(hit.chunk.section_path[-1:]))
        }

        def of_part(i: int, cell: TableCellText) -> bool:
            return sentences[i].hit in quarterly or bool(_PART_OF_YEAR.search(cell.header))

        dated = {i: c for i, c in dated.items() if not of_part(i, c)} or dated
    if not _ASKS_SHARE.search(question):  # "total revenues" is an amount, not "% of revenues"
        dated = {
            i: c for i, c in dated.items() if not _SHARE.search(f"{c.label} {c.value}")
        } or dated
    labelled = {i: label_weight(c) for i, c in dated.items()}
    best = max(labelled.values(), default=0.0)
    named_row = [i for i, w in labelled.items() if best > 0 and w >= best - 1e-9]
    named_row = _closest_labels(question, named_row, cells, measure)
    named_row = _columns_of_span(question, named_row, cells)
    named_row = _columns_of_quarter_end(question, named_row, sentences, hits, cards)
    asked = set(stems(question)) - years - (_WHEN - _EDGES) - ignored  # "end" names a column
    cells_met = _columns_asked(sentences, named_row, asked)
    worded = [weight(s.terms & measure) if s.cell is None else 0.0 for s in sentences]
    most = max(worded, default=0.0)
    asks_change = bool(_ASKS_CHANGE.search(question))
    span = _asked_span(question)
    factors = []
    for i, s in enumerate(sentences):
        if s.cell is not None:
            meets = i in cells_met
            header = s.cell.header
            other = span is not None and not span.search(header)
            if not meets and other and any(c.search(header) for _, c in _SPANS):  # 3 months for 6
                factors.append(_OTHER_SPAN)
                continue
        else:
            dated_text = bool(periods(s.text) & years and s.terms & measure)
            dated_text = dated_text and bool(_FIGURE.search(_PERIOD_WORDS.sub(" ", s.text)))
            dated_text = dated_text and (asks_change or not _STATES_CHANGE.search(s.text))
            meets = dated_text and worded[i] >= most - 1e-9
        factors.append(_MEET if meets else 1.0)
    return factors


def _closest_labels(
    question: str, found: list[int], cells: dict[int, TableCellText], measure: set[str]
) -> list[int]:
    """Of the cells whose labels name the measure equally well, those whose labels say least
    besides the question's words ("Cash and cash equivalents" is asked for, not "Increase
    (decrease) in cash, cash equivalents and restricted cash"), and of those the ones that say
    they are the whole ("Total revenue", where a segment's table has a "Revenue" row too)."""
    said = set(stems(question)) | measure | _WHOLE | _QUALIFIERS

    def rank(i: int) -> tuple[int, bool]:
        label = set(stems(_PARENTHESES.sub(" ", cells[i].label)))
        return len(label - said), not label & _WHOLE

    ranks = {i: rank(i) for i in found}
    best = min(ranks.values(), default=(0, False))
    return [i for i in found if ranks[i] == best]


def _named_quarter(question: str) -> int | None:
    """The quarter a question names ("Q2", "the second quarter"), if any."""
    named = _QUARTER_NAMED.search(question)
    if named is None:
        return None
    return int(named.group(1)) if named.group(1) else _ORDINALS[named.group(2).lower()]


def _years_of_quarter(question: str, cards: dict[str, DocumentCard | None]) -> set[str]:
    """The fiscal years of the quarterly reports, among `cards`, of the quarter a question names
    without a year ("at the end of Q2" asked of a Q2 10-Q); none when it names no quarter."""
    quarter = _named_quarter(question)
    if quarter is None:
        return set()
    return {str(c.year) for c in cards.values() if c and c.quarter == quarter and c.year}


def _columns_of_quarter_end(
    question: str,
    found: list[int],
    sentences: list[_Sentence],
    hits: Sequence[ScoredChunk],
    cards: dict[str, DocumentCard | None],
) -> list[int]:
    """Of the `found` cells, those of a quarterly report's column dated the day its quarter ended,
    when the question names that quarter ("Q2" of the 10-Q for the quarter ended July 29, 2023:
    the July 29, 2023 column, not the fiscal year's end beside it), or of an annual report's
    column dated in the month that quarter of its fiscal year ends (a 10-K's quarterly table:
    "the fourth quarter of 2017" is "December 31" where the year ends December 31), when some
    are."""
    quarter = _named_quarter(question)
    if quarter is None:
        return found

    def on_quarter_end(i: int) -> bool:
        card = cards.get(hits[sentences[i].hit].chunk.doc_id)
        cell = sentences[i].cell
        if card is None or card.period_end is None or cell is None:
            return False
        end = card.period_end
        if card.quarter is None and card.kind is DocKind.annual_report:
            month = (end.month - 3 * (4 - quarter) - 1) % 12 + 1
            named = rf"\b(?:{calendar.month_name[month]}|{calendar.month_abbr[month]})\b"
            return re.search(named, cell.header, re.I) is not None
        if card.quarter != quarter:
            return False
        day = rf"\b(?:{end.strftime('%B')}|{end.strftime('%b')})\.?\s+0?{end.day}\b"
        return re.search(day, cell.header, re.I) is not None

    return [i for i in found if on_quarter_end(i)] or found


def _columns_of_span(question: str, found: list[int], cells: dict[int, TableCellText]) -> list[int]:
    """Of the `found` cells, those whose column covers the span of time the question asks for,
    when some do: a balance "at the end of" a period is a column of its date, not of the months
    ended then; a quarter's figure is the three months' column, not the six months' beside it."""
    if _AT_A_DATE.search(question):
        found = [i for i in found if not _DURATION.search(cells[i].header)] or found
    column = _asked_span(question)
    if column is not None:
        return [i for i in found if column.search(cells[i].header)] or found
    return found


def _asked_span(question: str) -> re.Pattern[str] | None:
    """What a column header covering the span of time the question names says, if it names one."""
    return next((column for asks, column in _SPANS if asks.search(question)), None)


def _columns_asked(sentences: list[_Sentence], cells: list[int], asked: set[str]) -> set[int]:
    """Of the `cells` (indices of cells that meet by row and period), in each row those of the
    column the question names (a word of its header that the question `asked` beyond its period:
    "Asia"), else of the whole (a "Total" or "Worldwide" column: a question naming no part asks
    for the whole), else all of them."""
    rows: dict[tuple[int, int], list[tuple[int, set[str]]]] = {}
    for i in cells:
        cell = sentences[i].cell
        assert cell is not None
        head = set(stems(_PARENTHESES.sub(" ", cell.header)))  # "(in thousands)" is no column
        rows.setdefault((sentences[i].hit, cell.line), []).append((i, head))
    kept: set[int] = set()
    for row in rows.values():
        most = max((len(head & asked) for _, head in row), default=0)
        named = [i for i, head in row if most and len(head & asked) == most]
        whole = [i for i, head in row if head & _WHOLE]
        kept.update(named or whole or [i for i, _ in row])
    return kept


def _on_pages(chunk: Chunk, start: int, end: int, low: int | None, high: int | None) -> bool:
    """Whether characters `start`..`end` of the chunk have a line on pages `low`..`high` (true
    for a chunk without lines)."""
    on = [ln.page for ln in chunk.lines if ln.start < end and ln.end > start]
    return not on or any((low or p) <= p <= (high or p) for p in on)


def _rank(
    question: str,
    hits: Sequence[ScoredChunk],
    sentences: list[_Sentence],
    ignored: frozenset[str] = frozenset(),
) -> list[float]:
    """Support of each sentence: IDF-weighted share of the question terms (but `ignored`) and
    of the other names of a line item it names ("topline" is "revenues"), times the hit
    weight."""
    wanted = (set(stems(question)) - ignored) or set(stems(question))
    wanted = wanted or set(stems(question, keep_stopwords=True))
    wanted |= {t for name in other_names(question) for t in stems(name)} - ignored
    if not wanted or not sentences:
        return [0.0] * len(sentences)
    df = Counter(t for s in sentences for t in s.terms & wanted)
    n = len(sentences)

    def weight(term: str) -> float:
        idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
        return idf * (1.5 if term[0].isdigit() else 1.0)

    total = sum(weight(t) for t in wanted)
    top = max(hit.score for hit in hits)
    scores = []
    for s in sentences:
        lexical = sum(weight(t) for t in s.terms & wanted) / total
        relative = hits[s.hit].score / top if top > 0 else 1.0
        length = 0.7 if len(s.terms) < 3 else min(1.0, 60 / len(s.terms))
        scores.append(lexical * (0.5 + 0.5 * relative) * length)
    return scores


def _dense(
    question: str,
    hits: Sequence[ScoredChunk],
    sentences: list[_Sentence],
    lexical: list[float],
    embedder: Embedder,
    pool: int,
    meet: Sequence[float] = (),
) -> tuple[list[float], float]:
    """The `pool` best sentences by `lexical`, down to 0.3 times the best, scored again by the
    similarity of their text, led by their section heading, to the question; the others score 0.
    (The floor keeps a sentence merely alike in meaning from outvoting one with the question's
    rare terms, such as a name.) Table cells have a pool of their own, half as large, so that the
    many cells of a table do not crowd the sentences out; a cell where measure and period `meet`
    is scored whatever its rank. Also the best similarity (0.0 for no sentence)."""
    floor = _DENSE_FLOOR * max(lexical, default=0.0)
    ranked = sorted(range(len(sentences)), key=lambda i: -lexical[i])
    texts_first = [i for i in ranked if sentences[i].cell is None][:pool]
    cells_first = [i for i in ranked if sentences[i].cell is not None][: max(1, pool // 2)]
    meeting = [i for i, m in enumerate(meet) if m > 1.0 and sentences[i].cell is not None]
    pooled = sorted({*texts_first, *cells_first}, key=lambda i: -lexical[i])
    order = [i for i in pooled if lexical[i] >= floor]
    order += [i for i in meeting if i not in order]
    if not order:
        return [0.0] * len(sentences), 0.0
    texts = [_in_context(hits[sentences[i].hit].chunk, sentences[i].text) for i in order]
    similarity = embedder.embed_documents(texts) @ embedder.embed_query(with_line_items(question))
    scores = [0.0] * len(sentences)
    for i, value in zip(order, similarity, strict=True):
        scores[i] = max(float(value), 1e-6)
    return scores, float(max(similarity))


def _in_context(chunk: Chunk, text: str) -> str:
    opening = " ".join(text.split()[:_DENSE_WORDS])
    return f"{chunk.section_path[-1]}: {opening}" if chunk.section_path else opening


def answer_texts(chunk: Chunk) -> list[str]:
    """Every text an answer may embed for `chunk` (each candidate sentence and table cell, led by
    its section heading, and the heading itself), once: what ingest can embed ahead of the
    queries."""
    hit = [ScoredChunk(chunk=chunk, score=1.0)]
    texts = [_in_context(chunk, s.text) for s in _candidates(hit)]
    return list(dict.fromkeys([*texts, *chunk.section_path[-1:]]))


def _writes(text: str, names: Sequence[str]) -> bool:
    """Whether the text writes one of the names, as whole words in any case."""
    return any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) for name in names)


def _select(
    sentences: list[_Sentence], scores: list[float], limit: int, keep: float = 0.4
) -> list[_Sentence]:
    """The best-supported sentences, best first, down to `keep` times the best score, leaving out
    near-repeats of a chosen one."""
    order = sorted(range(len(sentences)), key=lambda i: -scores[i])
    chosen: list[_Sentence] = []
    for i in order:
        if scores[i] <= 0 or scores[i] < keep * scores[order[0]] or len(chosen) == limit:
            break
        s = sentences[i]
        if all(_jaccard(s.terms, c.terms) < 0.7 for c in chosen):
            chosen.append(s)
    return chosen


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def cite(
    n: int,
    hit: ScoredChunk,
    spans: Sequence[tuple[int, int]],
    *,
    support: Support | None = None,
    then: Sequence[Chunk] = (),
    located: tuple[Evidence, str] | None = None,
) -> Citation:
    """`hit` cited as source `n`: boxed to the chunk lines that overlap the character `spans` of
    its text, quoting them (in text order; a gap between them shown as an ellipsis), unless
    `located` says where and what; the whole of each chunk in `then` (what the cited text
    introduces) is boxed and quoted after them."""
    chunk = hit.chunk
    where, quote_text = located or _located(chunk, spans)
    for after in then:
        evidence, after_text = _located(after, [(0, len(after.text))])
        where = where.followed_by(evidence)
        quote_text = f"{quote_text} … {after_text}"
    return Citation(
        n=n,
        doc_id=chunk.doc_id,
        source=chunk.source,
        page=where.page,
        bbox=where.bbox,
        regions=where.regions,
        quote=quote_text,
        score=hit.score,
        **where.links(chunk.doc_id),
        support=support,
    )


def _cell_evidence(
    chunk: Chunk, cell: TableCellText, options: AnswerOptions
) -> tuple[Evidence, str]:
    """Where a table cell is (its box, else its row's; its preview shows the row, label
    included, under its table's column headings) and its words."""
    line = chunk.lines[cell.line]
    box = options.layout.cell_box(chunk, line, cell.col) if options.layout else None
    box = box or line.bbox
    row = union([line.bbox, box])
    heads = options.layout.column_heads(chunk, line) if options.layout else None
    parts = [row] if heads is None else [heads, row]
    dating = year_row_above(chunk, cell.line)
    if dating is not None and chunk.lines[dating].page == line.page:
        year = chunk.lines[dating].bbox
        if heads is None or year[1] >= heads[3] - 1:  # not among the headings already shown
            parts.insert(-1, year)
    shown = _stacked(parts, row[3] - row[1])
    return Evidence(line.page, box, [Region(page=line.page, bbox=box)], [box], shown), cell.text


def _stacked(parts: list[BBox], line_height: float) -> tuple[BBox, ...]:
    """A preview of a row under its table's column headings and the row of the year that dates
    it (a quarterly table's "2016"), top to bottom: parts a few lines apart in one region, the
    others one under the other."""
    merged: list[BBox] = []
    for part in sorted(parts, key=lambda b: b[1]):
        if merged and part[1] - merged[-1][3] <= 3 * line_height:
            merged[-1] = union([merged[-1], part])
        else:
            merged.append(part)
    return tuple(merged)


def _located(chunk: Chunk, spans: Sequence[tuple[int, int]]) -> tuple[Evidence, str]:
    """Where the character `spans` of the chunk are, and their text as quoted."""
    ordered = sorted(set(spans))
    lines = [ln for ln in chunk.lines if any(ln.start < e and ln.end > s for s, e in ordered)]
    quote_text = ""
    previous_end: int | None = None
    for start, end in ordered:
        shown = said(chunk.text[start:end])
        if previous_end is not None:
            gap = chunk.text[previous_end:start] if start > previous_end else ""
            quote_text += " " if not gap.strip() else " … "
        quote_text += shown
        previous_end = max(end, previous_end or 0)
    return locate(chunk, lines, ordered), quote_text


def _cite_sentence(
    n: int,
    sentence: _Sentence,
    hits: Sequence[ScoredChunk],
    options: AnswerOptions,
) -> Citation:
    """The citation of an answer sentence; a lead-in ("... as follows:") is cited together with
    what it introduces: the lines under it in its column, or else what follows the chunk; a
    cell is cited to its box and quoted in words."""
    hit = hits[sentence.hit]
    span = (sentence.start, sentence.end)
    if sentence.cell is not None:
        return cite(n, hit, [span], located=_cell_evidence(hit.chunk, sentence.cell, options))
    if sentence.heading is not None:
        return cite(n, hit, [span], located=_headed(hit.chunk, sentence))
    following = options.following
    if not sentence.text.endswith((":", "：")):
        titled = _titled(hit.chunk, sentence, options.layout)
        return cite(n, hit, [span], located=titled)
    text = hit.chunk.text
    if text[sentence.end :].strip():
        end = _column_end(hit.chunk, sentence.start, sentence.end)
        return cite(n, hit, [(sentence.start, end)])
    return cite(n, hit, [span], then=_introduced(hit.chunk, hits, following))


def _column_end(chunk: Chunk, start: int, end: int) -> int:
    """Where the run of chunk lines that follow the lead-in at characters `start`..`end` one
    under another in its column ends (a jump up or sideways, a gap of more than a line or
    another page ends it: the labels of a figure beside a list are not what the list's lead-in
    introduces); the chunk's end when no line follows so, or the chunk has no lines."""
    text = chunk.text
    lead = [ln for ln in chunk.lines if ln.start < end and ln.end > start]
    after = [ln for ln in chunk.lines if ln.start >= end]
    if not lead or not after:
        return len(text.rstrip())
    page = lead[-1].page
    run = union([ln.bbox for ln in lead if ln.page == page])
    last = None
    for line in after:
        x0, y0, x1, y1 = line.bbox
        height = y1 - y0
        below = run[3] - height <= y0 <= run[3] + 1.5 * height
        if line.page != page or not (x0 < run[2] and x1 > run[0] and below):
            break
        run = union([run, line.bbox])
        last = line.end
    return len(text.rstrip()) if last is None else last


def _titled(
    chunk: Chunk, sentence: _Sentence, layout: Layout | None
) -> tuple[Evidence, str] | None:
    """A title's or caption's evidence together with the figure or table it names, when the
    layout knows one (else None: the sentence alone)."""
    caption = is_caption(sentence.text, chunk.kind)
    if layout is None or not (caption or is_title(sentence.text)):
        return None
    lines = [ln for ln in chunk.lines if ln.start < sentence.end and ln.end > sentence.start]
    if not lines:
        return None
    page = lines[0].page
    title = union(ln.bbox for ln in lines if ln.page == page)
    named = layout.titled(chunk.doc_id, page, title, caption)
    if named is None:
        return None
    where, quote_text = _located(chunk, [(sentence.start, sentence.end)])
    return where.followed_by(Evidence(page, named, [Region(page=page, bbox=named)], [named])), (
        quote_text
    )


def _introduced(
    chunk: Chunk,
    hits: Sequence[ScoredChunk],
    following: Callable[[Chunk], Sequence[Chunk]] | None,
) -> list[Chunk]:
    """What a chunk ending in a lead-in introduces: the nearest hit a few chunks after it, or
    else (given `following`) its next chunks up to the first of some length (a table's column
    header can be a chunk of its own); only chunks that start on the page the lead-in ends on
    or the next."""
    last_page = chunk.lines[-1].page if chunk.lines else chunk.page

    def starts_near(after: Chunk) -> bool:
        return 0 <= after.page - last_page <= 1

    ahead = set(following_ids(chunk.chunk_id, FOLLOW_AHEAD))
    near = [
        hit.chunk
        for hit in hits
        if hit.chunk.doc_id == chunk.doc_id
        and hit.chunk.chunk_id in ahead
        and starts_near(hit.chunk)
    ]
    if near:
        return [min(near, key=lambda c: c.chunk_id)]
    if following is None:
        return []
    introduced: list[Chunk] = []
    for after in following(chunk):
        if not starts_near(after):
            break
        introduced.append(after)
        if len(after.text.split()) >= _SUBSTANCE_WORDS:
            return introduced
    return []


def _with_table_rest(
    hits: list[ScoredChunk], table_rest: Callable[[Chunk], Sequence[Chunk]] | None
) -> tuple[list[ScoredChunk], list[int]]:
    """The hits, each followed by the other pieces of its table (`AnswerOptions.table_rest`)
    that are not hits themselves, scored as the hit; and the rank of the hit each comes from."""
    if table_rest is None:
        return hits, list(range(len(hits)))
    seen = {(h.chunk.doc_id, h.chunk.chunk_id) for h in hits}
    pool: list[ScoredChunk] = []
    ranks: list[int] = []
    for rank, hit in enumerate(hits):
        pool.append(hit)
        ranks.append(rank)
        for piece in table_rest(hit.chunk) if hit.chunk.kind == TABLE_ROWS_KIND else ():
            if (piece.doc_id, piece.chunk_id) not in seen:
                seen.add((piece.doc_id, piece.chunk_id))
                pool.append(ScoredChunk(chunk=piece, score=hit.score))
                ranks.append(rank)
    return pool, ranks


def following_ids(chunk_id: str, n: int) -> list[str]:
    """The ids of the `n` chunks after `chunk_id` in its document (`c0041` -> `c0042`, ...);
    none for an id without a number."""
    return _nearby_ids(chunk_id, range(1, n + 1))


def around_ids(chunk_id: str, n: int) -> list[str]:
    """The ids of the `n` chunks before `chunk_id` (nearest first) and the `n` after it."""
    return _nearby_ids(chunk_id, [*range(-1, -n - 1, -1), *range(1, n + 1)])


def _nearby_ids(chunk_id: str, steps: Sequence[int]) -> list[str]:
    found = _ORDINAL.search(chunk_id)
    if found is None:
        return []
    head, digits = chunk_id[: found.start()], found.group()
    at = int(digits)
    return [f"{head}{at + k:0{len(digits)}d}" for k in steps if at + k >= 0]


def table_pieces(chunk: Chunk, nearby: Sequence[Chunk]) -> list[Chunk]:
    """The chunks of `nearby` (the chunks around `chunk`, as `around_ids` orders them) that hold
    other row groups of the same table on its page: the unbroken runs of `table_rows` chunks
    on either side of a `table_rows` chunk."""
    if chunk.kind != TABLE_ROWS_KIND:
        return []
    by_id = {c.chunk_id: c for c in nearby}
    pieces = []
    for side in (range(-1, -TABLE_REACH - 1, -1), range(1, TABLE_REACH + 1)):
        for chunk_id in _nearby_ids(chunk.chunk_id, side):
            piece = by_id.get(chunk_id)
            if piece is None or piece.kind != TABLE_ROWS_KIND or piece.page != chunk.page:
                break
            pieces.append(piece)
    return pieces


def table_unit(chunk: Chunk, nearby: Sequence[Chunk]) -> str:
    """The unit stated for the table of `chunk` (a table, or a group of its rows) outside the
    chunk (`nearby` as `around_ids` orders the chunks around it, one beyond `TABLE_REACH`): in
    the lines of its other row groups on the page that are no rows, or in the last paragraph of
    the chunk before the table, on its page (a lead-in: "... was as follows ($ in millions):");
    "" when none states one."""
    by_id = {c.chunk_id: c for c in nearby}
    for piece in [chunk, *table_pieces(chunk, nearby)]:
        unit = stated_unit(" ".join(ln for ln in piece.text.splitlines() if not is_table_row(ln)))
        if unit:
            return unit
    for chunk_id in _nearby_ids(chunk.chunk_id, range(-1, -TABLE_REACH - 2, -1)):
        before = by_id.get(chunk_id)
        ends_on = before.lines[-1].page if before is not None and before.lines else None
        if before is None or (ends_on or before.page) != chunk.page:
            return ""
        if before.kind != TABLE_ROWS_KIND:
            return stated_unit(before.text.rstrip().rsplit("\n\n", 1)[-1])
    return ""


def extractive_answer(
    question: str,
    hits: Sequence[ScoredChunk],
    *,
    embedder: Embedder | None = None,
    options: AnswerOptions = AnswerOptions(),
    max_sentences: int = 3,
) -> Answer:
    """The best-supported sentences of the top hits, best first, each followed by the [n] of its
    own citation (boxed to that sentence's lines); `options` says which hits, pages and how many
    sentences the `embedder` (if any) ranks again, keeping those within 0.8 times the best. No
    answer (text None) without hits, or when no pooled sentence is as like the question as
    `options.min_support`."""
    top, ranks = _with_table_rest(list(hits[: options.max_hits]), options.table_rest)
    if options.subjects and not any(_writes(h.chunk.text, options.subjects) for h in top):
        return Answer(None, [], 0.0 if embedder is not None else None)
    sentences = _candidates(top, options.pages, options.cells) or _candidates(
        top, cells=options.cells
    )
    if not sentences:
        return Answer(None, [], 0.0 if embedder is not None else None)
    meet = (
        _meet(question, sentences, top, options.name_terms, options.card_of)
        if options.cells
        else [1.0] * len(sentences)
    )
    ranked = _rank(question, top, sentences, options.name_terms)
    scores = [v * m for v, m in zip(ranked, meet, strict=True)]
    support: float | None = None
    if embedder is None:
        chosen = _select(sentences, scores, max_sentences)
    elif options.dense_pool < 1:  # ranked by terms; the best of them still measures support
        _, support = _dense(question, top, sentences, scores, embedder, 1)
        chosen = _select(sentences, scores, max_sentences)
    else:
        scores, support = _dense(
            question, top, sentences, scores, embedder, options.dense_pool, meet
        )
        prior = [1.0 / (1.0 + options.rank_prior * ranks[s.hit]) for s in sentences]
        scores = [v * m * p for v, m, p in zip(scores, meet, prior, strict=True)]
        chosen = _select(sentences, scores, max_sentences, keep=_DENSE_KEEP)
    met = {id(s) for s, m in zip(sentences, meet, strict=True) if m > 1.0}
    lead = None
    if support is not None and options.dense_pool >= 1 and not (chosen and id(chosen[0]) in met):
        lead, support = _heading_lead(question, top, options, embedder, support)
    if support is not None and support < options.min_support:
        return Answer(None, [], support)
    if not chosen:  # no lexical support at all: the best hit's opening sentence
        chosen = sentences[:1]
    if lead is not None:
        chosen = [lead, *chosen][:max_sentences]
    if options.caption:
        chosen = _captioned_first(chosen, sentences, options.caption, max_sentences)
    if (
        chosen[0].cell is not None and id(chosen[0]) in met
    ):  # the cell asked for, not its row's others
        chosen = [s for s in chosen if s.cell is None or id(s) in met]
    chosen, top = _compared(
        question, chosen, sentences, top, options.around, max_sentences, options.name_terms
    )
    if options.unit_of is not None:
        chosen = [_with_unit(s, top, options.unit_of) for s in chosen]
    citations = [_cite_sentence(n, s, top, options) for n, s in enumerate(chosen, 1)]
    spoken = [_said(s, c) for s, c in zip(chosen, citations, strict=True)]
    text = " ".join(f"{words} [{n}]" for n, words in enumerate(spoken, 1))
    return Answer(text, citations, support)


def _said(sentence: _Sentence, citation: Citation) -> str:
    """What the answer says for a chosen sentence (its citation quotes it)."""
    words = (
        _heading_said(sentence, citation.quote)
        if sentence.heading is not None
        else _spoken(sentence)
    )
    return f"{sentence.compared} — {words}" if sentence.compared else words


def _compared(
    question: str,
    chosen: list[_Sentence],
    sentences: list[_Sentence],
    hits: list[ScoredChunk],
    around: Callable[[Chunk], Sequence[Chunk]] | None,
    most: int,
    ignored: frozenset[str] = frozenset(),
) -> tuple[list[_Sentence], list[ScoredChunk]]:
    """For a question asking which of several things did best or worst (`asked_extreme`), the
    `most` chosen sentences led by the first chosen one that has parallel candidates
    (`_peers`) and those, the extreme asked for first (each said with its section's heading),
    then the rest, else led by the cells of the column the question names
    (`_column_compared`); and the hits, with the chunks of the sibling sections read."""
    direction = asked_extreme(question)
    if not direction:
        return chosen, hits
    for compared in chosen:
        value = _compared_value(compared) if compared.heading is None else None
        if value is None:
            continue
        peers, pool = _peers(compared, sentences, hits, around)
        valued = [(v, peer) for peer in peers if (v := _compared_value(peer)) is not None]
        if not valued:
            continue
        ranked = sorted([(value, compared), *valued], key=lambda vs: -vs[0] * direction)
        led = [s for _, s in ranked]
        if compared.cell is None:
            led = [replace(s, compared=_section(pool, s)) for s in led]
        rest = [s for s in chosen if all(s is not peer for _, peer in ranked)]
        return [*led, *rest][:most], pool
    column = _column_compared(question, sentences, hits, ignored)
    if not column:
        return chosen, hits
    ordered = [s for _, s in sorted(column, key=lambda vs: -vs[0] * direction)]
    return [*ordered, *(s for s in chosen if all(s is not c for c in ordered))][:most], hits


def _column_compared(
    question: str,
    sentences: list[_Sentence],
    hits: list[ScoredChunk],
    ignored: frozenset[str],
) -> list[tuple[Decimal, _Sentence]]:
    """The value cells, with their values, of the table column whose header names most words of
    the question (not its dates, periods or the documents' names) among the columns of two rows
    or more whose labels name none of those words (the rows are things compared, such as models
    in a results table, not line items), leaving out a whole's rows ("Total", "Average"); none
    when no column is named."""
    wanted = {t for t in stems(question) if not t[0].isdigit()} - ignored - _WHEN
    columns: dict[tuple[str, int, int, str], list[tuple[Decimal, _Sentence]]] = {}
    first_hit: dict[tuple[str, int, int, str], int] = {}
    for s in sentences:
        cell = s.cell
        if cell is None or _WHOLE_ROW.match(cell.label):
            continue
        value = cell_value(cell.value)
        named = wanted & set(stems(cell.header))
        if value is None or not named or named & set(stems(cell.label)):
            continue
        chunk = hits[s.hit].chunk
        key = (chunk.doc_id, chunk.page, cell.col, cell.header)
        columns.setdefault(key, []).append((value, s))
        first_hit.setdefault(key, s.hit)
    found = [k for k, cells in columns.items() if len(cells) >= 2]
    if not found:
        return []
    best = max(found, key=lambda k: (len(wanted & set(stems(k[3]))), -first_hit[k]))
    return columns[best]


def _compared_value(sentence: _Sentence) -> Decimal | None:
    """What a parallel candidate is compared by: a cell's value, a sentence's stated change."""
    if sentence.cell is not None:
        return cell_value(sentence.cell.value)
    return signed_change(sentence.text)


def _peers(
    first: _Sentence,
    sentences: list[_Sentence],
    hits: list[ScoredChunk],
    around: Callable[[Chunk], Sequence[Chunk]] | None,
) -> tuple[list[_Sentence], list[ScoredChunk]]:
    """The candidates of `first`'s document parallel to it, and the hits with the chunks that
    hold the ones no hit holds: for a cell, the cells of its column on its page whose row labels
    are parallel to its own; for a sentence, the parallel sentences of its section and of its
    sibling sections (same parent heading), among the hits and around its chunk."""
    home = hits[first.hit].chunk
    parent = home.section_path[:-1]
    own = [
        s
        for s in sentences
        if s is not first
        and hits[s.hit].chunk.doc_id == home.doc_id
        and (first.cell is not None or hits[s.hit].chunk.section_path[:-1] == parent)
    ]
    cell = first.cell
    if cell is not None:
        return [
            s
            for s in own
            if s.cell is not None
            and s.cell.header == cell.header
            and hits[s.hit].chunk.page == home.page
            and parallel_labels(cell.label, s.cell.label)
        ], hits
    found = [s for s in own if s.cell is None and s.heading is None]
    added: list[ScoredChunk] = []
    seen = {(h.chunk.doc_id, h.chunk.chunk_id) for h in hits}
    for chunk in around(home) if around is not None else ():
        if (chunk.doc_id, chunk.chunk_id) in seen or not _sibling(chunk, home):
            continue
        added.append(ScoredChunk(chunk=chunk, score=hits[first.hit].score))
        for start, end in sentence_spans(chunk.text):
            text = said(chunk.text[start:end])
            found.append(_Sentence(len(hits) + len(added) - 1, start, end, text, frozenset()))
    return [s for s in found if parallel(first.text, s.text)], [*hits, *added]


def _sibling(chunk: Chunk, home: Chunk) -> bool:
    """Whether `chunk` lies in `home`'s section or a sibling of it: under the same parent."""
    path, own = chunk.section_path, home.section_path
    return len(path) == len(own) >= 1 and path[:-1] == own[:-1]


def _section(hits: Sequence[ScoredChunk], sentence: _Sentence) -> str:
    path = hits[sentence.hit].chunk.section_path
    return path[-1] if path else ""


def _heading_said(heading: _Sentence, quote: str) -> str:
    """What an answer led by a heading says: the heading and the first sentence of what it heads,
    or of a table it heads the rows, up to `_SAID_WORDS` (a cell's own full stop ends no row;
    its citation quotes all of it)."""
    rest = quote.removeprefix(f"{heading.text} — ")
    if rest == quote:
        return quote
    if heading.heads is not None:
        rows: list[str] = []
        for row in rest.split("; "):
            if rows and sum(len(r.split()) for r in [*rows, row]) > _SAID_WORDS:
                return f"{heading.text} — {'; '.join(rows)} …"
            rows.append(row)
        return quote
    first = next(iter(sentence_spans(rest)), None)
    return f"{heading.text} — {rest[first[0] : first[1]]}" if first else quote


def _heading_lead(
    question: str,
    hits: Sequence[ScoredChunk],
    options: AnswerOptions,
    embedder: Embedder | None,
    support: float,
) -> tuple[_Sentence | None, float]:
    """The section heading over a hit's chunk that is more like the question than the best
    sentence (`support`) by `options.heading_lead`, if any, and the best similarity of either: a
    question of a section as a whole ("How many button functions are there during a workout?")
    is answered by its heading and what it heads, which no one sentence under it says. A heading
    leads only with a word of the question other than the names of its documents, on the pages
    the options hold the answer to, and where the layout finds it on the page of its chunk's
    first line, above it, heading that chunk (`_opens`) or a figure or table (`Layout.headed`)."""
    if options.layout is None or embedder is None:
        return None, support
    wanted = set(stems(question)) - options.name_terms
    found = [h for h in _headings(hits, options.pages) if h.terms & wanted]
    if not found:
        return None, support
    asked = embedder.embed_query(with_line_items(question))
    similarity = embedder.embed_documents([h.text for h in found]) @ asked
    for i in sorted(range(len(found)), key=lambda i: -similarity[i]):
        if similarity[i] <= support + options.heading_lead:
            break
        chunk = hits[found[i].hit].chunk
        first = chunk.lines[0]
        box = options.layout.heading(chunk.doc_id, first.page, found[i].text, first.bbox[1])
        if box is None:
            continue
        block = options.layout.headed(chunk.doc_id, first.page, box)
        if block is not None or _opens(chunk, box):
            return replace(found[i], heading=box, heads=block), float(similarity[i])
    return None, support


def _opens(chunk: Chunk, heading: BBox) -> bool:
    """Whether the chunk starts right under the heading (not the rest of a long section, further
    down its page)."""
    return chunk.lines[0].bbox[1] - heading[3] <= TITLE_GAP


def _headings(hits: Sequence[ScoredChunk], pages: PageRange = (None, None)) -> list[_Sentence]:
    """The section headings of the hits' chunks, once each (by document, page of the chunk's
    first line, and words), with a page range those whose chunk starts on one of its pages."""
    low, high = pages
    found: dict[tuple[str, int, str], _Sentence] = {}
    for index, hit in enumerate(hits):
        chunk = hit.chunk
        if not chunk.section_path or not chunk.lines:
            continue
        text, page = chunk.section_path[-1], chunk.lines[0].page
        key = (chunk.doc_id, page, text)
        if key not in found and (low or page) <= page <= (high or page):
            found[key] = _Sentence(index, 0, 0, text, frozenset(stems(text)))
    return list(found.values())


def _headed(chunk: Chunk, sentence: _Sentence) -> tuple[Evidence, str]:
    """A section heading's evidence: what it heads (the figure or table under it, whole, else
    the chunk's first lines in their column), with the heading drawn too and shown
    above it in the crop, as a cell's column headings are; quoted as heading and lines (a
    table's rows, a figure's heading alone)."""
    assert sentence.heading is not None
    heading = sentence.heading
    first = chunk.lines[0]
    page = first.page
    named = sentence.heads
    if named is not None:
        where = Evidence(page, named, [Region(page=page, bbox=named)], [named])
        rows = [
            row_words(text)
            for ln in chunk.lines
            if ln.page == page
            and centre_inside(ln.bbox, named)
            and is_table_row(text := chunk.text[ln.start : ln.end])
        ]  # a table's rows are what it says; a figure's labels are read off its image
        rows = [r for r in rows if r]
        quote_text = f"{sentence.text} — {'; '.join(rows)}" if rows else sentence.text
    else:
        where, lines = _located(chunk, [(first.start, _column_end(chunk, first.start, first.end))])
        quote_text = f"{sentence.text} — {lines}"
    shown = _stacked([heading, where.bbox], heading[3] - heading[1])
    return replace(where, highlight=[heading, *where.highlight], context=shown), quote_text


def _captioned_first(
    chosen: list[_Sentence], sentences: list[_Sentence], label: str, most: int
) -> list[_Sentence]:
    """The chosen sentences after the first that captions `label`, if any sentence does."""
    caption = next((s for s in sentences if s.cell is None and captions(s.text, label)), None)
    if caption is None:
        return chosen
    return [caption, *(s for s in chosen if s is not caption)][:most]


_BULLET = re.compile(r"^[•●▪◦‣∙·■□➢➤-]\s+(?=\S)")
_WHOLE_ROW = re.compile(r"^\s*(?:total|average|mean|overall|all|sum)\b", re.I)
_ITEM_END = re.compile(r"\s*;(?:\s*(?:and|or))?\s*$")


def _spoken(sentence: _Sentence) -> str:
    """A sentence as the answer says it: without the bullet that leads it in a list ("• Touch
    Blood pressure" is "Touch Blood pressure") or the "; and" that ends a list item; a step's
    number stays, since the answer gives its sentences best first and the numbers show their
    order. Its citation quotes it whole."""
    if sentence.cell is not None:
        return sentence.text
    item = _BULLET.sub("", sentence.text, count=1)
    if item == sentence.text:
        return sentence.text
    return _ITEM_END.sub("", item) or sentence.text


def _with_unit(
    sentence: _Sentence, hits: Sequence[ScoredChunk], unit_of: Callable[[Chunk], str]
) -> _Sentence:
    """A cell naming no unit, with the unit its table's neighbours state, if any."""
    cell = sentence.cell
    if cell is None or cell.unit:
        return sentence
    unit = unit_of(hits[sentence.hit].chunk)
    if not unit:
        return sentence
    cell = replace(cell, unit=unit)
    return replace(sentence, text=cell.text, cell=cell)
