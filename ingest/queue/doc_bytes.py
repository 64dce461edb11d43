"""Where a work unit's document bytes can be fetched: the address a unit carries, and the
short-lived tokens the coordinator signs for its own API's stored copies.

A unit's `DocAddress` names the document by its sha256 and carries up to two places besides
shared storage (a worker's `--data-dir`, preferred when the file is there):

    url         GET {FOLIO_PUBLIC_URL}/worker/documents/{sha256}.pdf?token=EXP.SIG
                (the coordinator's stored copy; range requests; the token opens that one
                document, and its structured JSON at `{sha256}.json`, until EXP and nothing
                else)
    object_url  s3://bucket/prefix/{sha256}.pdf (FOLIO_OBJECT_STORE_URL: the coordinator
                uploads each stored copy there once)

A token is `EXP.SIG`: EXP unix seconds, SIG the unpadded base64url HMAC-SHA256, under a key kept
in `DATA_DIR/doc_tokens.key` (made once, mode 0600), of `folio-doc-bytes\\n{sha256}\\n{EXP}`. Only
the coordinator signs and checks them; a worker carries them. A query replica, which holds no
unit, asks the coordinator for one with the API key (`POST /worker/tokens/{sha256}`: a `DocToken`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from ingest.ledger.records import is_doc_id
from ingest.pipeline.failures import SourceGoneError
from ocr_engine.errors import BadInputError

__all__ = [
    "TOKENS_PATH",
    "TOKEN_FILE",
    "WORKER_PATH",
    "DocAddress",
    "DocSources",
    "DocToken",
    "DocTokens",
    "NoReaderError",
    "TokenRefusedError",
    "bytes_path",
    "redact_url",
]

log = logging.getLogger(__name__)

TOKEN_FILE = "doc_tokens.key"
WORKER_PATH = "/worker/documents/"
TOKENS_PATH = "/worker/tokens/"
_LABEL = b"folio-doc-bytes"


class NoReaderError(SourceGoneError):
    """No place a worker tried held the document's bytes: it waits for a worker that can read it
    (retried with backoff, not failed as an engine error)."""


class TokenRefusedError(BadInputError):
    """A document token that does not open its request: `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DocAddress(BaseModel):
    """Where one document's bytes can be fetched, besides a worker's shared storage."""

    doc_id: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the bytes")
    size: int = Field(ge=0)
    url: str | None = Field(default=None, description="the coordinator's GET, token included")
    object_url: str | None = Field(default=None, description="s3://bucket/key")


class DocToken(BaseModel):
    """A token for one document's stored copy and JSON, as the coordinator gives it a replica."""

    token: str = Field(description="EXP.SIG: send it as ?token= to /worker/documents/")
    expires: int = Field(description="unix seconds after which it no longer opens them")


def bytes_path(doc_id: str, suffix: str = ".pdf") -> str:
    """The path of the coordinator's route for a stored copy (or, `.json`, its structured JSON)."""
    return f"{WORKER_PATH}{doc_id}{suffix}"


def redact_url(url: str) -> str:
    """`url` without its query (a token stays out of logs and errors)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _load_key(path: Path) -> bytes:
    """The key in `path`, made (32 random bytes, mode 0600) when there is none."""
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(32))
    key = path.read_bytes()
    if len(key) < 32:
        raise OSError(f"{path} holds {len(key)} bytes, not a key: remove it to make a new one")
    return key


class DocTokens:
    """Signs and checks the tokens that open one stored copy each for a while."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> DocTokens:
        """The coordinator's tokens, under the key kept in its data directory."""
        data_dir.mkdir(parents=True, exist_ok=True)
        return cls(_load_key(data_dir / TOKEN_FILE))

    def _sig(self, doc_id: str, expires: int) -> str:
        message = _LABEL + f"\n{doc_id}\n{expires}".encode()
        return _b64(hmac.new(self._key, message, hashlib.sha256).digest())

    def sign(self, doc_id: str, ttl_s: float, *, now: float | None = None) -> str:
        """A token opening `doc_id`'s stored copy for `ttl_s` seconds."""
        expires = int((now if now is not None else time.time()) + ttl_s)
        return f"{expires}.{self._sig(doc_id, expires)}"

    def check(self, doc_id: str, token: str | None, *, now: float | None = None) -> None:
        """Nothing when `token` opens `doc_id`; TokenRefusedError saying why otherwise."""
        if not token:
            raise TokenRefusedError("no token: a worker sends the one its unit carries")
        exp_text, _, sig = token.partition(".")
        if not exp_text.isdigit() or len(exp_text) > 12 or not sig:
            raise TokenRefusedError("the token is not EXP.SIG")
        if not hmac.compare_digest(self._sig(doc_id, int(exp_text)).encode(), sig.encode()):
            raise TokenRefusedError("the token's signature does not match this document")
        if int(exp_text) < (now if now is not None else time.time()):
            raise TokenRefusedError(f"the token expired at {int(exp_text)} (unix seconds)")


class ObjectStoreLike(Protocol):
    """What the coordinator needs of an object store (ingest.queue.object_store.ObjectStore)."""

    def upload_once(self, doc_id: str, path: Path) -> None: ...

    def object_url(self, doc_id: str) -> str: ...


class _Uploader:
    """The object store, and each document uploaded to it once by this coordinator."""

    def __init__(self, store: ObjectStoreLike) -> None:
        self.store = store
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def object_url(self, doc_id: str, path: Path) -> str:
        with self._lock:
            if doc_id not in self._done:
                self.store.upload_once(doc_id, path)
                self._done.add(doc_id)
        return self.store.object_url(doc_id)


class DocSources:
    """The coordinator's side: the address of each document it sends a unit of."""

    def __init__(
        self,
        *,
        public_url: str | None,
        tokens: DocTokens | None,
        ttl_s: float,
        store: ObjectStoreLike | None = None,
    ) -> None:
        self.public_url = public_url.rstrip("/") if public_url else None
        self.tokens = tokens
        self.ttl_s = ttl_s
        self._uploader = _Uploader(store) if store is not None else None

    def address(self, doc_id: str, path: Path) -> DocAddress:
        """Where `doc_id` (stored at `path`) can be fetched; the object store gets it first."""
        if not is_doc_id(doc_id):
            raise BadInputError(f"not a stored document: {doc_id!r}")
        url = None
        if self.public_url is not None and self.tokens is not None:
            token = self.tokens.sign(doc_id, self.ttl_s)
            url = f"{self.public_url}{bytes_path(doc_id)}?token={token}"
        object_url = None
        if self._uploader is not None:
            object_url = self._uploader.object_url(doc_id, path)
        return DocAddress(doc_id=doc_id, size=path.stat().st_size, url=url, object_url=object_url)
