"""Where a question's measure and period meet: the candidate that names both weighs more."""

from __future__ import annotations

import calendar
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from retrieval.cells import (
    TableCellText,
    periods,
)
from retrieval.doc_card import DocKind, DocumentCard
from retrieval.schema import ScoredChunk
from retrieval.text_terms import stems

if TYPE_CHECKING:
    pass

from retrieval.answer.candidates import _Sentence

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
    own = set(stems(_PART_OF_YEAR.sub(" ", question))) - years - _WHEN - ignored
    own = {t for t in own if t not in _MONTHS and not t.isdigit()}  # "July 29" is no measure
    names: list[frozenset[str]] = []
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
