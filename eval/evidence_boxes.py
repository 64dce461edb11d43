"""Citations measured on evidence regions: MMDocIR's gold boxes for MMLongBench-Doc dev questions.

A cited box hits when at least half of its area lies inside the union of the gold boxes of its
page (`inside_share`); a citation on another document or page misses. Reported for the first
citation of the `/query` answer and for any of the first three, end to end (every question) and
given the gold page (the questions whose first citation is on one), each beside the chance of a
random text line of folio's own extraction of the gold page (the expected value over all of its
lines). The gold pages are MMDocIR's (`page_id`, 0-based), not MMLongBench's `evidence_pages`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from eval.retrieval_metrics import share
from ocr_engine.geometry import Box, area, centre_inside, intersection

__all__ = [
    "HIT_SHARE",
    "BoxCase",
    "BoxScores",
    "Cited",
    "answerable_box_cases",
    "box_figures",
    "box_report",
    "chance",
    "cite",
    "in_gold_box",
    "inside_share",
    "line_boxes",
    "load_box_cases",
    "page_lines",
    "score_boxes",
]

HIT_SHARE = 0.5
"""A cited box hits when at least this share of its area lies inside the gold evidence."""
LAYOUTS = Path("mmdocir/layouts_dev.jsonl")
_FURNITURE = {"page_header", "page_footer"}


def inside_share(region: Box, golds: Sequence[Box]) -> float:
    """The share of `region`'s area inside the union of `golds` (exact, by the boxes' edges); a
    box without area counts 1 when its centre lies in a gold box, else 0."""
    if area(region) == 0:
        return float(any(centre_inside(region, g, pad=0.0) for g in golds))
    clipped = [c for g in golds if (c := intersection(g, region)) is not None]
    if not clipped:
        return 0.0
    xs = sorted({x for c in clipped for x in (c[0], c[2])})
    ys = sorted({y for c in clipped for y in (c[1], c[3])})
    covered = 0.0
    for x0, x1 in pairwise(xs):
        for y0, y1 in pairwise(ys):
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            if any(c[0] <= cx <= c[2] and c[1] <= cy <= c[3] for c in clipped):
                covered += (x1 - x0) * (y1 - y0)
    return covered / area(region)


def chance(lines: Sequence[Box], golds: Sequence[Box]) -> float | None:
    """The share of `lines` that would hit: a random line's chance (None without lines)."""
    if not lines:
        return None
    return sum(inside_share(b, golds) >= HIT_SHARE for b in lines) / len(lines)


@dataclass
class BoxCase:
    question: str
    doc: str
    """The PDF's stem."""
    boxes: dict[int, list[Box]]
    """1-based gold page -> gold boxes in PyMuPDF's page coordinates (points, top-left)."""
    sources: list[str] = field(default_factory=list)


def load_box_cases(data: Path, pdfs: Sequence[Path]) -> list[BoxCase]:
    """MMDocIR's questions on `pdfs`, their boxes scaled from MMDocIR's page size to the page's
    `rect` in PyMuPDF; boxes on pages past a document's end are skipped."""
    import pymupdf

    by_name = {p.name: p for p in pdfs}
    cases = []
    for line in (data / LAYOUTS).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        pdf = by_name.get(row["doc_name"])
        if pdf is None:
            continue
        with pymupdf.open(pdf) as doc:
            sizes = [(page.rect.width, page.rect.height) for page in doc]
        for q in row["questions"]:
            boxes: dict[int, list[Box]] = {}
            for m in q["layout_mapping"]:
                if not 0 <= m["page"] < len(sizes):
                    continue
                (w, h), (x0, y0, x1, y1) = m["page_size"], m["bbox"]
                sx, sy = sizes[m["page"]][0] / w, sizes[m["page"]][1] / h
                boxes.setdefault(m["page"] + 1, []).append((x0 * sx, y0 * sy, x1 * sx, y1 * sy))
            if boxes:
                cases.append(BoxCase(q["Q"], pdf.stem, boxes, [str(q["type"])]))
    return cases


def answerable_box_cases(
    data: Path, corpus: Any, *, with_image_only: bool = False
) -> list[BoxCase]:
    """MMDocIR's questions on MMLongBench-Doc's `corpus` that it does not mark "Not
    answerable", on its text-layer documents only unless `with_image_only`."""
    from eval.retrieval_metrics import image_only_docs

    image_only = set() if with_image_only else image_only_docs(corpus.pdfs)
    unanswerable = {c.question for c in corpus.cases if c.answer == "Not answerable"}
    return [
        c
        for c in load_box_cases(data, corpus.pdfs)
        if c.doc not in image_only and c.question not in unanswerable
    ]


def page_lines(document: Any, page: int) -> list[Box]:
    """The boxes of folio's text lines on a 1-based page of its document JSON: every line of
    every block but running headers and footers (which folio never cites), and the cells of
    tables whose blocks carry no lines."""
    found: list[Box] = []
    for p in document.pages:
        if p.number != page:
            continue
        for block in p.blocks:
            if block.type in _FURNITURE:
                continue
            found.extend(tuple(line.bbox) for line in block.lines)
            if not block.lines:
                found.extend(tuple(c.bbox) for c in block.cells if c.bbox is not None)
    return found


@dataclass
class Cited:
    """Where the answer to one question cites, and where its hits are."""

    citations: list[tuple[str, int, Box]]
    """(PDF stem, 1-based page, box) of each citation, in the answer's order."""
    hits: list[tuple[str, int]]
    """(PDF stem, 1-based page) of the search hits, best first."""


