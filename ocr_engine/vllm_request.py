"""The chat-completions request for one page image (OCR_FORMATS.md §1.5); no I/O.

Kept apart from the engine so that render workers (processes) import only this to build bodies.
"""

from __future__ import annotations

import json
from typing import Any

from ocr_engine.deepseek import OcrProfile
from ocr_engine.options import VLLMOptions

__all__ = ["WHITELIST_TOKEN_IDS", "build_request", "request_body", "strict_body"]

WHITELIST_TOKEN_IDS = [128821, 128822]  # <td>, </td>: table cells must be allowed to repeat


def request_body(
    profile: OcrProfile,
    options: VLLMOptions,
    image_url: str,
    width_px: int,
    height_px: int,
    *,
    strict: bool = False,
) -> bytes:
    """`build_request` as JSON bytes."""
    request = build_request(profile, options, image_url, width_px, height_px, strict=strict)
    return json.dumps(request).encode()


def build_request(
    profile: OcrProfile,
    options: VLLMOptions,
    image_url: str,
    width_px: int,
    height_px: int,
    *,
    strict: bool = False,
) -> dict[str, Any]:
    """The chat-completions body for one page image (OCR_FORMATS.md §1.5)."""
    max_tokens = options.max_tokens or max(
        256, options.context_tokens - profile.prompt_tokens(width_px, height_px)
    )
    return {
        "model": options.model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": image_url}},
                    {"type": "text", "text": profile.prompt},
                ],
            }
        ],
        "temperature": 0.0,
        "max_tokens": max_tokens,
        "skip_special_tokens": False,
        "vllm_xargs": {
            "ngram_size": options.strict_ngram_size if strict else options.ngram_size,
            "window_size": options.strict_window_size if strict else options.window_size,
            "whitelist_token_ids": WHITELIST_TOKEN_IDS,
        },
    }


def strict_body(body: bytes, options: VLLMOptions) -> bytes:
    """The same request with the stricter n-gram guard, for an output that was cut or looped."""
    request = json.loads(body)
    request["vllm_xargs"].update(
        ngram_size=options.strict_ngram_size, window_size=options.strict_window_size
    )
    return json.dumps(request).encode()
