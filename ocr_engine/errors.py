"""The one tree of folio's errors, split by what the caller should do. The root and the kinds
live here, at the bottom of the house, so every package can derive from them:

FolioError                        every error folio raises on purpose
 ├── BadInputError                the input can never succeed as is: do not retry
 │    └── PasswordError           an encrypted PDF or Office file without the right password:
 │                                retry with one
 ├── EngineError                  a page engine (OCR model, endpoint, worker) failed
 │    ├── EngineUnavailableError  it could not be reached in time: retry with backoff
 │    └── EngineOutputError       its output was unusable: retry differently, then fall back
 ├── StoreError                   the vector index (retrieval.index.store): unavailable or
 │                                misconfigured
 ├── EmbedderError                the embedding model or service (retrieval.index.embedder)
 ├── LlmError                     the answer-writing LLM endpoint (retrieval.answer.llm)
 ├── IngestError                  a document could not be ingested (ingest.pipeline.failures)
 └── ApiError                     what the HTTP API answers with a status (server.http.deps),
                                  the data directory held by another process (server.datadir),
                                  a running server that cannot be reached (server.cli.remote)
"""

from __future__ import annotations

__all__ = [
    "BadInputError",
    "EngineError",
    "EngineOutputError",
    "EngineUnavailableError",
    "FolioError",
    "PasswordError",
]


class FolioError(Exception):
    """Base of every error folio raises on purpose."""


class BadInputError(FolioError):
    """The input is not a readable PDF, page or request; retrying will not help."""


class PasswordError(BadInputError):
    """An encrypted PDF or Office file that no password given opens; it opens with the right one."""


class EngineError(FolioError):
    """A page engine failed."""


class EngineUnavailableError(EngineError):
    """An engine or endpoint could not be reached in time."""


class EngineOutputError(EngineError):
    """An engine returned output that could not be used."""
