"""Extraction speed and agreement with the Docling ground truth, folio beside PyMuPDF's own tools.

    python -m eval.extraction [--data ../shared/data] [--fb-pages 5] [--no-write]
    python -m eval.extraction --dump [--no-fb] [--no-llm]   # iterate: per-page misses, no write

Speed: pages/s of folio's engine, raw ``page.get_text("dict")`` and ``pymupdf4llm.to_json`` on the
same pages in the same run (all Docling PDFs; the first ``--fb-pages`` pages of every FinanceBench
PDF). Agreement: share of ground-truth text items matched by a block on the same page with
IoU >= 0.5, and recall/precision of headings (title + section_header) and of tables.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.geometry import Box, iou

os.environ.setdefault("HF_HUB_OFFLINE", "1")

IOU_MIN = 0.5
SECTION = "## Extraction (issue 2)"
HEADING_KINDS = {"title", "section_header", "section-header"}
REPO_ROOT = Path(__file__).resolve().parent.parent
NOTES = [
    "Notes: the three extractors run on the same pages in the same process, one after another;",
    "pymupdf4llm runs with its layout model (pymupdf-layout, ONNX on CPU) and `use_ocr=False`.",
    "folio's engine is font/position heuristics, `find_tables` on pages that draw ruled rows and",
    "columns (half-empty grids of merged boxes rejected as forms), and an unruled-table finder on",
    "pages with at least 10 figures: rows of words cut at wide gaps, runs of >= 3 rows with a",
    "label and figures, figure columns from overlapping numeric cells, header rows above (this",
    "also reads dot-leader tables of contents). Rules, one each:",
    "- unruled tables: a cell holding one check-box or tick glyph is a value, like a figure;",
    "- unruled tables: a full-height gutter with running text on both sides (two columns, a",
    "  spread) splits the page before rows are formed;",
    "- unruled tables: header rows are those whose every cell is centred over the figure columns;",
    "- headings: nothing in the 7.5% margin bands (in the top one, unless under the running",
    "  header), and no URLs;",
    "- headings: more letters than digits once the section number is set aside;",
    "- headings: none ending in a trademark sign (™ ® ℠: logos and product names);",
    "- headings: the italic or bold cut of the body font is emphasis, not a distinct-font heading;",
    "- headings: stacks of >= 3 aligned headings of one size and font family (any cut) a few lines",
    "  apart are a list of labels (cover blurbs, diagram labels) and become text;",
    "- headings: a smaller non-bold line directly under a heading is its subtitle (text);",
    "- headings: white text with no filled shape or image under it is invisible, not a heading.",
    "It does not call the layout model (~0.7 s/page here). Remaining misses: a code listing",
    "Docling labels as a table; the one heading false positive is a Docling heading box that",
    "takes in the first line of the next paragraph.",
    "`python -m eval.extraction --dump --no-fb --no-llm` lists misses per page (writes nothing).",
]


@dataclass
class PageBoxes:
    """Boxes on one page, split into all text-bearing items, headings and tables."""

    items: list[Box] = field(default_factory=list)
    headings: list[Box] = field(default_factory=list)
    tables: list[Box] = field(default_factory=list)


Pages = dict[int, PageBoxes]


def ground_truth(path: Path) -> Pages:
    """Docling ground truth as top-left boxes per 1-based page."""
    doc = json.loads(path.read_text())
    heights = {int(k): v["size"]["height"] for k, v in doc["pages"].items()}
    pages: Pages = {}

    def boxes(item: dict[str, object]) -> Iterable[tuple[int, Box]]:
        for prov in item["prov"]:  # type: ignore[attr-defined]
            page, b = prov["page_no"], prov["bbox"]
            if b.get("coord_origin", "BOTTOMLEFT") == "BOTTOMLEFT":
                h = heights[page]
                yield page, (b["l"], h - b["t"], b["r"], h - b["b"])
            else:
                yield page, (b["l"], b["t"], b["r"], b["b"])

    for item in doc["texts"]:
        for page, box in boxes(item):
            entry = pages.setdefault(page, PageBoxes())
            entry.items.append(box)
            if item["label"] in HEADING_KINDS:
                entry.headings.append(box)
    for item in doc["tables"]:
        for page, box in boxes(item):
            pages.setdefault(page, PageBoxes()).tables.append(box)
    return pages


def ours(pdf: Path) -> Pages:
    """folio's blocks per page."""
    from ocr_engine.engines.extract import extract_document

    pages: Pages = {}
    for page in extract_document(pdf).pages:
        entry = pages.setdefault(page.number, PageBoxes())
        for block in page.blocks:
            entry.items.append(block.bbox)
            if block.type.value in HEADING_KINDS:
                entry.headings.append(block.bbox)
            if block.type.value == "table":
                entry.tables.append(block.bbox)
    return pages


