"""Page furniture (running headers, footers, page numbers), found by repetition, never by position
alone: a short block at the top or bottom of its page is furniture when the same text (digits
aside), or a page number, stands there on enough of the pages around it.

A page's furniture depends only on the pages within `RADIUS` of it, so `FurnitureMarker` gives
the same result whether it is fed a whole document (`extract_document`) or a window at a time
(ingest): it holds back the pages whose neighbours it has not seen yet.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from ocr_engine.schema import Block, BlockType, Page

__all__ = ["RADIUS", "FurnitureMarker", "furniture_key", "mark_furniture", "printed_number"]

RADIUS = 32  # pages on each side of a page whose text counts as evidence of repetition
MIN_PAGES = 3  # pages the same text must stand on, at least, to be furniture
BAND = 0.12  # share of the page height at the top and bottom where furniture may stand
LAYERS = 3  # lines of furniture taken off the top or bottom of the content ("Acme | 10-K | 41")
MAX_WORDS = 8  # longer text off the edge bands is content, however often it repeats
LOCAL = 3  # pages on each side of a page where a chapter's running header repeats ...
LOCAL_PAGES = 4  # ... on this many pages at least (three alike atop a document are content)

_DIGITS = re.compile(r"\d+")
_ROMAN = r"m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_PAGE_NUMBER = re.compile(
    rf"^[-–—\s]*(?:page\s+)?(?:(?P<number>\d{{1,5}})|{_ROMAN})(?:\s*(?:/|of)\s*\d{{1,5}})?[-–—\s]*$"
)
_HEADINGS = (BlockType.title, BlockType.section_header)
_CONTENT = (BlockType.table, BlockType.figure)
_FURNITURE = (BlockType.page_header, BlockType.page_footer)
_RANK = {BlockType.page_header: 0, BlockType.page_footer: 2}

Key = tuple[str, str]  # (zone: "top" or "bottom", furniture_key of the text)


def furniture_key(text: str) -> str:
    """What repeats from page to page: the text without case and figures; any page number."""
    flat = " ".join(text.lower().split())
    if flat and _PAGE_NUMBER.match(flat):
        return "<page number>"
    return _DIGITS.sub("#", flat)


def printed_number(text: str) -> int | None:
    """The page number a block prints ("17", "- 17 -", "Page 17 of 40"), in Arabic figures; None
    for any other text (roman numerals number front matter, not the pages a reader counts)."""
    match = _PAGE_NUMBER.match(" ".join(text.lower().split()))
    return int(match["number"]) if match and match["number"] else None


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A block that is furniture if its key repeats and, off the band, if every block between
    it and the page's edge is furniture too."""

    index: int
    key: Key
    needs: tuple[int, ...]  # blocks nearer the edge that must be furniture first
    local: bool = False  # plain text in the band: furniture if it repeats on the pages beside it


def _candidates(page: Page) -> list[_Candidate]:
    """The page's blocks that may be furniture: a line or two in the band at the top or bottom
    edge, or a few words of plain text on one of the first or last lines of the content, other
    text beneath or above them."""
    blocks = page.blocks
    body = [i for i, b in enumerate(blocks) if b.text.strip() and b.type not in _FURNITURE]
    found: list[_Candidate] = []
    for zone in ("top", "bottom"):
        band = [i for i in body if _in_band(page, blocks[i], zone) and _may_be(blocks[i], True)]
        found += [
            _Candidate(
                i, (zone, furniture_key(blocks[i].text)), (), blocks[i].type not in _HEADINGS
            )
            for i in band
        ]
        found += _edge(page, body, zone, band)
    return found


def _edge(page: Page, body: list[int], zone: str, band: list[int]) -> list[_Candidate]:
    """Candidates off the band, from the edge inwards a line at a time, up to `LAYERS` lines:
    each needs the blocks between it and the edge to be furniture."""
    blocks = page.blocks
    top = zone == "top"
    left = sorted(body, key=lambda i: blocks[i].bbox[1] if top else -blocks[i].bbox[3])
    found: list[_Candidate] = []
    nearer: list[int] = []
    layers = 0
    while left and layers < LAYERS:
        first = blocks[left[0]]
        half = (first.bbox[3] - first.bbox[1]) / max(1, len(first.lines)) / 2
        edge = first.bbox[1] + half if top else first.bbox[3] - half
        layer = [
            i for i in left if (blocks[i].bbox[1] <= edge if top else blocks[i].bbox[3] >= edge)
        ]
        left = [i for i in left if i not in layer]
        if not left:  # furniture stands beside other text, never alone
            break
        off_band = [i for i in layer if i not in band]
        for i in off_band:
            if _may_be(blocks[i], False):
                key = (zone, furniture_key(blocks[i].text))
                found.append(_Candidate(i, key, tuple(nearer)))
        if any(not _may_be(blocks[i], False) for i in off_band):
            break
        nearer += layer
        layers += bool(off_band)
    return found


