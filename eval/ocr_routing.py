"""OCR routing: which pages of each corpus are sent to OCR, and what the check costs per page.

    python -m eval.ocr_routing [--data ../shared/data] [--pages 10]

Corpora: every Docling PDF page; the first ``--pages`` pages of every FinanceBench and
MMLongBench-Doc PDF; every page of ``zh/`` and of ``scanned/``. Born-digital corpora should
send nothing to OCR (``zh/pdfjs_XiaoBiaoSong.pdf`` is listed apart: pdf.js cannot map its font,
PyMuPDF can); ``scanned/`` is image-only or carries invisible or hidden OCR layers; several
MMLongBench-Doc decks are image-only. Milliseconds per page time ``ocr_reason`` alone, after
the text-layer engine has read the page (its work is not counted).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.routing import ocr_reason

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclass
class Tally:
    pages: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    times: list[float] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)

    def row(self, name: str) -> str:
        times = sorted(self.times) or [0.0]
        mean = 1000 * sum(times) / len(times)
        median = 1000 * times[len(times) // 2]
        p95 = 1000 * times[min(int(len(times) * 0.95), len(times) - 1)]
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(self.reasons.items())) or "none"
        return (
            f"| {name} | {self.pages} | {reasons} | {mean:.1f} | {median:.1f} | {p95:.1f} "
            f"| {1000 * times[-1]:.1f} |"
        )


def corpora(data: Path, pages: int) -> dict[str, list[tuple[Path, int]]]:
    """Corpus name -> (pdf, pages to read; 0 = all)."""

    def pdfs(*parts: str, limit: int = 0, skip: str = "") -> list[tuple[Path, int]]:
        folder = data.joinpath(*parts)
        found = sorted(folder.rglob("*.pdf")) if folder.exists() else []
        return [(p, limit) for p in found if not skip or skip not in p.name]

    return {
        "docling": pdfs("docling", "pdf"),
        "financebench": pdfs("financebench", "pdfs", limit=pages),
        "mmlongbench_doc": pdfs("mmlongbench_doc", "documents", limit=pages),
        "zh (born-digital)": pdfs("zh", skip="XiaoBiaoSong"),
        "zh XiaoBiaoSong": [(p, 0) for p in sorted(data.glob("zh/*XiaoBiaoSong*.pdf"))],
        "scanned": pdfs("scanned"),
    }


def run(files: list[tuple[Path, int]], engine: PyMuPDFEngine) -> Tally:
    tally = Tally()
    for pdf, limit in files:
        try:
            doc = pymupdf.open(pdf)
        except Exception as exc:
            print(f"  skipped {pdf.name}: {exc}", file=sys.stderr)
            continue
        with doc:
            count = doc.page_count if not limit else min(limit, doc.page_count)
            for index in range(count):
                page = doc[index]
                text_page = engine.extract_page(page)
                start = time.perf_counter()
                reason = ocr_reason(page, text_page)
                tally.times.append(time.perf_counter() - start)
                tally.pages += 1
                if reason is not None:
                    tally.reasons[reason] += 1
                    tally.flagged.append(f"{pdf.name} p{index + 1}: {reason}")
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--pages", type=int, default=10, help="first pages of the long PDFs")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"skipped: {args.data} not found (the benchmark reads ../shared/data in place)")
        return 0
    pymupdf.TOOLS.mupdf_display_errors(False)
    engine = PyMuPDFEngine(detect_tables=False)  # routing reads characters, not tables
    tallies = {name: run(files, engine) for name, files in corpora(args.data, args.pages).items()}
    command = "python -m eval.ocr_routing " + " ".join(argv if argv is not None else sys.argv[1:])
    print(f"`{command.strip()}`\n")
    print("| corpus | pages | sent to OCR | mean ms | median ms | p95 ms | max ms |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, tally in tallies.items():
        print(tally.row(name))
    for name in ("docling", "financebench", "zh (born-digital)"):
        if tallies[name].flagged:
            print(f"\nflagged in {name} (should be none):")
            for line in tallies[name].flagged:
                print(f"- {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
