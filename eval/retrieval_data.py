"""The three retrieval benchmarks' questions, loaded into one shape.

FinanceBench counts pages from 0 (converted here), MMLongBench-Doc from 1; Docugami names
documents (by a glob such as `*AAPL*`) but no pages.
"""

from __future__ import annotations

import ast
import csv
import fnmatch
import hashlib
import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["DATASETS", "Case", "Corpus", "load_corpus", "opaque_corpus", "opaque_names"]

DATASETS = ("financebench", "mmlongbench", "docugami")


@dataclass
class Case:
    question: str
    docs: set[str]
    """Stems of the PDFs that hold the answer."""
    pages: set[int] = field(default_factory=set)
    """1-based evidence pages (in any of `docs`); empty when the data set gives none."""
    evidence: list[tuple[int, str]] = field(default_factory=list)
    """(1-based page, gold evidence text) pairs, FinanceBench only."""
    sources: list[str] = field(default_factory=list)
    """MMLongBench-Doc evidence_sources (Pure-text, Table, Chart, Figure, Layout)."""
    answer: str = ""
    """The gold answer (FinanceBench, MMLongBench-Doc: "Not answerable" when none)."""


@dataclass
class Corpus:
    name: str
    pdfs: list[Path]
    cases: list[Case]


def load_corpus(dataset: str, data: Path) -> Corpus:
    """The PDFs and questions of one data set under `data` (the shared data folder)."""
    if dataset == "financebench":
        return _financebench(data / "financebench")
    if dataset == "mmlongbench":
        return _mmlongbench(data / "mmlongbench_doc")
    if dataset == "docugami":
        return _docugami(data / "docugami_sec10q")
    raise ValueError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")


def _financebench(root: Path) -> Corpus:
    cases = []
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        evidence = [(int(e["evidence_page_num"]) + 1, e["evidence_text"]) for e in row["evidence"]]
        cases.append(
            Case(
                row["question"],
                {row["doc_name"]},
                pages={page for page, _ in evidence},
                evidence=evidence,
                answer=str(row["answer"]),
            )
        )
    return Corpus("financebench", sorted((root / "pdfs").glob("*.pdf")), cases)


_SOURCE_NAMES = {
    "Pure-text (Plain-text)": "Pure-text",
    "Generalized-text (Layout)": "Layout",
}


def _mmlongbench(root: Path) -> Corpus:
    cases = []
    for row in json.loads((root / "samples.json").read_text(encoding="utf-8")):
        pages = {int(p) for p in ast.literal_eval(row["evidence_pages"])}
        sources = [_SOURCE_NAMES.get(s, s) for s in ast.literal_eval(row["evidence_sources"])]
        stem = Path(row["doc_id"]).stem
        cases.append(Case(row["question"], {stem}, pages, sources=sources, answer=row["answer"]))
    return Corpus("mmlongbench", sorted((root / "documents").glob("*.pdf")), cases)


def _docugami(root: Path) -> Corpus:
    pdfs = sorted((root / "docs").glob("*.pdf"))
    cases = []
    with (root / "qna_data.csv").open(encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            patterns = [p.strip() for p in row["Source Docs"].split(",") if p.strip()]
            docs = {
                p.stem for p in pdfs for pat in patterns if fnmatch.fnmatch(p.name, pat.strip())
            }
            if docs:
                cases.append(Case(row["Question"], docs, sources=[row["Question Type"]]))
    return Corpus("docugami", pdfs, cases)


def opaque_names(pdfs: list[Path]) -> dict[str, str]:
    """PDF stem -> `doc_0001`, … numbered in the order of the files' SHA-256 (not their names),
    so the same files get the same names whatever they were called."""
    digests = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest() for p in pdfs}
    ordered = sorted(digests, key=lambda stem: (digests[stem], stem))
    return {stem: f"doc_{i:04d}" for i, stem in enumerate(ordered, start=1)}


def opaque_corpus(corpus: Corpus, folder: Path) -> tuple[Corpus, dict[str, str]]:
    """`corpus` with its PDFs copied into `folder` under opaque names (the ingest records the
    names it is given), its questions naming those files; and the map real stem -> opaque stem."""
    names = opaque_names(corpus.pdfs)
    folder.mkdir(parents=True, exist_ok=True)
    pdfs = []
    for pdf in corpus.pdfs:
        copy = folder / f"{names[pdf.stem]}.pdf"
        if not copy.is_file() or copy.stat().st_size != pdf.stat().st_size:
            shutil.copyfile(pdf, copy)
        pdfs.append(copy)
    cases = [replace(c, docs={names.get(d, d) for d in c.docs}) for c in corpus.cases]
    return Corpus(f"{corpus.name}-opaque", sorted(pdfs), cases), names
