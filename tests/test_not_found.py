"""Questions the documents do not answer: refused when they ask nothing, `not_found` when nothing
supports an answer (over real text, with the shipped embedding model), on every answer route."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from doubles.llm_stub import Behaviour, LlmStub
from doubles.loopback import sse_events
from ocr_engine.options import OcrMode
from retrieval.answer.generate import answer_response
from retrieval.answer.llm import LlmOptions
from retrieval.index.embedder import SentenceTransformerEmbedder
from retrieval.schema import QueryRequest
from server.cli.cli import app as cli_app
from server.services import Services, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf
from tests.test_e2e import LiveServer

EMPTY = ["", "   ", "\t\n", "?!", " ... ", "¿—?", "()·"]
UNRELATED = "What is the interest rate set by the central bank of Australia?"


@pytest.mark.parametrize("question", EMPTY)
def test_a_question_without_letters_or_digits_is_invalid(question: str) -> None:
    with pytest.raises(ValidationError):
        QueryRequest(question=question)
    assert QueryRequest(question=" a? ").question == " a? "


def test_the_cli_refuses_an_empty_question(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app, ["query", " ?! ", "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 2
    assert "error: the question has no letters or digits" in result.output
    assert "Value error" not in result.output  # pydantic's own words are not the user's
    assert not (tmp_path / "d").exists()  # refused before anything was opened


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, str]]:
    root = tmp_path_factory.mktemp("not-found")
    pdfs = []
    for name, (title, sections) in FACTS.items():
        pdf = root / name
        pdf.write_bytes(fact_pdf(title, sections))
        pdfs.append(pdf)
    settings = Settings(data_dir=root / "data", ocr=OcrMode.never, extract_processes=0)
    services = build_services(settings, embedder=SentenceTransformerEmbedder())
    try:
        results = services.sync.ingest_paths(pdfs)
        assert all(r.status.value == "ok" for r in results), results
        with LiveServer(services) as live:
            yield services, live.base_url
    finally:
        services.close()


@pytest.mark.parametrize("question", EMPTY)
@pytest.mark.parametrize("route", ["/query", "/query/stream"])
def test_the_api_answers_422_to_an_empty_question(
    served: tuple[Services, str], route: str, question: str
) -> None:
    _, base = served
    response = httpx.post(f"{base}{route}", json={"question": question}, timeout=60)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    if question.strip():
        assert error["message"] == "body.question: the question has no letters or digits"
    else:
        assert "question" in error["message"] and "Value error" not in error["message"]


def test_an_unrelated_question_is_not_answered_and_lists_the_nearest_hits(
    served: tuple[Services, str],
) -> None:
    _, base = served
    response = httpx.post(f"{base}/query", json={"question": UNRELATED, "top_k": 3}, timeout=60)
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "not_found"
    assert body["answer"] is None and body["citations"] == []
    assert body["hits"] and {h["source"] for h in body["hits"]} <= set(FACTS)


def test_a_question_the_documents_answer_is_still_answered(served: tuple[Services, str]) -> None:
    _, base = served
    question = {"question": "When did the Kelud volcano erupt?", "top_k": 3}
    body = httpx.post(f"{base}/query", json=question, timeout=60).json()
    assert body["mode"] == "extractive"
    assert "2014" in body["answer"] and body["citations"][0]["source"] == "volcano.pdf"


def test_the_stream_ends_not_found_the_same_way(served: tuple[Services, str]) -> None:
    _, base = served
    body = {"question": UNRELATED, "top_k": 3}
    with httpx.stream("POST", f"{base}/query/stream", json=body, timeout=60) as response:
        assert response.status_code == 200
        events = sse_events(response)
    kinds = [kind for kind, _ in events]
    assert kinds == ["citations", "done"]  # no answer text is streamed
    done = events[-1][1]
    assert done["mode"] == "not_found" and done["answer"] is None and done["hits"]
    plain = httpx.post(f"{base}/query", json=body, timeout=60).json()
    assert [h["chunk_id"] for h in done["hits"]] == [h["chunk_id"] for h in plain["hits"]]


def test_the_retriever_says_not_found_too(served: tuple[Services, str]) -> None:
    services, _ = served
    response = services.retriever.query(QueryRequest(question=UNRELATED, top_k=3))
    assert (response.mode, response.answer, response.citations) == ("not_found", None, [])
    assert response.hits


def test_the_llm_is_not_asked_when_nothing_supports_an_answer(
    served: tuple[Services, str],
) -> None:
    services, _ = served
    hits = services.retriever.search(UNRELATED, 3)
    with LlmStub(Behaviour.mixed) as stub:
        options = LlmOptions(url=stub.url, model="stub/instruct", timeout_s=30)
        response = asyncio.run(
            answer_response(UNRELATED, hits, embedder=services.embedder, llm=options)
        )
        assert stub.requests == []
    assert (response.mode, response.answer, response.llm_error) == ("not_found", None, None)
