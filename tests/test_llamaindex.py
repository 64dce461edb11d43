"""FolioRetriever as a LlamaIndex retriever, and the example notebook run cell by cell."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core", reason="llama-index-core comes with folio's eval extra")

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import MetadataMode

from doubles.fakes import HashEmbedder
from ocr_engine.options import OcrMode
from retrieval.answer.retriever import Retriever
from retrieval.index.edge_store import EdgeStore
from retrieval.schema import Chunk, ChunkLine, QueryRequest, Region
from retrieval.search.llamaindex import FolioRetriever
from server.services import build_services
from server.settings import Settings
from tests.conftest import REPO_ROOT
from tests.pdfgen import fact_pdf

DOC_A, DOC_B = "a" * 64, "b" * 64
LINES = [
    "Net revenue grew to $1,577 million in fiscal 2024.",
    "Operating margin improved as freight costs fell.",
    "Purchases of property and equipment were $412 million.",
]


def _chunk(doc_id: str, chunk_id: str, page: int, lines: list[str]) -> Chunk:
    text = "\n".join(lines)
    chunk_lines, start = [], 0
    for i, line in enumerate(lines):
        box = (72.0, 100.0 + 14 * i, 400.0, 112.0 + 14 * i)
        chunk_lines.append(ChunkLine(page=page, bbox=box, start=start, end=start + len(line)))
        start += len(line) + 1
    return Chunk(
        chunk_id=chunk_id,
        doc_id=doc_id,
        source=f"{doc_id[0]}.pdf",
        section_path=["Results"],
        kind="text",
        text=text,
        embed_text=f"Results\n\n{text}",
        regions=[Region(page=page, bbox=(72.0, 100.0, 400.0, 112.0 + 14 * (len(lines) - 1)))],
        lines=chunk_lines,
    )


CHUNKS = [
    _chunk(DOC_A, "c0000", 3, LINES),
    _chunk(DOC_B, "c0000", 7, ["Dividends of $2.10 per share were declared.", "No buybacks."]),
]


@pytest.fixture
def folio(tmp_path: Path) -> Iterator[Retriever]:
    embedder = HashEmbedder(dim=32)
    store = EdgeStore(tmp_path / "index", embedder.dim)
    store.upsert(CHUNKS, embedder.embed_documents([c.embed_text for c in CHUNKS]))
    yield Retriever(embedder, store)
    store.close()


def test_nodes_carry_the_supporting_lines_and_their_page(folio: Retriever) -> None:
    retriever = FolioRetriever(folio, top_k=2, base_url="http://folio:8000/")
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve("purchases of property and equipment")
    top = nodes[0].node
    meta = top.metadata
    assert meta["doc_id"] == DOC_A and meta["source"] == "a.pdf" and meta["page"] == 3
    assert meta["bbox"] == [72.0, 128.0, 400.0, 140.0]  # the third line, not the whole chunk
    assert meta["regions"] == [{"page": 3, "bbox": [72.0, 128.0, 400.0, 140.0]}]
    assert meta["highlight_url"] == (
        f"http://folio:8000/documents/{DOC_A}/pages/3.png?highlight=72.0,128.0,400.0,140.0"
    )
    assert top.get_content() == "\n".join(LINES)
    assert nodes[0].score is not None and nodes[0].score >= (nodes[1].score or 0.0)


def test_only_source_and_section_reach_a_model(folio: Retriever) -> None:
    node = FolioRetriever(folio, top_k=1).retrieve("net revenue 1,577")[0].node
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        shown = node.get_content(metadata_mode=mode)
        assert "a.pdf" in shown and "Results" in shown
        assert "bbox" not in shown and "highlight" not in shown and DOC_A not in shown


def test_filters_hold_retrieval_to_documents_and_pages(folio: Retriever) -> None:
    only_b = FolioRetriever(folio, top_k=5, doc_ids=[DOC_B])
    assert {n.node.metadata["doc_id"] for n in only_b.retrieve("net revenue")} == {DOC_B}
    pages = FolioRetriever(folio, top_k=5, page_from=1, page_to=5)
    assert {n.node.metadata["page"] for n in pages.retrieve("dividends")} == {3}


def test_async_retrieval_gives_the_same_nodes(folio: Retriever) -> None:
    retriever = FolioRetriever(folio, top_k=2)
    sync = retriever.retrieve("dividends per share")
    async_nodes = asyncio.run(retriever.aretrieve("dividends per share"))
    assert [n.node.node_id for n in async_nodes] == [n.node.node_id for n in sync]
    assert [n.node.metadata for n in async_nodes] == [n.node.metadata for n in sync]


def test_query_engine_with_a_mock_llm_returns_cited_sources(folio: Retriever) -> None:
    retriever = FolioRetriever(folio, top_k=1)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    response = engine.query("operating margin and freight costs")
    assert response.response  # MockLLM's echo: the engine ran end to end
    (source,) = response.source_nodes
    assert source.node.metadata["page"] == 3
    assert source.node.metadata["bbox"] == [72.0, 114.0, 400.0, 126.0]


def test_top_k_must_be_positive(folio: Retriever) -> None:
    with pytest.raises(ValueError, match="top_k"):
        FolioRetriever(folio, top_k=0)


def test_searches_exactly_as_query_does_named_documents_first(tmp_path: Path) -> None:
    """Over the services' retriever, a question naming one of two filings of a company gets
    that filing, in the order `POST /query` lists its hits."""
    bodies = {
        "ADOBE_2017_10K.pdf": "What was the total revenue in fiscal year 2017? Total revenue rose.",
        "ADOBE_2022_10K.pdf": "Subscription sales grew across the Digital Media segment.",
        "NIKE_2022_10K.pdf": "Footwear sales grew in every geography.",
    }
    for name, text in bodies.items():
        (tmp_path / name).write_bytes(fact_pdf(name.split(".")[0], [("Results", text)]))
    settings = Settings(data_dir=tmp_path / "data", ocr=OcrMode.never)
    services = build_services(settings, embedder=HashEmbedder(dim=32))
    try:
        services.sync.ingest_paths([tmp_path])
        question = "What was Adobe's total revenue in fiscal 2022?"
        nodes = FolioRetriever(services.retriever, top_k=3).retrieve(question)
        answer = services.retriever.query(QueryRequest(question=question, top_k=3))
        assert nodes[0].node.metadata["source"] == "ADOBE_2022_10K.pdf"
        got = [(n.node.metadata["doc_id"], n.node.metadata["chunk_id"]) for n in nodes]
        assert got == [(h.doc_id, h.chunk_id) for h in answer.hits]
        # what a retriever built without the ledger's names (the old `from_index`) finds first
        nameless = Retriever(services.embedder, services.store).search(question, 3)
        assert nameless[0].chunk.source == "ADOBE_2017_10K.pdf"
    finally:
        services.close()


def test_example_notebook_runs() -> None:
    """Every code cell of examples/folio_llamaindex.ipynb, in order, in one namespace."""
    notebook = json.loads((REPO_ROOT / "examples" / "folio_llamaindex.ipynb").read_text())
    namespace: dict[str, object] = {}
    last: object = None
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tree = ast.parse(source)
        body, tail = tree.body, None
        if body and isinstance(body[-1], ast.Expr):  # a cell's last expression is its output
            body, tail = body[:-1], ast.Expression(body[-1].value)
        flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        code = compile(ast.Module(body=body, type_ignores=[]), "<cell>", "exec", flags=flags)
        result = eval(code, namespace)
        if inspect.iscoroutine(result):
            asyncio.run(result)
        if tail is not None:
            last = eval(compile(tail, "<cell>", "eval", flags=flags), namespace)
            if inspect.iscoroutine(last):
                last = asyncio.run(last)
        if "nodes" in namespace and "checked" not in namespace:
            namespace["checked"] = True
            nodes = namespace["nodes"]
            assert isinstance(nodes, list) and nodes
            assert nodes[0].node.metadata["page"] == 2  # the capital expenditure page
    response = namespace["response"]
    assert response.source_nodes[0].node.metadata["page"] == 1  # type: ignore[attr-defined]
    async_nodes = namespace["async_nodes"]
    assert async_nodes[0].node.metadata["page"] == 2  # type: ignore[index]
    assert last is None  # the final cell closes the services
