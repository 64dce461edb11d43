"""Structure on scans, with ground truth: the Docling PDFs rasterised, read by the CPU OCR engine.

    python -m eval.scan_structure [--data ../shared/data] [--dpi 150] [--only NAME] [--cache DIR]

Every page of ``docling/pdf`` that has a DoclingDocument ground truth is rendered to a ``--dpi``
image and read as a scan (an image-only page, the CPU engine, as ``--ocr always`` reads it) twice
from the same OCR lines: with the layout off (RapidOCR's lines grouped by the heuristics of
``ocr_layout``) and on (``scan_layout``: the CDLA layout model, SLANet-plus on its tables). Blocks
are compared with the ground truth as ``eval.extraction`` does for the text layer (IoU >= 0.5 on the
same page): per item type (a block of the same kind), recall and precision; text items matched by
a block of any type; tables found; table cells as a multiset of normalised cell texts per matched
table (cell-level F1; a missed table's cells are all missed, a spurious table's all wrong) and with
their (row, column) too; reading order as the share of ground-truth neighbours (consecutive items in
the document's order, matched to different blocks) that the blocks keep in order. The text layer's
figures (``PyMuPDFEngine`` on the PDFs themselves) are the reference. Cost: seconds per page of OCR
(render, detect, recognise), of the layout model and of the table model (ONNX runs). Prints only:
the figures go to ``docs/notes-issue37-scans.md`` by hand.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pymupdf

from eval.extraction import REPO_ROOT, docling_pairs
from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.geometry import Box, iou
from ocr_engine.layout.ocr_layout import OcrLine
from ocr_engine.options import CpuOcrOptions
from ocr_engine.schema import Block, Page

os.environ.setdefault("HF_HUB_OFFLINE", "1")

IOU_MIN = 0.5
# ground-truth label -> kind; folio block type -> kind
GT_KINDS = {
    "title": "heading",
    "section_header": "heading",
    "text": "text",
    "list_item": "list_item",
    "caption": "caption",
    "page_header": "furniture",
    "page_footer": "furniture",
    "formula": "formula",
    "footnote": "footnote",
    "code": "code",
    "table": "table",
    "picture": "figure",
}
OUR_KINDS = {
    "title": "heading",
    "section_header": "heading",
    "text": "text",
    "list_item": "list_item",
    "caption": "caption",
    "page_header": "furniture",
    "page_footer": "furniture",
    "formula": "formula",
    "footnote": "footnote",
    "code": "code",
    "table": "table",
    "figure": "figure",
}
KINDS = ["heading", "text", "list_item", "caption", "furniture", "formula", "figure", "table"]


@dataclass
class GtItem:
    kind: str
    box: Box
    cells: list[tuple[int, int, str]] = field(default_factory=list)


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w%.,()#+-]", " ", text.lower()).split())


def ground_truth(path: Path) -> dict[int, list[GtItem]]:
    """Ground-truth items per 1-based page in the document's order, top-left boxes, tables with
    their cells (row, column, normalised text)."""
    doc = json.loads(path.read_text())
    heights = {int(k): v["size"]["height"] for k, v in doc["pages"].items()}
    refs = {}
    for group in ("texts", "tables", "pictures"):
        for item in doc[group]:
            refs[item["self_ref"]] = item

    def ordered(node: dict[str, Any]) -> Iterable[dict[str, Any]]:
        for child in node.get("children", []):
            item = refs.get(child["$ref"]) or next(
                (g for g in doc.get("groups", []) if g["self_ref"] == child["$ref"]), None
            )
            if item is None:
                continue
            if item["self_ref"] in refs:
                yield item
            if item.get("children") and not item["self_ref"].startswith("#/tables"):
                yield from ordered(item)

    pages: dict[int, list[GtItem]] = {}
    seen = set()
    rest = [*doc["texts"], *doc["tables"], *doc["pictures"]]  # any not reached from the trees
    for item in [*ordered(doc["body"]), *ordered(doc.get("furniture", {})), *rest]:
        if item["self_ref"] in seen or item["label"] not in GT_KINDS:
            continue
        seen.add(item["self_ref"])
        cells = [
            (c["start_row_offset_idx"], c["start_col_offset_idx"], norm(c["text"]))
            for c in item.get("data", {}).get("table_cells", [])
            if norm(c["text"])
        ]
        for prov in item["prov"]:
            page, b = prov["page_no"], prov["bbox"]
            if b.get("coord_origin", "BOTTOMLEFT") == "BOTTOMLEFT":
                box = (b["l"], heights[page] - b["t"], b["r"], heights[page] - b["b"])
            else:
                box = (b["l"], b["t"], b["r"], b["b"])
            pages.setdefault(page, []).append(GtItem(GT_KINDS[item["label"]], box, cells))
    return pages


@dataclass
class Score:
    """Counts over pages: per kind, found ground-truth items and right blocks; cells; order."""

    recall: Counter[str] = field(default_factory=Counter)
    gt: Counter[str] = field(default_factory=Counter)
    precise: Counter[str] = field(default_factory=Counter)
    ours: Counter[str] = field(default_factory=Counter)
    cells: Counter[str] = field(default_factory=Counter)  # tp / pred / gt, and *_pos
    order_kept: int = 0
    order_pairs: int = 0

    def add(self, gt: list[GtItem], blocks: list[Block]) -> None:
        kinds = [OUR_KINDS.get(b.type.value, "text") for b in blocks]
        for item in gt:
            self.gt[item.kind] += 1
            self.gt["any"] += 1
            if any(iou(item.box, b.bbox) >= IOU_MIN for b in blocks):
                self.recall["any"] += 1
            if any(
                k == item.kind and iou(item.box, b.bbox) >= IOU_MIN
                for b, k in zip(blocks, kinds, strict=True)
            ):
                self.recall[item.kind] += 1
        for block, kind in zip(blocks, kinds, strict=True):
            self.ours[kind] += 1
            if any(g.kind == kind and iou(g.box, block.bbox) >= IOU_MIN for g in gt):
                self.precise[kind] += 1
        self._cells(gt, blocks)
        self._order(gt, blocks)

    def _cells(self, gt: list[GtItem], blocks: list[Block]) -> None:
        tables = [b for b in blocks if b.type.value == "table"]
        used: set[int] = set()
        foreign: set[int] = set()  # our tables matched to a table in a script the OCR cannot read
        for item in (g for g in gt if g.kind == "table"):
            latin = _latin(item.cells)
            self.cells["gt"] += len(item.cells)
            self.cells["gt_l"] += len(item.cells) if latin else 0
            match = max(
                (i for i in range(len(tables)) if i not in used),
                key=lambda i: iou(item.box, tables[i].bbox),
                default=None,
            )
            if match is None or iou(item.box, tables[match].bbox) < IOU_MIN:
                continue
            used.add(match)
            if not latin:
                foreign.add(match)
            ours = [(c.row, c.col, norm(c.text)) for c in tables[match].cells if norm(c.text)]
            want = Counter(t for _, _, t in item.cells)
            got = Counter(t for _, _, t in ours)
            for scope in ("", "_l") if latin else ("",):
                self.cells["tp" + scope] += sum((want & got).values())
                self.cells["tp_pos" + scope] += sum((Counter(item.cells) & Counter(ours)).values())
        for index, table in enumerate(tables):
            filled = sum(1 for c in table.cells if norm(c.text))
            self.cells["pred"] += filled
            self.cells["pred_l"] += filled if index not in foreign else 0

    def _order(self, gt: list[GtItem], blocks: list[Block]) -> None:
        matched = []
        for item in gt:
            best = max(
                range(len(blocks)), key=lambda i: iou(item.box, blocks[i].bbox), default=None
            )
            if best is not None and iou(item.box, blocks[best].bbox) >= IOU_MIN:
                matched.append(best)
        for a, b in pairwise(matched):
            if a != b:
                self.order_pairs += 1
                self.order_kept += a < b

    def share(self, kind: str) -> tuple[str, str]:
        def fmt(num: int, den: int) -> str:
            return f"{num / den:.3f} ({num}/{den})" if den else "n/a"

        return fmt(self.recall[kind], self.gt[kind]), fmt(self.precise[kind], self.ours[kind])

    def cell_f1(self, suffix: str = "", scope: str = "") -> str:
        tp = self.cells["tp" + suffix + scope]
        pred, gt = self.cells["pred" + scope], self.cells["gt" + scope]
        if not pred or not gt:
            return "n/a"
        p, r = tp / pred, tp / gt
        return f"{2 * p * r / (p + r) if p + r else 0.0:.3f} (P {p:.3f}, R {r:.3f})"


def _latin(cells: list[tuple[int, int, str]]) -> bool:
    """Whether a table's letters are mostly Latin (RapidOCR's models read no Korean, say)."""
    letters = [ch for _, _, text in cells for ch in text if ch.isalpha()]
    return not letters or sum(ch.isascii() for ch in letters) >= 0.8 * len(letters)


class CachedOcr(RapidOCREngine):
    """The CPU engine whose OCR (`read_image`) is done once per image, remembered in memory and
    optionally on disk; OCR seconds are counted on the first read."""

    def __init__(self, *args: Any, cache: Path | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache_dir = cache
        self.memory: dict[str, tuple[list[OcrLine], int]] = {}
        self.ocr_seconds = 0.0
        self.ocr_pages = 0

    def read_image(self, image: np.ndarray) -> tuple[list[OcrLine], int]:
        key = hashlib.sha1(image.tobytes() + str(image.shape).encode()).hexdigest()
        if key in self.memory:
            return self.memory[key]
        path = self.cache_dir / f"{key}.pkl" if self.cache_dir else None
        if path is not None and path.exists():
            self.memory[key] = pickle.loads(path.read_bytes())
            return self.memory[key]
        start = time.perf_counter()
        result = super().read_image(image)
        self.ocr_seconds += time.perf_counter() - start
        self.ocr_pages += 1
        self.memory[key] = result
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pickle.dumps(result))
        return result


def as_scan(page: pymupdf.Page, dpi: int) -> pymupdf.Document:
    """The page as an image-only page at `dpi`."""
    doc = pymupdf.open()
    scan = doc.new_page(width=page.rect.width, height=page.rect.height)
    scan.insert_image(scan.rect, pixmap=page.get_pixmap(dpi=dpi, alpha=False))
    return doc


def scanned_pairs(data: Path) -> list[tuple[Path, Path]]:
    """The scans of ``scanned/docling_ocr`` that have a ground truth (Docling's OCR of them)."""
    root = data / "scanned" / "docling_ocr"
    pairs = []
    for pdf in sorted((root / "pdf").glob("*.pdf")):
        gt = root / "groundtruth" / f"{pdf.stem}.tesseract.full_page.json"
        if gt.exists():
            pairs.append((pdf, gt))
    return pairs


def run(data: Path, dpi: int, only: str | None, cache: Path | None, corpus: str = "docling") -> str:
    """Every measurement; the markdown to paste."""
    from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine

    options = CpuOcrOptions(dpi=dpi)
    after = CachedOcr(options, cache=cache)
    before = CachedOcr(options, layout=False)
    before.memory = after.memory  # the same OCR lines, read once
    text_layer = PyMuPDFEngine()
    scores = {"text layer": Score(), "scan, layout off": Score(), "scan, layout on": Score()}
    pages = 0
    scans = corpus == "docling_ocr"  # pages that are scans already: read as they are
    for pdf, gt_path in scanned_pairs(data) if scans else docling_pairs(data):
        if only and only not in pdf.name:
            continue
        gt = ground_truth(gt_path)
        with pymupdf.open(pdf) as doc:
            for page in doc:
                items = gt.get(page.number + 1, [])
                scores["text layer"].add(items, text_layer.extract_page(page).blocks)
                with as_scan(page, dpi) if not scans else pymupdf.open() as scan:
                    target = page if scans else scan[0]
                    read_after: Page = after.extract_page(target)
                    before._models = after._models  # the RapidOCR sessions, loaded once
                    read_before = before.extract_page(target)
                scores["scan, layout on"].add(items, read_after.blocks)
                scores["scan, layout off"].add(items, read_before.blocks)
                pages += 1
    return report(scores, pages, after, dpi, only, corpus)


def report(
    scores: dict[str, Score],
    pages: int,
    engine: CachedOcr,
    dpi: int,
    only: str | None,
    corpus: str = "docling",
) -> str:
    names = list(scores)
    flags = (
        f"{f' --only {only}' if only else ''}{f' --corpus {corpus}' if corpus != 'docling' else ''}"
    )
    rows = [
        f"`python -m eval.scan_structure --dpi {dpi}{flags}` ({pages} pages)",
        "",
        "| item (recall / precision, IoU >= 0.5) | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    rows.append(
        "| text items matched by any block | "
        + " | ".join(scores[n].share("any")[0] for n in names)
        + " |"
    )
    for kind in KINDS:
        cells = [" / ".join(scores[n].share(kind)) for n in names]
        rows.append(f"| {kind} | " + " | ".join(cells) + " |")
    rows.append(
        "| table cells, F1 of texts | " + " | ".join(scores[n].cell_f1() for n in names) + " |"
    )
    rows.append(
        "| table cells, F1 of (row, col, text) | "
        + " | ".join(scores[n].cell_f1("_pos") for n in names)
        + " |"
    )
    rows.append(
        "| table cells, F1 of texts, tables in Latin script | "
        + " | ".join(scores[n].cell_f1("", "_l") for n in names)
        + " |"
    )
    rows.append(
        "| reading order (neighbours kept) | "
        + " | ".join(
            f"{s.order_kept / s.order_pairs:.3f} ({s.order_kept}/{s.order_pairs})"
            if s.order_pairs
            else "n/a"
            for s in scores.values()
        )
        + " |"
    )
    text_tables = scores["text layer"].recall["table"]
    scan_tables = scores["scan, layout on"].recall["table"]
    ratio = f"{scan_tables / text_tables:.2f}" if text_tables else "n/a"
    seconds = engine.scan_models.seconds
    ocr = engine.ocr_seconds / engine.ocr_pages if engine.ocr_pages else float("nan")
    rows += [
        "",
        "Tables found on the rasterised pages / on the text layer: "
        f"{scan_tables}/{text_tables} = {ratio}.",
        f"Seconds per page on this machine: OCR {ocr:.2f} (over {engine.ocr_pages} pages read, "
        f"not cached), layout model {seconds.get('layout', 0.0) / max(pages, 1):.2f}, table model "
        f"{seconds.get('table', 0.0) / max(pages, 1):.2f} (ONNX runs, per page of the corpus).",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval.scan_structure", description=__doc__)
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--only", help="only the PDFs whose name contains this")
    parser.add_argument("--cache", type=Path, help="keep the OCR lines of each page image here")
    parser.add_argument(
        "--corpus",
        choices=["docling", "docling_ocr"],
        default="docling",
        help="docling: the born-digital PDFs rasterised; docling_ocr: scanned/docling_ocr's scans",
    )
    args = parser.parse_args(argv)
    folder = args.data / ("docling" if args.corpus == "docling" else "scanned/docling_ocr")
    if not folder.exists():
        print(f"skipped: no {folder} (the benchmark reads ../shared/data in place)")
        return 0
    print(run(args.data, args.dpi, args.only, args.cache, args.corpus))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
