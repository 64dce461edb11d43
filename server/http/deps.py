"""What every route shares: the services dependency and the one JSON error shape."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response

from ingest.ledger import (
    AmbiguousDocIdError,
    DocIdError,
    DocumentRecord,
    UnknownDocumentError,
    is_doc_id,
)
from ingest.pipeline import SourceGoneError
from ocr_engine.errors import FolioError
from ocr_engine.geometry import Box
from retrieval.links import LinkSigner, parse_boxes
from retrieval.schema import DOC_ID_PATTERN
from server.pages import PageOutOfRangeError, PageRenderer, Render, Stack, UnrenderablePageError
from server.services import Services
from server.settings import Settings
from server.shelf import Answering, Shelved

__all__ = [
    "DOC_ID_PATTERN",
    "ApiError",
    "DocId",
    "Links",
    "PageNumber",
    "QuerySvc",
    "Renderer",
    "Svc",
    "error_response",
    "get_links",
    "get_renderer",
    "get_services",
    "page_renderer",
    "page_shelved_or_404",
    "png_response",
    "record_or_404",
    "render_dpi",
    "rendering_errors",
    "resolved_doc_id",
    "validation_message",
]

MAX_PAGE_NUMBER = 1_000_000

PageNumber = Annotated[int, PathParam(ge=1, le=MAX_PAGE_NUMBER, description="1-based page number")]


class ApiError(FolioError):
    """An error answered with the one JSON error shape: {"error": {"code", "message"}}."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers


def get_services(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


Svc = Annotated[Services, Depends(get_services)]


def get_answering(request: Request) -> Answering:
    """The running folio as the answer and page routes see it: a coordinator or a replica."""
    svc: Answering = request.app.state.services
    return svc


QuerySvc = Annotated[Answering, Depends(get_answering)]


def resolved_doc_id(svc: Answering, text: str) -> str:
    """The full id `text` names (itself, or the one document whose id it begins), or the API
    error that says why there is none: 422 malformed, 409 ambiguous (naming them), 404."""
    try:
        return svc.shelf.resolve(text)
    except DocIdError as exc:
        raise ApiError(422, "invalid_doc_id", str(exc)) from None
    except AmbiguousDocIdError as exc:
        raise ApiError(409, "ambiguous_doc_id", str(exc)) from None
    except UnknownDocumentError:
        raise ApiError(404, "unknown_document", f"no document id begins with {text!r}") from None


def _doc_id(
    svc: QuerySvc,
    doc_id: Annotated[
        str,
        PathParam(
            max_length=200,
            description="sha256 of the PDF's bytes (64 hex), or a prefix of 8 or more hex "
            "characters that one document's id begins with",
        ),
    ],
) -> str:
    return resolved_doc_id(svc, doc_id)


DocId = Annotated[str, Depends(_doc_id)]


def get_links(request: Request) -> LinkSigner | None:
    """What signs citation links (set by `install_api`); None without an API key."""
    links: LinkSigner | None = getattr(request.app.state, "links", None)
    return links


Links = Annotated[LinkSigner | None, Depends(get_links)]


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


_PYDANTIC_LEAD = re.compile(r"^(?:Value error|Assertion failed), ")


def validation_message(error: Mapping[str, Any]) -> str:
    """A pydantic error's message without the lead it gives a validator's ("Value error, ")."""
    return _PYDANTIC_LEAD.sub("", str(error.get("msg", "invalid value")))


def record_or_404(svc: Services, doc_id: str) -> DocumentRecord:
    if not is_doc_id(doc_id):
        raise ApiError(422, "invalid_doc_id", "a document id is 64 lowercase hex characters")
    try:
        return svc.ledger.get(doc_id)
    except UnknownDocumentError:
        raise ApiError(404, "unknown_document", f"no document with id {doc_id!r}") from None


def page_shelved_or_404(svc: Answering, doc_id: str, n: int) -> Shelved:
    """The document's name and page count when it has a page `n`."""
    if not is_doc_id(doc_id):
        raise ApiError(422, "invalid_doc_id", "a document id is 64 lowercase hex characters")
    try:
        shelved = svc.shelf.about(doc_id)
    except UnknownDocumentError:
        raise ApiError(404, "unknown_document", f"no document with id {doc_id!r}") from None
    except SourceGoneError as exc:  # a replica that reaches no copy to count the pages of
        raise ApiError(503, "document_unreachable", str(exc)) from None
    if not 1 <= n <= shelved.pages:
        raise ApiError(
            404,
            "page_out_of_range",
            f"page {n} is out of range: {shelved.source} has {shelved.pages} pages",
        )
    return shelved


def render_dpi(svc: Answering, dpi: int | None, default: int) -> int:
    """The resolution asked for (or `default`), refused above the configured maximum."""
    use_dpi = dpi or default
    if use_dpi > svc.settings.max_render_dpi:
        raise ApiError(422, "invalid_request", f"dpi must be <= {svc.settings.max_render_dpi}")
    return use_dpi


def page_renderer(settings: Settings) -> PageRenderer:
    """The renderer within the configured pixel and cache bounds."""
    return PageRenderer(
        max_pixels=settings.max_render_pixels, cache_bytes=settings.render_cache_mb << 20
    )


def get_renderer(request: Request) -> PageRenderer:
    """The app's page renderer (one render cache for pages and crops)."""
    renderer: PageRenderer = request.app.state.renderer
    return renderer


Renderer = Annotated[PageRenderer, Depends(get_renderer)]


def png_response(render: Render | Stack, highlights: list[Box]) -> Response:
    """The render as PNG with `highlights` drawn; `X-Folio-Render-Dpi` is the dpi it used."""
    headers = {"Cache-Control": "max-age=3600", "X-Folio-Render-Dpi": str(render.dpi)}
    return Response(render.png(highlights), media_type="image/png", headers=headers)


@contextmanager
def rendering_errors(doc_id: str, bad_value_code: str) -> Iterator[None]:
    """Page rendering's errors as API errors; a ValueError is the caller's `bad_value_code`, a
    page MuPDF cannot render is 422 `page_not_renderable`."""
    try:
        yield
    except PageOutOfRangeError as exc:
        raise ApiError(404, "page_out_of_range", str(exc)) from None
    except UnknownDocumentError:
        raise ApiError(404, "unknown_document", f"no PDF stored for {doc_id!r}") from None
    except UnrenderablePageError as exc:
        raise ApiError(422, "page_not_renderable", str(exc)) from None
    except SourceGoneError as exc:  # a replica that reaches no copy of the document
        raise ApiError(503, "document_unreachable", str(exc)) from None
    except ValueError as exc:
        raise ApiError(422, bad_value_code, str(exc)) from None


def page_png(
    svc: Answering,
    renderer: PageRenderer,
    pdf: Path,
    n: int,
    dpi: int | None,
    highlight: str | None,
    name: str,
) -> Response:
    """Page `n` of `pdf` (the stored file of `name`) as PNG at `dpi` (or the configured one),
    the `highlight` boxes drawn."""
    with rendering_errors(name, "invalid_highlight"):
        boxes = parse_boxes(highlight)
        render = renderer.render(pdf, n, render_dpi(svc, dpi, svc.settings.render_dpi))
        return png_response(render, boxes)
