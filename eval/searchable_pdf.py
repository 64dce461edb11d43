"""Searchable PDF export: size overhead per page and export time, on a filing and on a scan.

    python -m eval.searchable_pdf [--filing 3M_2022_10K.pdf] [--scan-pages 50]

The filing (FinanceBench, born digital) is read with its text layer (`ocr=never`), so the export
should add almost nothing. The scan is the filing's first `--scan-pages` pages rendered at 150 dpi
into a picture-only PDF, read through the OCR simulator (DeepSeek-OCR's output format, synthesised
from the filing's own text), and exported with its invisible text layer. Reading is not timed:
only `searchable_pdf(document, pdf)`. Also checks every OCR'd line is found in its box.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pymupdf

from ocr_engine.engines.extract import extract_document
from ocr_engine.exports.searchable import is_ocr_page, ocr_lines, searchable_pdf
from ocr_engine.options import ExtractOptions, OcrMode, VLLMOptions
from ocr_engine.schema import Document

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "financebench" / "pdfs"


def _scan(pdf: bytes, pages: int) -> tuple[bytes, bytes]:
    """The first `pages` pages as pictures at 150 dpi, as a scanner makes them, and as they were
    (the simulator's text source)."""
    with pymupdf.open(stream=pdf) as source, pymupdf.open() as out, pymupdf.open() as text:
        text.insert_pdf(source, from_page=0, to_page=pages - 1)
        for page in list(source)[:pages]:
            pix = page.get_pixmap(dpi=150)
            out.new_page(width=page.rect.width, height=page.rect.height).insert_image(
                page.rect, pixmap=pix
            )
        return out.tobytes(deflate=True), text.tobytes()


def _found(out: bytes, document: Document) -> tuple[int, int]:
    """(lines found in their box, OCR'd lines), a word being its line's when its centre is in."""
    found = total = 0
    with pymupdf.open(stream=out) as doc:
        for page in document.pages:
            if not is_ocr_page(page):
                continue
            words = doc[page.number - 1].get_text("words")
            for line in ocr_lines(page):
                box = pymupdf.Rect(line.bbox)
                inside = [
                    (w[0], w[4])
                    for w in words
                    if box.contains(pymupdf.Point((w[0] + w[2]) / 2, (w[1] + w[3]) / 2))
                ]
                got = " ".join(t for _, t in sorted(inside))
                total += 1
                found += " ".join(got.split()) == " ".join(line.text.split())
    return found, total


def _measure(label: str, document: Document, pdf: bytes, repeat: int = 3) -> dict[str, object]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        out = searchable_pdf(document, pdf)
        times.append(time.perf_counter() - started)
    found, total = _found(out, document)
    ocr_pages = sum(is_ocr_page(p) for p in document.pages)
    return {
        "document": label,
        "pages": document.page_count,
        "ocr_pages": ocr_pages,
        "input_bytes": len(pdf),
        "output_bytes": len(out),
        "overhead_bytes_per_page": round((len(out) - len(pdf)) / document.page_count, 1),
        "export_s_median": round(sorted(times)[len(times) // 2], 3),
        "lines_found_in_box": f"{found}/{total}",
    }


def main(argv: list[str] | None = None) -> int:
    """Measure both documents and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--filing", default="3M_2022_10K.pdf")
    parser.add_argument("--scan-pages", type=int, default=50)
    args = parser.parse_args(argv)
    path = DATA / args.filing
    if not path.exists():
        print(f"skipped: {path} is absent")
        return 0
    pdf = path.read_bytes()
    filing = extract_document(pdf, source=path.name, options=ExtractOptions(ocr=OcrMode.never))
    print(json.dumps(_measure(f"{path.name} (text layer)", filing, pdf)), flush=True)

    from doubles.ocr_simulator import OcrSimulator  # the simulator is a test seam

    scan, text_source = _scan(pdf, args.scan_pages)
    with OcrSimulator(capacity=16) as sim:
        sim.register_pdf(scan, text_source=text_source)
        options = ExtractOptions(vllm=VLLMOptions(urls=[sim.url], retries=0))
        read = extract_document(scan, source="scan.pdf", options=options)
    label = f"{args.scan_pages}-page scan of {path.name} (OCR simulator)"
    print(json.dumps(_measure(label, read, scan)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
