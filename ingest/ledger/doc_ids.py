"""A document named by its id (the sha256 of its bytes, 64 hex) or by a unique prefix of it of
at least `MIN_PREFIX` characters, as `folio docs` shows them. One resolver for the API, the MCP
tools and the command line: malformed is `DocIdError` (bad input), a prefix several documents
share is `AmbiguousDocIdError` naming them, none is `UnknownDocumentError`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from ingest.ledger.records import UnknownDocumentError
from ocr_engine.errors import BadInputError, FolioError

__all__ = ["MIN_PREFIX", "AmbiguousDocIdError", "DocIdError", "resolve_doc_id"]

MIN_PREFIX = 8
FULL = 64
SHOWN = 5  # candidates named in the message of an ambiguous prefix
LOOKED_AT = 100
_HEX = re.compile(r"^[0-9a-f]+$")


class DocIdError(BadInputError):
    """Not a document id nor a prefix of one long enough to name a document."""


class AmbiguousDocIdError(FolioError):
    """A prefix that more than one document's id begins with; `candidates` are (id, source)."""

    def __init__(self, prefix: str, candidates: list[tuple[str, str]]) -> None:
        self.prefix, self.candidates = prefix, candidates
        named = ", ".join(f"{doc_id} ({source})" for doc_id, source in candidates[:SHOWN])
        more = f" and {len(candidates) - SHOWN} more" if len(candidates) > SHOWN else ""
        super().__init__(
            f"{prefix!r} begins the ids of {len(candidates)} documents: {named}{more}; "
            "give more characters"
        )


class _Ids(Protocol):
    def ids_starting(self, prefix: str, limit: int = 10) -> list[tuple[str, str]]: ...


def resolve_doc_id(ledger: _Ids, text: str, *, removed: Iterable[tuple[str, str]] = ()) -> str:
    """The full id `text` names: itself when it is a full id (whether known or not is the
    caller's to say), else the one document of the ledger (or of `removed`, id and source of
    removed documents) whose id it begins."""
    value = text.strip()
    if not (MIN_PREFIX <= len(value) <= FULL and _HEX.match(value)):
        raise DocIdError(
            f"{text[:80]!r} is not a document id: give its 64 lowercase hex characters or a "
            f"prefix of at least {MIN_PREFIX} (as `folio docs` and GET /documents show them)"
        )
    if len(value) == FULL:
        return value
    found = dict(ledger.ids_starting(value, limit=LOOKED_AT))
    found.update((doc_id, source) for doc_id, source in removed if doc_id.startswith(value))
    if not found:
        raise UnknownDocumentError(f"no document id begins with {value!r}")
    if len(found) > 1:
        raise AmbiguousDocIdError(value, sorted(found.items()))
    return next(iter(found))
