"""A source's hyperlinks, read from it and matched to the rendered page's words.

Word hyperlinks (python-docx), PowerPoint run links (python-pptx), Excel cell links (openpyxl)
and HTML / Markdown `<a href>` give (text, url) pairs; a link whose text a line of the page
holds becomes a `Link` on that line's block, its box the line's share that the text takes (by
letters). Only web and mail links are kept (`http`, `https`, `mailto`, `ftp`); a link's text
must have 3 letters or digits or more.
"""

from __future__ import annotations

import io
import logging
from html.parser import HTMLParser
from typing import Any

from pydantic import BaseModel

from ocr_engine.schema import Block, Link, Page

__all__ = ["SourceLink", "linked", "source_links"]

log = logging.getLogger(__name__)

_SCHEMES = ("http://", "https://", "mailto:", "ftp://")
_MIN_KEY = 3


class SourceLink(BaseModel):
    """A hyperlink as the source states it."""

    text: str
    url: str


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _kept(text: str, url: str | None) -> SourceLink | None:
    text, url = " ".join(text.split()), (url or "").strip()
    if len(_norm(text)) < _MIN_KEY or not url.lower().startswith(_SCHEMES):
        return None
    return SourceLink(text=text, url=url)


def _docx(data: bytes) -> list[tuple[str, str | None]]:
    import docx

    document = docx.Document(io.BytesIO(data))
    paragraphs = list(document.paragraphs)
    for table in document.tables:
        paragraphs += [p for row in table.rows for cell in row.cells for p in cell.paragraphs]
    return [(link.text, link.url) for p in paragraphs for link in p.hyperlinks]


def _pptx(data: bytes) -> list[tuple[str, str | None]]:
    import pptx

    found: list[tuple[str, str | None]] = []
    for slide in pptx.Presentation(io.BytesIO(data)).slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    found += [(r.text, r.hyperlink.address) for r in paragraph.runs]
    return found


_BOOK_BYTES = 10 << 20  # a larger workbook's links are not read (a full load reads every cell)


def _xlsx(data: bytes) -> list[tuple[str, str | None]]:
    import openpyxl

    if len(data) > _BOOK_BYTES:
        return []
    book = openpyxl.load_workbook(io.BytesIO(data), data_only=True)  # read-only has no links
    found: list[tuple[str, str | None]] = []
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            found += [(str(c.value), c.hyperlink.target) for c in row if c.hyperlink is not None]
    return found


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str | None]] = []
        self._open: tuple[str | None, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open = (dict(attrs).get("href"), [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.found.append(("".join(self._open[1]), self._open[0]))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open[1].append(data)


def _web(data: bytes, kind: str) -> list[tuple[str, str | None]]:
    from ocr_engine.inputs.web_render import page_html

    parser = _Anchors()
    parser.feed(page_html(data, kind))
    parser.close()
    return parser.found


_READERS: dict[str, Any] = {"docx": _docx, "pptx": _pptx, "xlsx": _xlsx, "xlsm": _xlsx}


def source_links(data: bytes, kind: str) -> list[SourceLink]:
    """The web and mail links a source gives its words, in its order."""
    try:
        if kind in ("html", "md"):
            pairs = _web(data, kind)
        elif (reader := _READERS.get(kind)) is not None:
            pairs = reader(data)
        else:
            return []
    except Exception as exc:  # the links are a bonus; the rendering is what counts
        log.warning("the links of a %s file could not be read: %s", kind, exc)
        return []
    return [k for text, url in pairs if (k := _kept(text, url)) is not None]


def _at(line_text: str, bbox: tuple[float, float, float, float], key: str) -> Link | None:
    """The share of a line that `key` (letters and digits) takes, by letters; None if absent."""
    letters = _norm(line_text)
    start = letters.find(key)
    if start < 0:
        return None
    x0, y0, x1, y1 = bbox
    per = (x1 - x0) / len(letters)
    return Link(url="", text="", bbox=(x0 + per * start, y0, x0 + per * (start + len(key)), y1))


def linked(page: Page, links: list[SourceLink]) -> Page:
    """`page` with each source link whose text a line holds put on that line's block."""
    if not links:
        return page
    found: dict[int, list[Link]] = {}
    for link in links:
        key = _norm(link.text)
        for b, block in enumerate(page.blocks):
            have = found.setdefault(b, [])
            if any(h.text == link.text and h.url == link.url for h in have):
                continue
            hit = next((h for line in block.lines if (h := _at(line.text, line.bbox, key))), None)
            if hit is not None:
                have.append(hit.model_copy(update={"url": link.url, "text": link.text}))
                break
    if not any(found.values()):
        return page
    blocks: list[Block] = [
        block.model_copy(update={"links": found[b]}) if found.get(b) else block
        for b, block in enumerate(page.blocks)
    ]
    return page.model_copy(update={"blocks": blocks})
