"""Stored copies for `folio worker`s and query replicas: `GET /worker/documents/{sha256}.pdf?token=`
and `GET /worker/documents/{sha256}.json?token=` (the document's structured JSON, which a replica
reads page layouts from), and `POST /worker/tokens/{sha256}` (a token for a replica).

The token (`ingest.queue.doc_bytes.DocTokens`, signed by this coordinator into each unit it sends,
or given to a replica that asks with the API key) opens that one document's copy and JSON until it
expires and nothing else; the API key does not open the GETs, and the API-key middleware leaves
them to the token. Range requests are answered (206), so a dropped transfer resumes. A refused
token is a 401 that says why, logged here as well.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse

from ingest.ledger import UnknownDocumentError
from ingest.queue import TOKENS_PATH, WORKER_PATH, DocToken, DocTokens, TokenRefusedError
from ocr_engine.schema import Document
from server.http.deps import ApiError, DocId, Svc

__all__ = ["REPLICA_TOKEN_TTL_S", "router"]

log = logging.getLogger(__name__)

REPLICA_TOKEN_TTL_S = 900

router = APIRouter()


def _tokens(request: Request, svc: Svc) -> DocTokens:
    tokens: DocTokens | None = getattr(request.app.state, "doc_tokens", None)
    if tokens is None:
        tokens = request.app.state.doc_tokens = DocTokens.for_data_dir(svc.settings.data_dir)
    return tokens


def _check(doc_id: str, request: Request, svc: Svc, token: str | None) -> None:
    try:
        _tokens(request, svc).check(doc_id, token)
    except TokenRefusedError as exc:
        client = request.client.host if request.client is not None else "?"
        log.warning("refused %s the stored copy of %s: %s", client, doc_id[:12], exc.reason)
        raise ApiError(
            401, "unauthorized", f"this token does not open the document: {exc.reason}"
        ) from None


@router.get(
    WORKER_PATH + "{doc_id}.pdf",
    response_class=FileResponse,
    responses={
        200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}},
        206: {"description": "the range asked for"},
        401: {"description": "the token does not open this document"},
    },
)
def stored_copy(
    doc_id: DocId, request: Request, svc: Svc, token: str | None = None
) -> FileResponse:
    """A stored copy's bytes for a worker holding a unit's token (range requests answered)."""
    _check(doc_id, request, svc, token)
    try:
        path = svc.files.pdf_path(doc_id)
    except UnknownDocumentError:
        raise ApiError(404, "not_found", f"no stored copy of {doc_id}") from None
    return FileResponse(path, media_type="application/pdf")


@router.get(
    WORKER_PATH + "{doc_id}.json",
    response_class=FileResponse,
    responses={
        200: {"model": Document, "description": "the document's structured JSON"},
        401: {"description": "the token does not open this document"},
        404: {"description": "no finished JSON (not read yet, or being read)"},
    },
)
def stored_json(
    doc_id: DocId, request: Request, svc: Svc, token: str | None = None
) -> FileResponse:
    """A document's structured JSON for a replica holding its token (range requests answered)."""
    _check(doc_id, request, svc, token)
    try:
        path: Path = svc.files.json_path(doc_id)
    except UnknownDocumentError:
        raise ApiError(404, "not_found", f"no finished JSON of {doc_id}") from None
    return FileResponse(path, media_type="application/json")


@router.post(TOKENS_PATH + "{doc_id}", responses={404: {"description": "no stored copy"}})
def replica_token(doc_id: DocId, request: Request, svc: Svc) -> DocToken:
    """A token opening the document's stored copy and JSON for REPLICA_TOKEN_TTL_S seconds, for a
    query replica (behind the API key, as every route but the token's own GETs)."""
    if not svc.files.has_pdf(doc_id):
        raise ApiError(404, "not_found", f"no stored copy of {doc_id}")
    token = _tokens(request, svc).sign(doc_id, REPLICA_TOKEN_TTL_S)
    return DocToken(token=token, expires=int(token.partition(".")[0]))
