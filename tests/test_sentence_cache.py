"""The query path remembers: the question is embedded once per query (not once for the search
and again for the answer), and answer sentences already embedded are read from
DATA_DIR/sentence_cache.sqlite3, with the same answer as without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from doubles.fakes import HashEmbedder
from ocr_engine.options import OcrMode
from retrieval.answer import extractive_answer
from retrieval.schema import QueryRequest
from retrieval.search import Retriever
from server.app import create_app
from server.services import SENTENCE_CACHE_FILE, build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf

QUESTION = "When did the Kelud volcano erupt?"


class CountingEmbedder(HashEmbedder):
    """HashEmbedder counting the questions and the passages it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: list[str] = []
        self.passages: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.questions.append(text)
        return super().embed_query(text)

    def embed_documents(self, texts: object) -> np.ndarray:
        self.passages.extend(texts)  # type: ignore[arg-type]
        return super().embed_documents(texts)  # type: ignore[arg-type]


def test_query_embeds_question_once_and_sentences_once(tmp_path: Path) -> None:
    pdf = tmp_path / "volcano.pdf"
    title, sections = FACTS["volcano.pdf"]
    pdf.write_bytes(fact_pdf(title, sections, filler_pages=2))
    embedder = CountingEmbedder()
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never)
    services = build_services(settings, embedder=embedder)
    try:
        [result] = services.sync.ingest_paths([pdf])
        assert result.status.value == "ok", result
        embedder.questions.clear()
        embedder.passages.clear()
        with TestClient(create_app(services, watch=False)) as client:
            first = client.post("/query", json={"question": QUESTION}).json()
            assert embedder.questions == [QUESTION]
            sentences = list(embedder.passages)
            assert sentences, "the answer embedded no sentence"
            second = client.post("/query", json={"question": QUESTION}).json()
            other = client.post("/query", json={"question": "What do seismometers record?"})
        assert other.status_code == 200
        assert embedder.passages[: len(sentences)] == sentences
        assert not set(embedder.passages[len(sentences) :]) & set(sentences)  # read back
        assert len(embedder.questions) == 2
        assert first == second and first["answer"] is not None
        assert (settings.data_dir / SENTENCE_CACHE_FILE).is_file()
        # the same answer as a retriever that remembers nothing
        plain = Retriever(embedder, services.store, names=services.retriever.names)
        req = QueryRequest(question=QUESTION)
        hits = plain.search(QUESTION, req.top_k)
        answer = extractive_answer(
            QUESTION, hits, embedder=embedder, options=plain.answer_options(req)
        )
        assert answer.text == first["answer"]
    finally:
        services.close()
