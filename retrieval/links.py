"""Citation links: page image, highlight, crop and viewer URLs, built and parsed here alone.

    /documents/{doc_id}/pages/{n}.png[?highlight=BOXES]          the page, the boxes drawn
    /documents/{doc_id}/pages/{n}/view[?highlight=BOXES]         an HTML page for people
    /documents/{doc_id}/pages/{n}/crop.png?bbox=BOX[&highlight=BOXES]   the cited region

BOX is `x0,y0,x1,y1` in PDF points (top-left origin), BOXES such boxes joined by `;`. With an API
key the links are signed so that they open without it (a browser tab, a notebook, a chat client):
`exp` (unix seconds) and `sig` are appended, `sig` being the unpadded base64url HMAC-SHA256, under
the key HMAC-SHA256(api_key, "folio-links"), of `PATH?QUERY\\nEXP` where QUERY is the link's other
parameters sorted and percent-encoded. A signature authorises that one path with those
parameters until `exp`; the API key (the Bearer header) still opens everything.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict
from urllib.parse import parse_qsl, quote, urlsplit

from ocr_engine.errors import BadInputError
from ocr_engine.geometry import normalised
from retrieval.schema import BBox, Citation, PageHighlight, QueryResponse, Region

__all__ = [
    "DEFAULT_LINK_TTL_S",
    "MAX_COORDINATE",
    "MAX_HIGHLIGHTS",
    "CitationLinks",
    "LinkRefusedError",
    "LinkSigner",
    "carries_signature",
    "citation_links",
    "crop_url",
    "format_boxes",
    "highlight_of",
    "is_signable",
    "page_image_url",
    "page_url_template",
    "parse_boxes",
    "sign_citations",
    "sign_response",
    "viewer_url",
]

DEFAULT_LINK_TTL_S = 7 * 24 * 3600
MAX_HIGHLIGHTS = 50
MAX_COORDINATE = 14_400.0  # the largest page PDF allows, in points
_KEY_LABEL = b"folio-links"
_SIGNED = frozenset({"exp", "sig"})
_SIGNABLE = re.compile(r"^/documents/[0-9a-f]{64}/pages/[1-9][0-9]*(?:\.png|/view|/crop\.png)$")
_PAGE_PLACEHOLDER = "{n}"


def format_boxes(boxes: Sequence[BBox]) -> str:
    """`x0,y0,x1,y1;...` with one decimal, as links carry boxes."""
    return ";".join(",".join(f"{v:.1f}" for v in box) for box in boxes)


def parse_boxes(value: str | None) -> list[BBox]:
    """`x0,y0,x1,y1[;x0,...]` -> boxes; raises ValueError with a message a user can act on."""
    if not value:
        return []
    boxes: list[BBox] = []
    for part in value.split(";"):
        if not part.strip():
            continue
        numbers = part.split(",")
        if len(numbers) != 4:
            raise ValueError(f"highlight box {part!r} needs four numbers x0,y0,x1,y1")
        try:
            x0, y0, x1, y1 = (float(n) for n in numbers)
        except ValueError:
            raise ValueError(f"highlight box {part!r} has a value that is not a number") from None
        if not all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in (x0, y0, x1, y1)):
            raise ValueError(
                f"highlight box {part!r} is out of bounds: coordinates are PDF points "
                f"within ±{MAX_COORDINATE:.0f}"
            )
        boxes.append(normalised((x0, y0, x1, y1)))
    if len(boxes) > MAX_HIGHLIGHTS:
        raise ValueError(f"at most {MAX_HIGHLIGHTS} highlight boxes per image")
    return boxes


def _page_path(doc_id: str, page: int) -> str:
    return f"/documents/{quote(doc_id, safe='')}/pages/{page}"


def _with_query(path: str, params: Sequence[tuple[str, str]]) -> str:
    query = "&".join(f"{k}={quote(v, safe=',;')}" for k, v in params if v)
    return f"{path}?{query}" if query else path


def page_image_url(doc_id: str, page: int, highlight: Sequence[BBox] = ()) -> str:
    """The image of a page, `highlight` boxes drawn on it."""
    return _with_query(f"{_page_path(doc_id, page)}.png", [("highlight", format_boxes(highlight))])


def viewer_url(
    doc_id: str, page: int, highlight: Sequence[BBox] = (), on: int | None = None
) -> str:
    """The HTML page that shows a page image, `highlight` boxes drawn on it; with `on`, the
    boxes are page `on`'s, drawn only there (the link to a page beside a cited one keeps the
    citation for the way back)."""
    where = str(on) if on is not None and on != page and highlight else ""
    params = [("highlight", format_boxes(highlight)), ("on", where)]
    return _with_query(f"{_page_path(doc_id, page)}/view", params)


def crop_url(doc_id: str, page: int, parts: Sequence[BBox], highlight: Sequence[BBox] = ()) -> str:
    """The image of the regions `parts` of a page, one under the other (the server adds a margin
    to each), boxes drawn."""
    params = [("bbox", format_boxes(parts)), ("highlight", format_boxes(highlight))]
    return _with_query(f"{_page_path(doc_id, page)}/crop.png", params)


def page_url_template(doc_id: str) -> str:
    """The image of any page of a document: `{n}` stands for the page number."""
    return f"/documents/{quote(doc_id, safe='')}/pages/{_PAGE_PLACEHOLDER}.png"


def highlight_of(url: str) -> list[BBox]:
    """The boxes a page image or viewer link draws (its `highlight` parameter)."""
    params = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    return parse_boxes(params.get("highlight"))


def carries_signature(query: str) -> bool:
    """Whether a query string holds a link signature (valid or not)."""
    return any(k in _SIGNED for k, _ in parse_qsl(query, keep_blank_values=True))


def is_signable(path: str) -> bool:
    """Whether a signature may authorise `path`: a page image, crop or viewer page alone."""
    return _SIGNABLE.match(path) is not None


class CitationLinks(TypedDict):
    """Every link of a citation (its fields of that name): its first page plain, highlighted,
    cropped and in the viewer, each cited page highlighted, and any page of the document."""

    page_image_url: str
    highlight_url: str
    viewer_url: str
    crop_url: str
    page_highlights: list[PageHighlight]
    page_url_template: str


def citation_links(
    doc_id: str,
    page: int,
    bbox: BBox,
    regions: Sequence[Region],
    highlight: Sequence[BBox],
    *,
    crop: Sequence[BBox] = (),
) -> CitationLinks:
    """The links of evidence on `page` (boxed by `bbox`, drawn as `highlight`) whose `regions`
    may run on to other pages, each of which is drawn with its region; the crop shows the parts
    `crop` (a cell's column headings and row) where given, else `bbox`."""
    pages = [PageHighlight(page=page, highlight_url=page_image_url(doc_id, page, highlight))]
    for region in regions:
        if region.page != page:
            url = page_image_url(doc_id, region.page, [region.bbox])
            pages.append(PageHighlight(page=region.page, highlight_url=url))
    return {
        "page_image_url": page_image_url(doc_id, page),
        "highlight_url": pages[0].highlight_url,
        "viewer_url": viewer_url(doc_id, page, highlight),
        "crop_url": crop_url(doc_id, page, crop or [bbox], highlight),
        "page_highlights": pages,
        "page_url_template": page_url_template(doc_id),
    }


class LinkRefusedError(BadInputError):
    """A signed link that does not authorise its request: `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _canonical(path: str, params: Sequence[tuple[str, str]], expires: int) -> bytes:
    pairs = sorted((k, v) for k, v in params if k not in _SIGNED)
    query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
    return f"{path}?{query}\n{expires}".encode()


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class LinkSigner:
    """Signs links for `ttl_s` seconds, and checks signed links, under a key derived from the
    API key (so a leaked link never reveals the key)."""

    key: bytes
    ttl_s: int = DEFAULT_LINK_TTL_S

    @classmethod
    def for_api_key(cls, api_key: str, ttl_s: int = DEFAULT_LINK_TTL_S) -> LinkSigner:
        if not api_key:
            raise ValueError("api_key must not be empty")
        if ttl_s < 1:
            raise ValueError("ttl_s must be at least 1 second")
        key = hmac.new(api_key.encode("utf-8"), _KEY_LABEL, hashlib.sha256).digest()
        return cls(key=key, ttl_s=ttl_s)

    def _sig(self, path: str, params: Sequence[tuple[str, str]], expires: int) -> str:
        message = _canonical(path, params, expires)
        return _b64(hmac.new(self.key, message, hashlib.sha256).digest())

    def expiry(self, now: float | None = None) -> int:
        """When a link signed `now` expires (unix seconds)."""
        return int(now if now is not None else time.time()) + self.ttl_s

    def sign(self, url: str, *, expires: int | None = None) -> str:
        """`url` (a path and query, as built here) with `exp` and `sig` appended."""
        parts = urlsplit(url)
        params = parse_qsl(parts.query, keep_blank_values=True)
        if any(k in _SIGNED for k, _ in params):
            raise ValueError(f"{url!r} is signed already")
        exp = self.expiry() if expires is None else expires
        signature = self._sig(parts.path, params, exp)
        return f"{url}{'&' if parts.query else '?'}exp={exp}&sig={signature}"

    def check(self, path: str, query: str, *, now: float | None = None) -> None:
        """Nothing when `path?query` is a signed link that authorises itself; raises
        LinkRefusedError (with the reason) for an unsigned, tampered, expired or foreign one."""
        params = parse_qsl(query, keep_blank_values=True)
        found = {k: [v for key, v in params if key == k] for k in _SIGNED}
        if not found["sig"] or not found["exp"]:
            raise LinkRefusedError("the link is not signed")
        if len(found["sig"]) > 1 or len(found["exp"]) > 1:
            raise LinkRefusedError("the link carries more than one signature")
        if not is_signable(path):
            raise LinkRefusedError("signed links open page images, crops and viewer pages only")
        exp_text = found["exp"][0]
        if not exp_text.isdigit() or len(exp_text) > 12:
            raise LinkRefusedError("the link's expiry is not a time")
        expected = self._sig(path, params, int(exp_text))
        if not hmac.compare_digest(expected.encode(), found["sig"][0].encode()):
            raise LinkRefusedError("the link's signature does not match it")
        if int(exp_text) < (now if now is not None else time.time()):
            raise LinkRefusedError("the link has expired")

    def sign_citation(self, citation: Citation, *, expires: int) -> Citation:
        """`citation` with each of its links signed to expire at `expires` (the page template
        stays as it is: it names no one page)."""
        pages = [
            p.model_copy(update={"highlight_url": self.sign(p.highlight_url, expires=expires)})
            for p in citation.page_highlights
        ]
        update = {
            name: self.sign(getattr(citation, name), expires=expires)
            for name in ("page_image_url", "highlight_url", "viewer_url", "crop_url")
        }
        return citation.model_copy(update={**update, "page_highlights": pages})


def sign_citations(citations: list[Citation], signer: LinkSigner | None) -> list[Citation]:
    """`citations` with their links signed (all to expire together), or as they are without a
    signer."""
    if signer is None:
        return citations
    expires = signer.expiry()
    return [signer.sign_citation(c, expires=expires) for c in citations]


def sign_response(response: QueryResponse, signer: LinkSigner | None) -> QueryResponse:
    """`response` with its citations' links signed, or as it is without a signer."""
    if signer is None:
        return response
    return response.model_copy(update={"citations": sign_citations(response.citations, signer)})
