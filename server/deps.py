"""What every route shares: the services dependency and the one JSON error shape."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

from ingest.records import DocumentRecord, UnknownDocumentError
from server.services import Services

__all__ = ["ApiError", "Svc", "error_response", "get_services", "record_or_404"]


class ApiError(Exception):
    """An error answered with the one JSON error shape: {"error": {"code", "message"}}."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def get_services(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


Svc = Annotated[Services, Depends(get_services)]


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def record_or_404(svc: Services, doc_id: str) -> DocumentRecord:
    try:
        return svc.ledger.get(doc_id)
    except UnknownDocumentError:
        raise ApiError(404, "unknown_document", f"no document with id {doc_id!r}") from None