def llm_json(pdf: Path, pages: list[int] | None = None) -> str:
    """pymupdf4llm.to_json on the text layer only (no OCR, like folio's engine)."""
    import pymupdf4llm

    with pymupdf.open(pdf) as doc:
        return str(pymupdf4llm.to_json(doc, pages=pages, use_ocr=False))


def theirs(pdf: Path) -> Pages:
    """pymupdf4llm.to_json's layout boxes per page."""
    pages: Pages = {}
    for page in json.loads(llm_json(pdf))["pages"]:
        entry = pages.setdefault(page["page_number"], PageBoxes())
        for b in page["boxes"]:
            box = (b["x0"], b["y0"], b["x1"], b["y1"])
            entry.items.append(box)
            if b["boxclass"] in HEADING_KINDS:
                entry.headings.append(box)
            if b["boxclass"] == "table":
                entry.tables.append(box)
    return pages


@dataclass
class Tally:
    """Matched counts over documents."""

    found: int = 0
    total: int = 0

    def add(self, gt: list[Box], pred: list[Box]) -> None:
        self.total += len(gt)
        self.found += sum(1 for g in gt if any(iou(g, p) >= IOU_MIN for p in pred))

    def share(self) -> str:
        return f"{self.found / self.total:.3f} ({self.found}/{self.total})" if self.total else "n/a"


@dataclass
class Agreement:
    """Text-item recall, heading and table recall/precision against the ground truth."""

    text: Tally = field(default_factory=Tally)
    head_r: Tally = field(default_factory=Tally)
    head_p: Tally = field(default_factory=Tally)
    table_r: Tally = field(default_factory=Tally)
    table_p: Tally = field(default_factory=Tally)

    def add(self, gt: Pages, pred: Pages) -> None:
        for number in set(gt) | set(pred):
            g, p = gt.get(number, PageBoxes()), pred.get(number, PageBoxes())
            self.text.add(g.items, p.items)
            self.head_r.add(g.headings, p.headings)
            self.head_p.add(p.headings, g.headings)
            self.table_r.add(g.tables, p.tables)
            self.table_p.add(p.tables, g.tables)


def docling_pairs(data: Path) -> list[tuple[Path, Path]]:
    """Docling PDFs that have a ground-truth file."""
    root = data / "docling"
    pairs = []
    for pdf in sorted((root / "pdf").glob("*.pdf")):
        gt = root / "groundtruth" / f"{pdf.stem}.json"
        if gt.exists():
            pairs.append((pdf, gt))
    return pairs


def timed(label: str, fn: Callable[[], int]) -> tuple[str, int, float]:
    """Run fn (which returns a page count) and time it."""
    start = time.perf_counter()
    pages = fn()
    return label, pages, time.perf_counter() - start


def speed(files: list[Path], limit: int | None, llm: bool = True) -> list[tuple[str, int, float]]:
    """Pages/s of the three extractors on the same pages of the same files."""
    engine = PyMuPDFEngine()

    def page_range(doc: pymupdf.Document) -> range:
        return range(min(doc.page_count, limit) if limit else doc.page_count)

    def per_page(read: Callable[[pymupdf.Page], object]) -> Callable[[], int]:
        def run() -> int:
            n = 0
            for f in files:
                with pymupdf.open(f) as doc:
                    for i in page_range(doc):
                        read(doc[i])
                        n += 1
            return n

        return run

    run_ours = per_page(engine.extract_page)
    run_dict = per_page(lambda page: page.get_text("dict"))

    def run_llm() -> int:
        n = 0
        for f in files:
            with pymupdf.open(f) as doc:
                pages = list(page_range(doc))
            llm_json(f, pages)
            n += len(pages)
        return n

    return [
        timed("folio PyMuPDFEngine", run_ours),
        timed('raw get_text("dict")', run_dict),
        *([timed("pymupdf4llm.to_json", run_llm)] if llm else []),
    ]


def gt_texts(path: Path) -> dict[int, list[tuple[str, str, Box]]]:
    """(label, text, top-left box) of every ground-truth text item and table per page."""
    doc = json.loads(path.read_text())
    heights = {int(k): v["size"]["height"] for k, v in doc["pages"].items()}
    out: dict[int, list[tuple[str, str, Box]]] = {}
    tables = [{**t, "label": "table"} for t in doc["tables"]]
    for item in [*doc["texts"], *tables]:
        for prov in item["prov"]:
            page, b = prov["page_no"], prov["bbox"]
            if b.get("coord_origin", "BOTTOMLEFT") == "BOTTOMLEFT":
                box = (b["l"], heights[page] - b["t"], b["r"], heights[page] - b["b"])
            else:
                box = (b["l"], b["t"], b["r"], b["b"])
            out.setdefault(page, []).append((item["label"], item.get("text", ""), box))
    return out


