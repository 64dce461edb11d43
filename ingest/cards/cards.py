"""Document cards: what a document is, read from its first pages (ingest's `CardBuilder`, or
`document_card` over a whole `Document`; both read what it is from the first CARD_PAGES pages, and
its contents, `ingest.cards.card_contents`, from every page).

Kind from an SEC form on the cover ("FORM 10-K"), a press release's "reports ... results", an
"Abstract" heading, manual and datasheet words in the title, landscape pages of few words;
organisation (`ingest.cards.card_organisation`) from the registrant's name on a filing's cover, else
names ending in Inc., Corporation, Ltd, plc, University, Center... weighed by font size and how
often the first pages and running headers write them, else the PDF's author; title from the PDF's
metadata when it is words, else the largest type on the first page; period from "fiscal year
ended", "quarterly period ended", "Date of Report", a release's "fourth quarter 2022", else the
year the cover prints most; language from function words and scripts. Measured by
`python -m eval cards`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from ingest.cards.card_contents import ContentsReader
from ingest.cards.card_organisation import OrganisationReading
from ingest.cards.card_period import Period, PeriodText, read_period
from ingest.cards.card_reading import _TOKEN, _WORD, _bare, _size
from ocr_engine.schema import Block, BlockType, Document, Page
from retrieval.doc_card import (
    CARD_CHUNK_ID,
    CARD_KIND,
    GENERIC_WORDS,
    DocKind,
    DocumentCard,
    card_text,
)
from retrieval.schema import Chunk, Region
from retrieval.search import name_words
from retrieval.text_terms import STOPWORDS

__all__ = ["CARD_PAGES", "CardBuilder", "card_chunk", "document_card"]

CARD_PAGES = 12
_FORM = re.compile(r"\bFORM\s+(10-?K|10-?Q|8-?K|20-?F|40-?F|6-?K)\b", re.I)
_RESULTS = re.compile(
    r"\b(?:reports?|announces?|reported)\b.{0,80}?\b(?:quarter|full[\s-]year|fiscal)\b.{0,60}?"
    r"\b(?:results|earnings)\b",
    re.I | re.S,
)
_LEGAL = frozenset(
    [
        "inc",
        "incorporated",
        "corporation",
        "corp",
        "company",
        "co",
        "ltd",
        "limited",
        "llc",
        "lp",
        "plc",
    ]
)
_CITED_TITLE = re.compile(
    r"\b(?:recommended|suggested)\s+citation\b.*?[“\"]([^”\"]{12,200})[”\"]", re.I | re.S
)
_MANUAL = re.compile(
    r"\b(?:manual|user'?s?\s+guide|owner'?s\s+guide|instructions|handbook|"
    r"installation\s+guide|reference\s+guide|quick\s+start|help\s+guide|online\s*help)\b",
    re.I,
)
_DATASHEET = re.compile(r"\b(?:data\s*sheet|datasheet|product\s+specifications?)\b", re.I)
_BAD_TITLE = re.compile(
    r"^[\d\s_./-]+$|microsoft (?:word|powerpoint)|\.(?:docx?|pptx?|pdf)\b|^untitled", re.I
)
_MONTH_NAMES = """january february march april may june july august september october november
december jan feb mar apr jun jul aug sep sept oct nov dec"""
_MONTHS = frozenset(_MONTH_NAMES.split())
_LANGUAGE_WORDS = {
    "en": "the of and to in is that for with are this on be by as",
    "fr": "le la les des et est une pour dans que sur par du au",
    "de": "der die und das ist mit von den zu für auf nicht ein eine",
    "es": "el la los las de que y en es por una para con del se",
    "it": "il di che la per una sono con del della gli le nel",
    "pt": "de que os as uma para com não por mais dos das do da",
    "nl": "de het een van en is dat op te voor met zijn niet",
}
_LANGUAGES = {code: frozenset(words.split()) for code, words in _LANGUAGE_WORDS.items()}

_TITLE_SIZE = 0.85  # type at least this share of the first page's largest can be the title


class CardBuilder:
    """A card from a document's pages as ingest reads them (the first CARD_PAGES are kept)."""

    def __init__(
        self, source: str, metadata: Mapping[str, str] | None = None, page_count: int = 0
    ) -> None:
        self.source = source
        self.metadata = dict(metadata or {})
        self.pages: list[Page] = []
        self.contents = ContentsReader(page_count)

    def feed(self, pages: Iterable[Page]) -> None:
        pages = list(pages)
        self.pages.extend(p for p in pages if p.number <= CARD_PAGES)
        self.contents.feed(pages)

    def complete(self, page_count: int) -> bool:
        """Whether every page the card is read from has been fed."""
        return len(self.pages) >= min(CARD_PAGES, page_count)

    def card(self) -> DocumentCard:
        """The card of the pages fed so far (its contents, of every page fed)."""
        card = _Reading(sorted(self.pages, key=lambda p: p.number), self.source, self.metadata)
        return card.card().model_copy(update={"contents": self.contents.contents()})


