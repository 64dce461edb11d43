"""Typed errors, split by what the caller should do.

FolioError
 ├── BadInputError           the input can never succeed as is: do not retry
 ├── EngineUnavailableError  the engine could not be reached: retry with backoff
 └── EngineOutputError       unusable engine output: retry differently, then fall back
"""

from __future__ import annotations


class FolioError(Exception):
    """Base of every error folio raises on purpose."""


class BadInputError(FolioError):
    """The input is not a readable PDF (or page); retrying will not help."""


class EngineUnavailableError(FolioError):
    """An engine or endpoint could not be reached in time."""


class EngineOutputError(FolioError):
    """An engine returned output that could not be used."""
