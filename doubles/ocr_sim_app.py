"""The OCR simulator's ASGI app: vLLM's chat completions for an OCR model, plus `/_sim/` admin.

The configured model's name picks the answers' format (`doubles.ocr_sim_formats`): DeepSeek-OCR
grounding markdown, dots.ocr JSON, or MinerU2.5's layout and region answers.

Admin routes, JSON in and out:
- `POST /_sim/register_pdf` {pdf_path | pdf_b64, text_source_path | text_source_b64, dpi,
  max_pixels, name, recorded: {page: [text, origin]}} -> {keys}
- `POST /_sim/register_image` {image_b64, output_text} -> {key}
- `POST /_sim/fault` {fault, key, times, loop_unit}; `DELETE /_sim/faults`
- `GET /_sim/stats`, `POST /_sim/reset`, `GET /_sim/requests`
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from doubles.grounding_synth import PageImage, prompt_tokens
from doubles.ocr_sim_formats import sim_page_images
from doubles.ocr_sim_requests import (
    BadRequest,
    Fault,
    FaultRule,
    compose,
    elide_images,
    image_and_text,
    max_tokens,
)
from ocr_engine.options import ocr_family

__all__ = ["DEFAULT_MODEL", "SimState", "SimStats", "SimulatorConfig", "create_app"]

DEFAULT_MODEL = "deepseek-ai/DeepSeek-OCR"


class SimulatorConfig(BaseModel):
    model: str = DEFAULT_MODEL
    capacity: int = Field(default=64, ge=1)
    seconds_per_token: float = Field(default=0.0, ge=0)
    prefill_seconds: float = Field(default=0.0, ge=0)
    context_tokens: int = Field(default=8192, ge=1)
    api_key: str | None = None


class SimStats(BaseModel):
    """Counters since start (or `reset_stats`); `status_counts` is keyed by HTTP status."""

    requests: int = 0
    completed: int = 0
    in_flight: int = 0
    max_concurrent: int = 0
    queued: int = 0
    queued_max: int = 0
    hanging: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    status_counts: dict[int, int] = Field(default_factory=dict)
    finish_reasons: dict[str, int] = Field(default_factory=dict)
    faults_fired: dict[str, int] = Field(default_factory=dict)


def _error(status: int, message: str, kind: str) -> JSONResponse:
    """vLLM's error body: {"error": {message, type, param, code}}."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return JSONResponse(body, status_code=status)


class SimState:
    """What the app knows: pages, faults, counters; lives on the server's event loop."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self.pages: dict[str, PageImage] = {}
        self.faults: list[FaultRule] = []
        self.stats = SimStats()
        self.requests: list[dict[str, Any]] = []
        self.admission = asyncio.Semaphore(config.capacity)
        self.closing = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.register_lock = threading.Lock()

    def begin_close(self) -> None:
        """Release hung and sleeping requests so the server can stop (callable from any thread)."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.closing.set)

    def count(self, status: int) -> None:
        counts = self.stats.status_counts
        counts[status] = counts.get(status, 0) + 1

    def take_fault(self, key: str) -> FaultRule | None:
        """The first rule for this key, else the first for any key; spends one of its times."""
        for wanted in (key, None):
            for rule in self.faults:
                if rule.key == wanted:
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times == 0:
                            self.faults.remove(rule)
                    fired = self.stats.faults_fired
                    fired[rule.fault.value] = fired.get(rule.fault.value, 0) + 1
                    return rule
        return None

    async def pause(self, seconds: float) -> None:
        if seconds > 0 and not self.closing.is_set():
            with suppress(TimeoutError):
                await asyncio.wait_for(self.closing.wait(), seconds)


async def _hang(state: SimState, request: Request) -> None:
    state.stats.hanging += 1
    try:
        while not state.closing.is_set() and not await request.is_disconnected():
            await state.pause(0.1)
    finally:
        state.stats.hanging -= 1


async def _generate(
    state: SimState,
    page: PageImage,
    rule: FaultRule | None,
    body: dict[str, Any],
    prompt: int,
    limit: int,
) -> JSONResponse:
    answer = compose(page, rule, body, limit)
    stats = state.stats
    waits = state.admission.locked()
    if waits:
        stats.queued += 1
        stats.queued_max = max(stats.queued_max, stats.queued)
    async with state.admission:
        if waits:
            stats.queued -= 1
        stats.in_flight += 1
        stats.max_concurrent = max(stats.max_concurrent, stats.in_flight)
        try:
            config = state.config
            await state.pause(
                config.prefill_seconds + config.seconds_per_token * answer.completion_tokens
            )
        finally:
            stats.in_flight -= 1
    if state.closing.is_set():
        return _error(503, "the simulator is shutting down", "ServiceUnavailableError")
    stats.completed += 1
    stats.prompt_tokens += prompt
    stats.output_tokens += answer.completion_tokens
    stats.finish_reasons[answer.finish_reason] = (
        stats.finish_reasons.get(answer.finish_reason, 0) + 1
    )
    return JSONResponse(
        {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": state.config.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.content, "tool_calls": []},
                    "logprobs": None,
                    "finish_reason": answer.finish_reason,
                    "stop_reason": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": answer.completion_tokens,
                "total_tokens": prompt + answer.completion_tokens,
            },
        }
    )


