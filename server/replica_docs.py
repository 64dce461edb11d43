"""A query replica's documents: names and cards from the index's card points (`CardMap`), the
stored copy and the structured JSON by address, as a worker's bytes are.

The stored copy comes from the first place that gives it (`ingest.queue.doc_fetch.DocFetcher`):
shared storage (`DATA_DIR/documents`, when the coordinator's data directory is mounted), the cache,
the object store (FOLIO_OBJECT_STORE_URL), or the coordinator's `/worker/documents/{sha256}.pdf`
with a token it gives this replica for the API key (`POST /worker/tokens/{sha256}`). The JSON comes
from shared storage, the cache, or the coordinator's `/worker/documents/{sha256}.json` with the same
token; a document whose JSON the coordinator has not finished is a KeyError, as it is on the
coordinator (cited by its chunk lines alone). Nothing reachable: NoReaderError naming each place.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from pathlib import Path

import httpx

from ingest.ledger import DocumentFiles, UnknownDocumentError, resolve_doc_id
from ingest.queue import (
    DocAddress,
    DocCache,
    DocFetcher,
    DocToken,
    NoReaderError,
    bytes_path,
    parse_object_url,
)
from ocr_engine.inputs import open_stored
from ocr_engine.schema import Page
from retrieval.search import CardMap
from server.shelf import Shelved

__all__ = ["ReplicaDocs", "ReplicaShelf"]

log = logging.getLogger(__name__)

_EARLY_S = 60  # a token is asked for again this long before it expires
_FIX = (
    "set FOLIO_COORDINATOR_URL to the coordinator's URL (and FOLIO_API_KEY to its key), mount "
    "its data directory and pass it as --data-dir, or set FOLIO_OBJECT_STORE_URL"
)


class ReplicaDocs:
    """Stored copies and JSON by address, cached under `cache_root` up to `cache_bytes`."""

    def __init__(
        self,
        *,
        shared: Path | None,
        cache_root: Path,
        cache_bytes: int,
        coordinator_url: str | None,
        api_key: str | None,
        object_store_url: str | None,
        timeout_s: float = 60.0,
    ) -> None:
        self.shared = DocumentFiles(shared) if shared is not None else None
        self.cache = DocCache(cache_root / "documents", cache_bytes)
        self.cached = DocumentFiles(cache_root)  # the same folder: {sha256}.json beside .pdf
        self.fetcher = DocFetcher(self.shared.root if self.shared else None, self.cache)
        self.coordinator_url = coordinator_url
        self.object_store_url = object_store_url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=timeout_s, headers=headers)
        self._tokens: dict[str, DocToken] = {}
        self._lock = threading.Lock()

    def pdf_path(self, doc_id: str, name: str) -> Path:
        """A local path of the stored copy (NoReaderError naming every place tried)."""
        local = self._local(doc_id, ".pdf")
        if local is not None:
            return self.fetcher.path(DocAddress(doc_id=doc_id, size=0), name)
        object_url = None
        if self.object_store_url is not None:
            bucket, prefix = parse_object_url(self.object_store_url)
            object_url = f"s3://{bucket}/{prefix + '/' if prefix else ''}{doc_id}.pdf"
        url = None
        if self.coordinator_url is not None:
            try:
                url = self._url(doc_id, ".pdf")
            except NoReaderError as exc:
                if object_url is None:
                    raise
                log.warning("%s; trying the object store", exc)
        address = DocAddress(doc_id=doc_id, size=0, url=url, object_url=object_url)
        return self.fetcher.path(address, name)

    def page(self, doc_id: str, number: int) -> Page:
        """One page of the document's JSON (KeyError: no such page, or no finished JSON)."""
        if self.shared is not None and (self.shared.root / f"{doc_id}.json").is_file():
            return self.shared.page(doc_id, number)
        if self._local(doc_id, ".json") is None:
            self._fetch_json(doc_id)
        return self.cached.page(doc_id, number)

    def forget(self, doc_ids: list[str]) -> None:
        """Drop the cached JSON of documents the index says changed or were removed (a
        document read again by the coordinator has new JSON under the same id)."""
        for doc_id in doc_ids:
            for suffix in (".json", ".pages.json"):
                (self.cache.root / f"{doc_id}{suffix}").unlink(missing_ok=True)

    def _local(self, doc_id: str, suffix: str) -> Path | None:
        for root in (self.shared.root if self.shared else None, self.cache.root):
            if root is not None and (path := root / f"{doc_id}{suffix}").is_file():
                return path
        return None

    def _fetch_json(self, doc_id: str) -> None:
        where = f"{self.coordinator_url}{bytes_path(doc_id, '.json')}"
        url = self._url(doc_id, ".json")
        try:
            response = self._http.get(url)
        except httpx.HTTPError as exc:
            raise NoReaderError(
                f"cannot read the JSON of {doc_id[:12]}: {where} "
                f"({type(exc).__name__}: {exc}). {_FIX}"
            ) from exc
        if response.status_code == 404:  # not finished yet: as on the coordinator
            raise UnknownDocumentError(doc_id)
        if response.status_code != 200:
            raise NoReaderError(
                f"cannot read the JSON of {doc_id[:12]}: {where} answered "
                f"HTTP {response.status_code}: {response.text[:200]}. {_FIX}"
            )
        handle, name = tempfile.mkstemp(dir=self.cache.root, prefix=".fetch-", suffix=".part")
        with os.fdopen(handle, "wb") as out:
            out.write(response.content)
        os.replace(name, self.cache.root / f"{doc_id}.json")

    def _url(self, doc_id: str, suffix: str) -> str:
        """The coordinator's URL of the document's copy or JSON, with a token it gave."""
        base = self.coordinator_url
        if base is None:
            raise NoReaderError(f"cannot read {doc_id[:12]}: no coordinator set. {_FIX}")
        with self._lock:
            token = self._tokens.get(doc_id)
        if token is None or token.expires - _EARLY_S < time.time():
            token = self._token(base, doc_id)
            with self._lock:
                self._tokens[doc_id] = token
        return f"{base}{bytes_path(doc_id, suffix)}?token={token.token}"

    def _token(self, base: str, doc_id: str) -> DocToken:
        where = f"{base}/worker/tokens/{doc_id[:12]}…"
        try:
            response = self._http.post(f"{base}/worker/tokens/{doc_id}")
        except httpx.HTTPError as exc:
            raise NoReaderError(
                f"cannot get a token for {doc_id[:12]}: {where} "
                f"({type(exc).__name__}: {exc}). {_FIX}"
            ) from exc
        if response.status_code == 404:
            raise UnknownDocumentError(doc_id)
        if response.status_code != 200:
            why = "check FOLIO_API_KEY: " if response.status_code == 401 else ""
            raise NoReaderError(
                f"cannot get a token for {doc_id[:12]}: {where} answered HTTP "
                f"{response.status_code}: {why}{response.text[:200]}"
            )
        return DocToken.model_validate_json(response.content)

    def close(self) -> None:
        self._http.close()
        self.fetcher.close()


