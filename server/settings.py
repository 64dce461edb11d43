"""Settings from the environment (prefix FOLIO_), read only here at the edge."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FOLIO_", extra="ignore")

    data_dir: Path = Path("./data")
    watch_dir: Path | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    max_tokens: int = Field(default=256, ge=32, le=512, description="chunk size bound, in tokens")
    embed_batch_size: int = Field(default=32, ge=1, le=1024)
    render_dpi: int = Field(default=110, ge=36, le=300)
    max_render_dpi: int = Field(default=300, ge=36, le=600)
    render_cache_pages: int = Field(default=64, ge=0)
    watch_settle_seconds: float = Field(default=1.0, ge=0.0)
