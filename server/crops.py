"""Crops of a page: just the cited region (with a margin), its supporting lines highlighted."""

from __future__ import annotations

import io
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from PIL import Image

from server.deps import (
    ApiError,
    DocId,
    PageNumber,
    Svc,
    page_record_or_404,
    render_dpi,
    rendering_errors,
)
from server.pages import BBox, PageRenderer, draw_boxes, parse_highlight

__all__ = ["CROP_DPI", "crop_image", "router"]

CROP_DPI = 144  # crops are small: render sharper than whole pages
MAX_MARGIN = 144.0

router = APIRouter()


def get_renderer(request: Request) -> PageRenderer:
    """The app's page renderer (one render cache for pages and crops)."""
    renderer = getattr(request.app.state, "renderer", None)
    if renderer is None:
        renderer = PageRenderer(request.app.state.services.settings.render_cache_pages)
        request.app.state.renderer = renderer
    return renderer


def crop_image(
    page: Image.Image, bbox: BBox, *, scale: float, margin: float, highlights: list[BBox]
) -> Image.Image:
    """The part of `page` (rendered at `scale` pixels per point) around `bbox` plus `margin`
    points, clamped to the page, with `highlights` drawn; raises ValueError off the page."""
    width, height = page.width / scale, page.height / scale
    x0, y0 = max(0.0, bbox[0] - margin), max(0.0, bbox[1] - margin)
    x1, y1 = min(width, bbox[2] + margin), min(height, bbox[3] + margin)
    if x1 - x0 < 1 or y1 - y0 < 1:
        raise ValueError(f"bbox {bbox} is outside the page ({width:.0f} x {height:.0f} points)")
    box = (round(x0 * scale), round(y0 * scale), round(x1 * scale), round(y1 * scale))
    out = page.crop(box)
    if highlights:
        moved = [(a - x0, b - y0, c - x0, d - y0) for a, b, c, d in highlights]
        out = draw_boxes(out, moved, scale=scale)
    return out


def _one_box(value: str) -> BBox:
    boxes = parse_highlight(value)
    if len(boxes) != 1:
        raise ValueError("bbox needs exactly one box x0,y0,x1,y1")
    return boxes[0]


@router.get(
    "/documents/{doc_id}/pages/{n}/crop.png",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
)
def page_crop(
    doc_id: DocId,
    n: PageNumber,
    request: Request,
    svc: Svc,
    bbox: Annotated[str, Query(max_length=200, description="x0,y0,x1,y1 in PDF points")],
    margin: Annotated[float, Query(ge=0, le=MAX_MARGIN, description="points")] = 16.0,
    highlight: Annotated[str | None, Query(max_length=4000)] = None,
    dpi: Annotated[int | None, Query(ge=36)] = None,
) -> Response:
    """The cited region of page `n` with a margin around it, `highlight` boxes drawn."""
    page_record_or_404(svc, doc_id, n)
    use_dpi = render_dpi(svc, dpi, min(CROP_DPI, svc.settings.max_render_dpi))
    try:
        region = _one_box(bbox)
        boxes = parse_highlight(highlight)
    except ValueError as exc:
        raise ApiError(422, "invalid_highlight", str(exc)) from None
    renderer = get_renderer(request)
    with rendering_errors(doc_id, "invalid_bbox"):
        page = renderer.image(svc.files.pdf_path(doc_id), n, use_dpi)
        image = crop_image(page, region, scale=use_dpi / 72.0, margin=margin, highlights=boxes)
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return Response(
        out.getvalue(), media_type="image/png", headers={"Cache-Control": "max-age=3600"}
    )
