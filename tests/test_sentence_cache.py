"""The query path remembers: the question is embedded once per query (not once for the search
and again for the answer), and answer sentences, embedded at ingest (or by an earlier query),
are read from DATA_DIR/sentence_cache.sqlite3, with the same answer as without it."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from doubles.fakes import HashEmbedder
from ingest.pipeline.chunker import chunk_document
from ocr_engine.options import OcrMode
from ocr_engine.schema import Block, BlockType, Document, EngineInfo, Line, Page
from retrieval.answer import extractive_answer
from retrieval.answer.retriever import Retriever
from retrieval.answer.sentence_cache import RememberingEmbedder, answer_texts, remember_answer_texts
from retrieval.answer.sentence_fill import FillStep, SentenceFill
from retrieval.schema import Chunk, QueryRequest, ScoredChunk
from server.serve.app import create_app
from server.services import SENTENCE_CACHE_FILE, Services, build_services
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


def _fact_pdf(tmp_path: Path, name: str) -> Path:
    pdf = tmp_path / name
    title, sections = FACTS[name]
    pdf.write_bytes(fact_pdf(title, sections, filler_pages=2))
    return pdf


def _ingested(tmp_path: Path, when: str) -> tuple[Services, CountingEmbedder]:
    """Services over the volcano facts, ingested with FOLIO_ANSWER_SENTENCES=`when`."""
    embedder = CountingEmbedder()
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never, answer_sentences=when)
    services = build_services(settings, embedder=embedder)
    [result] = services.sync.ingest_paths([_fact_pdf(tmp_path, "volcano.pdf")])
    assert result.status.value == "ok", result
    return services, embedder


def _all_answer_texts(services: Services) -> set[str]:
    store = services.store
    return {t for d in store.doc_ids() for c in store.chunks(d) for t in answer_texts(c)}


def _settled(fill: SentenceFill | None, timeout_s: float = 60.0) -> SentenceFill:
    assert fill is not None
    deadline = time.monotonic() + timeout_s
    while not fill.progress.settled:
        assert time.monotonic() < deadline, "the sentence filler did not finish"
        time.sleep(0.05)
    return fill


def test_query_embeds_question_once_and_reads_sentences_embedded_at_ingest(
    tmp_path: Path,
) -> None:
    services, embedder = _ingested(tmp_path, "ingest")
    try:
        assert (services.settings.data_dir / SENTENCE_CACHE_FILE).is_file()
        embedder.questions.clear()
        embedder.passages.clear()
        with TestClient(create_app(services, watch=False)) as client:
            first = client.post("/query", json={"question": QUESTION}).json()
            assert embedder.questions == [QUESTION]
            second = client.post("/query", json={"question": QUESTION}).json()
            other = client.post("/query", json={"question": "What do seismometers record?"})
        assert other.status_code == 200
        assert embedder.passages == []  # every answer sentence was embedded at ingest
        assert len(embedder.questions) == 2
        assert first == second and first["answer"] is not None
        # the same answer as a retriever that remembers nothing
        plain = Retriever(embedder, services.store, names=services.retriever.names)
        req = QueryRequest(question=QUESTION)
        hits = plain.search(QUESTION, req.top_k)
        answer = extractive_answer(
            QUESTION, hits, embedder=embedder, options=plain.answer_options(req)
        )
        assert answer.text == first["answer"]
        assert set(embedder.passages) <= {t for h in hits for t in answer_texts(h.chunk)}
    finally:
        services.close()


def test_with_sentences_left_to_queries_a_query_embeds_them_once(tmp_path: Path) -> None:
    services, embedder = _ingested(tmp_path, "query")
    try:
        assert not (services.settings.data_dir / SENTENCE_CACHE_FILE).exists()
        embedder.passages.clear()
        with TestClient(create_app(services, watch=False)) as client:
            first = client.post("/query", json={"question": QUESTION}).json()
            sentences = list(embedder.passages)
            second = client.post("/query", json={"question": QUESTION}).json()
        assert sentences and embedder.passages == sentences  # embedded once, then read
        assert first == second and first["answer"] is not None
    finally:
        services.close()


def test_by_default_serve_embeds_the_answer_sentences_while_idle(tmp_path: Path) -> None:
    services, embedder = _ingested(tmp_path, "idle")
    try:
        assert services.settings.answer_sentences == "idle"  # the default
        assert not (services.settings.data_dir / SENTENCE_CACHE_FILE).exists()  # not at ingest
        embedder.passages.clear()
        with TestClient(create_app(services, watch=False)) as client:
            fill = _settled(client.app.state.sentence_fill)  # type: ignore[attr-defined]
            wanted = _all_answer_texts(services)
            assert set(embedder.passages) == wanted and len(embedder.passages) == len(wanted)
            assert fill.progress.texts_embedded == len(wanted)
            health = client.get("/health").json()["answer_sentences"]
            assert health == {
                "settled": True,
                "documents_checked": 1,
                "texts_embedded": len(wanted),
                "pending": [],
                "current": None,
            }
            embedder.passages.clear()
            answer = client.post("/query", json={"question": QUESTION}).json()
            assert answer["answer"] is not None and embedder.passages == []  # all read
            # a document indexed later is filled too, once its ingest has finished
            [added] = services.sync.ingest_paths([_fact_pdf(tmp_path, "bakery.pdf")])
            assert added.status.value == "ok", added
            new = _all_answer_texts(services) - wanted
            deadline = time.monotonic() + 60
            while not new <= set(embedder.passages):
                assert time.monotonic() < deadline, "the new document's sentences were not filled"
                time.sleep(0.05)
    finally:
        services.close()


def test_a_document_is_pending_from_when_it_is_indexed(tmp_path: Path) -> None:
    """Not from the filler's next pass: the web page reads it as soon as the document is Ready."""
    services, _ = _ingested(tmp_path, "query")
    try:
        remembering = RememberingEmbedder(CountingEmbedder(), DictCache())
        fill = SentenceFill(services.store, remembering, busy=lambda: True)
        [doc_id] = services.store.doc_ids()
        fill.wake(doc_id)
        assert fill.progress.pending == [doc_id]
        fill.wake(doc_id)
        assert fill.progress.pending == [doc_id]
        fill.wake("f" * 64)  # a file that failed: nothing of it indexed, no answers to prepare
        assert fill.progress.pending == [doc_id]
    finally:
        services.close()


