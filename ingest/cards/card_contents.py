"""A document's contents, read from every page as ingest streams them: its page count, the page
numbers its running headers and footers print, and the page of each numbered figure and table
caption ("Figure 3:", "Fig. 3.", "Table 2"), for questions that name a page or a figure."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from ocr_engine.layout import printed_number
from ocr_engine.schema import BlockType, Page
from retrieval.doc_card import Contents, PrintedRun
from retrieval.search import caption_label

__all__ = ["ContentsReader"]

_FURNITURE = (BlockType.page_header, BlockType.page_footer)
_MIN_RUN = 2  # numbered pages that must agree on an offset: one stray number is a figure's
_EDGE = 0.08  # share of the page height at its top and bottom where page numbers are printed
_NUMBERED = re.compile(r"^(\d{1,4})\s+[^\W\d]|[^\W\d][:.]?\s+(\d{1,4})$")


class ContentsReader:
    """Reads `Contents` from pages fed in any order and any number of times."""

    def __init__(self, page_count: int = 0) -> None:
        self.page_count = page_count
        self._numbers: dict[int, set[int]] = {}  # PDF page -> the numbers its edges print
        self._captions: dict[str, tuple[bool, int]] = {}  # label -> (set off, page)

    def feed(self, pages: Iterable[Page]) -> None:
        for page in pages:
            numbers = self._numbers.setdefault(page.number, set())
            for block in page.blocks:
                if block.type in _FURNITURE or _at_edge(block.bbox[1], block.bbox[3], page):
                    numbers |= _edge_numbers(block.text)
                if block.type in (BlockType.caption, BlockType.text):
                    self._caption(page.number, block.text, block.type is BlockType.caption)

    def _caption(self, page: int, text: str, caption: bool) -> None:
        found = caption_label(text, caption=caption)
        if found is None:
            return
        label, marked = found
        known = self._captions.get(label)
        # a caption set off by ":" beats one that is not; between equals, the first page
        if known is None or (marked, -page) > (known[0], -known[1]):
            self._captions[label] = (marked, page)

    def contents(self) -> Contents:
        return Contents(
            pages=max(self.page_count, max(self._numbers, default=0)),
            printed=self._runs(),
            captions={label: page for label, (_, page) in sorted(self._captions.items())},
        )

    def _runs(self) -> list[PrintedRun]:
        """Runs of pages that print their numbers at one offset from the PDF's (pages that print
        none between them included), of at least `_MIN_RUN` numbered pages."""
        votes = Counter(page - n for page, numbers in self._numbers.items() for n in numbers)
        runs: list[PrintedRun] = []
        counts: list[int] = []
        for page, numbers in sorted(self._numbers.items()):
            if not numbers:
                continue
            offset = max((page - n for n in numbers), key=lambda o: (votes[o], -abs(o)))
            if runs and runs[-1].offset == offset:
                runs[-1].last = page
                counts[-1] += 1
            else:
                runs.append(PrintedRun(first=page, last=page, offset=offset))
                counts.append(1)
        kept: list[PrintedRun] = []
        for run, n in zip(runs, counts, strict=True):
            if n < _MIN_RUN:
                continue
            if kept and kept[-1].offset == run.offset:  # a stray number between them
                kept[-1].last = run.last
            else:
                kept.append(run)
        return kept


def _at_edge(top: float, bottom: float, page: Page) -> bool:
    return bottom <= _EDGE * page.height or top >= (1 - _EDGE) * page.height


def _edge_numbers(text: str) -> set[int]:
    """The page numbers a header or footer may print: alone ("17", "Page 17 of 40"), or before
    or after its running title ("17 Annual Report", "Chapter 3: Safety 28")."""
    flat = " ".join(text.split())
    if (number := printed_number(flat)) is not None:
        return {number}
    match = _NUMBERED.search(flat)
    return {int(match[1] or match[2])} if match else set()