def dump(pairs: list[tuple[Path, Path]]) -> list[str]:
    """Per page: our false-positive headings, missed headings, missed and extra tables."""
    from ocr_engine.engines.extract import extract_document

    out: list[str] = []

    def short(text: str) -> str:
        return repr(" ".join(text.split())[:70])

    def fmt(box: Box) -> str:
        return "(" + ", ".join(f"{v:.0f}" for v in box) + ")"

    for pdf, gt_path in pairs:
        items = gt_texts(gt_path)
        for page in extract_document(pdf).pages:
            gt = items.get(page.number, [])
            g_head = [(t, b) for lab, t, b in gt if lab in HEADING_KINDS]
            g_tab = [(t, b) for lab, t, b in gt if lab == "table"]
            heads = [b for b in page.blocks if b.type.value in HEADING_KINDS]
            tabs = [b for b in page.blocks if b.type.value == "table"]
            lines = []
            for b in heads:
                if not any(iou(b.bbox, g) >= IOU_MIN for _, g in g_head):
                    near = max(gt, key=lambda x: iou(b.bbox, x[2]), default=None)
                    label = f" ~gt {near[0]} {short(near[1])}" if near else ""
                    lines.append(f"  FP heading {fmt(b.bbox)} {short(b.text)}{label}")
            for t, g in g_head:
                if not any(iou(b.bbox, g) >= IOU_MIN for b in heads):
                    lines.append(f"  missed heading {fmt(g)} {short(t)}")
            for _, g in g_tab:
                if not any(iou(b.bbox, g) >= IOU_MIN for b in tabs):
                    lines.append(f"  missed table {fmt(g)}")
            for b in tabs:
                if not any(iou(b.bbox, g) >= IOU_MIN for _, g in g_tab):
                    lines.append(f"  FP table {fmt(b.bbox)}")
            if lines:
                out.append(f"{pdf.name} p.{page.number}")
                out.extend(lines)
    return out


def report(data: Path, fb_pages: int, *, fb: bool = True, llm: bool = True) -> str:
    """Run every measurement and return the markdown section."""
    pairs = docling_pairs(data)
    docling_files = sorted((data / "docling" / "pdf").glob("*.pdf"))
    fb_files = sorted((data / "financebench" / "pdfs").glob("*.pdf")) if fb else []
    ours_agree, theirs_agree = Agreement(), Agreement()
    for pdf, gt_path in pairs:
        gt = ground_truth(gt_path)
        ours_agree.add(gt, ours(pdf))
        if llm:
            theirs_agree.add(gt, theirs(pdf))
    speed_rows = []
    for corpus, files, limit in (
        ("docling (all pages)", docling_files, None),
        (f"FinanceBench dev (first {fb_pages} pages of {len(fb_files)} files)", fb_files, fb_pages),
    ):
        if not files:
            continue
        results = speed(files, limit, llm)
        cells = " | ".join(f"{n / s:.1f}" for _, n, s in results)
        speed_rows.append(f"| {corpus} | {results[0][1]} | {cells} |")
    rows = [
        "Pages/s (single process, includes opening the files):",
        "",
        '| corpus | pages | folio | raw get_text("dict") | pymupdf4llm.to_json |',
        "|---|---:|---:|---:|---:|",
        *speed_rows,
        "",
        f"Agreement with the Docling ground truth ({len(pairs)} PDFs that have one, IoU >= 0.5):",
        "",
        "| metric | folio | pymupdf4llm.to_json |",
        "|---|---:|---:|",
    ]
    for name, attr in (
        ("text items matched by a block", "text"),
        ("heading recall", "head_r"),
        ("heading precision", "head_p"),
        ("table recall", "table_r"),
        ("table precision", "table_p"),
    ):
        rows.append(
            f"| {name} | {getattr(ours_agree, attr).share()} "
            f"| {getattr(theirs_agree, attr).share()} |"
        )
    command = "python -m eval.extraction --data ../shared/data"
    if fb_pages != 5:
        command += f" --fb-pages {fb_pages}"
    return "\n".join([SECTION, "", f"`{command}`", "", *rows, "", *NOTES, ""])


def write_section(doc: Path, section: str) -> None:
    """Replace (or append) this benchmark's section of docs/benchmarks.md."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(SECTION) + r"\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval.extraction", description=__doc__)
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--fb-pages", type=int, default=5, help="first N pages of each filing")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--dump",
        "--verbose",
        action="store_true",
        help="list false-positive headings and missed tables per page (implies --no-write)",
    )
    parser.add_argument(
        "--no-fb", action="store_true", help="skip FinanceBench (implies --no-write)"
    )
    parser.add_argument(
        "--no-llm", action="store_true", help="skip pymupdf4llm's agreement (implies --no-write)"
    )
    args = parser.parse_args(argv)
    if not (args.data / "docling").exists():
        parser.error(f"no docling data under {args.data}")
    partial = args.dump or args.no_fb or args.no_llm
    if args.dump:
        print("\n".join(dump(docling_pairs(args.data))))
    section = report(args.data, args.fb_pages, fb=not args.no_fb, llm=not args.no_llm)
    print(section)
    if not (args.no_write or partial):
        write_section(REPO_ROOT / "docs" / "benchmarks.md", section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
