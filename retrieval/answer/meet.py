"""Where a question's measure and period meet: the candidate that names both weighs more."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from retrieval.answer.candidates import _Sentence
from retrieval.answer.cells import TableCellText
from retrieval.answer.dates import MONTH_NAME, days_of_month, periods
from retrieval.doc_card import GENERIC_WORDS, DocumentCard
from retrieval.schema import ScoredChunk
from retrieval.text_terms import stems

_PARENTHESES = re.compile(r"\([^()]*\)")


_PART_OF_YEAR = re.compile(  # with its ordinal: "the first six months" names no measure "first"
    r"\b(?:(?:first|second|third|fourth|1st|2nd|3rd|4th)[- ])?"
    r"(?:(?:three|six|nine|3|6|9|13|26|39)[- ](?:months?|weeks?)\b|quarters?\b)"
    r"|\bQ[1-4]\b|\bH[12]\b|\b(?:first|second|third|fourth) half\b",
    re.IGNORECASE,
)


_FIGURE = re.compile(r"\d")


_PERIOD_WORDS = re.compile(  # what dates a sentence, which states no figure of the measure
    r"(?<!\d)(?:19|20)\d{2}(?:[-/]\d{2})?(?!\d)|\b(?:FY|Q|H)\s?'?\d{1,2}\b"
    rf"|\b{MONTH_NAME}\.?\s+\d{{1,2}}\b",
    re.I,
)


_MEET = 1.5


_QUALIFIERS = frozenset(stems("net gross"))  # a row label's last word that names no measure


_WHOLE = frozenset(stems("total worldwide consolidated combined"))  # a column of the whole


_WHEN = frozenset(stems("period year fiscal fy quarter month annual end ended ending beginning"))


_GENERIC = frozenset(stems(" ".join(GENERIC_WORDS)))


def _organisation_terms(cards: Iterable[DocumentCard | None]) -> set[str]:
    """Stems of the words that name the organisations the cards are by or about, less the words
    that say only what kind of organisation it is ("Company", "Department", "Group")."""
    names = " ".join(card.organisation for card in cards if card is not None and card.organisation)
    return {t for t in stems(names) if len(t) >= 3 and t not in _GENERIC}


_MONTHS = frozenset(
    stems("January February March April May June July August September October November December")
    + stems("Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec")
)


# 78 lines, 20 of them the docstring that states the rule; the closures share the question's
# measure, its years and the terms' IDF over the candidates
def _meet(
    question: str,
    sentences: list[_Sentence],
    hits: Sequence[ScoredChunk],
    ignored: frozenset[str] = frozenset(),
    card_of: Callable[[str], DocumentCard | None] | None = None,
) -> list[float]:
    """`_MEET` for a candidate where the question's measure and period meet, else 1: a
    sentence naming the question's year, stating a figure, and naming the measure's terms best
    among the sentences (a report's year beside one word of the measure is not where they
    meet); a cell whose column header names the year and whose row label holds the measure's
    terms best among such cells (two of them at least, all of a one-word label, or the label's
    last word, which names what a row counts: "Merchandise inventories"), of those the labels
    saying least besides the question (`_closest_labels`). Terms are weighed by IDF over the
    candidates. The measure is the question's words without its dates, the words of a period
    ("year end", "three months"), the `ignored` name terms and the words of the hits'
    organisations, however the question writes them (the company a filing is about names every
    row of it: "Total Costco stockholders' equity" is no answer to "total liabilities for
    costco"). In a document whose fiscal year is not the calendar year it ends in
    (its card, `card_of`), a column dated in that calendar year is dated in the fiscal year too
    ("July 29, 2023" is in FY2024 at Best Buy). A question that names a day ("October 30,
    2022") meets the columns dated that day where there are any, not another date of its year,
    and the sentences so (`_on_the_day`)."""
    years = periods(question)
    if not years:
        return [1.0] * len(sentences)
    cards = {d: card_of(d) for d in {h.chunk.doc_id for h in hits}} if card_of else {}
    ignored = ignored | _organisation_terms(cards.values())
    own = set(stems(_PART_OF_YEAR.sub(" ", question))) - years - _WHEN - ignored
    measure = {t for t in own if t not in _MONTHS and not t.isdigit()}  # "July 29" is no measure
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
        return math.fsum(math.log(1.0 + n / df[t]) for t in terms if df[t])

    def label_weight(cell: TableCellText) -> float:
        words = stems(cell.label, keep_stopwords=True)  # "Other, net" is no one-word label
        label = set(words)
        if label and label <= _WHOLE:  # a "Total" row counts what its column names ("Stores")
            return weight(set(stems(_PARENTHESES.sub(" ", cell.header))) & measure)
        matched = label & measure
        named = [w for w in words if w not in _QUALIFIERS]  # "Receivables, net" counts receivables
        head = bool(named) and named[-1] in measure
        if len(matched) < min(2, len(label)) and not head:  # another single word is no match
            return 0.0
        return weight(matched)

    cells = {i: s.cell for i, s in enumerate(sentences) if s.cell is not None}
    dated = {i: c for i, c in cells.items() if periods(c.header) & years_of(sentences[i])}
    days = days_of_month(question)
    same_day = {i: c for i, c in dated.items() if days & days_of_month(c.header)}
    dated = same_day or dated
    labelled = {i: label_weight(c) for i, c in dated.items()}
    best = max(labelled.values(), default=0.0)
    named_row = [i for i, w in labelled.items() if best > 0 and w >= best - 1e-9]
    cells_met = set(_closest_labels(question, named_row, cells, measure))
    worded = [weight(s.terms & measure) if s.cell is None else 0.0 for s in sentences]
    most = max(worded, default=0.0)
    texts_met = set()
    for i, s in enumerate(sentences):
        dated_text = s.cell is None and bool(periods(s.text) & years and s.terms & measure)
        dated_text = dated_text and bool(_FIGURE.search(_PERIOD_WORDS.sub(" ", s.text)))
        if dated_text and worded[i] >= most - 1e-9:
            texts_met.add(i)
    texts_met = _on_the_day(days, sentences, texts_met)
    return [_MEET if i in cells_met or i in texts_met else 1.0 for i in range(len(sentences))]


def _on_the_day(days: set[tuple[str, int]], sentences: list[_Sentence], met: set[int]) -> set[int]:
    """Of the sentences `met`, where one names a day the question names, those naming that day
    or none: quarterly reports repeat a sentence with each quarter's date ("As of June 30, 2023,
    we have $6.1 billion remaining"), and the one dated another day states another balance."""
    named = {i: days_of_month(sentences[i].text) for i in met}
    if not any(days & d for d in named.values()):
        return met
    return {i for i, d in named.items() if days & d or not d}


_PARTS_OF_YEAR = {  # a filing's periods shorter than its year, by kind
    "quarter": re.compile(
        r"\b(?:three|3)[- ]months?\b|\bquarters?\b|\bQ[1-4]\b|\b13[- ]weeks?\b", re.I
    ),
    "half": re.compile(r"\b(?:six|6)[- ]months?\b|\bhalf\b|\bH[12]\b|\b26[- ]weeks?\b", re.I),
    "nine": re.compile(r"\b(?:nine|9)[- ]months?\b|\b39[- ]weeks?\b", re.I),
}


def _parts_of_year(text: str) -> set[str]:
    return {kind for kind, pattern in _PARTS_OF_YEAR.items() if pattern.search(text)}


def other_period(question: str, sentences: list[_Sentence]) -> list[float]:
    """1 / `_MEET` for a sentence, or a cell under a column heading, that names only parts of
    the year other than the question's (a 10-Q reports the quarter and the year to date side by
    side: "the first nine months" is no answer for "the third quarter"), else 1."""
    asked = _parts_of_year(question)
    if not asked:
        return [1.0] * len(sentences)
    out = []
    for s in sentences:
        named = _parts_of_year(s.text if s.cell is None else s.cell.header)
        out.append(1.0 / _MEET if named and not named & asked else 1.0)
    return out


def _closest_labels(
    question: str, found: list[int], cells: dict[int, TableCellText], measure: set[str]
) -> list[int]:
    """Of the cells whose labels name the measure equally well, those whose labels say least
    besides the question's words ("Cash and cash equivalents" is asked for, not "Increase
    (decrease) in cash, cash equivalents and restricted cash"; a row's own label, not the section
    it is under), of those the ones that say they are the whole ("Total revenue", where a
    segment's table has a "Revenue" row too), and of those the ones that add no "net" or
    "gross" the question does not ("Additions to property" is asked for, not "Net additions to
    property"), and of those the ones whose section says least besides the question ("Net
    sales, AWS" is asked for, not "Net sales mix, AWS")."""
    asked = set(stems(question))
    said = asked | measure | _WHOLE | _QUALIFIERS

    def rank(i: int) -> tuple[int, bool, int, int]:
        cell = cells[i]
        own = cell.label.removeprefix(f"{cell.section}, ") if cell.section else cell.label
        label = set(stems(_PARENTHESES.sub(" ", own)))
        section = set(stems(_PARENTHESES.sub(" ", cell.section))) if cell.section else set()
        extra = len(label - said), not label & _WHOLE, len(label & _QUALIFIERS - asked)
        return (*extra, len(section - said))

    ranks = {i: rank(i) for i in found}
    best = min(ranks.values(), default=(0, False, 0, 0))
    return [i for i in found if ranks[i] == best]
