"""Whether a question gets the same hits and the same answer from one process to the next: every
MMDocIR box question (MMLongBench-Doc dev) asked in two fresh processes over the same finished
index, their top-5 hits (document, chunk, score) and their answers (text, first citation's page
and box) compared.

    python -m eval.hit_stability --folio-index .bench/retrieval/mmlongbench-301bd70de94e

Each process has its own hash seed (a sum over a set of terms adds in another order, and may
round otherwise); the search engine's order of equal scores may differ between processes too.
Prints how many questions' hit lists and answers differ, and the first few.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def _hits(folio_index: Path, data: Path, work: Path, out: Path) -> None:
    """One process's top-5 hits of every box question, written to `out` as JSON."""
    from eval.evidence_boxes import load_box_cases
    from eval.retrieval_data import load_corpus
    from eval.retrieval_index import open_folio
    from retrieval.schema import QueryRequest

    corpus = load_corpus("mmlongbench", data)
    cases = load_box_cases(data, corpus.pdfs)
    folio = open_folio("mmlongbench", corpus.pdfs, work, existing=folio_index)
    retriever = folio.services.retriever
    found = {}
    for case in cases:
        response = retriever.query(QueryRequest(question=case.question, top_k=5))
        first = response.citations[0] if response.citations else None
        found[case.question] = {
            "hits": [(h.doc_id, h.chunk_id, round(h.score, 6)) for h in response.hits],
            "answer": [response.answer, first and (first.page, first.bbox)],
        }
    out.write_text(json.dumps(found))
    folio.services.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--folio-index", type=Path, required=True)
    parser.add_argument("--one-process", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.one_process is not None:
        _hits(args.folio_index, args.data, args.work, args.one_process)
        return 0
    if not (args.data / "mmdocir").is_dir() or not args.folio_index.is_dir():
        print(f"skipped: need {args.data / 'mmdocir'} and the index {args.folio_index}")
        return 0
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in ("1", "2"):
            out = Path(tmp) / f"hits-{seed}.json"
            command = [sys.executable, "-m", "eval.hit_stability", "--one-process", str(out)]
            command += ["--data", str(args.data), "--work", str(args.work)]
            command += ["--folio-index", str(args.folio_index)]
            subprocess.run(command, check=True, env={**os.environ, "PYTHONHASHSEED": seed})
            runs.append(json.loads(out.read_text()))
    first, second = runs
    for part, what in (("hits", "top-5 hits"), ("answer", "answers")):
        differ = [q for q in first if first[q][part] != second[q][part]]
        print(f"{len(differ)} of {len(first)} questions' {what} differ between two processes")
        for question in differ[:3]:
            print(f"- {question[:100]}\n  {first[question][part]}\n  {second[question][part]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