def test_the_filler_waits_for_ingest_and_queries(tmp_path: Path) -> None:
    services, _ = _ingested(tmp_path, "query")
    try:
        inner = CountingEmbedder()
        remembering = RememberingEmbedder(inner, DictCache())
        ingesting = threading.Event()
        ingesting.set()
        fill = SentenceFill(services.store, remembering, busy=ingesting.is_set, quiet_s=0.3)
        fill.start()
        try:
            time.sleep(0.5)
            assert inner.passages == [] and not fill.progress.settled  # an ingest runs
            assert fill.progress.pending == sorted(services.store.doc_ids())  # /health says so
            remembering.embed_query("a question")
            ingesting.clear()
            time.sleep(0.1)
            assert inner.passages == []  # a query ran less than quiet_s ago
            _settled(fill, timeout_s=30)
            assert set(inner.passages) == _all_answer_texts(services)
            assert fill.progress.pending == [] and fill.progress.current is None
        finally:
            fill.stop()
        assert fill._thread is not None and not fill._thread.is_alive()
    finally:
        services.close()


def test_the_filler_says_how_far_it_is_with_a_document(tmp_path: Path) -> None:
    """`GET /health` shows the document being filled and how many of its texts are in: the
    filler stopped by an ingest after its first batch holds there."""
    services, _ = _ingested(tmp_path, "query")
    try:
        calls = itertools.count()
        fill = SentenceFill(
            services.store,
            RememberingEmbedder(CountingEmbedder(), DictCache()),
            busy=lambda: next(calls) >= 2,  # idle for the first batch only, then an ingest runs
            quiet_s=0.0,
            batch=2,
        )
        fill.start()
        try:
            [doc_id] = services.store.doc_ids()
            total = len(_all_answer_texts(services))
            expected = FillStep(doc_id=doc_id, done=2, total=total)
            deadline = time.monotonic() + 30
            while fill.progress.current != expected:
                assert time.monotonic() < deadline, fill.progress
                time.sleep(0.05)
            assert fill.progress.texts_embedded == 2 and total > 2
        finally:
            fill.stop()
        assert fill.progress.current is None  # stopped: filling nothing
    finally:
        services.close()


