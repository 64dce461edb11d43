"""Office, OpenDocument, HTML and Markdown files against Docling's ground truth (issue 39).

Per format: text conserved (letters and digits of the ground truth's texts and cells found in
folio's JSON, as a multiset), headings and list items found with the right type (by their
letters and digits), tables found (a folio table holding at least half of a ground-truth
table's cell texts) and their cells found, web links found (a ground-truth text's http, https,
mailto or ftp link among folio's block links, by URL), paragraphs whole (a ground-truth
paragraph of two words or more whose letters and digits one block's hold), conversion seconds
per rendered page, and the converter's peak memory per conversion (its process tree's summed
RSS, as the pool reads it).
`python -m eval office [--split tune|check|all] [--data ../shared/data] [--limit N]
[--formats docx pptx ...]`: files of the split (`eval/splits.json`, `office`); rules come from
`tune` files only. A whole split's run (every format, no --limit) records its figures in
docs/bench-results.json as `office-{split}` (area "Office files").
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.bench_results import BenchRow, record
from eval.splits import OFFICE_FORMATS, SPLITS, office_files, split_of
from ocr_engine.engines.extract import extract_document
from ocr_engine.inputs.convert_pool import Converted, ConvertLimits, ConvertPool
from ocr_engine.inputs.office import render_pdf
from ocr_engine.layout.office_match import norm
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import BlockType, Document

FORMATS = OFFICE_FORMATS
_HEADINGS = ("title", "section_header")
_PARAGRAPHS = ("text", "paragraph")
_SCHEMES = ("http://", "https://", "mailto:", "ftp://")


def _chars(texts: list[str]) -> Counter[str]:
    return Counter(ch for text in texts for ch in norm(text))


def _truth(path: Path) -> dict[str, Any] | None:
    truth = path.parent.parent / "groundtruth" / f"{path.name}.json"
    return json.loads(truth.read_text()) if truth.exists() else None


def _score(document: Document, truth: dict[str, Any]) -> dict[str, float]:
    texts = [t.get("text", "") for t in truth["texts"]]
    tables = [[c["text"] for c in t["data"]["table_cells"]] for t in truth["tables"]]
    want = _chars(texts + [c for t in tables for c in t])
    blocks = [b for p in document.pages for b in p.blocks]
    got = _chars([b.text for b in blocks if b.type is not BlockType.table])
    got += _chars([c.text for b in blocks for c in b.cells] or [b.text for b in blocks])
    heads = {norm(b.text) for b in blocks if b.type in (BlockType.title, BlockType.section_header)}
    items = {norm(b.text) for b in blocks if b.type is BlockType.list_item}
    gt_heads = [norm(t["text"]) for t in truth["texts"] if t["label"] in _HEADINGS]
    gt_items = [norm(t["text"]) for t in truth["texts"] if t["label"] == "list_item"]
    # a rendered list item keeps its number or bullet ("1. Leaves"): its end is the item
    found_items = sum(any(k and i.endswith(k) for i in items) for k in gt_items)
    folio_tables = [{norm(c.text) for c in b.cells} for b in blocks if b.type is BlockType.table]
    tables_found, cells_found, cells_all = 0, 0, 0
    for cells in tables:
        keys = [norm(c) for c in cells if norm(c)]
        if not keys:
            continue
        best = max((sum(k in t for k in keys) for t in folio_tables), default=0)
        tables_found += best >= len(keys) / 2
        cells_found += best
        cells_all += len(keys)
    total = sum(want.values())
    links = Counter(
        str(t["hyperlink"])
        for t in truth["texts"]
        if str(t.get("hyperlink") or "").lower().startswith(_SCHEMES) and norm(t.get("text", ""))
    )
    got_links = Counter(k.url for b in blocks for k in b.links)
    texts_of = [norm(b.text) for b in blocks if b.type is not BlockType.table]
    paragraphs = [
        norm(t["text"])
        for t in truth["texts"]
        if t["label"] in _PARAGRAPHS and len(t.get("text", "").split()) > 1 and norm(t["text"])
    ]
    return {
        "chars": total,
        "chars_found": sum(min(n, got[c]) for c, n in want.items()),
        "heads": len(gt_heads),
        "heads_found": sum(h in heads for h in gt_heads),
        "items": len(gt_items),
        "items_found": found_items,
        "tables": sum(1 for t in tables if any(norm(c) for c in t)),
        "tables_found": tables_found,
        "cells": cells_all,
        "cells_found": cells_found,
        "links": sum(links.values()),
        "links_found": sum(min(n, got_links[u]) for u, n in links.items()),
        "paragraphs": len(paragraphs),
        "paragraphs_found": sum(any(p in t for t in texts_of) for p in paragraphs),
    }


def _share(found: float, total: float) -> str:
    return f"{found / total:.3f} ({int(found)}/{int(total)})" if total else "-"


class _MeasuredPool(ConvertPool):
    """The converter pool, keeping each run's peak resident memory (its process tree's, in MiB)."""

    poll_s = 0.05  # the pool's 0.2 s missed 10-25% of soffice's peak on short conversions

    def __init__(self) -> None:
        super().__init__()
        self.peaks: list[float] = []

    def run(
        self, argv: Sequence[str], *, cwd: Path, what: str, env: dict[str, str] | None = None
    ) -> Converted:
        done = super().run(argv, cwd=cwd, what=what, env=env)
        self.peaks.append(done.peak_mb)
        return done


@dataclass
class _Format:
    """One format's sums over the files of a run."""

    files: int = 0
    pages: int = 0
    seconds: float = 0.0
    sums: Counter[str] = field(default_factory=Counter)
    peaks: list[float] = field(default_factory=list)  # MiB, one per conversion
    failed: list[str] = field(default_factory=list)


