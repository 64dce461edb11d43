"""olmOCR-bench sample: the bench's unit tests on the pages as folio reads them, layout off and on.

    python -m eval olmocr_bench [--data ../shared/data] [--cache DIR] [--record] [--show]

Every page of ``olmocr_bench_sample/pdfs`` that has a test (``dataset.jsonl``, ``blanks.jsonl``)
is read as folio reads it: each page from its text layer, the pages that ``routing.ocr_reason``
does not trust by the CPU engine (RapidOCR) and the large raster figures of text-layer pages by
its region reader, furniture marked over the document; the page's text is its markdown
(``page_markdown``, page headers and footers left out). Modes: the text layer alone
(``--ocr never``); folio's routing (``--ocr auto``) and every page OCR'd (``--ocr always``), each
with the layout models off (RapidOCR's lines grouped by heuristics) and on (CDLA layout, SLANet-plus
tables); the baseline is an empty text. Both layouts lay out the same OCR lines, read once per
page image. The tests run as ``eval.olmocr_tests`` says (which names where it simplifies the
bench's). With ``--record`` its figures go to docs/bench-results.json, area "Scans" (it is not in
``make bench``: it takes ~5 minutes on 2 shared cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from eval.olmocr_tests import run_test
from eval.scan_structure import CachedOcr
from ocr_engine.engines.extract import iter_pages
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.reader import PageReader, sent_to_ocr
from ocr_engine.exports.markdown import page_markdown
from ocr_engine.layout.furniture import FurnitureMarker
from ocr_engine.options import CpuOcrOptions, ExtractOptions, OcrMode
from ocr_engine.schema import Page

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TYPES = ["present", "absent", "order", "table", "math", "baseline"]
EMPTY = "empty text"
MODES = [
    "text layer only",
    "auto, layout off",
    "auto, layout on",
    "always OCR, layout off",
    "always OCR, layout on",
]


@dataclass
class Tally:
    """Tests passed and run, by type."""

    passed: Counter[str] = field(default_factory=Counter)
    run: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, ok: bool) -> None:
        for key in (kind, "all"):
            self.run[key] += 1
            self.passed[key] += ok

    def share(self, kind: str) -> str:
        n = self.run[kind]
        return f"{self.passed[kind] / n:.3f} ({self.passed[kind]}/{n})" if n else "n/a"


def load_tests(root: Path) -> list[dict[str, Any]]:
    """The bench's tests of the sample, each a dict as in its JSONL."""
    tests = []
    for name in ("dataset.jsonl", "blanks.jsonl"):
        path = root / name
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            tests += [json.loads(line) for line in lines if line.strip()]
    return [t for t in tests if t.get("checked") != "rejected"]


def read_pages(path: Path, reader: PageReader) -> list[Page]:
    """The document's pages as `extract_document` gives them, with `reader`'s engines."""
    pages: list[Page] = []
    with pymupdf.open(path) as doc:
        marker = FurnitureMarker(doc.page_count)
    data = path.read_bytes()
    for page in iter_pages(data, name=path.name, reader=reader):
        pages += marker.feed([page])
    return pages + marker.finish()


def content(page: Page) -> str:
    """The page's markdown without its page-marker comment."""
    _marker, _, rest = page_markdown(page).partition("\n\n")
    return rest


def run(root: Path, cache: Path | None, show: bool, only: str | None = None) -> dict[str, Any]:
    """Every mode's tallies (all pages; the pages auto routes to OCR), routes and costs."""
    tests = load_tests(root)
    by_pdf: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for test in tests:
        by_pdf[test["pdf"]].append(test)
    cpu = CpuOcrOptions()
    on = CachedOcr(cpu, cache=cache)
    off = CachedOcr(cpu, cache=cache, layout=False)
    off.memory = on.memory
    text = PyMuPDFEngine()
    auto, always = ExtractOptions(), ExtractOptions(ocr=OcrMode.always)
    readers = {
        "text layer only": PageReader(ExtractOptions(ocr=OcrMode.never), engines=[text]),
        "auto, layout off": PageReader(auto, engines=[off, text]),
        "auto, layout on": PageReader(auto, engines=[on, text]),
        "always OCR, layout off": PageReader(always, engines=[off, text]),
        "always OCR, layout on": PageReader(always, engines=[on, text]),
    }
    tallies = {name: Tally() for name in [EMPTY, *MODES]}
    ocr_only = {name: Tally() for name in [EMPTY, *MODES]}
    routes: dict[str, str] = {}
    seconds: dict[str, float] = defaultdict(float)
    for pdf in sorted(p for p in by_pdf if not only or only in p):
        read: dict[str, dict[int, Page]] = {}
        for mode, reader in readers.items():
            start = time.perf_counter()
            read[mode] = {p.number: p for p in read_pages(root / "pdfs" / pdf, reader)}
            seconds[mode] += time.perf_counter() - start
            on._models = off._models = on._models or off._models  # RapidOCR's, loaded once
        for number, page in read["auto, layout on"].items():
            routes[f"{pdf} p.{number}"] = (page.route or "OCR") if sent_to_ocr(page) else ""
        for test in by_pdf[pdf]:
            ocr_page = bool(routes.get(f"{pdf} p.{test['page']}"))
            outputs = {EMPTY: ""} | {
                mode: content(read[mode][test["page"]]) if test["page"] in read[mode] else ""
                for mode in MODES
            }
            for mode, text_out in outputs.items():
                ok = run_test(test, text_out)
                tallies[mode].add(test["type"], ok)
                if ocr_page:
                    ocr_only[mode].add(test["type"], ok)
                if show and mode == "auto, layout on" and not ok:
                    print(f"  fail {test['id']} ({test['type']})", file=sys.stderr)
        print(f"  {pdf}: read", file=sys.stderr)
    models = on.scan_models.seconds
    return {
        "tallies": tallies,
        "ocr_only": ocr_only,
        "routes": routes,
        "seconds": seconds,
        "ocr_pages": on.ocr_pages + off.ocr_pages,
        "ocr_s": on.ocr_seconds + off.ocr_seconds,
        "layout_s": models.get("layout", 0.0),
        "table_s": models.get("table", 0.0),
        "tests": sum(tallies[EMPTY].run.values()) - tallies[EMPTY].run["all"],
    }


