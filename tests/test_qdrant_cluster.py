"""Qdrant cluster settings: shards, replicas and write consistency go into the collection's
creation, and every write carries an ordering that survives the loss of a node."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from doubles.fakes import HashEmbedder
from doubles.qdrant_stub import QdrantStub
from retrieval.index.index_meta import QdrantCluster, WriteOrder
from server.services import open_store
from server.settings import Settings
from tests.test_edge_store import make_chunk


def test_the_settings_create_a_sharded_replicated_collection(tmp_path: Path) -> None:
    with QdrantStub() as qdrant:
        settings = Settings(
            data_dir=tmp_path,
            qdrant_url=qdrant.url,
            qdrant_shards="6",
            qdrant_replicas="2",
            qdrant_write_consistency="2",
        )
        store = open_store(settings, 64, model="test/embed")
        try:
            info = store._require().get_collection("folio")  # type: ignore[attr-defined]
            chunks = [make_chunk("a" * 64, f"c{i:04d}", [1]) for i in range(3)]
            vectors = HashEmbedder(64).embed_documents([c.embed_text for c in chunks])
            store.replace_document("a" * 64, chunks, vectors)
            store.delete_document("a" * 64)
        finally:
            store.close()
    params = info.config.params
    assert (params.shard_number, params.replication_factor) == (6, 2)
    assert params.write_consistency_factor == 2
    assert info.config.metadata == {"folio_embedder": {"model": "test/embed", "dim": 64}}
    kinds = [kind for kind, _ in qdrant.writes]
    assert kinds == ["upsert", "delete", "delete"]
    assert all(query.get("ordering") == "medium" for _, query in qdrant.writes)


def test_unset_leaves_qdrants_defaults_and_the_ordering_can_be_chosen(tmp_path: Path) -> None:
    with QdrantStub() as qdrant:
        settings = Settings(
            data_dir=tmp_path, qdrant_url=qdrant.url, qdrant_write_ordering="strong"
        )
        store = open_store(settings, 64)
        try:
            chunk = make_chunk("b" * 64, "c0000", [1])
            store.upsert([chunk], HashEmbedder(64).embed_documents([chunk.embed_text]))
        finally:
            store.close()
    created = qdrant.created["folio"]
    assert {"shard_number", "replication_factor", "write_consistency_factor"}.isdisjoint(created)
    assert qdrant.writes == [("upsert", {"wait": "true", "ordering": "strong"})]


def test_bad_cluster_settings_are_refused() -> None:
    with pytest.raises(ValidationError, match="qdrant_shards"):
        Settings(qdrant_shards="0")
    with pytest.raises(ValidationError, match="qdrant_write_ordering"):
        Settings(qdrant_write_ordering="eventual")
    with pytest.raises(ValidationError, match="write consistency"):
        QdrantCluster(replicas=2, write_consistency=3)
    assert QdrantCluster().ordering is WriteOrder.medium
