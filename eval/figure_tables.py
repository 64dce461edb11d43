"""Pictures of tables inside text-layer pages: the Docling PDFs' tables pasted back as images.

    python -m eval.figure_tables [--data ../shared/data] [--dpi 150] [--cache DIR]

Every page of ``docling/pdf`` whose DoclingDocument ground truth holds a table is copied with each
table's area cut out of its text layer (a redaction) and replaced by a ``--dpi`` picture of that
area, so the page keeps its text layer around a picture of a table, as a report with a pasted
screenshot of a table does. The page is read the way folio reads it (``PageReader``, the default
options: pages routed, large raster figures read by OCR) twice from the same OCR lines: with the
CPU engine's layout models (a picture that is mostly a table read as a table, ``figure_tables``)
and without them (``RapidOCREngine(layout=False)``: the picture keeps the lines read inside it, as
before). Tables and cells are compared with the ground truth as ``eval.scan_structure`` does
(IoU >= 0.5; cell-level F1 of the normalised texts); the original pages' text layer is the
reference. Prints the table and records the tables found and the cell-level F1 (area Reading
pages of docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pymupdf

from eval.extraction import REPO_ROOT, docling_pairs
from eval.scan_structure import CachedOcr, Score, ground_truth
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.reader import PageReader, sent_to_ocr
from ocr_engine.geometry import Box
from ocr_engine.options import CpuOcrOptions, ExtractOptions
from ocr_engine.schema import Page

PAD = 2.0  # points around a ground-truth table box taken into its picture


def with_table_pictures(doc: pymupdf.Document, number: int, boxes: list[Box], dpi: int) -> bytes:
    """Page `number` (0-based) of `doc` alone, each of `boxes` (top-left points) cut out of its
    text layer and replaced by a `dpi` picture of what the page showed there."""
    out = pymupdf.open()
    out.insert_pdf(doc, from_page=number, to_page=number)
    page = out[0]
    pictures = []
    for box in boxes:
        rect = pymupdf.Rect(box[0] - PAD, box[1] - PAD, box[2] + PAD, box[3] + PAD) & page.rect
        pictures.append((rect, doc[number].get_pixmap(dpi=dpi, clip=rect, alpha=False)))
        page.add_redact_annot(rect, fill=(1, 1, 1))
    page.apply_redactions()
    for rect, pixmap in pictures:
        page.insert_image(rect, pixmap=pixmap)
    return out.tobytes()


def _read(reader: PageReader, data: bytes) -> Page:
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        return reader.read(pdf, data, "doc", [1])[0]


def run(data: Path, dpi: int, cache: Path | None) -> str:
    """Every measurement; the markdown to paste."""
    options = CpuOcrOptions(dpi=dpi)
    after = CachedOcr(options, cache=cache)
    before = CachedOcr(options, layout=False)
    before.memory = after.memory  # the same OCR lines, read once
    text_layer = PyMuPDFEngine()
    readers = {
        "text layer, no pictures": None,
        "pictures, before (lines)": PageReader(ExtractOptions(), engines=[before, text_layer]),
        "pictures, layout models": PageReader(ExtractOptions(), engines=[after, text_layer]),
    }
    scores = {name: Score() for name in readers}
    pages = pictures = routed = 0
    seconds = 0.0
    for pdf, gt_path in docling_pairs(data):
        gt = ground_truth(gt_path)
        with pymupdf.open(pdf) as doc:
            for page in doc:
                items = gt.get(page.number + 1, [])
                boxes = [item.box for item in items if item.kind == "table"]
                if not boxes:
                    continue
                pages += 1
                pictures += len(boxes)
                scores["text layer, no pictures"].add(items, text_layer.extract_page(page).blocks)
                pasted = with_table_pictures(doc, page.number, boxes, dpi)
                for name, reader in readers.items():
                    if reader is None:
                        continue
                    start = time.perf_counter()
                    read = _read(reader, pasted)
                    before._models = after._models  # the RapidOCR sessions, loaded once
                    if reader.engines[0] is after:
                        seconds += time.perf_counter() - start
                        routed += sent_to_ocr(read)
                    scores[name].add(items, read.blocks)
    ocr = (before.ocr_seconds + after.ocr_seconds, before.ocr_pages + after.ocr_pages)
    _record(scores, pages, pictures, dpi)
    return report(scores, pages, pictures, routed, seconds, ocr, after, dpi)


def _record(scores: dict[str, Score], pages: int, pictures: int, dpi: int) -> None:
    from eval.bench_results import BenchRow, record

    where = f"Docling tables pasted as {dpi}-dpi pictures ({pages} pages, {pictures} tables)"
    text_layer, before, after = (scores[name] for name in scores)
    found = f"{after.recall['table']}/{after.gt['table']}"
    record(
        "figure-tables",
        "Reading pages",
        f"python -m eval figure_tables --dpi {dpi}",
        [
            BenchRow(
                set=where,
                figure="tables found (IoU >= 0.5), the layout models on pictures",
                value=found,
                baseline=f"{before.recall['table']}/{before.gt['table']} without them (lines), "
                f"{text_layer.recall['table']}/{text_layer.gt['table']} on the text layer",
            ),
            BenchRow(
                set=where,
                figure="table cells, F1 of texts",
                value=after.cell_f1().split(" ")[0],
                baseline=f"{text_layer.cell_f1().split(' ')[0]} on the text layer",
            ),
        ],
    )


def report(
    scores: dict[str, Score],
    pages: int,
    pictures: int,
    routed: int,
    seconds: float,
    ocr: tuple[float, int],
    engine: CachedOcr,
    dpi: int,
) -> str:
    names = list(scores)
    rows = [
        f"`python -m eval.figure_tables --dpi {dpi}` ({pages} pages, {pictures} tables pasted as "
        f"pictures; {routed} of the pages routed to page OCR by `--ocr auto`)",
        "",
        "| figure | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
        "| tables found (recall / precision, IoU >= 0.5) | "
        + " | ".join(" / ".join(scores[n].share("table")) for n in names)
        + " |",
        "| table cells, F1 of texts | " + " | ".join(scores[n].cell_f1() for n in names) + " |",
        "| table cells, F1 of (row, col, text) | "
        + " | ".join(scores[n].cell_f1("_pos") for n in names)
        + " |",
        "| table cells, F1 of texts, tables in Latin script | "
        + " | ".join(scores[n].cell_f1("", "_l") for n in names)
        + " |",
        "| text items matched by any block | "
        + " | ".join(scores[n].share("any")[0] for n in names)
        + " |",
        "",
        f"Seconds on this machine: OCR {ocr[0] / max(ocr[1], 1):.2f} a picture ({ocr[1]} read, "
        f"not cached); with the OCR lines read, a page with the layout models "
        f"{seconds / max(pages, 1):.2f}, of which the layout model "
        f"{engine.scan_models.seconds.get('layout', 0.0) / max(pictures, 1):.2f} and the table "
        f"model {engine.scan_models.seconds.get('table', 0.0) / max(pictures, 1):.2f} a picture.",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval.figure_tables", description=__doc__)
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--cache", type=Path, help="keep the OCR lines of each picture here")
    args = parser.parse_args(argv)
    if not (args.data / "docling").exists():
        print(f"skipped: no {args.data / 'docling'} (the benchmark reads ../shared/data in place)")
        return 0
    print(run(args.data, args.dpi, args.cache))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
