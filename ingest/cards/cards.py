"""Document cards: what a document is, read from its first pages (ingest's `CardBuilder`, or
`document_card` over a whole `Document`; both read what it is from the first CARD_PAGES pages, and
its contents, `ingest.cards.card_contents`, from every page).

Kind from an SEC form on the cover ("FORM 10-K"), a press release's "reports ... results", an
"Abstract" heading, manual and datasheet words in the title, landscape pages of few words;
organisation from the registrant's name on a filing's cover, else names ending in Inc.,
Corporation, Ltd, plc, University, Center... weighed by font size and how often the first pages
and running headers write them, else the PDF's author; title from the PDF's metadata when it is
words, else the largest type on the first page; period from "fiscal year ended", "quarterly period
ended", "Date of Report", a release's "fourth quarter 2022", else the year the cover prints most;
language from function words and scripts. Measured by `python -m eval cards`.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping

from ingest.cards.card_contents import ContentsReader
from ingest.cards.card_period import Period, PeriodText, read_period
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
_TEXT_LAYER = (
    "pymupdf"  # the text layer's engine name (ocr_engine.engines.pymupdf_engine.ENGINE_NAME)
)
_FURNITURE = (BlockType.page_header, BlockType.page_footer)
_FORM = re.compile(r"\bFORM\s+(10-?K|10-?Q|8-?K|20-?F|40-?F|6-?K)\b", re.I)
_RESULTS = re.compile(
    r"\b(?:reports?|announces?|reported)\b.{0,80}?\b(?:quarter|full[\s-]year|fiscal)\b.{0,60}?"
    r"\b(?:results|earnings)\b",
    re.I | re.S,
)
_SUFFIXES = """Inc Incorporated Corporation Corp Company Co Ltd Limited LLC L.P LP N.V S.A SA AG SE
Group Holdings Bank University Institute Center Centre Foundation Association Agency Council
Organization Organisation Ministry Department International"""
_SUFFIX = (
    "(?:plc|"
    + "|".join(re.escape(form) for word in _SUFFIXES.split() for form in {word, word.upper()})
    + ")"
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
_CAPITAL = r"(?:[A-Z][\w&'’.-]*|\d+(?!st|nd|rd|th)[A-Za-z][\w&'’.-]*)"  # Word, or 3M
_SECOND_SUFFIX = r"(?:Ltd|LTD|Limited|LIMITED|Inc|INC|LLC|Corp|CORP|plc|PLC)"  # "Co., Ltd."
_ORG = re.compile(
    rf"\b({_CAPITAL}\s+(?:(?:{_CAPITAL}|of|and|for|the|&)[ \t]+){{0,5}}{_SUFFIX}"
    rf"(?:\.?,?[ \t]+{_SECOND_SUFFIX}\b)?)\b\.?"
)
_LEAD = re.compile(r"^(?:(?:copyright|citation|©|\(c\)|\d+\.?)\s+)+", re.I)
_ORG_STOP = re.compile(
    r"securities and exchange commission|edgar|donnelley|workiva|microsoft word|adobe acrobat|"
    r"^the company$|\bof the (?:company|corporation|group)$|^documents incorporated|"
    r"emerging growth|smaller reporting|accelerated filer|"
    r"shell company|"
    r"^(?:our|this|each|such|other|any|all|registrant|parent|if|in|as|at|by|on|for|to|when|"
    r"while|with|from|a|an|its|their|and|or|of) ",
    re.I,
)
_NOT_A_NAME = re.compile(
    r"commission|file\s+number|transition|pursuant|registrant|\d{3}|^\(|^(?:Delaware|Nevada|"
    r"New York|Jersey|Ireland|Washington|Minnesota|California|Maryland|Pennsylvania)$",
    re.I,
)
# a word closing a sentence ("Edinburgh, Scotland, UK. Association for ...") ends any name before it
_SENTENCE_END = re.compile(r"\b(?!(?:St|Mt|Dr|Jr|Sr|No|Co|Corp|Inc|Ltd|Bros)\.)[A-Za-z]{2,}\.\s")
_CITED_TITLE = re.compile(
    r"\b(?:recommended|suggested)\s+citation\b.*?[“\"]([^”\"]{12,200})[”\"]", re.I | re.S
)
_NOT_A_TITLE = re.compile(
    r"^arxiv:|:$|^for (?:release|media)|^(?:table of )?contents$|^\(cite|^page \d", re.I
)
_REGISTRANT = re.compile(r"exact\s+name\s+of\s+registrant", re.I)
_MANUAL = re.compile(
    r"\b(?:manual|user'?s?\s+guide|owner'?s\s+guide|instructions|handbook|"
    r"installation\s+guide|reference\s+guide|quick\s+start|help\s+guide|online\s*help)\b",
    re.I,
)
_DATASHEET = re.compile(r"\b(?:data\s*sheet|datasheet|product\s+specifications?)\b", re.I)
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_PROSE_WORD = re.compile(r"(?<![\w.@/])[A-Za-z][A-Za-z0-9&'’]*(?![\w&'’]|[.@/]\w)")  # no URLs
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'’]*")
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


def _size(block: Block) -> float:
    heights = [ln.bbox[3] - ln.bbox[1] for ln in block.lines if ln.text.strip()]
    return statistics.median(heights) if heights else block.bbox[3] - block.bbox[1]


def _registrant_name(text: str) -> str:
    """The last line of a block above "(Exact name of registrant ...)", when it can be a name."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    if _NOT_A_NAME.search(line) or len(text.split()) > 10 or not re.search("[A-Za-z]{3}", line):
        return ""
    return line


