"""`GET /health`: whether the index reads and writes, open without the API key."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from retrieval.store import StoreError
from server.deps import Svc

__all__ = ["Health", "router"]

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str = Field(description="ok, or error when the index cannot be written")
    documents: int
    points: int
    reason: str | None = Field(default=None, description="why the status is error")


@router.get("/health", responses={503: {"model": Health}})
def health(svc: Svc, response: Response) -> Health:
    """ok, or 503 with the reason when the index failed its latest write or cannot be read."""
    documents = svc.ledger.count()
    try:
        points = svc.store.count()
    except StoreError as exc:
        response.status_code = 503
        return Health(status="error", documents=documents, points=0, reason=str(exc))
    if (failed := svc.store.write_error) is not None:
        response.status_code = 503
        reason = f"the index failed its latest write: {failed}"
        return Health(status="error", documents=documents, points=points, reason=reason)
    return Health(status="ok", documents=documents, points=points)
