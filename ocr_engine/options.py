"""Typed options for reading pages: which pages go to OCR and how the OCR engines are reached."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field, field_validator, model_validator

__all__ = [
    "CpuOcrOptions",
    "ExtractOptions",
    "OcrFamily",
    "OcrMode",
    "VLLMOptions",
    "default_context",
    "ocr_family",
]

DEFAULT_OCR_MODEL = "deepseek-ai/DeepSeek-OCR"


class OcrMode(StrEnum):
    """`auto` sends pages without a trustworthy text layer to OCR; `always`/`never` force it."""

    auto = "auto"
    always = "always"
    never = "never"


class OcrFamily(StrEnum):
    """The output grammar and request protocol a served OCR model follows."""

    deepseek = "deepseek"  # DeepSeek-OCR / -2: grounding markdown, one request a page
    dots = "dots"  # dots.ocr: a JSON layout with text, one request a page
    mineru = "mineru"  # MinerU2.5: a layout request, then one request a region


# the context (vLLM's --max-model-len) each family is served with in docker-compose.yml
_FAMILY_CONTEXT = {OcrFamily.deepseek: 8192, OcrFamily.dots: 32768, OcrFamily.mineru: 16384}


def ocr_family(model: str) -> OcrFamily:
    """The family of a served model name (`FOLIO_OCR_MODEL`): dots.ocr and MinerU by name,
    DeepSeek-OCR otherwise (vLLM may serve a model under any ``--served-model-name``)."""
    name = model.lower().replace("_", "-").replace(".", "-")
    if "dots-ocr" in name or "dotsocr" in name:
        return OcrFamily.dots
    if "mineru" in name:
        return OcrFamily.mineru
    return OcrFamily.deepseek


def default_context(model: str) -> int:
    """The context (tokens) a model of this name is served with in docker-compose.yml."""
    return _FAMILY_CONTEXT[ocr_family(model)]


class VLLMOptions(BaseModel):
    """How to reach a vLLM (OpenAI-compatible) endpoint serving a document-OCR model."""

    urls: list[str] = Field(min_length=1, description="base URLs ending in /v1, used in turn")
    model: str = DEFAULT_OCR_MODEL
    api_key: str | None = None
    dpi: int = Field(default=144, ge=36, le=600)
    max_pixels: int = Field(default=6_000_000, ge=100_000, description="cap on W*H of a render")
    max_in_flight: int = Field(default=32, ge=1, le=1024)
    render_workers: int = Field(default=2, ge=1, le=64)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    read_timeout_s: float = Field(default=600.0, gt=0)
    retries: int = Field(default=4, ge=0, le=20, description="for connection errors, 5xx, timeouts")
    backoff_s: float = Field(default=1.0, ge=0)
    context_tokens: int = Field(default=8192, ge=1024, description="the model's max_model_len")
    max_tokens: int | None = Field(default=None, ge=256, description="default: fits the context")
    ngram_size: int = Field(default=30, ge=2)
    window_size: int = Field(default=90, ge=2)
    strict_ngram_size: int = Field(default=20, ge=2)
    strict_window_size: int = Field(default=50, ge=2)

    @model_validator(mode="after")
    def _family_context(self) -> VLLMOptions:
        """A context not given is the one the model's family is served with."""
        if "context_tokens" not in self.model_fields_set:
            self.context_tokens = default_context(self.model)
        return self

    @field_validator("urls")
    @classmethod
    def _strip(cls, urls: list[str]) -> list[str]:
        cleaned = [u.strip().rstrip("/") for u in urls if u.strip()]
        if not cleaned:
            raise ValueError("at least one endpoint URL is required")
        for url in cleaned:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"endpoint URL must start with http:// or https://: {url!r}")
        return cleaned


class CpuOcrOptions(BaseModel):
    """The CPU OCR engine (RapidOCR) used when no endpoint is configured."""

    enabled: bool = True
    dpi: int = Field(default=200, ge=36, le=600)
    max_pixels: int = Field(default=12_000_000, ge=100_000)


# Bump whenever a change to folio's own code alters what an engine gives for the same page (layout,
# tables, furniture, line boxes): it is part of every page cache key, so older pages are read again.
# A change to the text-layer engine alone bumps its own `TEXT_LAYER_VERSION` instead.
# 7: scanned tables' rows anchored on their text lines; 8: a band's words read left to right;
# 10: a big figure whose rows line up figures is read as a table (9 was a try, reverted);
# 11: an OCR'd paragraph that layout regions cut line by line is joined again (`join_run_ons`);
# 12: and a figure printed big over its label is read with it; no paragraph across another line
EXTRACTION_VERSION = "12"


class ExtractOptions(BaseModel):
    """Per-page routing between the text layer and the OCR engines."""

    ocr: OcrMode = OcrMode.auto
    vllm: VLLMOptions | None = None
    cpu: CpuOcrOptions = Field(default_factory=CpuOcrOptions)
    figure_ocr: bool = Field(
        default=True,
        description="OCR the large raster images of text-layer pages (not with ocr=never)",
    )
    figure_regions: int = Field(default=4, ge=0, le=32, description="at most this many a page")
    extraction_version: str = Field(
        default=EXTRACTION_VERSION,
        min_length=1,
        description="folio's extraction version, part of the page cache key",
    )
