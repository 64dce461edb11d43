"""What every route shares: the services dependency and the one JSON error shape."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse

from ingest.records import DocumentRecord, UnknownDocumentError, is_doc_id
from server.services import Services

__all__ = [
    "DOC_ID_PATTERN",
    "ApiError",
    "DocId",
    "PageNumber",
    "Svc",
    "error_response",
    "get_services",
    "record_or_404",
]

DOC_ID_PATTERN = r"^[0-9a-f]{64}$"
MAX_PAGE_NUMBER = 1_000_000

DocId = Annotated[
    str, PathParam(pattern=DOC_ID_PATTERN, description="sha256 of the PDF's bytes (64 hex)")
]
PageNumber = Annotated[int, PathParam(ge=1, le=MAX_PAGE_NUMBER, description="1-based page number")]


class ApiError(Exception):
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


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def record_or_404(svc: Services, doc_id: str) -> DocumentRecord:
    if not is_doc_id(doc_id):
        raise ApiError(422, "invalid_doc_id", "a document id is 64 lowercase hex characters")
    try:
        return svc.ledger.get(doc_id)
    except UnknownDocumentError:
        raise ApiError(404, "unknown_document", f"no document with id {doc_id!r}") from None
