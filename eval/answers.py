"""Answers right: the yardstick of right answers on each dev set, `tune` and `check` side by side.

    python -m eval answers --split tune|check|all [--dataset financebench --dataset mmlongbench]
        [--data ../shared/data] [--work .bench/retrieval] [--limit-docs N] [--index DIR]
        [--results PATH]

Every question is asked as `POST /query` answers it (`retrieval.answer.generate.answer_query` with
the services' retriever and LLM settings: extractive unless FOLIO_LLM_URL is set), top 5 hits, of
ONE index per (dataset, split) holding only that split's documents (`open_folio` keyed
`<dataset>-<split>`, cached under --work: ingest runs about 2 pages/s on 2 cores, so a split's
index is built once and reused; pages are read as the product reads them, by OCR where a page
has no usable text (`--ocr never` skips it); `--limit-docs N` indexes the split's N smallest
files, for a quick run; `--index DIR` queries a finished index whatever its key, as the files
that shape an index change under other work). `--split all` runs `tune` and `check`, each over
its own index, and prints both. Judged by `eval/answer_match.py`:

- FinanceBench: the gold answer's numbers inside the answer text, and inside the first
  citation's quote (or the PDF's words inside its drawn boxes), over the questions whose gold
  evidence text states one of them and over all questions; beside them, chance: the share of
  the sentences of folio's chunks of the gold document that state the number (a random sentence
  of the gold document as the answer).
- MMLongBench-Doc: its short answers by `answer_format` (Str, Int, Float, List; its own
  eval_score.py rules without the LLM extraction) inside the answer text; its "Not answerable"
  questions answered `not_found`, and the answerable ones withheld as `not_found`; MMDocIR's
  gold boxes: the first citation mostly inside one (`evidence_boxes.in_gold_box`).
- Wrong documents: each FinanceBench question asked with a `doc_ids` filter to every other
  document of the split's index (a request's own filter turns the document-name lookup off),
  counted `not_found`.
- User questions (`eval/user_questions.jsonl`, when present): each row asked of its set's index
  for the split its document is in, judged by its `answer_format` (None: `not_found`).
- Page in the top 5 hits for each set, beside the answer figures.

Per-question records and the figures go to --results (`.bench/results/answers-<split>.json`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval import answer_variants
from eval.answer_figures import (
    Figure,
    financebench_figures,
    mmlongbench_figures,
    said_right,
    user_figures,
)
from eval.answer_sets import (
    Asked,
    ask_all,
    chance_of,
    chance_said,
    doc_chunks,
    doc_ids_by_stem,
    financebench_questions,
    line_chance_of,
    load_user_questions,
    mmlongbench_questions,
    own_doc_requests,
    user_questions,
    wrong_doc_requests,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)

SETS = ("financebench", "mmlongbench")
USER_QUESTIONS = Path(__file__).with_name("user_questions.jsonl")
_FB, _MM, _USER = "FinanceBench", "MMLongBench-Doc", "user questions"
_S, _A = "(evidence states it)", "(all questions)"
ROWS: tuple[tuple[str, str, str], ...] = (
    (_FB, "fb.n", "questions"),
    (_FB, "fb.page5", "page in the top 5 hits"),
    (_FB, "fb.stated.answer", f"gold number in the answer {_S}"),
    (_FB, "fb.stated.quote", f"gold number in the 1st citation's quote {_S}"),
    (_FB, "fb.stated.quote_or_box", f"… in its quote or its boxed words {_S}"),
    (_FB, "fb.stated.chance", f"chance: a random sentence of the gold document {_S}"),
    (_FB, "fb.all.answer", f"gold number in the answer {_A}"),
    (_FB, "fb.all.quote", f"gold number in the 1st citation's quote {_A}"),
    (_FB, "fb.all.chance", f"chance: a random sentence of the gold document {_A}"),
    (_FB, "fb.not_found", "answered not_found (all are answerable)"),
    ("wrong documents", "wrong.not_found", "FinanceBench asked of the other documents: not_found"),
    ("own document", "own.not_found", "FinanceBench asked of its own document alone: not_found"),
    ("own document", "own.answer", "… gold number in the answer (all questions)"),
    (_MM, "mm.n", "questions"),
    (_MM, "mm.page5", "page in the top 5 hits (answerable)"),
    (_MM, "mm.right", "answer right (answerable)"),
    (_MM, "mm.right.first", "… right in the 1st citation's quote alone"),
    (_MM, "mm.right.chance", "chance: a random sentence of the gold document (answerable)"),
    (_MM, "mm.right.Str", "… Str"),
    (_MM, "mm.right.Int", "… Int"),
    (_MM, "mm.right.Float", "… Float"),
    (_MM, "mm.right.List", "… List"),
    (_MM, "mm.na.not_found", "Not answerable: answered not_found"),
    (_MM, "mm.withheld", "answerable: withheld as not_found"),
    ("MMDocIR", "mmdocir.first", "1st citation in a gold box (end to end)"),
    ("MMDocIR", "mmdocir.first.chance", "chance: a random line of the gold document"),
    ("MMDocIR", "mmdocir.given_page", "1st citation in a gold box (given it is on a gold page)"),
    (_USER, "user.right", "answer right (None rows: not_found)"),
    (_USER, "user.right.first", "… right in the 1st citation's quote alone"),
    (_USER, "user.right.chance", "chance: a random sentence of the gold document"),
    (_USER, "user.page5", "page in the top 5 hits"),
    (_USER, "user.na.not_found", "not answerable: answered not_found"),
    (_USER, "user.withheld", "answerable: withheld as not_found"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    k, n = value
    return f"{k / n:.3f} ({k}/{n})" if n else "—"


def table(by_split: dict[str, dict[str, Any]]) -> str:
    """One markdown table: a row per figure, a column per split."""
    splits = list(by_split)
    out = ["| set | figure | " + " | ".join(splits) + " |", "|---|---|" + "---:|" * len(splits)]
    for name, key, label in ROWS:
        values = [by_split[s].get(key) for s in splits]
        if all(v is None for v in values):
            continue
        if key.endswith(".n"):
            cells = [str(v[1]) if v else "—" for v in values]
        else:
            cells = [_cell(v) for v in values]
        out.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


_BASELINE = {
    "fb.stated.answer": "fb.stated.chance",
    "fb.stated.quote": "fb.stated.chance",
    "fb.stated.quote_or_box": "fb.stated.chance",
    "fb.all.answer": "fb.all.chance",
    "fb.all.quote": "fb.all.chance",
    "mmdocir.given_page": "mmdocir.first",
    "mm.right": "mm.right.chance",
    "mm.right.first": "mm.right.chance",
    "mmdocir.first": "mmdocir.first.chance",
    "user.right": "user.right.chance",
    "user.right.first": "user.right.chance",
}
_PAGE_ROWS = frozenset({"fb.page5", "mm.page5", "user.page5"})


def bench_rows(figures: dict[str, Any], pages: bool) -> list[Any]:
    """The report's rows of one split's figures: the page rows (`pages`) or the answer rows,
    each beside its chance or end-to-end figure."""
    from eval.bench_results import BenchRow

    rows = []
    for name, key, label in ROWS:
        value = figures.get(key)
        if value is None or key.endswith((".n", ".chance")) or (key in _PAGE_ROWS) != pages:
            continue
        baseline = figures.get(_BASELINE.get(key, ""))
        rows.append(BenchRow(set=name, figure=label, value=_cell(value), baseline=_cell(baseline)))
    return rows


def _record(by_split: dict[str, dict[str, Any]], command: str, notes: list[str]) -> None:
    from eval.bench_results import record

    for split, figures in by_split.items():
        if figures:
            record(f"answers-{split}", "Answers right", command, bench_rows(figures, False), notes)
            record(f"pages-{split}", "Page recall", command, bench_rows(figures, True), notes)


def _split_pdfs(pdfs: Sequence[Path], dataset: str, split: str, limit_docs: int) -> list[Path]:
    """The split's PDFs; with `limit_docs`, its smallest files (a quick run)."""
    from eval.splits import split_of

    mine = [p for p in pdfs if split_of(dataset, p.stem) == split]
    if limit_docs:
        mine = sorted(mine, key=lambda p: (p.stat().st_size, p.name))[:limit_docs]
    return sorted(mine)


