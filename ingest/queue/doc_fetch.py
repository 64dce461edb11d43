"""A `folio worker`'s side of document bytes: shared storage when mounted, else a cache by sha256
(bounded by bytes) filled from the unit's object store address or the coordinator's API.

The order: `DATA_DIR/documents/{sha256}.pdf` (shared storage, read only), the cache, the object
store (`s3://…`, the worker's own AWS variables), the coordinator's URL (range requests resume a
dropped transfer). Every fetched copy is checked against its sha256 before it is kept. When no
place gives the bytes, `NoReaderError` names each place tried and the setting that fixes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from ingest.queue.doc_bytes import DocAddress, NoReaderError, redact_url

__all__ = ["CacheStats", "DocCache", "DocFetcher"]

log = logging.getLogger(__name__)

_BLOCK = 1 << 20
_HTTP_TRIES = 3
_FIX = (
    "mount the coordinator's data directory and pass it as --data-dir (FOLIO_DATA_DIR), "
    "set FOLIO_PUBLIC_URL on the coordinator to an address this worker reaches, or set "
    "FOLIO_OBJECT_STORE_URL on the coordinator and AWS credentials on this worker"
)


class _FetchError(Exception):
    """One place that did not give the bytes; the message says what happened there."""


@dataclass
class CacheStats:
    """What the cache did: hits, misses, bytes fetched into it, copies evicted, shared reads."""

    hits: int = 0
    misses: int = 0
    fetched_bytes: int = 0
    evicted: int = 0
    shared: int = 0

    def line(self) -> str:
        asked = self.hits + self.misses
        rate = f"{self.hits / asked:.0%}" if asked else "-"
        return (
            f"cache: {self.hits} hits, {self.misses} misses ({rate} hit rate), "
            f"{self.fetched_bytes} bytes fetched, {self.evicted} evicted; "
            f"{self.shared} read from shared storage"
        )


class DocCache:
    """Fetched documents as `{sha256}.pdf` under `root`, least recently used evicted first once
    they pass `max_bytes` (the newest is kept even when it alone passes it)."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def path(self, doc_id: str) -> Path:
        return self.root / f"{doc_id}.pdf"

    def get(self, doc_id: str) -> Path | None:
        """The cached copy (marked as used now), or None."""
        path = self.path(doc_id)
        try:
            os.utime(path)
        except FileNotFoundError:
            return None
        return path

    def put(self, doc_id: str, size: int, fill: Any) -> Path:
        """The copy `fill(out)` writes, kept once its bytes hash to `doc_id`; _FetchError not."""
        handle, name = tempfile.mkstemp(dir=self.root, prefix=".fetch-", suffix=".part")
        tmp = Path(name)
        try:
            with os.fdopen(handle, "w+b") as out:
                fill(out)
                out.flush()
                got = out.tell()
                out.seek(0)
                digest = hashlib.sha256()
                while block := out.read(_BLOCK):
                    digest.update(block)
            if digest.hexdigest() != doc_id:
                raise _FetchError(
                    f"got {got} bytes that do not hash to the document ({size} bytes)"
                )
            os.replace(tmp, self.path(doc_id))
        finally:
            tmp.unlink(missing_ok=True)
        self.stats.fetched_bytes += got
        self._evict(keep=doc_id)
        return self.path(doc_id)

    def _evict(self, keep: str) -> None:
        """Least recently used first, past `max_bytes`: stored copies and a replica's JSON."""
        with self._lock:
            files = []
            for path in [*self.root.glob("*.pdf"), *self.root.glob("*.json")]:
                with contextlib.suppress(FileNotFoundError):
                    stat = path.stat()
                    files.append((stat.st_mtime_ns, stat.st_size, path))
            total = sum(size for _, size, _ in files)
            for _, size, path in sorted(files):
                if total <= self.max_bytes:
                    break
                if path.name.split(".")[0] == keep:
                    continue
                path.unlink(missing_ok=True)
                total -= size
                self.stats.evicted += 1


class DocFetcher:
    """Gives a unit's document as a local path: shared storage, the cache, or fetched."""

    def __init__(self, shared: Path | None, cache: DocCache, *, http_timeout_s: float = 60.0):
        self.shared = shared
        self.cache = cache
        self.http_timeout_s = http_timeout_s
        self._http: httpx.Client | None = None
        self._s3: Any = None

    def path(self, address: DocAddress, name: str) -> Path:
        """The local path of the document's bytes; NoReaderError naming every place tried."""
        doc_id = address.doc_id
        tried = []
        if self.shared is not None:
            shared = self.shared / f"{doc_id}.pdf"
            if shared.is_file():
                self.cache.stats.shared += 1
                return shared
            tried.append(f"path {shared} (not there)")
        else:
            tried.append("no shared storage (--data-dir)")
        cached = self.cache.get(doc_id)
        if cached is not None:
            self.cache.stats.hits += 1
            return cached
        self.cache.stats.misses += 1
        places: list[tuple[str, Any]] = []
        if address.object_url is not None:
            places.append((address.object_url, self._from_store))
        if address.url is not None:
            places.append((redact_url(address.url), self._from_http))
        if not places:
            tried.append("no URL or object store in the unit")
        for where, fetch in places:
            try:
                path = self.cache.put(doc_id, address.size, lambda out, f=fetch: f(address, out))
            except _FetchError as exc:
                log.warning("%s of %s: %s", where, name, exc)
                said = str(exc)
                tried.append(said if said.startswith(where) else f"{where} ({said})")
                continue
            log.info("fetched %s (%d bytes) from %s", name, path.stat().st_size, where)
            return path
        raise NoReaderError(f"cannot read {name} ({doc_id[:12]}): tried {'; '.join(tried)}. {_FIX}")

    def _from_store(self, address: DocAddress, out: IO[bytes]) -> None:
        from ingest.queue.object_store import ObjectStoreError, download, new_client

        assert address.object_url is not None
        try:
            if self._s3 is None:
                self._s3 = new_client()
            download(address.object_url, out, self._s3)
        except ObjectStoreError as exc:
            raise _FetchError(str(exc)) from exc
        except Exception as exc:  # boto3 refusing its configuration: no region, a bad URL
            raise _FetchError(f"{type(exc).__name__}: {exc}") from exc

    def _from_http(self, address: DocAddress, out: IO[bytes]) -> None:
        """GET the stored copy; a dropped transfer resumes where it stopped (Range)."""
        assert address.url is not None
        if self._http is None:
            self._http = httpx.Client(timeout=self.http_timeout_s)
        for attempt in range(1, _HTTP_TRIES + 1):
            start = out.tell()
            headers = {"Range": f"bytes={start}-"} if start else {}
            try:
                with self._http.stream("GET", address.url, headers=headers) as response:
                    if response.status_code not in (200, 206):
                        response.read()
                        raise _FetchError(_refusal(response))
                    if response.status_code == 200 and start:
                        out.seek(0)
                        out.truncate()
                    for block in response.iter_bytes():  # as received: a drop loses nothing
                        out.write(block)
                return
            except httpx.HTTPError as exc:
                if attempt == _HTTP_TRIES or out.tell() == start:
                    raise _FetchError(f"{type(exc).__name__}: {exc}") from exc
                log.info("resuming %s at byte %d", redact_url(address.url), out.tell())

    def close(self) -> None:
        if self._http is not None:
            self._http.close()


def _refusal(response: httpx.Response) -> str:
    """What the coordinator said when it did not give the bytes."""
    try:
        message = str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = response.text[:200]
    if response.status_code == 401:
        return f"HTTP 401, the coordinator refused the token: {message}"
    return f"HTTP {response.status_code}: {message}"
