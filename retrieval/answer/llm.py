"""An OpenAI-compatible chat client for generated answers: the prompt and the token stream.

`stream_answer` posts `/chat/completions` with `stream: true` and yields the content deltas as they
arrive. Every failure is an `LlmError` whose `code` says what happened:

- `llm_unreachable`: no connection (refused, DNS, reset before an answer);
- `llm_timeout`: no answer, or no complete answer, within `LlmOptions.timeout_s`;
- `llm_http_error`: the endpoint answered with an error status (4xx or 5xx);
- `llm_bad_output`: the answer is not an OpenAI stream (not JSON, no choices, nothing said).

The caller falls back to the extractive answer on any of them; none is retried here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from ocr_engine.errors import FolioError

__all__ = [
    "DEFAULT_LLM_MODEL",
    "LlmError",
    "LlmOptions",
    "build_messages",
    "stream_answer",
]

T = TypeVar("T")

DEFAULT_LLM_MODEL = "Qwen/Qwen2.5-7B-Instruct"

SYSTEM_PROMPT = (
    "You answer questions about documents using only the numbered sources given. "
    "After every sentence that states something from a source, put the source's number in "
    "square brackets, for example [1] or [2][3]. Copy numbers, dates and names exactly as the "
    "source writes them. Do not use outside knowledge. If the sources do not answer the "
    "question, say so in one sentence without a marker. Answer in at most five sentences."
)


class LlmOptions(BaseModel):
    """Where the chat endpoint is and how it is called."""

    model_config = ConfigDict(frozen=True)

    url: str = Field(description="OpenAI-compatible base URL ending in /v1")
    model: str = DEFAULT_LLM_MODEL
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=60.0, gt=0, description="for the whole answer")
    max_tokens: int = Field(default=512, ge=16)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_source_chars: int = Field(default=2000, ge=100, description="per source, in the prompt")


class LlmError(FolioError):
    """The chat endpoint gave no usable answer; `code` is one of the module docstring's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def build_messages(
    question: str, sources: Sequence[str], *, max_source_chars: int = 2000
) -> list[dict[str, str]]:
    """The chat messages: the instructions, then the numbered sources and the question."""
    numbered = "\n\n".join(
        f"[{n}] {' '.join(text.split())[:max_source_chars]}" for n, text in enumerate(sources, 1)
    )
    user = f"Sources:\n\n{numbered}\n\nQuestion: {question.strip()}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _request(options: LlmOptions, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "model": options.model,
        "messages": messages,
        "stream": True,
        "max_tokens": options.max_tokens,
        "temperature": options.temperature,
    }


def _delta(data: str) -> str:
    """The content of one stream chunk (`data:` payload); raises on anything not a chunk."""
    try:
        payload = json.loads(data)
        choices = payload["choices"]
        if not choices:  # e.g. a usage-only chunk
            return ""
        delta = choices[0].get("delta") or {}
        content = delta.get("content") or ""
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise LlmError("llm_bad_output", f"not an OpenAI stream chunk: {data[:200]!r}") from exc
    if not isinstance(content, str):
        raise LlmError("llm_bad_output", f"delta content is not text: {data[:200]!r}")
    return content


async def _check(response: httpx.Response) -> None:
    """Raise unless `response` is the start of an event stream."""
    if response.status_code >= 400:
        body = (await response.aread()).decode("utf-8", "replace")[:300]
        raise LlmError("llm_http_error", f"HTTP {response.status_code}: {body}")
    kind = response.headers.get("content-type", "")
    if not kind.startswith("text/event-stream"):
        raise LlmError("llm_bad_output", f"expected an event stream, got {kind or 'no type'!r}")


async def _bounded(awaitable: Awaitable[T], deadline: float) -> T:
    """`awaitable`'s result, or TimeoutError once the loop's clock passes `deadline`."""
    remaining = deadline - asyncio.get_running_loop().time()
    return await asyncio.wait_for(awaitable, max(remaining, 0.0))


async def stream_answer(
    options: LlmOptions,
    question: str,
    sources: Sequence[str],
    *,
    client: httpx.AsyncClient | None = None,
) -> AsyncIterator[str]:
    """The answer's text pieces as the endpoint streams them; `LlmError` on any failure."""
    messages = build_messages(question, sources, max_source_chars=options.max_source_chars)
    headers = {"Accept": "text/event-stream"}
    if options.api_key is not None:
        headers["Authorization"] = f"Bearer {options.api_key.get_secret_value()}"
    owned = client is None
    http = client or httpx.AsyncClient(timeout=httpx.Timeout(options.timeout_s))
    said = False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + options.timeout_s
    try:
        request = http.build_request(
            "POST",
            f"{options.url}/chat/completions",
            json=_request(options, messages),
            headers=headers,
        )
        # the deadline covers the whole answer; each wait is bounded inside this generator, so a
        # timeout never cancels the consumer between two pieces
        response = await _bounded(http.send(request, stream=True), deadline)
        lines = response.aiter_lines()
        try:
            await _check(response)
            while True:
                try:
                    line = await _bounded(lines.__anext__(), deadline)
                except StopAsyncIteration:
                    break
                if not line.startswith("data:"):
                    continue  # blank separators, comments, `event:` lines
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    break
                piece = _delta(data)
                if piece:
                    said = True
                    yield piece
        finally:
            await response.aclose()
    except TimeoutError:
        message = f"no complete answer within {options.timeout_s:g} s"
        raise LlmError("llm_timeout", message) from None
    except httpx.TimeoutException:
        raise LlmError("llm_timeout", f"no answer within {options.timeout_s:g} s") from None
    except httpx.TransportError as exc:
        raise LlmError("llm_unreachable", f"{options.url}: {exc or type(exc).__name__}") from None
    finally:
        if owned:
            await http.aclose()
    if not said:
        raise LlmError("llm_bad_output", "the endpoint streamed no answer text")
