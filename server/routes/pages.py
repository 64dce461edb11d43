"""Pages as images: a whole page with highlighted boxes, the HTML viewer a citation link opens,
and crops of just the cited region (with a margin), its supporting lines highlighted."""

from __future__ import annotations

import html
import math
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, Response

from ingest.ledger import UnknownDocumentError
from ocr_engine.geometry import Box
from ocr_engine.schema import Page
from retrieval.links import page_image_url, parse_boxes, viewer_url
from server.crop_columns import Span, kept_columns
from server.http.deps import (
    ApiError,
    DocId,
    Links,
    PageNumber,
    QuerySvc,
    Renderer,
    page_png,
    page_shelved_or_404,
    png_response,
    render_dpi,
    rendering_errors,
)
from server.pages import Render, Row, stacked

__all__ = ["CROP_DPI", "MIN_LINE_PX", "router"]

CROP_DPI = 144  # crops are small: render sharper than whole pages
MIN_LINE_PX = 26  # a table cell's crop draws its text line this high at least: capitals >= 12 px
_AIR = 6.0  # points kept either side of where two kept columns of a crop meet
MAX_MARGIN = 144.0

router = APIRouter()


MAX_CROP_PARTS = 3
_SEAM = 2.0  # points kept above and below where two parts of a crop meet


def _with_margins(parts: list[Box], margin: float) -> list[Box]:
    """The regions to render: `margin` around the whole, a hair where two parts meet (so that
    no half line of the rows between shows), every part as wide as the widest, columns aligned."""
    left = min(p[0] for p in parts) - margin
    right = max(p[2] for p in parts) + margin
    last = len(parts) - 1
    return [
        (left, y0 - (margin if i == 0 else _SEAM), right, y1 + (margin if i == last else _SEAM))
        for i, (_, y0, _, y1) in enumerate(parts)
    ]


def _clear_of_lines(regions: list[Box], parts: list[Box], lines: list[Box]) -> list[Box]:
    """The regions with their top and bottom edges moved off any text line they would cut in
    half (the line above a cited cell showed as a sliver): a line reaching into the region's
    cited part is taken whole (a row label's first line above its figures), any other left out."""
    if not lines:
        return regions
    out = []
    for (x0, top, x1, bottom), part in zip(regions, parts, strict=True):
        for line in lines:
            if not (line[0] < x1 and line[2] > x0):
                continue
            if line[1] < top < line[3]:
                top = line[1] - 0.5 if line[3] > part[1] else min(line[3] + 0.5, part[1])
            if line[1] < bottom < line[3]:
                bottom = line[3] + 0.5 if line[1] < part[3] else max(line[1] - 0.5, part[3])
        out.append((x0, top, x1, bottom))
    return out


def _crop_parts(value: str) -> list[Box]:
    boxes = parse_boxes(value)
    if not 1 <= len(boxes) <= MAX_CROP_PARTS:
        raise ValueError(f"bbox needs one to {MAX_CROP_PARTS} boxes x0,y0,x1,y1, separated by ';'")
    return boxes


@router.get(
    "/documents/{doc_id}/pages/{n}/crop.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
)
def page_crop(
    doc_id: DocId,
    n: PageNumber,
    svc: QuerySvc,
    renderer: Renderer,
    bbox: Annotated[
        str,
        Query(
            max_length=200,
            description="x0,y0,x1,y1 in PDF points; up to three, ';' between, shown one under "
            "the other",
        ),
    ],
    margin: Annotated[float, Query(ge=0, le=MAX_MARGIN, description="points")] = 16.0,
    highlight: Annotated[str | None, Query(max_length=4000)] = None,
    dpi: Annotated[int | None, Query(ge=36)] = None,
) -> Response:
    """The cited region of page `n` with a margin around it (clamped to the page), `highlight`
    boxes drawn; several regions (a table cell's column headings and its row) are shown one
    under the other; a cell highlighted in a row much wider than it is shown with its row's
    label and its column's headings only, the columns between left out, its text drawn at
    least MIN_LINE_PX high; `X-Folio-Render-Dpi` says the resolution used."""
    page_shelved_or_404(svc, doc_id, n)
    use_dpi = render_dpi(svc, dpi, min(CROP_DPI, svc.settings.max_render_dpi))
    try:
        parts = _crop_parts(bbox)
        boxes = parse_boxes(highlight)
    except ValueError as exc:
        raise ApiError(422, "invalid_highlight", str(exc)) from None
    with rendering_errors(doc_id, "invalid_bbox"):
        pdf = svc.shelf.pdf_path(doc_id)
        regions = _with_margins(parts, margin)
        lines = renderer.text_lines(pdf, n)
        if margin > 0:  # a margin asked for is a margin of whole lines; 0 is the box itself
            regions = _clear_of_lines(regions, parts, lines)
        words = renderer.text_words(pdf, n)
        spans = kept_columns(parts, boxes, _stored_page(svc, doc_id, n), words)
        if spans is None:
            renders = [renderer.render(pdf, n, use_dpi, box) for box in regions]
            return png_response(stacked(list(renders)), boxes)
        if dpi is None:  # a cell's text is drawn at least MIN_LINE_PX high
            use_dpi = min(max(use_dpi, _readable_dpi(boxes[0], lines)), svc.settings.max_render_dpi)
        left, right = regions[0][0], regions[0][2]  # every region is as wide as the widest
        cut = [(max(x0, left), min(x1, right)) for x0, x1 in _padded(spans, margin)]
        rows: list[Render | Row] = [
            Row([renderer.render(pdf, n, use_dpi, (x0, y0, x1, y1)) for x0, x1 in cut])
            for _, y0, _, y1 in regions
        ]
        return png_response(stacked(rows), boxes)


