"""The place a question names in a document: "on page 17", "pages 51-53", "slide 4", "Figure 3",
"Table 2"; and the PDF pages it
is in a document whose `Contents` are known (page numbers as the document prints them, where its
headers or footers print them; a figure or table by the page of its caption)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.doc_card import Contents

__all__ = ["PageRef", "caption_label", "captions", "page_ref"]

_PAGES = re.compile(r"\bpages?\s+(\d{1,4})(?:\s*(?:-|–|to|through|and)\s*(\d{1,4}))?\b", re.I)
_SLIDE = re.compile(r"\bslides?\s+(\d{1,4})\b", re.I)
_LABEL = re.compile(r"\b(fig(?:ure)?|table|chart)\s*\.?\s*(\d{1,3})\b", re.I)
_KINDS = {"fig": "figure", "figure": "figure", "table": "table", "chart": "chart"}
_CAPTION = re.compile(
    r"^\s*(fig(?:ure)?|table|chart)\s*\.?\s*(\d{1,3})(?![\d.,–-]\d)\s*([.:|—–-])?", re.I
)


def caption_label(text: str, *, caption: bool) -> tuple[str, bool] | None:
    """The label a caption opens with ("figure 3") and whether it is set off as captions are (by
    ":", "." or a dash); plain text must be ("Table 6, RAPTOR paired with..." is a sentence)."""
    match = _CAPTION.match(text)
    if match is None:
        return None
    marked = match[3] is not None
    if not (caption or marked):
        return None
    return f"{_KINDS[match[1].lower()]} {int(match[2])}", marked


def captions(text: str, label: str) -> bool:
    """Whether the text opens a caption with that label ("figure 3")."""
    found = caption_label(text, caption=True)
    return found is not None and found[0] == label


@dataclass(frozen=True)
class PageRef:
    """Pages as a document prints their numbers (`printed`, first and last), a page counted from
    the front (`nth`, a slide's number), or a figure or table by its caption's label."""

    printed: tuple[int, int] | None = None
    nth: int = 0
    label: str = ""

    def pages(self, contents: Contents) -> tuple[int, int] | None:
        """The first and last PDF page it names in a document of these contents; None where the
        document has no such page or caption."""
        count = contents.pages
        if self.label:
            page = contents.captions.get(self.label)
            return (page, page) if page is not None else None
        if self.nth:
            page = count if self.nth < 0 else self.nth
            return (page, page) if page >= 1 and (not count or page <= count) else None
        assert self.printed is not None
        first, last = (contents.printed_page(n) or n for n in self.printed)
        if first > last or (count and last > count):
            return None
        return first, last


def page_ref(question: str) -> PageRef | None:
    """The place the question names, if any: a page by its number before one counted from the
    front, either before a figure or table (the figure "at page 17" is found by its page)."""
    if match := _PAGES.search(question):
        first = int(match[1])
        last = int(match[2]) if match[2] else first
        return PageRef(printed=(first, last)) if 1 <= first <= last else None
    if match := _SLIDE.search(question):
        return PageRef(nth=int(match[1])) if int(match[1]) >= 1 else None
    if match := _LABEL.search(question):
        return PageRef(label=f"{_KINDS[match[1].lower()]} {int(match[2])}")
    return None