_TITLE_CASED = frozenset({"THE", "AND", "OF", "FOR", "INC", "CO", "LTD", "PLC", "LLC"})


def _clean_org(name: str) -> str:
    name = _LEAD.sub("", re.sub(r"^Form\s+\S+\s+for\s+", "", name.strip()))
    name = re.sub(r"\b([A-Z]) ([A-Z]{2,})\b", r"\1\2", re.sub(r"\s+", " ", name)).strip(" ,.;:")
    if name.isupper():
        name = " ".join(
            w if len(w) <= 3 and w.strip(".,").upper() not in _TITLE_CASED else w.title()
            for w in name.split()
        )
        name = re.sub(r"\bAnd\b", "and", name)
    return name


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


class _Reading:
    """One reading of the first pages."""

    def __init__(self, pages: list[Page], source: str, metadata: Mapping[str, str]) -> None:
        self.pages = [p for p in pages if any(b.text.strip() for b in p.blocks)]
        self.source = source
        self.metadata = metadata
        self.body = [
            (p.number, b)
            for p in self.pages
            for b in p.blocks
            if b.text.strip() and b.type not in _FURNITURE
        ]
        self.headers = [b.text for p in self.pages for b in p.blocks if b.type in _FURNITURE]
        ocr_pages = {p.number for p in self.pages if p.engine.name != _TEXT_LAYER}
        # blocks read by OCR (a scanned page, a figure's text): their words are noisier
        self.ocr = {id(b) for n, b in self.body if n in ocr_pages or b.engine is not None}
        self.ocr_only = bool(self.body) and len(self.ocr) == len(self.body)
        self.cover = self._page_text(3)
        self.lower: Counter[str] = Counter()
        self.upper: Counter[str] = Counter()
        for _, block in self.body:
            for token in _PROSE_WORD.findall(block.text):
                (self.lower if token.islower() else self.upper)[_bare(token)] += 1

    def _common(self, word: str) -> bool:
        """Whether the text writes `word` in lower case (a common word, not a name)."""
        low, up = self.lower[word], self.upper[word]
        return low >= 2 and low > 0.2 * (low + up)

    def _page_text(self, upto: int) -> str:
        return "\n".join(
            b.text
            for n, b in self.body
            if n <= (self.pages[0].number + upto - 1 if self.pages else 0)
        )

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

    # organisation, title ------------------------------------------------------------------------

    def _largest(self, count: int) -> list[str]:
        """The texts of the largest type on the first page, largest first."""
        ranked = sorted(self._first_page_texts(), key=_size, reverse=True)
        return [b.text.strip() for b in ranked[:count]]

    def _first_page_texts(self) -> list[Block]:
        """The first page's blocks that could be a title (no tables, no long paragraphs)."""
        first = self.pages[0].number
        return [
            b
            for n, b in self.body
            if n == first
            and b.type is not BlockType.table
            and b.engine is None  # a figure's text (a livery, a logo) is no title line
            and len(_WORD.findall(b.text)) >= 1
            and len(b.text) <= 200
            and sum(c.isalpha() for c in b.text) >= 3
            and not _NOT_A_TITLE.search(b.text.strip())
        ]

    def _organisation(self, title: str | None) -> str | None:
        """The organisation's name; one read only by OCR needs what a text-layer name gets by
        being there: to be written twice, or in the title."""
        scores: dict[str, float] = {}
        names: dict[str, str] = {}
        written: set[str] = set()  # names seen in mixed case, not only in capitals
        seen: Counter[str] = Counter()  # times each name is written
        texty: set[str] = set()  # names read from a text layer, a header or the metadata

        def vote(
            name: str, weight: float, *, registrant: bool = False, ocr: bool = False, times: int = 1
        ) -> None:
            capitals = name.isupper()
            name = _clean_org(name)
            if len(name) < 2 or len(name) > 80 or _ORG_STOP.search(name):
                return
            if _SENTENCE_END.search(name + " "):
                return
            stem = [w for w in name.split()[:-1] if w.lower() not in ("the", "of", "and", "&")]
            if sum(c.isalnum() for c in "".join(stem)) < 2:
                return
            lead = _bare(
                name.split()[1]
                if name.lower().startswith("the ") and " " in name
                else name.split()[0]
            )
            if not registrant and (lead in STOPWORDS or self._common(lead)):
                return
            key = name.casefold().removeprefix("the ")
            if not capitals and key not in written:  # as the text spells it, not as in capitals
                names[key] = name
                written.add(key)
            names.setdefault(key, name)
            scores[key] = scores.get(key, 0.0) + weight
            seen[key] += times
            if not ocr:
                texty.add(key)

        first = self.pages[0].number
        sizes = [_size(b) for _, b in self.body] or [1.0]
        body_size = statistics.median(sizes)
        for i, (n, block) in enumerate(self.body):
            if n == first and _REGISTRANT.search(block.text):
                before = [b for m, b in self.body[max(0, i - 3) : i] if m == first]
                named = [b for b in before if _registrant_name(b.text)]
                if named:
                    chosen = max(reversed(named), key=_size)
                    vote(
                        _registrant_name(chosen.text),
                        50.0,
                        registrant=True,
                        ocr=id(chosen) in self.ocr,
                    )
        inside: Counter[tuple[str, bool]] = Counter()
        for n, block in self.body:
            ocr = id(block) in self.ocr
            for match in _ORG.finditer(block.text):
                if n == first:
                    vote(match.group(1), 5.0 * max(1.0, _size(block) / body_size) ** 2, ocr=ocr)
                else:
                    inside[match.group(1), ocr] += 1
        for (name, ocr), count in inside.items():
            vote(name, 0.5 * min(count, 20), ocr=ocr, times=count)
        for header in self.headers:
            for match in _ORG.finditer(header):
                vote(match.group(1), 1.0)
        for match in _ORG.finditer(self.metadata.get("author", "")):
            vote(match.group(1), 3.0)
        for match in _ORG.finditer(self.metadata.get("title", "")):
            vote(match.group(1), 3.0)
        titled = (title or "").casefold()
        for key in [k for k in scores if k not in texty and seen[k] < 2 and k not in titled]:
            del scores[key]  # read once by OCR, nowhere else: noise as likely as a name
        if not scores:
            return None
        key, _ = max(scores.items(), key=lambda kv: (kv[1], -len(kv[0])))
        return names[key] if key in written else self._as_written(names[key])

    def _as_written(self, name: str) -> str:
        """A name read in capitals as the text spells it in mixed case, when it does ("BEST BUY
        CO., INC." is "Best Buy Co., Inc"), the name guessed from its capitals when it does not."""
        words = _TOKEN.findall(name)
        if not words:
            return name
        spelling = re.compile(r"\b" + r"\W{1,3}".join(map(re.escape, words)) + r"\b", re.I)
        spelt = Counter(
            re.sub(r"\s+", " ", found.group(0))
            for _, block in self.body
            for found in spelling.finditer(block.text)
            if not found.group(0).isupper()
        )
        return spelt.most_common(1)[0][0] if spelt else name

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


def _bare(word: str) -> str:
    word = word.lower().replace("’", "'")
    word = word[:-2] if word.endswith("'s") else word
    return word.replace("'", "").replace("&", "").strip(".")


def _mixed(word: str) -> bool:
    return any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
