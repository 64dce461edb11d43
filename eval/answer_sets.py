"""The questions of each set asked of one (dataset, split) index as `POST /query` answers them,
and the record of each answer that `eval.answers` judges (`eval/answer_match.py`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from eval.answer_match import Quantity, numbers_in

__all__ = [
    "Asked",
    "ask_all",
    "chance_of",
    "doc_ids_by_stem",
    "financebench_questions",
    "first_citation",
    "load_user_questions",
    "mmlongbench_questions",
    "user_questions",
    "wrong_doc_requests",
]

log = logging.getLogger(__name__)
TOP_K = 5
"""The hits asked for: `QueryRequest`'s default, as the web page and `folio query` ask."""


@dataclass
class Asked:
    """One question asked, its gold, and what the answer said and cited."""

    dataset: str
    split: str
    question: str
    doc: str
    """The gold document's PDF stem."""
    gold: str
    answer_format: str = ""
    pages: list[int] = field(default_factory=list)
    """1-based gold pages."""
    evidence: str = ""
    """FinanceBench's gold evidence text."""
    mode: str = ""
    answer: str | None = None
    first: dict[str, Any] | None = None
    """The first citation: stem, page, bbox, quote, boxed (the PDF's words inside its boxes)."""
    hits: list[tuple[str, int]] = field(default_factory=list)
    """(PDF stem, 1-based page) of the response's hits, best first."""
    error: str = ""
    chance: float | None = None
    """The share of the gold document's sentences that would be judged right as the answer."""

    def dump(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def page_in_hits(self) -> bool:
        return any(s == self.doc and p in self.pages for s, p in self.hits[:TOP_K])

    @property
    def not_found(self) -> bool:
        return self.mode == "not_found"


def _boxed(citation: Any, pdf: Path | None) -> str:
    """The words of the PDF inside the citation's drawn boxes on its page ('' without the PDF)."""
    from eval.retrieval_metrics import boxed_text
    from retrieval.links import highlight_of

    if pdf is None:
        return ""
    boxes = highlight_of(citation.highlight_url) or [tuple(citation.bbox)]
    try:
        return boxed_text(pdf, citation.page, boxes)
    except (IndexError, ValueError, RuntimeError) as exc:  # a page past the end, a broken file
        log.warning("no boxed text of %s p%d: %s", pdf.name, citation.page, exc)
        return ""


async def _ask_one(services: Any, asked: Asked, pdfs: dict[str, Path], doc_ids: Any) -> None:
    from retrieval.answer.generate import answer_query
    from retrieval.schema import QueryRequest

    request = QueryRequest(question=asked.question, top_k=TOP_K, doc_ids=doc_ids)
    try:
        response = await answer_query(services.retriever, request, services.settings.llm_options())
    except Exception as exc:  # a benchmark records a failed question and goes on
        log.exception("query failed: %s", asked.question[:80])
        asked.error = f"{type(exc).__name__}: {exc}"
        return
    asked.mode = response.mode
    asked.answer = response.answer
    asked.hits = [(Path(h.source).stem, h.page) for h in response.hits]
    asked.first = first_citation(response.citations, pdfs)


def first_citation(citations: Sequence[Any], pdfs: dict[str, Path]) -> dict[str, Any] | None:
    """What is judged of an answer's first citation: stem, page, bbox, quote, and the PDF's words
    inside its drawn boxes (None without a citation)."""
    if not citations:
        return None
    c = citations[0]
    stem = Path(c.source).stem
    return {
        "stem": stem,
        "page": c.page,
        "bbox": list(c.bbox),
        "quote": c.quote,
        "boxed": _boxed(c, pdfs.get(stem)),
    }


def ask_all(
    services: Any,
    questions: Sequence[Asked],
    pdfs: Sequence[Path],
    doc_ids: Sequence[list[str] | None] | None = None,
) -> None:
    """Ask each question (with its own `doc_ids` filter, if given) through `answer_query`, the
    call `POST /query` makes, and fill in what was answered."""
    by_stem = {p.stem: p for p in pdfs}
    filters = list(doc_ids) if doc_ids is not None else [None] * len(questions)

    async def run() -> None:
        for i, (asked, ids) in enumerate(zip(questions, filters, strict=True)):
            await _ask_one(services, asked, by_stem, ids)
            if (i + 1) % 20 == 0:
                log.info("asked %d/%d", i + 1, len(questions))

    asyncio.run(run())


def doc_ids_by_stem(services: Any) -> dict[str, str]:
    """PDF stem -> doc_id of every indexed document."""
    return {Path(source).stem: doc_id for doc_id, source in services.ledger.sources().items()}


def wrong_doc_requests(services: Any, questions: Sequence[Asked]) -> list[list[str] | None]:
    """For each question, the filter to every indexed document but its own (None where the
    index holds no other document: such a question is not asked)."""
    ids = doc_ids_by_stem(services)
    filters: list[list[str] | None] = []
    for asked in questions:
        others = [doc_id for stem, doc_id in sorted(ids.items()) if stem != asked.doc]
        filters.append(others or None)
    return filters


def own_doc_requests(services: Any, questions: Sequence[Asked]) -> list[list[str] | None]:
    """For each question, the filter to its own document alone (None where it is not indexed:
    the question is asked of every document)."""
    ids = doc_ids_by_stem(services)
    return [[ids[a.doc]] if a.doc in ids else None for a in questions]


def chance_of(
    services: Any, wanted: Sequence[tuple[Sequence[Quantity], str]]
) -> list[float | None]:
    """For each (gold numbers, PDF stem), the share of the sentences of folio's chunks of that
    document that state one of the numbers: the rate at which a random sentence of the gold
    document would count as right (None: no sentences, or no numbers)."""
    judges: list[tuple[Callable[[str], bool] | None, str]] = [
        (partial(numbers_in, golds) if golds else None, stem) for golds, stem in wanted
    ]
    return chance_said(services, judges)


def doc_chunks(services: Any) -> Callable[[str], list[Any] | None]:
    """The chunks of the indexed document of a PDF stem (None when it is not indexed), each
    document read from the store once."""
    ids = doc_ids_by_stem(services)
    read: dict[str, list[Any]] = {}

    def chunks(stem: str) -> list[Any] | None:
        if stem not in ids:
            return None
        if stem not in read:
            read[stem] = list(services.store.chunks(ids[stem]))
        return read[stem]

    return chunks


def chance_said(
    services: Any,
    wanted: Sequence[tuple[Callable[[str], bool] | None, str]],
    chunks: Callable[[str], list[Any] | None] | None = None,
) -> list[float | None]:
    """For each (judge of a text, PDF stem), the share of the sentences of folio's chunks of
    that document the judge counts as right (None: no sentences, or no judge); `chunks` as
    `doc_chunks` gives them."""
    from retrieval.text_terms import sentence_spans

    chunks = chunks or doc_chunks(services)
    sentences: dict[str, list[str]] = {}
    found: list[float | None] = []
    for judge, stem in wanted:
        read = chunks(stem)
        if read is None or judge is None:
            found.append(None)
            continue
        if stem not in sentences:
            sentences[stem] = [c.text[a:b] for c in read for a, b in sentence_spans(c.text)]
        said = sentences[stem]
        found.append(sum(judge(s) for s in said) / len(said) if said else None)
    return found


def line_chance_of(
    services: Any, cases: Sequence[Any], chunks: Callable[[str], list[Any] | None] | None = None
) -> dict[str, float | None]:
    """For each MMDocIR `BoxCase`, the share of the lines of folio's chunks of its document that
    lie in one of its gold boxes: the rate at which a random line of the gold document would be
    cited in a box (None: no lines); `chunks` as `doc_chunks` gives them."""
    from eval.evidence_boxes import in_gold_box

    chunks = chunks or doc_chunks(services)
    found: dict[str, float | None] = {}
    for case in cases:
        lines = [(ln.page, tuple(ln.bbox)) for c in chunks(case.doc) or [] for ln in c.lines]
        hits = sum(in_gold_box(case, (case.doc, page, box)) for page, box in lines)
        found[case.question] = hits / len(lines) if lines else None
    return found


def load_user_questions(path: Path) -> list[dict[str, Any]]:
    """The rows of `eval/user_questions.jsonl` (none when the file is absent)."""
    if not path.is_file():
        return []
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            missing = {"question", "answer", "doc", "dataset"} - set(row)
            if missing:
                raise ValueError(f"{path}:{n}: missing {sorted(missing)}")
            rows.append(row)
    return rows


def financebench_questions(corpus: Any, stems: set[str], split: str) -> list[Asked]:
    """FinanceBench's questions on the files `stems`."""
    found = []
    for case in corpus.cases:
        if case.docs <= stems:
            evidence = "\n".join(text for _, text in case.evidence)
            doc = next(iter(case.docs))
            found.append(
                Asked(
                    "financebench",
                    split,
                    case.question,
                    doc,
                    case.answer,
                    pages=sorted(case.pages),
                    evidence=evidence,
                )
            )
    return found


def mmlongbench_questions(data: Path, stems: set[str], split: str) -> list[Asked]:
    """MMLongBench-Doc's questions on the files `stems`, with their answer formats."""
    import ast

    rows = json.loads((data / "mmlongbench_doc" / "samples.json").read_text(encoding="utf-8"))
    found = []
    for row in rows:
        doc = Path(row["doc_id"]).stem
        if doc in stems:
            pages = sorted(int(p) for p in ast.literal_eval(row["evidence_pages"]))
            found.append(
                Asked(
                    "mmlongbench",
                    split,
                    row["question"],
                    doc,
                    str(row["answer"]),
                    answer_format=row["answer_format"],
                    pages=pages,
                )
            )
    return found


def user_questions(
    rows: Sequence[dict[str, Any]], dataset: str, stems: set[str], split: str
) -> list[Asked]:
    """The user questions of `dataset` on the files `stems`."""
    return [
        Asked(
            f"user:{dataset}",
            split,
            r["question"],
            r["doc"],
            str(r["answer"]),
            answer_format=str(r.get("answer_format") or ""),
            pages=[int(r["page"])] if r.get("page") else [],
        )
        for r in rows
        if r["dataset"] == dataset and r["doc"] in stems
    ]
