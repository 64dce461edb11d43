"""The chat-completions request for one page image (OCR_FORMATS.md §1.5, §2, §3); no I/O.

Kept apart from the engine so that render workers (processes) import only this to build bodies.
The served model's family (`ocr_engine.options.ocr_family`) picks the profile: DeepSeek-OCR's
grounding prompt, dots.ocr's layout prompt, or MinerU2.5's layout request (the page stretched to
1036 x 1036; its regions' requests are made by the engine with `ocr_engine.engines.mineru`).
"""

from __future__ import annotations

import json
from typing import Any

from ocr_engine.engines.deepseek import OcrProfile, profile_for
from ocr_engine.engines.dots_ocr import DOTS_OCR, STRICT_REPETITION_PENALTY, dots_request
from ocr_engine.engines.mineru import MINERU25, STRICT_NO_REPEAT_NGRAM_SIZE, layout_request
from ocr_engine.options import OcrFamily, VLLMOptions, ocr_family

__all__ = [
    "WHITELIST_TOKEN_IDS",
    "build_request",
    "model_profile",
    "request_body",
    "strict_body",
]

WHITELIST_TOKEN_IDS = [128821, 128822]  # <td>, </td>: table cells must be allowed to repeat


def model_profile(model: str) -> OcrProfile:
    """The profile of a served model name: by its family, DeepSeek-OCR's variants by name."""
    family = ocr_family(model)
    if family is OcrFamily.dots:
        return DOTS_OCR
    if family is OcrFamily.mineru:
        return MINERU25
    return profile_for(model)


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
    # by name: a profile sent to a render process arrives as a copy
    if profile.name == DOTS_OCR.name:
        return dots_request(options, image_url, width_px, height_px, strict=strict)
    if profile.name == MINERU25.name:
        return layout_request(options, image_url, width_px, height_px, strict=strict)
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
    """The same request with the stricter guard, for an output that was cut or looped:
    DeepSeek's n-gram window, MinerU's no-repeat n-gram size, else a repetition penalty."""
    request = json.loads(body)
    xargs = request.get("vllm_xargs")
    if isinstance(xargs, dict) and "ngram_size" in xargs:
        xargs.update(ngram_size=options.strict_ngram_size, window_size=options.strict_window_size)
    elif isinstance(xargs, dict) and "no_repeat_ngram_size" in xargs:
        xargs["no_repeat_ngram_size"] = STRICT_NO_REPEAT_NGRAM_SIZE
    else:
        request["repetition_penalty"] = STRICT_REPETITION_PENALTY
    return json.dumps(request).encode()
