"""A document's card: what it is (title, organisation, kind, period, language), read from its
content at ingest (`ingest/cards/cards.py`), kept in the ledger and in the index as one point of
kind `card`, so a question can name a document by what it is, whatever its file is called."""

from __future__ import annotations

import re
from datetime import date
from enum import StrEnum

from pydantic import BaseModel, Field, computed_field

__all__ = [
    "CARD_CHUNK_ID",
    "CARD_KIND",
    "GENERIC_WORDS",
    "Contents",
    "DocKind",
    "DocumentCard",
    "card_label",
    "card_line",
    "card_text",
]

CARD_KIND = "card"
"""The `Chunk.kind` of a document's card point: searched, never shown or cited."""
CARD_CHUNK_ID = "card"

_GENERIC = """report reports annual quarterly final draft version copy scan scanned document
documents file files sheet sheets data safety manual manuals guide user users form forms summary
presentation slides slide deck notes paper papers new old updated revised page pages full part
chapter appendix exhibit edition fiscal year years quarter results earnings statement statements
financial release press company corporation inc corp co ltd limited plc llc group holdings the
international contents overview review brochure handbook instructions datasheet proxy letter
filing filings english print web online pdf doc scan img image owner university institute center
centre foundation association agency council department ministry research technologies technology
publications pty national global services systems solutions help"""
GENERIC_WORDS = frozenset(_GENERIC.split())
"""Words of file names and titles that say what kind of file it is, never which one."""


class DocKind(StrEnum):
    annual_report = "annual_report"
    quarterly_report = "quarterly_report"
    current_report = "current_report"
    earnings_release = "earnings_release"
    paper = "paper"
    manual = "manual"
    slide_deck = "slide_deck"
    form = "form"
    datasheet = "datasheet"
    other = "other"


_KIND_WORDS = {
    DocKind.annual_report: "annual report",
    DocKind.quarterly_report: "quarterly report",
    DocKind.current_report: "current report",
    DocKind.earnings_release: "earnings release",
    DocKind.paper: "paper",
    DocKind.manual: "manual",
    DocKind.slide_deck: "slide deck",
    DocKind.form: "form",
    DocKind.datasheet: "datasheet",
    DocKind.other: "document",
}


_REPORTING = frozenset(
    {
        DocKind.annual_report,
        DocKind.quarterly_report,
        DocKind.current_report,
        DocKind.earnings_release,
    }
)
"""The kinds that are financial filings or reports: known by organisation and period."""
_SHOWN_KINDS = {**_KIND_WORDS, DocKind.other: ""}


class PrintedRun(BaseModel):
    """PDF pages `first`..`last` print their numbers as the PDF page less `offset` (a report's
    cover and contents come before its page 1)."""

    first: int = Field(ge=1)
    last: int = Field(ge=1)
    offset: int


class Contents(BaseModel):
    """Where a document's pages, figures and tables are, as a library card gives its extent: what
    a question naming "page 17", "the last page" or "Figure 3" points at."""

    pages: int = Field(default=0, ge=0, description="its page count (0: unknown)")
    printed: list[PrintedRun] = Field(
        default_factory=list, description="the page numbers its headers or footers print"
    )
    captions: dict[str, int] = Field(
        default_factory=dict,
        description='"figure 3", "table 2": the page whose caption opens with that label',
    )

    def printed_page(self, number: int) -> int | None:
        """The PDF page that prints `number`: the first such page where several do (a filing's
        pages numbered again in its exhibits)."""
        for run in self.printed:
            if run.first <= number + run.offset <= run.last:
                return number + run.offset
        return None


