"""A rerank service on loopback, answering as vLLM (`results[].relevance_score`) or TEI
(`[].score`) does at `POST /rerank`.

It scores the documents of a request by their position, the last sent highest, so a re-ranked
order is the fused one reversed; faults set on the object make it answer as a broken service
would: `fail_next` 500s, `delay_s` before each answer (a timeout), `garbage` an answer that is
not scores. Every request's body is recorded.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from doubles.loopback import ThreadedServer
from doubles.ocr_simulator import _bind_loopback

__all__ = ["RerankStub"]


class RerankStub(ThreadedServer):
    """Context manager: the stub on a free loopback port; `url` is its base URL."""

    name = "rerank stub"

    def __init__(self, style: Literal["vllm", "tei"] = "vllm") -> None:
        self.style = style
        self.fail_next = 0
        self.delay_s = 0.0
        self.garbage = False
        self.requests: list[dict[str, Any]] = []
        self._sock = _bind_loopback()
        app = Starlette(routes=[Route("/rerank", self._rerank, methods=["POST"])])
        self._listen(app, self._sock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

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