async def _chat(state: SimState, request: Request) -> JSONResponse:
    state.stats.requests += 1
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "the request body is not JSON", "BadRequestError")
    if not isinstance(body, dict):
        return _error(400, "the request body must be a JSON object", "BadRequestError")
    try:
        image, text = image_and_text(body)
        malformed = None
    except BadRequest as exc:
        image, text, malformed = None, "", exc
    state.requests.append(elide_images(body, image))
    config = state.config
    if config.api_key and request.headers.get("authorization") != f"Bearer {config.api_key}":
        return JSONResponse({"error": "Unauthorized"}, status_code=401)
    model = body.get("model")
    if model is not None and model != config.model:
        return _error(404, f"The model `{model}` does not exist.", "NotFoundError")
    if body.get("stream"):
        return _error(400, "the simulator does not stream; send stream: false", "BadRequestError")
    if body.get("n", 1) != 1:
        return _error(400, "the simulator answers n = 1 only", "BadRequestError")
    try:
        if malformed is not None or image is None:
            raise malformed or BadRequest(400, "no image")
        key = hashlib.sha256(image).hexdigest()
        page = state.pages.get(key)
        if page is None:
            raise BadRequest(
                400,
                f"simulator: unknown image sha256={key} ({len(image)} bytes); register it first "
                "(register_pdf renders pages with ocr_engine.engines.render.render_page at the "
                "same dpi and max_pixels as the client, or register_image)",
            )
        prompt = prompt_tokens(page.width_px, page.height_px, text)
        limit = max_tokens(body, prompt, config.context_tokens)
    except BadRequest as exc:
        return _error(exc.status, exc.message, exc.kind)
    rule = state.take_fault(key)
    if rule is not None and rule.fault == Fault.server_error:
        return _error(500, "simulated internal server error", "InternalServerError")
    if rule is not None and rule.fault == Fault.hang:
        await _hang(state, request)
        if state.closing.is_set():
            return _error(503, "the simulator is shutting down", "ServiceUnavailableError")
        return _error(499, "the client closed the hung request", "ClientClosedRequest")
    return await _generate(state, page, rule, body, prompt, limit)


def _pdf_bytes(payload: dict[str, Any], name: str) -> bytes | None:
    if payload.get(f"{name}_path"):
        return Path(payload[f"{name}_path"]).read_bytes()
    if payload.get(f"{name}_b64"):
        return base64.b64decode(payload[f"{name}_b64"])
    return None


def create_app(config: SimulatorConfig) -> Starlette:
    """The simulator's ASGI app; `app.state.sim` holds its `SimState`."""
    state = SimState(config)

    async def chat(request: Request) -> JSONResponse:
        response = await _chat(state, request)
        state.count(response.status_code)
        return response

    async def models(_: Request) -> JSONResponse:
        card = {
            "id": config.model,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "vllm",
            "root": config.model,
            "max_model_len": config.context_tokens,
        }
        return JSONResponse({"object": "list", "data": [card]})

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({})

    def _register(pages: list[PageImage]) -> list[str]:
        for page in pages:
            state.pages[page.key] = page
        return [page.key for page in pages]

    async def register_pdf(request: Request) -> JSONResponse:
        payload = await request.json()

        def work() -> tuple[list[PageImage], list[PageImage]]:
            pdf = _pdf_bytes(payload, "pdf")
            if pdf is None:
                raise ValueError("send pdf_path or pdf_b64")
            with state.register_lock:
                pages, extra = sim_page_images(
                    pdf,
                    family=ocr_family(config.model),
                    dpi=int(payload.get("dpi", 144)),
                    max_pixels=int(payload.get("max_pixels", 6_000_000)),
                    text_source=_pdf_bytes(payload, "text_source"),
                    name=payload.get("name") or "<bytes>",
                )
            for number, (text, origin) in (payload.get("recorded") or {}).items():
                pages[int(number) - 1].text, pages[int(number) - 1].origin = text, origin
            return pages, extra

        try:
            pages, extra = await run_in_threadpool(work)
        except Exception as exc:  # reported to the caller, who raises it
            return JSONResponse({"detail": f"{type(exc).__name__}: {exc}"}, status_code=400)
        _register(extra)
        return JSONResponse({"keys": _register(pages)})

    async def register_image(request: Request) -> JSONResponse:
        payload = await request.json()
        image = base64.b64decode(payload["image_b64"])
        from PIL import Image

        try:
            with Image.open(io.BytesIO(image)) as opened:
                width, height = opened.size
        except OSError as exc:
            return JSONResponse({"detail": f"not an image: {exc}"}, status_code=400)
        key = hashlib.sha256(image).hexdigest()
        page = PageImage(
            key=key,
            width_px=width,
            height_px=height,
            text=payload["output_text"],
            origin=payload.get("origin") or "registered image",
        )
        return JSONResponse({"key": _register([page])[0]})

    async def add_fault(request: Request) -> JSONResponse:
        try:
            state.faults.append(FaultRule.model_validate(await request.json()))
        except ValidationError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=400)
        return JSONResponse({"faults": len(state.faults)})

    async def clear_faults(_: Request) -> JSONResponse:
        state.faults.clear()
        return JSONResponse({"faults": 0})

    async def stats(_: Request) -> JSONResponse:
        return JSONResponse(state.stats.model_dump(mode="json"))

    async def reset(_: Request) -> JSONResponse:
        live = state.stats
        state.stats = SimStats(in_flight=live.in_flight, queued=live.queued, hanging=live.hanging)
        state.requests.clear()
        return JSONResponse({})

    async def requests(_: Request) -> JSONResponse:
        return JSONResponse(state.requests)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        state.loop = asyncio.get_running_loop()
        yield

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/_sim/register_pdf", register_pdf, methods=["POST"]),
            Route("/_sim/register_image", register_image, methods=["POST"]),
            Route("/_sim/fault", add_fault, methods=["POST"]),
            Route("/_sim/faults", clear_faults, methods=["DELETE"]),
            Route("/_sim/stats", stats, methods=["GET"]),
            Route("/_sim/reset", reset, methods=["POST"]),
            Route("/_sim/requests", requests, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.sim = state
    return app
