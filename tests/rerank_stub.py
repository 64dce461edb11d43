"""A rerank service on loopback, answering as vLLM (`results[].relevance_score`) or TEI
(`[].score`) does at `POST /rerank`.

It scores the documents of a request by their position, the last sent highest, so a re-ranked
order is the fused one reversed; faults set on the object make it answer as a broken service
would: `fail_next` 500s, `delay_s` before each answer (a timeout), `garbage` an answer that is
not scores. Every request's body is recorded.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from doubles.ocr_simulator import _bind_loopback

__all__ = ["RerankStub"]


class RerankStub:
    """Context manager: the stub on a free loopback port; `url` is its base URL."""

    def __init__(self, style: Literal["vllm", "tei"] = "vllm") -> None:
        self.style = style
        self.fail_next = 0
        self.delay_s = 0.0
        self.garbage = False
        self.requests: list[dict[str, Any]] = []
        self._sock = _bind_loopback()
        self.port = int(self._sock.getsockname()[1])
        app = Starlette(routes=[Route("/rerank", self._rerank, methods=["POST"])])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RerankStub:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("rerank stub did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

    async def _rerank(self, request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        self.requests.append(body)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_next > 0:
            self.fail_next -= 1
            return JSONResponse({"error": "simulated overload"}, status_code=500)
        if self.garbage:
            return JSONResponse({"results": [{"index": 0}]})
        texts = body["documents"] if self.style == "vllm" else body["texts"]
        scores = [(i, float(i) / len(texts)) for i in range(len(texts))]
        scores.sort(key=lambda pair: -pair[1])  # services answer best first
        if self.style == "tei":
            return JSONResponse([{"index": i, "score": s} for i, s in scores])
        results = [
            {"index": i, "document": {"text": texts[i]}, "relevance_score": s} for i, s in scores
        ]
        return JSONResponse({"id": "rerank-1", "model": body.get("model"), "results": results})
