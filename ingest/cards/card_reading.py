"""The first pages as a card reads them (`ingest.cards.cards`): the blocks of their body and
running headers, which of them OCR read, the words the text writes in lower case, and the first
page's blocks that could be its title."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Mapping

from ocr_engine.schema import Block, BlockType, Page

__all__ = ["CardReading"]

_TEXT_LAYER = (
    "pymupdf"  # the text layer's engine name (ocr_engine.engines.pymupdf_engine.ENGINE_NAME)
)
_FURNITURE = (BlockType.page_header, BlockType.page_footer)
_NOT_A_TITLE = re.compile(
    r"^arxiv:|:$|^for (?:release|media)|^(?:table of )?contents$|^\(cite|^page \d", re.I
)
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_PROSE_WORD = re.compile(r"(?<![\w.@/])[A-Za-z][A-Za-z0-9&'’]*(?![\w&'’]|[.@/]\w)")  # no URLs
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9&'’]*")


def _size(block: Block) -> float:
    heights = [ln.bbox[3] - ln.bbox[1] for ln in block.lines if ln.text.strip()]
    return statistics.median(heights) if heights else block.bbox[3] - block.bbox[1]


def _bare(word: str) -> str:
    word = word.lower().replace("’", "'")
    word = word[:-2] if word.endswith("'s") else word
    return word.replace("'", "").replace("&", "").strip(".")


class CardReading:
    """The text of the first pages, as the card's readings share it."""

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