def document_card(doc: Document) -> DocumentCard:
    """The card of a structured document (its first CARD_PAGES pages and its metadata; its
    contents from every page)."""
    builder = CardBuilder(doc.source, doc.metadata, doc.page_count)
    builder.feed(doc.pages)
    return builder.card()


def card_chunk(card: DocumentCard, doc_id: str, source: str, first: Page) -> Chunk:
    """The document's card point: its words embedded and indexed, boxed on the first page."""
    text = card_text(card)
    box = (0.0, 0.0, first.width, first.height)
    return Chunk(
        chunk_id=CARD_CHUNK_ID,
        doc_id=doc_id,
        source=source,
        kind=CARD_KIND,
        text=text,
        embed_text=text,
        regions=[Region(page=first.number, bbox=box)],
        card=card,
    )


class _Reading(OrganisationReading):
    """One reading of the first pages."""

    def card(self) -> DocumentCard:
        if not self.pages:
            return DocumentCard()
        form, kind = self._kind()
        if self.ocr_only and len({n for n, _ in self.body}) < 2:
            form, kind = None, DocKind.other  # OCR's words on one page: no kind to tell
        title = self._title(filing=form is not None)
        organisation = self._organisation(title)
        year, quarter, end = self._period(kind is DocKind.earnings_release or form is not None)
        card = DocumentCard(
            title=title,
            organisation=organisation,
            kind=kind,
            form=form,
            year=year,
            quarter=quarter,
            period_end=end,
            language=self._language(),
        )
        card.aliases = self._aliases(card)
        card.common_words = self._common_name_words()
        return card

    # kind ---------------------------------------------------------------------------------------

    def _kind(self) -> tuple[str | None, DocKind]:
        first = self._page_text(1)
        found = _FORM.search(first) or _FORM.search(self.cover)
        if found:
            form = found.group(1).upper()
            form = form if "-" in form else f"{form[:-1]}-{form[-1]}"
            if form in ("10-K", "20-F", "40-F"):
                return form, DocKind.annual_report
            if form == "10-Q":
                return form, DocKind.quarterly_report
            if _RESULTS.search(self._page_text(4)):
                return form, DocKind.earnings_release
            return form, DocKind.current_report
        if _RESULTS.search(self._page_text(2)):
            return None, DocKind.earnings_release
        head = " ".join([self.metadata.get("title", ""), *self._largest(2)])
        headings = " ".join(
            b.text
            for n, b in self.body
            if n <= 2 and b.type in (BlockType.title, BlockType.section_header)
        )
        if re.search(r"\babstract\b", headings, re.I) or "arxiv" in first.lower():
            return None, DocKind.paper
        if _DATASHEET.search(head):
            return None, DocKind.datasheet
        if _MANUAL.search(head):
            return None, DocKind.manual
        if re.search(r"\bannual\s+report\b", head, re.I):
            return None, DocKind.annual_report
        if re.search(r"\b(?:quarterly|interim)\s+report\b", head, re.I):
            return None, DocKind.quarterly_report
        if self._slides():
            return None, DocKind.slide_deck
        if (
            re.search(r"\b(?:form|application)\b", head, re.I)
            and first.count("_") + first.count("☐") > 20
        ):
            return None, DocKind.form
        return None, DocKind.other

    def _slides(self) -> bool:
        wide = sum(p.width > 1.2 * p.height for p in self.pages)
        words = sum(len(b.text.split()) for _, b in self.body)
        # one landscape page is no deck: a kind needs more than one page of evidence
        return wide >= 2 and wide > len(self.pages) / 2 and words / len(self.pages) < 150

    # title --------------------------------------------------------------------------------------

    def _title(self, *, filing: bool) -> str | None:
        meta = self.metadata.get("title", "").strip()
        if meta and not _BAD_TITLE.search(meta) and len(_WORD.findall(meta)) >= 2:
            return meta[:200]
        cited = _CITED_TITLE.search(self.cover)
        if cited:  # "Recommended citation: Pew Research Center, 2021, “Title”"
            return re.sub(r"\s+", " ", cited.group(1).strip())[:200]
        blocks = self._first_page_texts()
        if not blocks:
            return None
        top = max(_size(b) for b in blocks)
        large = [b for b in blocks if _size(b) >= _TITLE_SIZE * top]
        headings = [b for b in large if b.type in (BlockType.title, BlockType.section_header)]
        # the topmost of the large headings: a document's name leads its first page, though a
        # section heading further down may be set a little larger
        chosen = [min(headings or large, key=lambda b: b.bbox[1])]
        # a heading run over lines goes on (a filing's cover stacks lines that are each whole)
        for block in sorted(large, key=lambda b: b.bbox[1]):
            if not filing and len(chosen) < 3 and _next_title_line(chosen[-1], block):
                chosen.append(block)
        text = " ".join(b.text.strip() for b in chosen)
        return re.sub(r"\s+", " ", text)[:200] or None

    # period, language ---------------------------------------------------------------------------

    def _period(self, dated: bool) -> Period:
        return read_period(
            PeriodText(
                cover=self.metadata.get("title", "") + "\n" + self.cover,
                whole=self._page_text(CARD_PAGES),
                first_page=self._page_text(1),
                blocks=[b.text.strip() for _, b in self.body],
            ),
            dated=dated,
        )

    def _language(self) -> str | None:
        text = " ".join(b.text for _, b in self.body)[:20000]
        if not text.strip():
            return None
        letters = [c for c in text if c.isalpha()]
        for code, pattern in (
            ("ja", "[\u3040-\u30ff]"),
            ("ko", "[\uac00-\ud7af]"),
            ("zh", "[\u4e00-\u9fff]"),
            ("ar", "[\u0600-\u06ff]"),
            ("ru", "[\u0400-\u04ff]"),
        ):
            if len(re.findall(pattern, text)) > 0.2 * max(1, len(letters)):
                return code
        words = Counter(w.lower() for w in _WORD.findall(text))
        counts = {code: sum(words[w] for w in vocab) for code, vocab in _LANGUAGES.items()}
        code, best = max(counts.items(), key=lambda kv: kv[1])
        return code if best >= 5 else None

    # aliases ------------------------------------------------------------------------------------

    def _aliases(self, card: DocumentCard) -> list[str]:
        """Words that name the document by its content: its organisation's (run together, as
        initials, alone when one word or in capitals) and a short title's capitalised words, less
        the words its text writes in lower case."""
        candidates: set[str] = set()
        runs: set[str] = set()
        if card.organisation:
            tokens = [(t, _bare(t)) for t in _TOKEN.findall(card.organisation)]
            parts = [(t, w) for t, w in tokens if w and w not in _LEGAL and w not in STOPWORDS]
            named = [w for _, w in parts]
            # a word alone names it when it is the whole name or written in capitals ("MGM"):
            # "Best" or "Resorts" alone would name it only in the filings that never write them
            # in lower case, and documents of one organisation must be named alike
            candidates.update(w for t, w in parts if len(parts) == 1 or t.isupper() or _mixed(w))
            runs.update("".join(named[:k]) for k in range(2, len(named) + 1))
            initials = "".join(w[0] for w in named)
            if len(initials) >= 3 and initials.isalpha():
                runs.add(initials)
        title = _TOKEN.findall(card.title or "")
        if card.form is None and len(title) <= 4:  # a name ("MMDetection"), not a headline
            candidates.update(_bare(w) for w in title if w[0].isupper())
            named = [_bare(w) for w in title if w[0].isupper() or w[0].isdigit()]
            # "WATCH D" is named by its run, "watch" being a common word; "Safety Data Sheet",
            # all of whose words say what kind of document it is, is named by none
            distinct = [w for w in named if w not in GENERIC_WORDS and w not in STOPWORDS]
            if len(named) >= 2 and distinct:
                runs.add("".join(named))
        kept = {
            w
            for w in candidates
            if w
            and w not in STOPWORDS
            and w not in GENERIC_WORDS
            and (len(w) >= 3 or _mixed(w))
            and not w.isdigit()
            and w not in _MONTHS
            and not re.fullmatch(r"v\d+|q[1-4]|[1-4]q\d*|fy\d*|h[12]", w)
            and not self._common(w)
        }
        return sorted(kept | {r for r in runs if len(r) >= 3})

    def _common_name_words(self) -> list[str]:
        """The file name's words that its text writes in lower case (they name no document)."""
        return sorted(w for w in name_words(self.source) if self._common(w))


def _next_title_line(above: Block, block: Block) -> bool:
    """Whether `block` is the next line of the heading `above`: set alike, just under it."""
    size = _size(above)
    return (
        block.type is above.type
        and abs(_size(block) - size) <= 0.1 * size
        and -0.3 * size <= block.bbox[1] - above.bbox[3] <= 0.8 * size
        and min(block.bbox[2], above.bbox[2]) > max(block.bbox[0], above.bbox[0])
    )


def _mixed(word: str) -> bool:
    return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