@dataclass
class BoxScores:
    n: int
    first: int
    any3: int
    on_gold: int
    """Questions whose first citation is on a gold page."""
    first_given_gold: int
    any3_given_gold: int
    gold_in_hits5: int
    chance_all: float | None
    """Mean over all questions of the chance of a random line of their gold pages."""
    chance_given_gold: float | None
    """Mean over the `on_gold` questions of the chance of a line of the cited gold page."""


def in_gold_box(case: BoxCase, cite: tuple[str, int, Box]) -> bool:
    """Whether a citation (file stem, page, box) lies mostly inside a gold box of `case`."""
    stem, page, box = cite
    golds = case.boxes.get(page) if stem == case.doc else None
    return bool(golds) and inside_share(box, golds or []) >= HIT_SHARE


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def score_boxes(
    cases: Sequence[BoxCase],
    cited: Sequence[Cited],
    lines: Callable[[str, int], list[Box]],
) -> BoxScores:
    """The box figures of `cited` (one per case); `lines(stem, page)` gives a page's lines."""
    first = any3 = on_gold = first_gold = any3_gold = in_hits = 0
    chances: list[float | None] = []
    chances_gold: list[float | None] = []
    for case, c in zip(cases, cited, strict=True):
        gold_lines = [chance(lines(case.doc, p), golds) for p, golds in sorted(case.boxes.items())]
        chances.append(_mean(gold_lines))
        hit_first = bool(c.citations) and in_gold_box(case, c.citations[0])
        hit3 = any(in_gold_box(case, cite) for cite in c.citations[:3])
        first += hit_first
        any3 += hit3
        in_hits += any(s == case.doc and p in case.boxes for s, p in c.hits[:5])
        if c.citations and c.citations[0][0] == case.doc and c.citations[0][1] in case.boxes:
            page = c.citations[0][1]
            on_gold += 1
            first_gold += hit_first
            any3_gold += hit3
            chances_gold.append(chance(lines(case.doc, page), case.boxes[page]))
    return BoxScores(
        len(cases),
        first,
        any3,
        on_gold,
        first_gold,
        any3_gold,
        in_hits,
        _mean(chances),
        _mean(chances_gold),
    )


def _value(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def box_report(rows: Sequence[tuple[str, BoxScores]]) -> str:
    """The markdown table of the box figures, one row per (label, scores)."""
    out = [
        "| questions | n | 1st citation in gold box | any of first 3 | chance (random line) "
        "| 1st citation on a gold page | given the gold page: 1st | any of first 3 "
        "| chance (random line) | gold page in top-5 hits |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, s in rows:
        out.append(
            f"| {label} | {s.n} | {share(s.first, s.n)} | {share(s.any3, s.n)} "
            f"| {_value(s.chance_all)} | {share(s.on_gold, s.n)} "
            f"| {share(s.first_given_gold, s.on_gold)} | {share(s.any3_given_gold, s.on_gold)} "
            f"| {_value(s.chance_given_gold)} | {share(s.gold_in_hits5, s.n)} |"
        )
    return "\n".join(out)


def cite(retriever: Any, cases: Sequence[BoxCase]) -> list[Cited]:
    """Each case's question asked as `POST /query` asks it (the default request, no LLM)."""
    from retrieval.schema import QueryRequest

    cited = []
    for case in cases:
        response = retriever.query(QueryRequest(question=case.question))
        cited.append(
            Cited(
                [(Path(c.source).stem, c.page, tuple(c.bbox)) for c in response.citations],
                [(Path(h.source).stem, h.page) for h in response.hits],
            )
        )
    return cited


def line_boxes(services: Any) -> Callable[[str, int], list[Box]]:
    """`page_lines` of the indexed documents, by PDF stem and 1-based page."""
    from eval.answer_sets import doc_ids_by_stem

    ids = doc_ids_by_stem(services)
    documents: dict[str, Any] = {}

    def lines(stem: str, page: int) -> list[Box]:
        if stem not in ids:
            return []
        if stem not in documents:
            documents[stem] = services.files.load_document(ids[stem])
        return page_lines(documents[stem], page)

    return lines


def _of_kind(kind: str, image_only: set[str]) -> Callable[[BoxCase], bool]:
    """Cases on text-layer documents whose evidence source names `kind`."""
    return lambda c: c.doc not in image_only and any(kind in s for s in c.sources)


def box_figures(
    services: Any,
    cases: Sequence[BoxCase],
    unanswerable: set[str],
    image_only: set[str],
) -> str:
    """The box table of `cases` asked of `services.retriever` (as `POST /query`), by group:
    all documents, text-layer documents, and the text-layer ones by evidence source."""
    asked = [c for c in cases if c.question not in unanswerable]
    cited = cite(services.retriever, asked)
    lines = line_boxes(services)
    groups: list[tuple[str, Callable[[BoxCase], bool]]] = [
        ("all documents", lambda c: True),
        ("text-layer documents", lambda c: c.doc not in image_only),
    ]
    for kind in ("Pure-text", "Table", "Chart", "Figure", "Layout"):
        groups.append((f"text-layer, {kind}", _of_kind(kind, image_only)))
    rows = []
    for label, member in groups:
        chosen = [i for i, c in enumerate(asked) if member(c)]
        if chosen:
            scores = score_boxes([asked[i] for i in chosen], [cited[i] for i in chosen], lines)
            rows.append((label, scores))
    head = (
        f"MMDocIR evidence boxes: {len(cases)} questions on these PDFs, {len(cases) - len(asked)} "
        f"unanswerable left out; a citation hits when >= {HIT_SHARE:.0%} of its box (`bbox`) lies "
        "inside the union of the gold boxes of its page; gold pages are MMDocIR's\n"
    )
    return head + "\n" + box_report(rows)