class ReplicaShelf:
    """The documents as a replica's page routes read them (`server.shelf.Shelf`)."""

    def __init__(self, cards: CardMap, docs: ReplicaDocs) -> None:
        self.cards = cards
        self.docs = docs

    def ids_starting(self, prefix: str, limit: int = 10) -> list[tuple[str, str]]:
        named = self.cards.named()
        found = sorted(d for d in named if d.startswith(prefix))[:limit]
        return [(d, named[d].source) for d in found]

    def resolve(self, text: str) -> str:
        return resolve_doc_id(self, text)

    def about(self, doc_id: str) -> Shelved:
        named = self.cards.named().get(doc_id)
        if named is None:
            raise UnknownDocumentError(doc_id)
        pages = named.card.contents.pages if named.card is not None else 0
        if pages < 1:  # a card that does not know it: the stored copy does
            with open_stored(self.pdf_path(doc_id)) as pdf:
                pages = pdf.page_count
        return Shelved(named.source, pages)

    def count(self) -> int:
        return len(self.cards.named())

    def pdf_path(self, doc_id: str) -> Path:
        named = self.cards.named().get(doc_id)
        return self.docs.pdf_path(doc_id, named.source if named is not None else doc_id[:12])

    def page(self, doc_id: str, number: int) -> Page:
        return self.docs.page(doc_id, number)

    def page_size(self, doc_id: str, number: int) -> tuple[float, float] | None:
        try:
            page = self.page(doc_id, number)
        except KeyError:
            return None
        return (page.width, page.height)
