"""MMLongBench-Doc dev, image-only documents: page recall without OCR and with CPU OCR.

    python -m eval.mmlongbench_ocr [--data ../shared/data] [--work .bench/retrieval]

The image-only documents are those most of whose pages have no text layer (10 of the dev half's
46). One index over those documents per setting, the same embedding model, the same questions
(those with evidence pages in these documents) in the same run; `--ocr` picks the settings.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

K_VALUES = (1, 5, 10)


def run(data: Path, work: Path, modes: list[str]) -> str:
    from eval.retrieval_data import load_corpus
    from eval.retrieval_index import open_folio
    from eval.retrieval_metrics import image_only_docs, score
    from retrieval.schema import QueryRequest

    corpus = load_corpus("mmlongbench", data)
    image_only = image_only_docs(corpus.pdfs)
    pdfs = [p for p in corpus.pdfs if p.stem in image_only]
    cases = [c for c in corpus.cases if c.docs & image_only and c.pages]
    rows = []
    for mode in modes:
        index = open_folio("mmlongbench-imageonly", pdfs, work, ocr=mode)
        try:
            ranked = []
            for case in cases:
                response = index.services.retriever.query(
                    QueryRequest(question=case.question, top_k=max(K_VALUES))
                )
                ranked.append([(Path(h.source).stem, h.page) for h in response.hits])
            points = index.services.store.count()
            engines = _engines(index.services)
        finally:
            index.services.close()
        scores = score(ranked, cases, K_VALUES)
        recall = scores.page_recall
        rows.append(
            f"| {mode} | {index.pages} | {points} | {engines} | {index.seconds / 60:.1f} | "
            + " | ".join(f"{recall[k]:.3f}" if recall[k] is not None else "—" for k in K_VALUES)
            + f" | {scores.mrr10:.3f} | {len(index.failed)} |"
        )
    header = (
        f"MMLongBench-Doc dev, {len(pdfs)} image-only documents, {len(cases)} questions with "
        "evidence pages\n\n"
        "| OCR | pages | points | pages by engine | ingest min | R@1 | R@5 | R@10 | MRR@10 "
        "| failed files |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
    )
    return header + "\n" + "\n".join(rows)


def _engines(services: object) -> str:
    from collections import Counter

    counts: Counter[str] = Counter()
    ledger = services.ledger  # type: ignore[attr-defined]
    for record in ledger.documents():
        for page in ledger.pages(record.doc_id):
            counts[page.engine.name] += 1
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--ocr", nargs="+", default=["never", "auto"])
    args = parser.parse_args(argv)
    if not (args.data / "mmlongbench_doc").is_dir():
        print(f"skipped: {args.data / 'mmlongbench_doc'} is absent")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    started = time.perf_counter()
    print(run(args.data, args.work, args.ocr))
    print(f"\n{time.perf_counter() - started:.0f} s; command: python -m eval.mmlongbench_ocr")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
