"""An OpenAI-compatible `/v1/embeddings` server on loopback, for the embeddings-service path.

It serves one model name with either the shipped MiniLM (`--backend minilm`, the real model
through sentence-transformers) or `doubles.fakes.HashEmbedder` (`--backend hash`, instant). Faults
set on the object (in a thread) make it answer as a broken endpoint would: `fail_next` 500s,
`delay_s` before each answer (a timeout), `dim_override` vectors of another size. Every request's
number of inputs is recorded. `python -m doubles.embed_server --port 0` runs it as a process and
prints `PORT <n>` first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from doubles.fakes import HashEmbedder
from doubles.loopback import ThreadedServer
from doubles.ocr_simulator import _bind_loopback
from retrieval.index.embedder import Embedder, SentenceTransformerEmbedder

__all__ = ["EmbedServer", "make_backend"]

PORT_LINE = "PORT "


def make_backend(name: str, dim: int = 64) -> Embedder:
    """The model behind the server: `minilm` (the shipped one) or `hash`."""
    if name == "minilm":
        return SentenceTransformerEmbedder(batch_size=16)
    return HashEmbedder(dim)


class EmbedServer(ThreadedServer):
    """Context manager: the server on a free loopback port; `url` is its OpenAI base URL."""

    name = "embeddings server"

    def __init__(self, backend: Embedder, *, model: str = "test/embed", port: int = 0) -> None:
        self.backend = backend
        self.model = model
        self.fail_next = 0
        self.delay_s = 0.0
        self.dim_override: int | None = None
        self.batches: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._sock = _bind_loopback(port)
        app = Starlette(
            routes=[
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/health", lambda _: Response("ok")),
            ]
        )
        self._listen(app, self._sock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _embeddings(self, request: Request) -> Response:
        body: dict[str, Any] = await request.json()
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        with self._lock:
            self.batches.append(len(texts))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            failing = self.fail_next > 0
            self.fail_next -= failing
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if failing:
                return JSONResponse({"error": "simulated overload"}, status_code=500)
            if body.get("model") != self.model:
                error = {"message": f"model {body.get('model')!r} does not exist"}
                return JSONResponse({"error": error}, status_code=404)
            vectors = await asyncio.to_thread(self.backend.embed_documents, texts)
            if self.dim_override is not None:
                vectors = np.resize(vectors, (len(texts), self.dim_override))
            data = [
                {"object": "embedding", "index": i, "embedding": v.tolist()}
                for i, v in enumerate(vectors)
            ]
            usage = {"prompt_tokens": 0, "total_tokens": 0}
            return JSONResponse(
                {"object": "list", "data": data, "model": self.model, "usage": usage}
            )
        finally:
            with self._lock:
                self.in_flight -= 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m doubles.embed_server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--backend", choices=["minilm", "hash"], default="minilm")
    parser.add_argument("--dim", type=int, default=64, help="of the hash backend")
    parser.add_argument("--model", default="test/embed")
    args = parser.parse_args(argv)
    server = EmbedServer(make_backend(args.backend, args.dim), model=args.model, port=args.port)
    print(f"{PORT_LINE}{server.port}", flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    server.serve()


if __name__ == "__main__":
    main()
