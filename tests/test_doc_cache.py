"""A worker's document cache (bounded by bytes, least recently used first, copies checked against
their sha256), the order in which a worker looks for a document, and the new settings."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from ingest.ledger.records import FailureKind
from ingest.pipeline.failures import classify
from ingest.queue.doc_bytes import DocAddress, NoReaderError
from ingest.queue.doc_fetch import DocCache, DocFetcher
from server.settings import Settings


def _doc(n: int, size: int = 1000) -> tuple[str, bytes]:
    data = bytes([n]) * size
    return hashlib.sha256(data).hexdigest(), data


def test_the_cache_keeps_what_fits_evicting_the_least_recently_used(tmp_path: Path) -> None:
    cache = DocCache(tmp_path / "cache", max_bytes=2500)
    docs = [_doc(n) for n in range(3)]
    for doc_id, data in docs[:2]:
        cache.put(doc_id, len(data), lambda out, d=data: out.write(d))
    old = time.time() - 100
    os.utime(cache.path(docs[0][0]), (old, old))
    os.utime(cache.path(docs[1][0]), (old - 50, old - 50))
    assert cache.get(docs[1][0]) is not None  # used now: the first is the oldest
    doc_id, data = docs[2]
    cache.put(doc_id, len(data), lambda out: out.write(data))
    assert cache.get(docs[0][0]) is None
    assert cache.get(docs[1][0]) is not None and cache.get(doc_id) is not None
    assert cache.stats.evicted == 1 and cache.stats.fetched_bytes == 3000


def test_the_newest_copy_stays_even_when_it_alone_passes_the_bound(tmp_path: Path) -> None:
    cache = DocCache(tmp_path, max_bytes=10)
    doc_id, data = _doc(7)
    path = cache.put(doc_id, len(data), lambda out: out.write(data))
    assert path.read_bytes() == data


def test_bytes_that_do_not_hash_to_the_document_are_not_kept(tmp_path: Path) -> None:
    cache = DocCache(tmp_path, max_bytes=1 << 20)
    doc_id, data = _doc(1)
    with pytest.raises(Exception, match="do not hash to the document"):
        cache.put(doc_id, len(data), lambda out: out.write(data[:-1] + b"x"))
    assert list(tmp_path.iterdir()) == []


def test_shared_storage_comes_first_and_nothing_reachable_is_a_waiting_document(
    tmp_path: Path,
) -> None:
    doc_id, data = _doc(3)
    shared = tmp_path / "documents"
    shared.mkdir()
    (shared / f"{doc_id}.pdf").write_bytes(data)
    fetcher = DocFetcher(shared, DocCache(tmp_path / "cache", 1 << 20))
    address = DocAddress(doc_id=doc_id, size=len(data))
    assert fetcher.path(address, "a.pdf") == shared / f"{doc_id}.pdf"
    assert fetcher.cache.stats.shared == 1 and fetcher.cache.stats.misses == 0
    other, _ = _doc(4)
    with pytest.raises(NoReaderError) as caught:
        fetcher.path(DocAddress(doc_id=other, size=1), "b.pdf")
    message = str(caught.value)
    assert f"path {shared / (other + '.pdf')} (not there)" in message
    assert "no URL or object store in the unit" in message
    kind, reason = classify(caught.value)
    assert kind is FailureKind.transient and reason == message  # no engine error's name


def test_the_new_settings_refuse_what_is_not_an_address() -> None:
    with pytest.raises(ValidationError, match="s3://bucket/prefix"):
        Settings(object_store_url="http://minio:9000/bucket")
    with pytest.raises(ValidationError, match="http:// or https://"):
        Settings(public_url="coordinator:8000")
    settings = Settings(object_store_url="s3://docs/folio/", public_url="http://c:8000/")
    assert settings.object_store_url == "s3://docs/folio"
    assert settings.public_url == "http://c:8000"
    assert Settings(object_store_url="", public_url=" ").object_store_url is None


class _DroppingServer:
    """A loopback HTTP server that sends half of `data` and drops the connection, then answers
    the next request's `Range: bytes=N-` with the rest (206); `ranges` records what was asked."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.ranges: list[str | None] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/doc.pdf?token=t"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _request(self, conn: socket.socket) -> str | None:
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(4096)
        for line in head.decode("latin-1").split("\r\n"):
            if line.lower().startswith("range:"):
                return line.split(":", 1)[1].strip()
        return None

    def _serve(self) -> None:
        half = len(self.data) // 2
        for attempt in range(2):
            conn, _ = self.sock.accept()
            with conn:
                asked = self._request(conn)
                self.ranges.append(asked)
                if attempt == 0:
                    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(self.data)}\r\n\r\n"
                    conn.sendall(head.encode() + self.data[:half])
                    continue
                start = int((asked or "bytes=0-").removeprefix("bytes=").rstrip("-"))
                rest = self.data[start:]
                head = (
                    f"HTTP/1.1 206 Partial Content\r\nContent-Length: {len(rest)}\r\n"
                    f"Content-Range: bytes {start}-{len(self.data) - 1}/{len(self.data)}\r\n"
                    "Connection: close\r\n\r\n"
                )
                conn.sendall(head.encode() + rest)


def test_a_dropped_transfer_resumes_where_it_stopped(tmp_path: Path) -> None:
    data = os.urandom(200_000)
    doc_id = hashlib.sha256(data).hexdigest()
    server = _DroppingServer(data)
    fetcher = DocFetcher(None, DocCache(tmp_path, 1 << 20))
    try:
        path = fetcher.path(DocAddress(doc_id=doc_id, size=len(data), url=server.url), "d.pdf")
    finally:
        fetcher.close()
        server.sock.close()
    assert path.read_bytes() == data
    assert server.ranges[0] is None
    assert server.ranges[1] is not None and server.ranges[1].startswith("bytes=")
    assert 0 < int(server.ranges[1].removeprefix("bytes=").rstrip("-")) < len(data)
    assert fetcher.cache.stats.fetched_bytes == len(data)
