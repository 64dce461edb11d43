"""MMLongBench-Doc dev: the raster figures figure OCR reads, and page recall without and with it.

    python -m eval.figure_ocr count [--sample 6]   # regions per document, seconds per region
    python -m eval.figure_ocr run --docs N          # page recall, figure OCR off and on
    python -m eval.figure_ocr gold                  # why the gold pages' figures are read or not

`count` finds the regions `raster_regions` picks on the text-layer pages of the 46 documents and
times the CPU engine on a sample of them. `run` indexes the text-layer documents that hold the
most Chart and Figure questions (the first N by that count, then by name; image-only documents
left out) twice with `ocr=auto`, figure OCR off and on, and asks every question with evidence
pages in those documents, by evidence source.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SOURCES = ("Chart", "Figure", "Table", "Pure-text", "Layout")


def count(data: Path, sample: int) -> str:
    """Regions per document and the CPU engine's seconds per region on `sample` of them."""
    import pymupdf

    from eval.retrieval_data import load_corpus
    from eval.retrieval_metrics import image_only_docs
    from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine, raster_regions
    from ocr_engine.engines.rapid_engine import RapidOCREngine
    from ocr_engine.options import ExtractOptions

    corpus = load_corpus("mmlongbench", data)
    skip = image_only_docs(corpus.pdfs)
    limit = ExtractOptions().figure_regions
    engine = PyMuPDFEngine()
    found: list[tuple[Path, int, tuple[float, float, float, float]]] = []
    per_doc: Counter[str] = Counter()
    pages = 0
    for path in corpus.pdfs:
        if path.stem in skip:
            continue
        with pymupdf.open(path) as pdf:
            for page in pdf:
                pages += 1
                try:
                    text_page = engine.extract_page(page)
                except Exception:  # counted as the reader would: a failed page reads nothing
                    continue
                for block in raster_regions(page, text_page, limit):
                    found.append((path, page.number + 1, block.bbox))
                    per_doc[path.stem] += 1
    ocr = RapidOCREngine()
    step = max(1, len(found) // max(sample, 1))
    timed = found[::step][:sample]
    seconds = []
    for path, number, box in timed:
        with pymupdf.open(path) as pdf:
            started = time.perf_counter()
            ocr.read_region(pdf[number - 1], box)
            seconds.append(time.perf_counter() - started)
    mean = sum(seconds[1:]) / max(len(seconds) - 1, 1)  # the first one loads the models
    lines = [
        f"{len(found)} regions on {pages} text-layer pages of {len(per_doc)} of "
        f"{len(corpus.pdfs) - len(skip)} text-layer documents",
        f"CPU OCR: {mean:.1f} s a region over {len(seconds) - 1} timed; estimated "
        f"{len(found) * mean / 60:.0f} min for all",
    ]
    lines += [f"  {stem}: {n}" for stem, n in per_doc.most_common()]
    return "\n".join(lines)


def run(data: Path, work: Path, docs: int) -> str:
    """Page recall by evidence source on the subset, figure OCR off and on."""
    from eval.evidence_boxes import box_figures, load_box_cases
    from eval.retrieval_data import load_corpus
    from eval.retrieval_index import open_folio
    from eval.retrieval_metrics import image_only_docs, score
    from retrieval.schema import QueryRequest

    corpus = load_corpus("mmlongbench", data)
    skip = image_only_docs(corpus.pdfs)
    visual: Counter[str] = Counter()
    for case in corpus.cases:
        if case.pages and {"Chart", "Figure"} & set(case.sources):
            visual.update(case.docs - skip)
    chosen = sorted(visual, key=lambda stem: (-visual[stem], stem))[:docs]
    pdfs = [p for p in corpus.pdfs if p.stem in chosen]
    cases = [c for c in corpus.cases if c.pages and c.docs & set(chosen)]
    out = [f"documents ({len(pdfs)}): {', '.join(sorted(chosen))}", ""]
    box_cases = load_box_cases(data, pdfs)
    boxes = []
    out.append(
        "| figure OCR | pages | ingest min | "
        + " | ".join(f"{s} R@5 (n)" for s in ("all", *SOURCES))
        + " |"
    )
    out.append("|---|---:|---:|" + "---:|" * (len(SOURCES) + 1))
    for on in (False, True):
        # the second index starts from the first one's pages (text layer and OCR alike)
        seed = "mmlongbench-figures" if on else "mmlongbench"
        index = open_folio("mmlongbench-figures", pdfs, work, ocr="auto", figure_ocr=on, seed=seed)
        try:
            ranked = []
            for case in cases:
                response = index.services.retriever.query(
                    QueryRequest(question=case.question, top_k=5)
                )
                ranked.append([(Path(h.source).stem, h.page) for h in response.hits])
            label = f"figure OCR {'on' if on else 'off'}"
            read = _figures_read(index.services)
            label += f" ({read[0]} regions read on {read[1]} pages, {read[2]} lines)"
            boxes.append(f"{label}: " + box_figures(index.services, box_cases, set(), skip))
        finally:
            index.services.close()
        cells = []
        for source in ("all", *SOURCES):
            picked = [
                (r, c)
                for r, c in zip(ranked, cases, strict=True)
                if source == "all" or source in c.sources
            ]
            recall = score([r for r, _ in picked], [c for _, c in picked], (5,)).page_recall[5]
            cells.append(f"{recall:.3f} ({len(picked)})" if recall is not None else "—")
        out.append(
            f"| {'on' if on else 'off'} | {index.pages} | {index.seconds / 60:.1f} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n\n".join(["\n".join(out), *boxes])


def _figures_read(services: Any) -> tuple[int, int, int]:
    """Figure blocks read by OCR in the indexed documents, the pages they are on, their lines."""
    regions = pages = lines = 0
    for doc_id in services.ledger.sources():
        for page in services.files.load_document(doc_id).pages:
            read = [b for b in page.blocks if b.engine is not None]
            regions += len(read)
            pages += bool(read)
            lines += sum(len(b.lines) for b in read)
    return regions, pages, lines


def gold(data: Path) -> str:
    """The distinct gold pages of the text-layer Chart and Figure questions, by what figure OCR
    does with them: page OCR reads the page, no raster image, read, or why not (the largest
    figure's reason)."""
    import pymupdf

    from eval.retrieval_data import load_corpus
    from eval.retrieval_metrics import image_only_docs
    from ocr_engine.engines.pymupdf_engine import (
        FIGURE_MAX_TEXT,
        FIGURE_MIN_PIXELS,
        FIGURE_MIN_SHARE,
        PyMuPDFEngine,
        raster_regions,
    )
    from ocr_engine.engines.routing import ocr_reason
    from ocr_engine.geometry import area, centre_inside, iou
    from ocr_engine.options import ExtractOptions
    from ocr_engine.schema import BlockType

    corpus = load_corpus("mmlongbench", data)
    skip = image_only_docs(corpus.pdfs)
    paths = {p.stem: p for p in corpus.pdfs}
    pages = sorted(
        {
            (doc, n)
            for case in corpus.cases
            if {"Chart", "Figure"} & set(case.sources)
            for doc in case.docs - skip
            for n in case.pages
        }
    )
    engine = PyMuPDFEngine()
    why: Counter[str] = Counter()
    for doc, n in pages:
        with pymupdf.open(paths[doc]) as pdf:
            if n > pdf.page_count:
                continue
            page = pdf[n - 1]
            text_page = engine.extract_page(page)
            if ocr_reason(page, text_page) is not None:
                why["read by page OCR"] += 1
                continue
            figures = [b for b in text_page.blocks if b.type is BlockType.figure]
            if not figures:
                why["no raster image"] += 1
                continue
            if raster_regions(page, text_page, ExtractOptions().figure_regions):
                why["read by figure OCR"] += 1
                continue
            largest = max(figures, key=lambda b: area(b.bbox))
            share = area(largest.bbox) / (page.rect.width * page.rect.height)
            sizes = [
                min(int(i.get("width", 0)), int(i.get("height", 0)))
                for i in page.get_image_info()
                if iou(tuple(i["bbox"]), largest.bbox) >= 0.9
            ]
            lines = [
                ln for b in text_page.blocks if b.type is not BlockType.figure for ln in b.lines
            ]
            inside = sum(
                len(ln.text.strip()) for ln in lines if centre_inside(ln.bbox, largest.bbox, 0)
            )
            if share < FIGURE_MIN_SHARE:
                why["images under the area share"] += 1
            elif max(sizes, default=0) < FIGURE_MIN_PIXELS:
                why["images under the pixel size"] += 1
            elif inside > FIGURE_MAX_TEXT:
                why["text-layer text over the image"] += 1
            else:
                why["other"] += 1
    total = sum(why.values())
    return f"{total} gold pages: " + ", ".join(f"{k} {v}" for k, v in why.most_common())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.figure_ocr", description=__doc__)
    parser.add_argument("command", choices=("count", "run", "gold"))
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, default=Path(".bench/retrieval"))
    parser.add_argument("--sample", type=int, default=6, help="count: regions timed")
    parser.add_argument("--docs", type=int, default=8, help="run: documents indexed")
    args = parser.parse_args(argv)
    if args.command == "count":
        print(count(args.data, args.sample))
    elif args.command == "gold":
        print(gold(args.data))
    else:
        print(run(args.data, args.work, args.docs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