def _asks_docugami(users: Sequence[dict[str, Any]], splits: Sequence[str]) -> bool:
    from eval.splits import split_of

    return any(
        r["dataset"] == "docugami" and split_of("docugami", r["doc"]) in splits for r in users
    )


def _run_index(
    dataset: str, split: str, args: argparse.Namespace, users: Sequence[dict[str, Any]]
) -> tuple[dict[str, Figure], list[Asked], str]:
    """Open (or build) the index of one (dataset, split) and ask every question of it."""
    from eval.retrieval_data import load_corpus
    from eval.retrieval_index import open_folio

    corpus = load_corpus(dataset, args.data)
    pdfs = _split_pdfs(corpus.pdfs, dataset, split, args.limit_docs)
    name = f"{dataset}-{split}" + (f"-{args.limit_docs}docs" if args.limit_docs else "")
    started = time.perf_counter()
    existing = next((p for p in args.index if re.fullmatch(rf"{name}-[0-9a-f]+", p.name)), None)
    index = open_folio(
        name,
        pdfs,
        args.work,
        ocr=args.ocr,
        seed=dataset,
        existing=existing,
        embedder_name=args.embedder,
    )
    log.info("%s: %d PDFs, %d pages (%s)", name, len(pdfs), index.pages, index.directory)
    services = index.services
    answer_variants.apply(services, args)
    try:
        # the split's files, indexed or not: a question on a file the ingest failed is asked too
        stems = {p.stem for p in pdfs}
        indexed = len(set(doc_ids_by_stem(services)) & stems)
        if dataset == "financebench":
            asked = financebench_questions(corpus, stems, split)
        elif dataset == "mmlongbench":
            asked = mmlongbench_questions(args.data, stems, split)
        else:  # Docugami: its index serves the user questions on its filings alone
            asked = []
        ask_all(services, asked, pdfs)
        mine = user_questions(users, dataset, stems, split)
        ask_all(services, mine, pdfs)
        chunks = doc_chunks(services)
        judged = (asked if dataset == "mmlongbench" else []) + mine
        chances = chance_said(services, [(said_right(a), a.doc) for a in judged], chunks)
        for a, chance in zip(judged, chances, strict=True):
            a.chance = chance
        if dataset == "financebench":
            wrong = [Asked("wrong:financebench", split, a.question, a.doc, a.gold) for a in asked]
            filters = wrong_doc_requests(services, wrong)
            kept = [(w, f) for w, f in zip(wrong, filters, strict=True) if f is not None]
            wrong = [w for w, _ in kept]
            ask_all(services, wrong, pdfs, [f for _, f in kept])
            own = [Asked("own:financebench", split, a.question, a.doc, a.gold) for a in asked]
            ask_all(services, own, pdfs, own_doc_requests(services, own))
            figures = financebench_figures(asked, wrong, lambda w: chance_of(services, w), own)
        elif dataset == "mmlongbench":
            from eval.evidence_boxes import load_box_cases

            boxes = {c.question: c for c in load_box_cases(args.data, pdfs)}
            wrong, own = [], []
            figures = mmlongbench_figures(
                asked, boxes, line_chance_of(services, list(boxes.values()), chunks)
            )
        else:
            wrong, own, figures = [], [], {}
    finally:
        services.close()
    took = time.perf_counter() - started
    failed = f", {len(index.failed)} failed to ingest" if index.failed else ""
    held = f"{indexed}/{len(pdfs)} PDFs indexed{failed}"  # an index built part way shows here
    note = f"{name}: {held}, {index.pages} pages, {index.directory}, {took:.0f} s"
    return figures, [*asked, *mine, *wrong, *own], note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "check", "all"), default="tune")
    parser.add_argument(
        "--dataset",
        action="append",
        choices=(*SETS, "docugami"),
        help="default: FinanceBench, MMLongBench-Doc, and Docugami where user questions ask it",
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--ocr", choices=("never", "auto"), default="auto")
    parser.add_argument("--limit-docs", type=int, default=0, help="the split's N smallest PDFs")
    parser.add_argument(
        "--index",
        type=Path,
        action="append",
        default=[],
        help="a finished index <dataset>-<split>-<key> to query whatever its key (repeatable)",
    )
    answer_variants.add_arguments(parser)
    parser.add_argument("--user-questions", type=Path, default=USER_QUESTIONS)
    parser.add_argument("--results", type=Path, help="default .bench/results/answers-<split>.json")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(message)s",
    )
    if not (args.data / "financebench").is_dir():
        print(f"skipped: {args.data} not found (the benchmark reads ../shared/data in place)")
        return 0
    from server.datadir import DataDirBusyError

    splits = ["tune", "check"] if args.split == "all" else [args.split]
    users = load_user_questions(args.user_questions)
    datasets = args.dataset or [*SETS, *(["docugami"] if _asks_docugami(users, splits) else [])]
    by_split: dict[str, dict[str, Figure]] = {s: {} for s in splits}
    records: list[dict[str, Any]] = []
    notes = []
    for split in splits:
        for dataset in datasets:
            try:
                figures, asked, note = _run_index(dataset, split, args, users)
            except DataDirBusyError as exc:  # another process holds that index: say so, go on
                notes.append(f"{dataset}-{split}: skipped, {exc}")
                continue
            by_split[split].update(figures)
            records.extend(a.dump() for a in asked)
            notes.append(note)
    for split in splits:  # user questions of every set asked, judged together
        mine = [Asked(**r) for r in records if r["split"] == split and r["dataset"][:5] == "user:"]
        if mine:
            by_split[split].update(user_figures(mine))
    command = f"python -m eval answers --split {args.split}"
    command += "".join(f" --dataset {d}" for d in args.dataset or ())
    if args.limit_docs:
        command += f" --limit-docs {args.limit_docs}"
    if args.ocr != "auto":
        command += f" --ocr {args.ocr}"
    command += "".join(f" --index {p}" for p in args.index)
    variant = answer_variants.label(args)
    command += f" {variant}" if variant else ""
    print(table(by_split))
    print()
    for note in notes:
        print(f"- {note}")
    if users:
        print(f"- user questions: {len(users)} rows in {args.user_questions}")
    else:
        print(f"- user questions: none ({args.user_questions} absent)")
    print(f"\ncommand: {command}")
    suffix = answer_variants.suffix(args)
    path = args.results or Path(".bench/results") / f"answers-{args.split}{suffix}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    out = {"command": command, "figures": by_split, "indexes": notes, "questions": records}
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"results: {path}")
    if not args.limit_docs and not args.dataset and args.results is None and not variant:
        _record(by_split, command, notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