class DictCache:
    """A VectorCache in memory."""

    def __init__(self) -> None:
        self.vectors: dict[tuple[str, str], np.ndarray] = {}

    def get(self, model: str, texts: Sequence[str], dim: int) -> dict[int, np.ndarray]:
        found = ((i, self.vectors.get((model, t))) for i, t in enumerate(texts))
        return {i: v for i, v in found if v is not None}

    def put(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.vectors.update({(model, t): v for t, v in zip(texts, vectors, strict=True)})

    def close(self) -> None:
        pass


def test_sentences_not_embedded_ahead_are_embedded_once() -> None:
    inner = CountingEmbedder()
    remembering = RememberingEmbedder(inner, DictCache())
    first = remembering.embed_documents(["a b", "c d"])
    again = remembering.embed_documents(["c d", "e f", "a b"])
    assert inner.passages == ["a b", "c d", "e f"]
    assert np.array_equal(again[[2, 0]], first)


def _table_chunk() -> Chunk:
    """A chunk of two sentences under a heading, and one of a table of two rows."""
    rows = ["|  | 2023 | 2022 |", "| --- | --- | --- |", "| Revenue | 10 | 9 |", "| Cost | 4 | 3 |"]
    lines = [Line(text=r, bbox=(72, 200 + 14 * i, 400, 212 + 14 * i)) for i, r in enumerate(rows)]
    blocks = [
        Block(id="b0", type=BlockType.section_header, bbox=(72, 100, 300, 112), text="Results"),
        Block(
            id="b1",
            type=BlockType.text,
            bbox=(72, 120, 500, 150),
            text="Revenue grew in 2023. Costs fell.",
            lines=[Line(text="Revenue grew in 2023. Costs fell.", bbox=(72, 120, 500, 132))],
        ),
        Block(
            id="b2",
            type=BlockType.table,
            bbox=(72, 200, 400, 256),
            text="\n".join(rows),
            lines=lines,
        ),
    ]
    page = Page(number=1, width=612, height=792, engine=EngineInfo(name="test"), blocks=blocks)
    doc = Document(doc_id="d" * 64, source="results.pdf", page_count=1, pages=[page])
    chunks = chunk_document(doc, count_tokens=lambda t: len(t.split()))
    return next(c for c in chunks if c.kind.startswith("table"))


def test_answer_texts_are_what_the_answer_embeds() -> None:
    chunk = _table_chunk()
    texts = answer_texts(chunk)
    assert len(texts) == len(set(texts)) and any("2023" in t and "10" in t for t in texts)
    cache = DictCache()
    ahead = CountingEmbedder()
    assert remember_answer_texts([chunk, chunk], ahead, cache) == len(texts)
    assert remember_answer_texts([chunk], ahead, cache) == 0
    asked = CountingEmbedder()
    hits = [ScoredChunk(chunk=chunk, score=1.0)]
    for question in ("What was revenue in 2023?", "What were the costs in 2022?", "Costs?"):
        extractive_answer(question, hits, embedder=RememberingEmbedder(asked, cache))
    assert asked.passages == []  # all read from what was embedded ahead