def table(tallies: dict[str, Tally], caption: str) -> list[str]:
    names = list(tallies)
    head = "| test type | " + " | ".join(names) + " |"
    rows = [caption, "", head, "|---|" + "---:|" * len(names)]
    for kind in [*TYPES, "all"]:
        if tallies[EMPTY].run[kind]:
            cells = " | ".join(t.share(kind) for t in tallies.values())
            rows.append(f"| {kind} | {cells} |")
    return rows


def report(out: dict[str, Any], command: str) -> str:
    routes = out["routes"]
    ocr = sorted(k for k, v in routes.items() if v)
    lines = [
        f"`{command}`: {len(routes)} pages, {out['tests']} tests; {len(routes) - len(ocr)} pages "
        f"keep their text layer, {len(ocr)} go to OCR under `--ocr auto`: "
        + ", ".join(f"{k} ({routes[k]})" for k in ocr),
        "",
        *table(out["tallies"], "Pass rate, all pages:"),
        "",
        *table(out["ocr_only"], "Pass rate, the pages `--ocr auto` sends to OCR:"),
        "",
        f"OCR (render, detect, recognise): {out['ocr_s']:.1f} s over {out['ocr_pages']} page and "
        f"figure images ({out['ocr_s'] / max(out['ocr_pages'], 1):.2f} s each); layout model "
        f"{out['layout_s']:.1f} s, table model {out['table_s']:.1f} s in all (ONNX runs, layout "
        "on). Wall seconds per mode (the first to read an image pays its OCR): "
        + ", ".join(f"{m} {s:.0f}" for m, s in out["seconds"].items())
        + ".",
    ]
    return "\n".join(lines)


def _record(out: dict[str, Any], command: str) -> None:
    from eval.bench_results import BenchRow, record

    sample = f"olmOCR-bench sample ({len(out['routes'])} pages, {out['tests']} tests)"
    empty = out["tallies"][EMPTY]
    rows = [
        BenchRow(
            set=sample,
            figure=f"{kind} tests passed: {mode}",
            value=out["tallies"][mode].share(kind),
            baseline=f"empty text {empty.share(kind)}",
        )
        for mode in ("auto, layout on", "always OCR, layout off", "always OCR, layout on")
        for kind in [*TYPES, "all"]
        if empty.run[kind]
    ]
    rows += [
        BenchRow(
            set=sample,
            figure=f"all tests passed: {mode}",
            value=out["tallies"][mode].share("all"),
            baseline=f"empty text {empty.share('all')}",
        )
        for mode in ("text layer only", "auto, layout off")
    ]
    ocr_pages = sum(1 for v in out["routes"].values() if v)
    notes = [
        f"{ocr_pages} of the {len(out['routes'])} pages go to OCR under --ocr auto; the rest keep "
        "their text layer (their raster figures OCR'd).",
        "Tests as eval/olmocr_tests.py implements them: fuzzy matches by Levenshtein distance, "
        "markdown tables only, math by exact LaTeX (the bench renders it), no repeat check.",
    ]
    record("olmocr-bench", "Scans", command, rows, notes)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval olmocr_bench", description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cache", type=Path, help="keep the OCR lines of each image here")
    parser.add_argument("--record", action="store_true", help="record the figures")
    parser.add_argument("--only", help="only the PDFs whose name holds this (not recorded)")
    parser.add_argument("--show", action="store_true", help="name the failed tests (auto, on)")
    args = parser.parse_args(argv)
    root = args.data / "olmocr_bench_sample"
    if not (root / "dataset.jsonl").exists():
        print(f"skipped: no olmOCR-bench sample under {args.data} (it reads ../shared/data)")
        return 0
    out = run(root, args.cache, args.show, args.only)
    command = "python -m eval olmocr_bench"
    print(report(out, command))
    if args.record and not args.only:
        _record(out, command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