def _stored_page(svc: QuerySvc, doc_id: str, n: int) -> Page | None:
    """Page `n` of the document's JSON (its table cells), or None while there is none."""
    try:
        return svc.shelf.page(doc_id, n)
    except (UnknownDocumentError, KeyError, OSError, ValueError):
        return None


def _padded(spans: list[Span], margin: float) -> list[Span]:
    """The kept columns with `margin` outside them all and a little air where two meet."""
    air = min(margin, _AIR)
    last = len(spans) - 1
    return [
        (x0 - (margin if i == 0 else air), x1 + (margin if i == last else air))
        for i, (x0, x1) in enumerate(spans)
    ]


def _readable_dpi(cell: Box, lines: list[Box]) -> int:
    """The dpi at which the text line of `cell` (else the cell) is MIN_LINE_PX high."""
    middle = (cell[1] + cell[3]) / 2
    heights = [ln[3] - ln[1] for ln in lines if ln[1] <= middle <= ln[3] and ln[3] > ln[1]]
    height = min(heights) if heights else cell[3] - cell[1]
    return math.ceil(72 * MIN_LINE_PX / max(height, 1.0))


@router.get(
    "/documents/{doc_id}/pages/{n}.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}}},
)
def page_image(
    doc_id: DocId,
    n: PageNumber,
    svc: QuerySvc,
    renderer: Renderer,
    highlight: Annotated[str | None, Query(max_length=4000)] = None,
    dpi: Annotated[int | None, Query(ge=36)] = None,
) -> Response:
    """Page `n` as PNG with `highlight` boxes drawn; a page too large for the dpi within
    FOLIO_MAX_RENDER_PIXELS is rendered at less, said in `X-Folio-Render-Dpi`."""
    page_shelved_or_404(svc, doc_id, n)
    with rendering_errors(doc_id, "invalid_highlight"):
        pdf = svc.shelf.pdf_path(doc_id)
    return page_png(svc, renderer, pdf, n, dpi, highlight, doc_id)


@router.get("/documents/{doc_id}/pages/{n}/view", response_class=HTMLResponse)
def page_view(
    doc_id: DocId,
    n: PageNumber,
    svc: QuerySvc,
    links: Links,
    highlight: Annotated[str | None, Query(max_length=4000)] = None,
    on: Annotated[int | None, Query(ge=1, description="the page the highlight is of")] = None,
    exp: Annotated[int | None, Query(description="a signed link's expiry")] = None,
) -> HTMLResponse:
    """The page image in an HTML page, scrolled to the first highlight, with links to the pages
    before and after, which keep the highlight for the page it is of (`on`, else this one); with
    an API key its links are signed (to expire with this page's own signed link), since the page
    is opened as a link."""
    record = page_shelved_or_404(svc, doc_id, n)
    try:
        boxes = parse_boxes(highlight)
    except ValueError as exc:
        raise ApiError(422, "invalid_highlight", str(exc)) from None
    cited = on or n
    shown = boxes if cited == n else []
    image = page_image_url(doc_id, n, shown)
    others = {
        k: viewer_url(doc_id, k, boxes, on=cited) for k in (n - 1, n + 1) if 1 <= k <= record.pages
    }
    if links is not None:
        expires = links.expiry() if exp is None else min(exp, links.expiry())
        image = links.sign(image, expires=expires)
        others = {k: links.sign(url, expires=expires) for k, url in others.items()}
    title = html.escape(f"{record.source} — page {n} of {record.pages}")
    nav = " · ".join(
        f"<a href='{html.escape(url)}'>{'Previous' if k < n else 'Next'} page</a>"
        for k, url in sorted(others.items())
    )
    body = (
        f"<!doctype html><meta charset=utf-8><title>{title}</title>"
        "<link rel='icon' href='data:,'>"  # no /favicon.ico request, no 404 in the console
        "<body style='font:16px sans-serif'>"
        f"<h1 style='font-size:16px'>{title}</h1><nav>{nav}</nav>"
        "<div style='position:relative;display:inline-block;max-width:100%;margin-top:8px'>"
        f"<img style='display:block;max-width:100%;border:1px solid #ccc' alt='{title}' "
        f"src='{html.escape(image)}'>{_cited_marker(svc, doc_id, n, shown)}</div>"
    )
    return HTMLResponse(body)


def _cited_marker(svc: QuerySvc, doc_id: str, n: int, boxes: list[Box]) -> str:
    """An empty element over the first highlight (placed in shares of the page, as the image
    scales), and the line that scrolls it into view once the image is in; "" without a box or
    the page's size."""
    if not boxes:
        return ""
    with rendering_errors(doc_id, "invalid_highlight"):
        size = svc.shelf.page_size(doc_id, n)
    if size is None or size[0] <= 0 or size[1] <= 0:
        return ""
    width, height = size
    x0, y0, x1, y1 = boxes[0]
    place = (
        f"left:{100 * x0 / width:.2f}%;top:{100 * y0 / height:.2f}%;"
        f"width:{100 * (x1 - x0) / width:.2f}%;height:{100 * (y1 - y0) / height:.2f}%"
    )
    return (
        f"<div id=cited style='position:absolute;{place}'></div>"
        "<script>addEventListener('load', () => "
        "document.getElementById('cited').scrollIntoView({block: 'center'}))</script>"
    )
