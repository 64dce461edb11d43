"""Per-page costs for the capacity plan (docs/scaling.md), and ingest pages/s with the embeddings
served over HTTP by a separate process against the same model in-process, same files, same run.

    python -m eval.scale_costs [--data ../shared/data] [--files 2]

Reads the first N SEC 10-Q filings of docugami_sec10q with the text layer (OCR off): extraction
CPU-ms per page (one reader, process time), chunks, embedding tokens (the model's tokenizer, of
each chunk's embed_text) and stored bytes per point (payload JSON + float32 vector + sparse
entries at 8 bytes), then ingests them twice into fresh data directories: MiniLM in-process, and
MiniLM behind `doubles.embed_server` (OpenAI-compatible /v1/embeddings) in another process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ingest.pipeline.extractor import WindowReader
from ingest.pipeline.guards import PdfLimits
from ocr_engine.options import ExtractOptions, OcrMode
from retrieval.index.store_common import chunk_payload, lexical_document
from server.services import Services, build_services
from server.settings import Settings

MODEL = "all-MiniLM-L6-v2-http"


def _extract_cpu_ms(pdfs: list[Path]) -> tuple[int, float]:
    reader = WindowReader(ExtractOptions(ocr=OcrMode.never), None, PdfLimits())
    pages, cpu = 0, 0.0
    for pdf in pdfs:
        probe = reader.probe(str(pdf), pdf.name, None)
        began = time.process_time()
        reader.read(str(pdf), pdf.name, None, "0" * 64, 1, probe.page_count)
        cpu += time.process_time() - began
        pages += probe.page_count
    reader.release()
    return pages, 1000 * cpu / pages


def _ingest(settings: Settings, pdfs: list[Path]) -> tuple[Services, float, int]:
    services = build_services(settings)
    services.embedder.embed_query("warm up")
    began = time.perf_counter()
    results = services.sync.ingest_paths(pdfs)
    seconds = time.perf_counter() - began
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    return services, seconds, sum(r.pages for r in results)


def _per_point(services: Services, pages: int) -> dict[str, float]:
    chunks = [c for doc_id in services.store.doc_ids() for c in services.store.chunks(doc_id)]
    tokens = sum(services.embedder.count_tokens(c.embed_text) for c in chunks)
    dim = services.embedder.dim
    stored = [
        len(json.dumps(chunk_payload(c)).encode()) + 4 * dim + 8 * len(lexical_document(c).indices)
        for c in chunks
    ]
    return {
        "chunks_per_page": len(chunks) / pages,
        "embed_tokens_per_page": tokens / pages,
        "bytes_per_point": sum(stored) / len(stored),
        "payload_bytes_per_point": sum(s - 4 * dim for s in stored) / len(stored),
    }


def _embed_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "doubles.embed_server", "--backend", "minilm", "--model", MODEL],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = proc.stdout.readline().split()[1]
    return proc, f"http://127.0.0.1:{port}/v1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--files", type=int, default=2)
    args = parser.parse_args(argv)
    folder = args.data / "docugami_sec10q" / "docs"
    if not folder.exists():
        print(f"skipped: {folder} not found (the benchmark reads ../shared/data in place)")
        return 0
    pdfs = sorted(folder.glob("*.pdf"))[: args.files]
    pages, cpu_ms = _extract_cpu_ms(pdfs)
    with tempfile.TemporaryDirectory(prefix="folio-scale-") as work:
        local = Settings(data_dir=Path(work) / "local", ocr=OcrMode.never)
        services, local_s, _ = _ingest(local, pdfs)
        costs = _per_point(services, pages)
        local_points = services.store.count()
        services.close()
        proc, url = _embed_server()
        try:
            remote = Settings(
                data_dir=Path(work) / "http", ocr=OcrMode.never, embed_url=url, embed_model=MODEL
            )
            services, http_s, _ = _ingest(remote, pdfs)
            http_points = services.store.count()
            services.close()
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"{len(pdfs)} SEC 10-Q filings, {pages} pages, text layer\n")
    print(f"extraction CPU-ms per page (one reader): {cpu_ms:.1f}")
    for name, value in costs.items():
        print(f"{name}: {value:.1f}")
    print("\n| embeddings | points | seconds | pages/s |\n|---|---:|---:|---:|")
    print(f"| in-process MiniLM | {local_points} | {local_s:.1f} | {pages / local_s:.2f} |")
    print(
        f"| MiniLM over HTTP, another process | {http_points} | {http_s:.1f} | "
        f"{pages / http_s:.2f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