def _in_band(page: Page, block: Block, zone: str) -> bool:
    if zone == "top":
        return block.bbox[3] <= BAND * page.height
    return block.bbox[1] >= (1 - BAND) * page.height


def _may_be(block: Block, in_band: bool) -> bool:
    """A line or two of text in the band; off it, a few words that are not a heading ("Chapter
    2" atop its pages is a heading, however often it repeats)."""
    if len(block.lines) > 2 or block.type in _CONTENT:
        return False
    return in_band or (block.type not in _HEADINGS and len(block.text.split()) <= MAX_WORDS)


def _mark(page: Page, candidates: list[_Candidate], repeated: set[Key]) -> None:
    """Retype the repeated candidates whose way to the edge is clear; headers first and footers
    last, keeping the body order, ids following the new order."""
    marked: dict[int, str] = {}
    for candidate in candidates:  # nearest the edge first
        if candidate.index in marked or candidate.key not in repeated:
            continue
        if all(i in marked for i in candidate.needs):
            marked[candidate.index] = candidate.key[0]
    for index, zone in marked.items():
        block = page.blocks[index]
        block.type = BlockType.page_header if zone == "top" else BlockType.page_footer
        block.level = None
    if marked:
        page.blocks.sort(key=lambda b: _RANK.get(b.type, 1))
        for index, block in enumerate(page.blocks):
            block.id = f"p{page.number}-b{index}"


class FurnitureMarker:
    """Marks the furniture of a document's pages fed in order; hands pages back once marked."""

    def __init__(self, page_count: int) -> None:
        self.page_count = page_count
        self._evidence: dict[int, set[Key]] = {}
        self._candidates: dict[int, list[_Candidate]] = {}
        self._held: deque[Page] = deque()
        self._seen = 0

    def feed(self, pages: Iterable[Page]) -> list[Page]:
        """The pages now marked (the last `RADIUS` fed wait for the pages after them)."""
        for page in pages:
            candidates = _candidates(page)
            self._candidates[page.number] = candidates
            self._evidence[page.number] = {c.key for c in candidates}
            self._held.append(page)
            self._seen = max(self._seen, page.number)
        done = self._seen >= self.page_count
        return self._release(self._seen if done else self._seen - RADIUS)

    def finish(self) -> list[Page]:
        """Every page still held, marked."""
        return self._release(self._seen)

    def _release(self, upto: int) -> list[Page]:
        out: list[Page] = []
        while self._held and self._held[0].number <= upto:
            page = self._held.popleft()
            self._decide(page)
            out.append(page)
            for old in [n for n in self._evidence if n < page.number - RADIUS]:
                del self._evidence[old]
        return out

    def _decide(self, page: Page) -> None:
        candidates = self._candidates.pop(page.number)
        low = max(1, page.number - RADIUS)
        high = min(max(self.page_count, self._seen), page.number + RADIUS)
        if high - low + 1 < MIN_PAGES or not candidates:
            return
        need = max(MIN_PAGES, (high - low + 1) // 3)
        near = [self._evidence.get(n, set()) for n in range(low, high + 1)]
        repeated = {c.key for c in candidates if sum(c.key in e for e in near) >= need}
        # a chapter's running header ("Blood Pressure Management" over its five pages of a 27-page
        # manual) repeats on the pages beside it, too few for a third of the whole window
        beside = [
            self._evidence.get(n, set())
            for n in range(page.number - LOCAL, page.number + LOCAL + 1)
        ]
        repeated |= {
            c.key for c in candidates if c.local and sum(c.key in e for e in beside) >= LOCAL_PAGES
        }
        if repeated:
            _mark(page, candidates, repeated)


def mark_furniture(pages: list[Page], page_count: int | None = None) -> None:
    """Mark the furniture of a whole run of pages in place."""
    marker = FurnitureMarker(page_count if page_count is not None else len(pages))
    marker.feed(pages)
    marker.finish()