def _measure(sources: list[Path], options: ExtractOptions) -> _Format:
    result = _Format()
    for path in sources:
        truth = _truth(path)
        if truth is None:
            continue
        data = path.read_bytes()
        pool = _MeasuredPool()
        started = time.perf_counter()
        try:
            render_pdf(data, path.name, pool=pool)  # timed alone; extraction reuses the rendering
            result.seconds += time.perf_counter() - started
            document = extract_document(data, source=path.name, options=options)
        except Exception as exc:
            result.failed.append(f"{path.name}: {exc}")
            document = Document(doc_id="0" * 64, source="", page_count=0, pages=[])
        result.peaks.extend(pool.peaks)
        result.pages += document.page_count
        result.sums.update(_score(document, truth))
        result.files += 1
    return result


def _memory(peaks: list[float]) -> str:
    return f"{statistics.median(peaks):.0f}/{max(peaks):.0f}" if peaks else "-"


# (figure as the report names it, the key of its sums)
_FIGURES = (
    ("text conserved (letters and digits)", "chars"),
    ("headings found with a heading type", "heads"),
    ("list items found as list items", "items"),
    ("tables found (half their cells in one table)", "tables"),
    ("table cells found", "cells"),
    ("web links found (by URL)", "links"),
    ("paragraphs whole in one block (two words or more)", "paragraphs"),
)


def _rows(split: str, fmt: str, got: _Format) -> list[BenchRow]:
    files = f"{got.files} file{'s' * (got.files != 1)}"
    where = f"{split}: {fmt}, {files}, {got.pages} pages"
    rows = [
        BenchRow(
            set=where,
            figure=figure,
            value=f"{got.sums[f'{key}_found'] / got.sums[key]:.3f} ({got.sums[f'{key}_found']})",
            baseline=f"of {got.sums[key]} in the ground truth",
        )
        for figure, key in _FIGURES
        if got.sums[key]
    ]
    if got.pages:
        rows.append(
            BenchRow(
                set=where,
                figure="s of conversion per page (converter start and layout included)",
                value=f"{got.seconds / got.pages:.2f}",
            )
        )
    if got.peaks:
        rows.append(
            BenchRow(
                set=where,
                figure="converter peak RSS MiB per conversion, median / max",
                value=_memory(got.peaks).replace("/", " / "),
                baseline=f"cap {ConvertLimits.from_env().memory_mb} (killed past it)",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--limit", type=int, default=None, help="files per format")
    parser.add_argument("--formats", nargs="*", default=list(FORMATS))
    parser.add_argument("--split", choices=SPLITS, default="all", help="tune, check or all")
    args = parser.parse_args(argv)
    root = args.data / "office"
    if not root.is_dir():
        print(f"no data at {root}")
        return 1
    options = ExtractOptions(ocr=OcrMode.never)
    print(f"split: {args.split}")
    print(
        "| format | files | text conserved | headings | list items | tables | cells | links "
        "| paragraphs whole | s/page | peak MiB median/max |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows: list[BenchRow] = []
    notes: list[str] = []
    for fmt in args.formats:
        sources = [
            p
            for p in office_files(args.data, fmt)
            if args.split == "all" or split_of("office", p.name) == args.split
        ]
        got = _measure(sources[: args.limit], options)
        sums = got.sums
        per_page = f"{got.seconds / got.pages:.2f}" if got.pages else "-"
        print(
            f"| {fmt} | {got.files} | {_share(sums['chars_found'], sums['chars'])} | "
            f"{_share(sums['heads_found'], sums['heads'])} | "
            f"{_share(sums['items_found'], sums['items'])} | "
            f"{_share(sums['tables_found'], sums['tables'])} | "
            f"{_share(sums['cells_found'], sums['cells'])} | "
            f"{_share(sums['links_found'], sums['links'])} | "
            f"{_share(sums['paragraphs_found'], sums['paragraphs'])} | {per_page} | "
            f"{_memory(got.peaks)} |",
            flush=True,
        )
        for line in got.failed:
            print(f"  failed: {line}")
        rows.extend(_rows(args.split, fmt, got))
        notes.extend(f"{fmt} failed: {line}" for line in got.failed)
        if not got.files:
            notes.append(f"{fmt}: no {args.split} file has a .json ground truth; nothing scored")
    if args.limit is None and args.formats == list(FORMATS):  # a whole split's run only
        notes.append(_NOTE)
        command = f"python -m eval office --split {args.split}"
        record(f"office-{args.split}", "Office files", command, rows, notes)
    return 0


_NOTE = (
    "peak RSS: the converter's process tree (soffice or chromium and every child) summed, as the "
    "pool reads it to enforce its cap (FOLIO_CONVERT_MEMORY_MB), here every 0.05 s; pages shared "
    "between processes count once per process (Chromium's summed PSS, read once on two pages, was "
    "about a third of it: docs/notes-issue39-office.md)"
)


if __name__ == "__main__":
    raise SystemExit(main())
