"""The request side of the OCR simulator: body checks, faults and the text a request gets.

Pure functions over the JSON body, so they are tested without a server; `ocr_sim_app` wires them.
"""

from __future__ import annotations

import binascii
import copy
import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from doubles.grounding_synth import (
    EOS,
    GARBAGE_TEXT,
    PageImage,
    cached_tokens,
    strip_special_tokens,
    tokenize,
)

__all__ = [
    "STRICT_NGRAM_SIZE",
    "Answer",
    "BadRequest",
    "Fault",
    "FaultRule",
    "compose",
    "elide_images",
    "image_and_text",
    "max_tokens",
    "strict_guard",
]

STRICT_NGRAM_SIZE = 20


class Fault(StrEnum):
    """What goes wrong with a request; faults fire after the request passed every check."""

    server_error = "server_error"  # HTTP 500
    hang = "hang"  # accepted, never answered until the client goes or the server stops
    length = "length"  # output cut mid-block, finish_reason "length"
    loop = "loop"  # repeats a unit to max_tokens unless vllm_xargs.ngram_size <= 20
    loop_always = "loop_always"  # repeats whatever the guard
    stripped = "stripped"  # special tokens removed whatever skip_special_tokens says
    garbage = "garbage"  # plausible prose without grounding tags, finish "stop"


class FaultRule(BaseModel):
    """A queued fault: for `key` (None: any page), `times` more requests (None: every one)."""

    fault: Fault
    key: str | None = None
    times: int | None = Field(default=1, ge=1)
    loop_unit: str = Field(default=". ", min_length=1)


@dataclass
class Answer:
    """The message content, its finish reason, and the tokens generated (EOS included)."""

    content: str
    finish_reason: str
    completion_tokens: int


class BadRequest(Exception):
    """A request refused with this status and message, shaped like vLLM's errors."""

    def __init__(self, status: int, message: str, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


def elide_images(body: dict[str, Any], image: bytes | None = None) -> dict[str, Any]:
    """A copy of the body with each data URL replaced by `data:<mime>;base64,<elided ...>`;
    `image` is the one image already decoded, to spare decoding it again."""
    out = copy.deepcopy(body)
    for message in out.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            ref = part.get("image_url") if isinstance(part, dict) else None
            url = ref.get("url") if isinstance(ref, dict) else None
            if isinstance(ref, dict) and isinstance(url, str) and url.startswith("data:"):
                head, data = url.split(",", 1)
                try:
                    raw = image if image is not None else binascii.a2b_base64(data)
                    note = f"<elided sha256={hashlib.sha256(raw).hexdigest()} bytes={len(raw)}>"
                except (binascii.Error, ValueError):
                    note = "<elided: not base64>"
                ref["url"] = f"{head},{note}"
    return out


def image_and_text(body: dict[str, Any]) -> tuple[bytes, str]:
    """The one image's bytes and the prompt text; 400 when the messages are not one image + text."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest(400, "messages must be a non-empty list")
    urls: list[str] = []
    texts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "image_url":
                image = part.get("image_url")
                url = image.get("url") if isinstance(image, dict) else image
                urls.append(url if isinstance(url, str) else "")
    if len(urls) != 1:
        raise BadRequest(400, f"expected exactly one image_url part, got {len(urls)}")
    if not texts:
        raise BadRequest(400, "expected a text part with the prompt beside the image")
    head, _, data = urls[0].partition(",")
    if head not in ("data:image/png;base64", "data:image/jpeg;base64", "data:image/jpg;base64"):
        raise BadRequest(
            400, "the simulator accepts only data:image/png or data:image/jpeg base64 URLs"
        )
    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(400, f"image_url is not valid base64: {exc}") from exc
    return raw, "\n".join(texts)


def max_tokens(body: dict[str, Any], prompt: int, context: int) -> int:
    requested = body.get("max_completion_tokens", body.get("max_tokens"))
    if requested is None:
        if prompt >= context:
            raise BadRequest(
                400,
                f"This model's maximum context length is {context} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the messages.",
            )
        return context - prompt
    if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
        raise BadRequest(400, f"max_tokens must be a positive integer, got {requested!r}")
    if prompt + requested > context:
        raise BadRequest(
            400,
            f"This model's maximum context length is {context} tokens. However, you requested "
            f"{prompt + requested} tokens ({prompt} in the messages, {requested} in the "
            "completion). Please reduce the length of the messages or completion.",
        )
    return requested


def strict_guard(body: dict[str, Any]) -> bool:
    """Whether the request's NGram processor is the strict one that breaks loops (ngram <= 20)."""
    xargs = body.get("vllm_xargs")
    size = xargs.get("ngram_size") if isinstance(xargs, dict) else None
    try:
        return size is not None and int(size) <= STRICT_NGRAM_SIZE
    except (TypeError, ValueError):
        return False


def compose(page: PageImage, rule: FaultRule | None, body: dict[str, Any], limit: int) -> Answer:
    """The generated text for this page under the fault, cut at `limit` tokens (EOS counts)."""
    fault = rule.fault if rule else None
    tokens = list(cached_tokens(GARBAGE_TEXT if fault == Fault.garbage else page.text))
    looping = fault == Fault.loop_always or (fault == Fault.loop and not strict_guard(body))
    if looping and rule is not None:
        tokens = tokens[: len(tokens) // 3]
        unit = tokenize(rule.loop_unit)
        while len(tokens) < limit:
            tokens.extend(unit)
        tokens, finish = tokens[:limit], "length"
    elif fault == Fault.length:
        tokens, finish = tokens[: max(1, min(limit, len(tokens) // 2))], "length"
    elif len(tokens) + 1 > limit:
        tokens, finish = tokens[:limit], "length"
    else:
        finish = "stop"
    content = "".join(tokens)
    skip = body.get("skip_special_tokens", True) is not False
    if finish == "stop" and body.get("include_stop_str_in_output") is True and not skip:
        content += EOS
    if skip or fault == Fault.stripped:
        content = strip_special_tokens(content)
    return Answer(content, finish, len(tokens) + (finish == "stop"))
