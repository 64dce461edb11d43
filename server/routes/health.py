"""`GET /health`: whether the index reads and writes, open without the API key."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from retrieval.answer import FillProgress
from retrieval.index import StoreError
from server.http.deps import QuerySvc

__all__ = ["Health", "router"]

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str = Field(description="ok, or error when the index cannot be written")
    documents: int
    points: int
    reason: str | None = Field(default=None, description="why the status is error")
    answer_sentences: FillProgress | None = Field(
        default=None,
        description="with FOLIO_ANSWER_SENTENCES=idle: how far the sentences a new question's "
        "answer reads have been embedded between queries",
    )


@router.get("/health", responses={503: {"model": Health}})
def health(svc: QuerySvc, request: Request, response: Response) -> Health:
    """ok, or 503 with the reason when the index failed its latest write or cannot be read."""
    fill = getattr(request.app.state, "sentence_fill", None)
    sentences = fill.progress.model_copy() if fill is not None else None
    documents = svc.shelf.count()
    try:
        points = svc.store.count()
    except StoreError as exc:
        response.status_code = 503
        return Health(status="error", documents=documents, points=0, reason=str(exc))
    if (failed := svc.store.write_error) is not None:
        response.status_code = 503
        reason = f"the index failed its latest write: {failed}"
        return Health(status="error", documents=documents, points=points, reason=reason)
    return Health(status="ok", documents=documents, points=points, answer_sentences=sentences)
