"""Extractive answers on FinanceBench dev: when to say "not found", and the number in the citation.

    python -m eval answer_support [--data ../shared/data] [--work .bench/retrieval] [--no-cells]

Opens the newest finished FinanceBench index under --work (built by `python -m eval retrieval
--dataset financebench`) and asks every dev question three ways: free (the whole index, as a user
asks), held to its own filing (`doc_ids`), and held to each of three filings of other companies
(the documents do not answer it there). Each answer's support (the best pooled sentence's cosine
to the question, `retrieval.answer`) is kept, and for a sweep of thresholds the table gives how
often a real answer would be withheld (free and own filing; also over the free questions whose
gold page is among the hits) and how often a non-answer would be given (other filings).

Answer in citation: the gold answer's numbers (years left out) that the gold evidence text states;
the share of those questions whose first citation's quote holds one of them, and the same count
over all questions (a question whose evidence states no number counts as a miss). `--no-cells`
answers without the table cell choice (the figure before it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.answer_sets import doc_ids_by_stem
from eval.retrieval_metrics import share

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)

TOP_K = 5
WRONG_DOCS = 3
THRESHOLDS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
_DONE = "bench-ingest.json"
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass
class Question:
    text: str
    doc: str
    answer: str
    evidence: str
    pages: set[int]

    @property
    def company(self) -> str:
        return self.doc.split("_", 1)[0].upper()


def load(root: Path) -> list[Question]:
    """The dev questions with their gold answer, evidence text and 1-based evidence pages."""
    questions = []
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            evidence = "\n".join(e["evidence_text"] for e in row["evidence"])
            pages = {int(e["evidence_page_num"]) + 1 for e in row["evidence"]}
            questions.append(
                Question(row["question"], row["doc_name"], row["answer"], evidence, pages)
            )
    return questions


def numbers(text: str) -> set[str]:
    """The numbers of `text`, normalised: no thousands commas, no trailing decimal zeros."""
    found = set()
    for raw in _NUMBER.findall(text):
        value = raw.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        found.add(value.lstrip("0") or "0")
    return found


def stated_numbers(q: Question) -> set[str]:
    """The gold answer's numbers of two digits or more (years 1990-2030 left out: a lone digit
    or a year matches by chance) that its evidence text states."""
    gold = {
        n
        for n in numbers(q.answer)
        if sum(ch.isdigit() for ch in n) >= 2 and not (n.isdigit() and 1990 <= int(n) <= 2030)
    }
    return gold & numbers(q.evidence)


def financebench_services(work: Path, index: Path | None = None) -> Any:
    """Services over `index`, else the newest finished FinanceBench index under `work` (None
    when none)."""
    from eval.retrieval_cache import CachedEmbedder
    from eval.retrieval_index import default_embedder_indexes
    from retrieval.index.embedder import SentenceTransformerEmbedder
    from server.services import build_services
    from server.settings import Settings

    built = [p.parent for p in work.glob(f"financebench-*/{_DONE}")]
    done = sorted(default_embedder_indexes(built), key=lambda p: p.stat().st_mtime)
    if index is None and not done:
        return None
    directory = index or done[-1]
    log.info("opening %s", directory)
    embedder = CachedEmbedder(SentenceTransformerEmbedder(), work / "embeddings.sqlite3")
    settings = Settings(data_dir=directory, ocr="never", max_tokens=256)  # type: ignore[arg-type]
    return build_services(settings, embedder=embedder)


@dataclass
class Asked:
    support: float
    gold_page_hit: bool
    first_quote: str


def _ask(services: Any, q: Question, doc_ids: list[str] | None, cells: bool) -> Asked:
    from dataclasses import replace

    from retrieval.answer import extractive_answer
    from retrieval.schema import QueryRequest
    from retrieval.search.search import search_filter

    retriever = services.retriever
    req = QueryRequest(question=q.text, top_k=TOP_K, doc_ids=doc_ids)
    hits = retriever.search(q.text, TOP_K, search_filter(req))
    options = replace(retriever.answer_options(req), min_support=0.0, cells=cells)
    answer = extractive_answer(q.text, hits, embedder=retriever.embedder, options=options)
    on_gold = any(Path(h.chunk.source).stem == q.doc and h.chunk.page in q.pages for h in hits)
    quote = answer.citations[0].quote if answer.citations else ""
    return Asked(answer.support or 0.0, on_gold, quote)


def run(services: Any, questions: list[Question], cells: bool) -> None:
    ids = doc_ids_by_stem(services)
    stems = sorted(ids)
    asked = [q for q in questions if q.doc in ids]
    if len(asked) < len(questions):
        print(
            f"the index holds {len(ids)} of the filings: the {len(asked)} of {len(questions)} "
            "questions on them are asked"
        )
    questions = asked
    free, own, wrong = [], [], []
    for i, q in enumerate(questions):
        free.append(_ask(services, q, None, cells))
        own.append(_ask(services, q, [ids[q.doc]], cells))
        others = [s for s in stems if s.split("_", 1)[0].upper() != q.company]
        for k in range(WRONG_DOCS):
            other = others[(7 * i + 11 * k) % len(others)]
            wrong.append(_ask(services, q, [ids[other]], cells))
    answerable = [a for a in free if a.gold_page_hit]
    print(
        f"FinanceBench dev: {len(questions)} questions; top {TOP_K} hits; asked free, of their "
        f"own filing ({len(own)}), and of {WRONG_DOCS} other companies' filings each "
        f"({len(wrong)}); gold page among the free hits: {len(answerable)}\n"
    )
    print(
        "| threshold | withheld: free | withheld: free, gold page hit | withheld: own filing "
        "| answered: other company's filing |"
    )
    print("|---:|---:|---:|---:|---:|")
    for t in THRESHOLDS:
        print(
            f"| {t:.2f} | {share(sum(a.support < t for a in free), len(free))} "
            f"| {share(sum(a.support < t for a in answerable), len(answerable))} "
            f"| {share(sum(a.support < t for a in own), len(own))} "
            f"| {share(sum(a.support >= t for a in wrong), len(wrong))} |"
        )
    stated = [(q, a) for q, a in zip(questions, free, strict=True) if stated_numbers(q)]
    inside = sum(bool(stated_numbers(q) & numbers(a.first_quote)) for q, a in stated)
    print(
        f"\nanswer in the first citation ({'with' if cells else 'without'} the table cell "
        f"choice): {share(inside, len(stated))} of the questions whose evidence states the "
        f"gold number; {share(inside, len(questions))} of all questions"
    )
    t = services.retriever.min_support
    kept = sum(
        bool(stated_numbers(q) & numbers(a.first_quote)) for q, a in stated if a.support >= t
    )
    print(
        f"the same with answers below the default threshold {t} withheld (a miss): "
        f"{share(kept, len(stated))}; {share(kept, len(questions))} of all questions"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--no-cells", action="store_true", help="answer without the cell choice")
    parser.add_argument(
        "--index", type=Path, help="this index directory (finished or not), not the newest"
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    root = args.data / "financebench"
    if not (root / "questions.jsonl").is_file():
        print(f"skipped: {root / 'questions.jsonl'} not found (reads ../shared/data in place)")
        return 0
    services = financebench_services(args.work, args.index)
    if services is None:
        print(
            f"skipped: no finished FinanceBench index under {args.work}; build it with "
            "`python -m eval retrieval --dataset financebench`"
        )
        return 0
    try:
        run(services, load(root), cells=not args.no_cells)
    finally:
        services.close()
    flag = " --no-cells" if args.no_cells else ""
    flag += f" --index {args.index}" if args.index else ""
    print(f"\ncommand: python -m eval answer_support --data {args.data}{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
