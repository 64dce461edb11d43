"""Crops of a page: just the cited region (with a margin), its supporting lines highlighted."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from ocr_engine.geometry import Box
from retrieval.links import parse_boxes
from server.deps import (
    ApiError,
    DocId,
    PageNumber,
    Renderer,
    Svc,
    page_record_or_404,
    png_response,
    render_dpi,
    rendering_errors,
)

__all__ = ["CROP_DPI", "router"]

CROP_DPI = 144  # crops are small: render sharper than whole pages
MAX_MARGIN = 144.0

router = APIRouter()


def _one_box(value: str) -> Box:
    boxes = parse_boxes(value)
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
    svc: Svc,
    renderer: Renderer,
    bbox: Annotated[str, Query(max_length=200, description="x0,y0,x1,y1 in PDF points")],
    margin: Annotated[float, Query(ge=0, le=MAX_MARGIN, description="points")] = 16.0,
    highlight: Annotated[str | None, Query(max_length=4000)] = None,
    dpi: Annotated[int | None, Query(ge=36)] = None,
) -> Response:
    """The cited region of page `n` with a margin around it (clamped to the page), `highlight`
    boxes drawn; `X-Folio-Render-Dpi` says the resolution used."""
    page_record_or_404(svc, doc_id, n)
    use_dpi = render_dpi(svc, dpi, min(CROP_DPI, svc.settings.max_render_dpi))
    try:
        region = _one_box(bbox)
        boxes = parse_boxes(highlight)
    except ValueError as exc:
        raise ApiError(422, "invalid_highlight", str(exc)) from None
    x0, y0, x1, y1 = region
    around = (x0 - margin, y0 - margin, x1 + margin, y1 + margin)
    with rendering_errors(doc_id, "invalid_bbox"):
        render = renderer.render(svc.files.pdf_path(doc_id), n, use_dpi, around)
        return png_response(render, boxes)
