"""An OpenAI-compatible chat-completions stub on loopback, for generated answers.

`POST /v1/chat/completions` reads the numbered sources and the question from the prompt that
`retrieval.answer.llm.build_messages` writes and answers by the current `Behaviour`, streamed
(`stream: true`: chunks, then `data: [DONE]`) or as one `chat.completion`:

- `faithful`: sentences copied from the sources (the first lightly paraphrased), right markers;
- `miscite`, `fabricate`, `out_of_range`, `swap_number`: a faithful sentence, then one of that
  kind (`doubles.llm_stub_answers`);
- `mixed`: 3-5 sentences of kinds drawn by a seeded generator, a quarter to a half faulty;
- `error_500`: HTTP 500; `hang`: no answer until the stub closes; `garbage`: an event stream
  whose data lines are not JSON; `break_midway`: a faithful answer that turns to garbage halfway.

Every answer is recorded with the kind of each sentence (`answers`), and every request body
(`requests`). Runs uvicorn in a thread, as `doubles.ocr_simulator` does.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from doubles.llm_stub_answers import Kind, StubAnswer, compose, parse_prompt
from doubles.ocr_simulator import _bind_loopback

__all__ = ["Behaviour", "LlmStub"]

STUB_MODEL = "stub/instruct"


class Behaviour(StrEnum):
    faithful = "faithful"
    miscite = "miscite"
    fabricate = "fabricate"
    out_of_range = "out_of_range"
    swap_number = "swap_number"
    mixed = "mixed"
    error_500 = "error_500"
    hang = "hang"
    garbage = "garbage"
    break_midway = "break_midway"


_FAULTS = (Kind.miscite, Kind.fabricate, Kind.out_of_range, Kind.swap_number)


def _kinds(behaviour: Behaviour, rng: random.Random) -> list[Kind]:
    if behaviour in (Behaviour.faithful, Behaviour.break_midway):
        return [Kind.paraphrase, Kind.faithful, Kind.faithful]
    if behaviour is Behaviour.mixed:
        kinds = [rng.choice([Kind.faithful, Kind.paraphrase]) for _ in range(rng.randint(3, 5))]
        for i in rng.sample(range(len(kinds)), rng.randint(1, len(kinds) // 2)):
            kinds[i] = rng.choice(_FAULTS)
        return kinds
    return [Kind.faithful, Kind(behaviour.value)]


def _pieces(text: str) -> list[str]:
    """The answer cut as a tokenizer might: words with their leading space."""
    words = text.split(" ")
    return [words[0]] + [" " + w for w in words[1:]]


class LlmStub:
    """Context manager: the stub on a free loopback port, `url` its OpenAI base URL."""

    def __init__(
        self, behaviour: Behaviour = Behaviour.faithful, *, api_key: str | None = None
    ) -> None:
        self.behaviour = behaviour
        self.api_key = api_key
        self.seed = 0
        self.requests: list[dict[str, Any]] = []
        self.answers: list[StubAnswer] = []
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LlmStub:
        sock = _bind_loopback()
        self.port = sock.getsockname()[1]
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/health", lambda _: Response("ok")),
            ]
        )
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the LLM stub did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(15)

    def ask(self, question: str, sources: list[str]) -> httpx.Response:
        """A non-streaming request as a client other than folio's would send it."""
        from retrieval.answer.llm import build_messages

        body = {"model": STUB_MODEL, "messages": build_messages(question, sources)}
        return httpx.post(f"{self.url}/chat/completions", json=body, timeout=10)

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            behaviour, seed = self.behaviour, self.seed + len(self.requests)
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return JSONResponse({"error": {"message": "bad api key"}}, status_code=401)
        if behaviour is Behaviour.error_500:
            return JSONResponse({"error": {"message": "stub: internal error"}}, status_code=500)
        if behaviour is Behaviour.hang:
            while not self._closing.is_set():
                await asyncio.sleep(0.05)
            return Response(status_code=503)
        if behaviour is Behaviour.garbage:
            return StreamingResponse(
                iter(["data: <html>502 Bad Gateway</html>\n\n"]), media_type="text/event-stream"
            )
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        sources, question = parse_prompt(user)
        answer = compose(sources, question, _kinds(behaviour, random.Random(seed)), seed)
        with self._lock:
            self.answers.append(answer)
        if not body.get("stream"):
            return JSONResponse(_completion(body, answer.text))
        broken = behaviour is Behaviour.break_midway
        stream = _stream(body, answer.text, broken=broken)
        return StreamingResponse(stream, media_type="text/event-stream")


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", STUB_MODEL),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }


async def _stream(body: dict[str, Any], text: str, *, broken: bool = False) -> AsyncIterator[str]:
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", STUB_MODEL),
    }

    def chunk(delta: dict[str, str], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    pieces = _pieces(text)
    for i, piece in enumerate(pieces):
        if broken and i == len(pieces) // 2:
            yield "data: {'truncated\n\n"
            return
        yield chunk({"content": piece})
        await asyncio.sleep(0)
    yield chunk({}, "stop")
    yield "data: [DONE]\n\n"