class DocumentCard(BaseModel):
    """What a document is, read from its first pages, running headers, headings and metadata;
    its contents from every page."""

    title: str | None = None
    organisation: str | None = Field(default=None, description="who it is by or about")
    kind: DocKind = DocKind.other
    form: str | None = Field(default=None, description="an SEC form it is filed as: 10-K, 8-K...")
    year: int | None = Field(default=None, description="the (fiscal) year it covers")
    quarter: int | None = Field(default=None, ge=1, le=4)
    period_end: date | None = Field(default=None, description="the period or date it covers")
    language: str | None = Field(default=None, description="ISO 639-1 code")
    aliases: list[str] = Field(
        default_factory=list,
        description="lower-case words (and runs of words written together) that name it: from "
        "its organisation and title, less the words its own text writes in lower case",
    )
    common_words: list[str] = Field(
        default_factory=list,
        description="words of its file name (when read) that its text writes in lower case",
    )
    contents: Contents = Field(default_factory=Contents)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> str:
        """How people read the card in one line (the web page's document list, `folio docs`):
        organisation · kind · period; a card naming neither organisation nor kind shows its
        title, not a year read from the text alone; one that is no filing or financial report
        leads with its title (two manuals of one maker, two reports of one organisation and year
        differ by it; a filing's title is the SEC's letterhead); a paper is known by its title,
        as title · paper · year (its "organisation" is read from running headers, which name a
        venue more often than its authors)."""
        kind = _kind(self, _SHOWN_KINDS)
        if not self.organisation and not kind:
            return self.title or ""
        if self.kind is DocKind.paper and self.title:
            return " · ".join(str(p) for p in (self.title, kind, self.year) if p)
        titled = not self.form and self.kind not in _REPORTING and self.title != self.organisation
        parts = (self.title if titled else None, self.organisation, kind, _period(self))
        return " · ".join(p for p in parts if p)

    @property
    def years(self) -> set[str]:
        """The (fiscal) year the document covers, as digits: a December quarter of fiscal 2023
        is 2023 only, so a question of FY2022 and FY2023 does not favour it over the 10-K."""
        if self.year:
            return {str(self.year)}
        return {str(self.period_end.year)} if self.period_end is not None else set()

    @property
    def fiscal_calendar(self) -> tuple[str, str] | None:
        """Its fiscal year and the calendar year its period ends in, where they differ: Best
        Buy's Q2 of FY2024 ended July 29, 2023, ("2024", "2023"). None when they agree or either
        is unknown; more than a year apart is a misread, not a fiscal calendar."""
        if self.year is None or self.period_end is None:
            return None
        if abs(self.year - self.period_end.year) != 1:
            return None
        return str(self.year), str(self.period_end.year)


_LABEL_TITLE_WORDS = 8


def _period(card: DocumentCard) -> str:
    parts = []
    fiscal = "FY" if card.form else ""
    if card.quarter and card.year:
        parts.append(f"Q{card.quarter} {fiscal}{card.year}")
    elif card.year:
        parts.append(f"{fiscal}{card.year}")
    if card.period_end is not None:
        parts.append(card.period_end.isoformat())
    return " ".join(parts)


def _kind(card: DocumentCard, words: dict[DocKind, str] = _KIND_WORDS) -> str:
    return words[card.kind] + (f" ({card.form})" if card.form else "")


def card_line(card: DocumentCard) -> str:
    """organisation · kind · period, the parts the card has."""
    kind = _kind(card)
    return " · ".join(p for p in (card.organisation, kind, _period(card)) if p)


def card_label(card: DocumentCard) -> str | None:
    """How the card names its document in every chunk's embedded heading trail: its line, or its
    title's first words when it names no organisation; None when it says nothing but "document"."""
    if card.organisation is None and card.kind is DocKind.other and not _period(card):
        return " ".join(card.title.split()[:_LABEL_TITLE_WORDS]) if card.title else None
    line = card_line(card)
    if card.organisation is None and card.title:
        line = f"{' '.join(card.title.split()[:_LABEL_TITLE_WORDS])} · {line}"
    return line


def card_text(card: DocumentCard) -> str:
    """The card in words: what its point embeds and indexes lexically."""
    kind = _KIND_WORDS[card.kind] + (f" (Form {card.form})" if card.form else "")
    head = f"{card.organisation} {kind}" if card.organisation else kind.capitalize()
    period = []
    if card.quarter:
        period.append(f"quarter {card.quarter}")
    if card.year and card.form:
        period.append(f"fiscal year {card.year} (FY{card.year})")
    elif card.year:
        period.append(str(card.year))
    if card.period_end is not None:
        period.append(f"period ended {card.period_end:%B %d, %Y}")
    text = head + (" for " + ", ".join(period) if period else "") + "."
    if card.title and card.title != card.organisation:
        text += f" {card.title}."
    return re.sub(r"\s+", " ", text).strip()
