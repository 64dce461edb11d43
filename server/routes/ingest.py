"""`POST /ingest`: sync paths of the server's own disk, as `folio ingest` does, and `POST /retry`,
as `folio retry` does; what the CLI uses while `folio serve` holds the data directory. `/ingest`
takes loopback clients only, since the paths are the server's."""

from __future__ import annotations

import ipaddress
import time
from pathlib import Path

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from ingest.pipeline import IngestSummary
from ingest.sync import summarize
from server.http.deps import ApiError, Svc

__all__ = ["IngestRequest", "RetryRequest", "router"]

router = APIRouter(tags=["documents"])


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(min_length=1, max_length=10_000, description="absolute paths")
    force: bool = Field(default=False, description="process again files already indexed")


def _loopback(request: Request) -> bool:
    host = request.client.host if request.client is not None else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "testclient"  # starlette's TestClient


@router.post(
    "/ingest",
    responses={403: {"description": "not a loopback client"}, 404: {"description": "no such path"}},
)
def ingest(body: IngestRequest, request: Request, svc: Svc) -> IngestSummary:
    """Bring the index in line with these files and folders and answer when they are done."""
    if not _loopback(request):
        raise ApiError(403, "not_loopback", "paths can only be ingested from the server's host")
    paths = [Path(p) for p in body.paths]
    if relative := [str(p) for p in paths if not p.is_absolute()]:
        raise ApiError(422, "relative_path", f"paths must be absolute: {', '.join(relative[:5])}")
    if missing := [str(p) for p in paths if not p.exists()]:
        raise ApiError(404, "no_such_path", f"no such file or directory: {', '.join(missing[:5])}")
    return svc.sync.ingest_summary(paths, force=body.force)


class RetryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    all: bool = Field(default=False, description="also documents that failed for good (bad input)")


@router.post("/retry")
def retry(body: RetryRequest, svc: Svc) -> IngestSummary:
    """Process failed documents again now, without waiting for their backoff, and answer when
    they are done (an empty summary when none failed)."""
    started = time.perf_counter()
    queued = svc.sync.retry(include_permanent=body.all)
    summary = summarize(svc.sync.process_pending() if queued else [], [])
    summary.seconds = time.perf_counter() - started
    return summary
