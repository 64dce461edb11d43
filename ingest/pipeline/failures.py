"""Why a document failed, and when (if ever) to try it again."""

from __future__ import annotations

import logging
from concurrent.futures.process import BrokenProcessPool

from pydantic import BaseModel, Field

from ingest.ledger.records import FailureKind
from ingest.pipeline.extractor import WorkerCrashedError
from ocr_engine.errors import (
    BadInputError,
    EngineOutputError,
    EngineUnavailableError,
    FolioError,
    PasswordError,
)
from retrieval.index import StoreError

__all__ = ["IngestError", "NoTextError", "RetryPolicy", "SourceGoneError", "classify", "describe"]

log = logging.getLogger(__name__)


class IngestError(FolioError):
    """A document could not be ingested for a reason of the ingest itself."""


class NoTextError(IngestError):
    """Nothing searchable came out of a readable PDF."""


class SourceGoneError(IngestError):
    """No path holds the document's bytes any more (changed or deleted before it was read)."""


class RetryPolicy(BaseModel):
    """Exponential backoff for failures that may pass: base * 2^(attempt-1), capped."""

    max_attempts: int = Field(default=5, ge=1)
    base_s: float = Field(default=30.0, ge=0.0)
    max_s: float = Field(default=6 * 3600.0, ge=0.0)

    def retry_at(self, kind: FailureKind, attempts: int, now: float) -> float | None:
        """When to try again (unix seconds), or None to give up."""
        if not kind.retryable or attempts >= self.max_attempts:
            return None
        return now + min(self.base_s * 2 ** max(0, attempts - 1), self.max_s)


def describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def classify(exc: BaseException) -> tuple[FailureKind, str]:
    """The failure kind of an exception raised while processing a document, and its reason."""
    if isinstance(exc, PasswordError):
        return FailureKind.password, describe(exc)
    if isinstance(exc, BadInputError):
        return FailureKind.bad_input, describe(exc)
    if isinstance(exc, NoTextError):
        return FailureKind.no_text, describe(exc)
    if isinstance(exc, SourceGoneError):
        return FailureKind.transient, describe(exc)
    if isinstance(exc, WorkerCrashedError | BrokenProcessPool):
        return FailureKind.internal, describe(exc)
    if isinstance(exc, EngineUnavailableError | EngineOutputError | StoreError | OSError):
        return FailureKind.transient, f"{type(exc).__name__}: {describe(exc)}"
    log.error("unexpected failure", exc_info=exc)
    return FailureKind.internal, f"internal error: {type(exc).__name__}: {describe(exc)}"
