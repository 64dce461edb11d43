"""The CLI's way into a data directory that a running `folio serve` holds: its HTTP API, at the
address the server wrote into the directory's lock file."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from ingest.ledger import DocStatus, DocumentRecord, Tombstone
from ingest.pipeline import IngestEvent
from ocr_engine.errors import FolioError
from retrieval.schema import QueryRequest, QueryResponse

if (
    TYPE_CHECKING
):  # ingest.pipeline.options imports PyMuPDF: a command through the API does not need it
    from ingest.pipeline import IngestSummary

__all__ = ["RemoteError", "RemoteFolio"]

_CONNECT_WAIT_S = 20.0  # a server that has just started may still be recovering its index


class RemoteError(FolioError):
    """The running server could not be reached or refused the request."""


class RemoteFolio:
    """The few calls the CLI makes, over a running server's API."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout_s: float = 60.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s)

    def close(self) -> None:
        self._client.close()

    def documents(self, status: DocStatus | None = None) -> list[DocumentRecord]:
        params = {"status": status.value} if status is not None else {}
        rows = self._call("GET", "/documents", params=params).json()
        return [DocumentRecord.model_validate(row) for row in rows]

    def removed(self) -> list[Tombstone]:
        rows = self._call("GET", "/documents/removed").json()
        return [Tombstone.model_validate(row) for row in rows]

    def query(self, request: QueryRequest) -> QueryResponse:
        body = request.model_dump(exclude_none=True)
        return QueryResponse.model_validate(self._call("POST", "/query", json=body).json())

    def ingest(
        self, paths: list[Path], *, force: bool, on_event: Callable[[IngestEvent], None]
    ) -> IngestSummary:
        """Sync these paths in the server (paths as this machine names them), with its ingest
        events fed to `on_event` while it runs."""
        body = {"paths": [str(p.resolve()) for p in paths], "force": force}
        with self._events(on_event):
            response = self._call("POST", "/ingest", json=body, timeout=None)
        return _summary(response)

    def retry(
        self, *, include_permanent: bool, on_event: Callable[[IngestEvent], None]
    ) -> IngestSummary:
        """Process the server's failed documents again now (`POST /retry`)."""
        with self._events(on_event):
            response = self._call("POST", "/retry", json={"all": include_permanent}, timeout=None)
        return _summary(response)

    @contextmanager
    def _events(self, on_event: Callable[[IngestEvent], None]) -> Iterator[None]:
        """Follow `GET /events` in a thread for as long as the block runs."""
        done = threading.Event()

        def follow() -> None:
            try:
                with self._client.stream("GET", "/events", timeout=None) as response:
                    for line in response.iter_lines():
                        if done.is_set():
                            return
                        if line.startswith("data: "):
                            on_event(IngestEvent.model_validate(json.loads(line[6:])))
            except (httpx.HTTPError, ValueError):
                return  # progress is a courtesy: the request's answer is what counts

        thread = threading.Thread(target=follow, name="folio-events", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()

    def _call(
        self,
        method: str,
        path: str,
        *,
        timeout: float | httpx._client.UseClientDefault | None = httpx.USE_CLIENT_DEFAULT,
        **kwargs: Any,
    ) -> httpx.Response:
        deadline = time.monotonic() + _CONNECT_WAIT_S
        while True:
            try:
                response = self._client.request(method, path, timeout=timeout, **kwargs)
                break
            except httpx.ConnectError as exc:
                if time.monotonic() > deadline:
                    raise RemoteError(f"the server at {self.url} does not answer: {exc}") from exc
                time.sleep(0.5)
            except httpx.HTTPError as exc:
                raise RemoteError(f"{method} {self.url}{path} failed: {exc}") from exc
        if response.status_code == 401:
            hint = "set FOLIO_API_KEY to the server's API key"
            raise RemoteError(f"{method} {path}: 401 {_message(response)} ({hint})")
        if response.is_error:
            raise RemoteError(f"{method} {path}: {response.status_code} {_message(response)}")
        return response


def _message(response: httpx.Response) -> str:
    """The message of folio's error shape, or the body's start."""
    try:
        error = response.json()["error"]
        return str(error["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:300]


def _summary(response: httpx.Response) -> IngestSummary:
    """The `IngestSummary` a sync through the server answered (imported here, when one ran)."""
    from ingest.pipeline import IngestSummary

    return IngestSummary.model_validate(response.json())
