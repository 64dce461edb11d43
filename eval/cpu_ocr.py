"""CPU OCR: speed and character accuracy of folio's RapidOCR engine, stock RapidOCR and Tesseract.

    python -m eval.cpu_ocr [--data ../shared/data] [--dpi 200] [--det-side 1280] [--threads N]
                           [--only NAME] [--no-stock] [--no-tesseract] [--sweep 960,1280,1600]
                           [--layout-off]

Pages: the human gold text of ``scanned/tesseract_test`` (lossless PDF wraps of the TIFFs, and
the two rotated phototest PNGs); Docling's ``ocr_test`` scan upright and with /Rotate 90, 180,
270 against its ground-truth text; ``olmocr_gnarly/edgar_image.pdf`` against the text layer of
``edgar.pdf`` (in its content-stream order: the page is a Wikipedia article with an infobox, so
any reading order differs from it somewhere; word recall is the fairer measure there), and
``edgar-rotated90.pdf`` (the born-digital page with /Rotate 90, read by OCR on purpose) against
the same text. Every engine reads the same render (``--dpi``, the engine's
pixel cap). Character accuracy is 1 - Levenshtein distance / max(length) on whitespace-normalised
text, so reading order counts; word recall (the share of gold words found, as a multiset) does not.
Seconds per page: folio = ``extract_page`` (render, detect, orient, recognise, layout; with
``--layout-off`` also the engine without its layout models, which reads every page again); stock
RapidOCR = ``RapidOCR()(image)`` with its default config; Tesseract = the ``tesseract`` CLI on the
PNG of the render with ``--psm 1`` (page segmentation with orientation detection). The first page
of every engine is preceded by a warm-up call on it, so model loading is not timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pymupdf

from ocr_engine.engines.rapid_engine import DEFAULT_DET_SIDE, RapidOCREngine, render_array
from ocr_engine.options import CpuOcrOptions

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclass(frozen=True)
class Case:
    """One page to read and the text it should read as."""

    name: str
    path: Path
    gold: str
    index: int = 0


@dataclass
class Score:
    pages: int = 0
    seconds: float = 0.0
    chars: int = 0
    distance: int = 0
    words: int = 0
    found: int = 0
    rows: list[str] = field(default_factory=list)

    def add(self, gold: str, text: str, seconds: float) -> tuple[float, float]:
        g, t = normalise(gold), normalise(text)
        dist = levenshtein(g, t)
        longest = max(len(g), len(t), 1)
        gw, tw = Counter(g.split()), Counter(t.split())
        hit = sum((gw & tw).values())
        self.pages += 1
        self.seconds += seconds
        self.chars += longest
        self.distance += dist
        self.words += sum(gw.values())
        self.found += hit
        return 1 - dist / longest, hit / max(sum(gw.values()), 1)

    @property
    def accuracy(self) -> float:
        return 1 - self.distance / max(self.chars, 1)

    @property
    def recall(self) -> float:
        return self.found / max(self.words, 1)


def normalise(text: str) -> str:
    return " ".join(text.split())


def levenshtein(a: str, b: str) -> int:
    """Edit distance, one numpy row per character of `a` (insertions by a running minimum)."""
    if not a or not b:
        return max(len(a), len(b))
    codes = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    steps = np.arange(len(b) + 1)
    row = steps.copy()
    for i, char in enumerate(a, start=1):
        cost = (codes != ord(char)).astype(np.int64)
        new = np.empty_like(row)
        new[0] = i
        new[1:] = np.minimum(row[1:] + 1, row[:-1] + cost)
        new = np.minimum.accumulate(new - steps) + steps
        row = new
    return int(row[-1])


def cases(data: Path) -> list[Case]:
    """The pages with gold text that exist under `data`."""
    out: list[Case] = []
    tess = data / "scanned" / "tesseract_test"
    for pdf in sorted((tess / "derived_pdf").glob("*.pdf")):
        gold = tess / f"{pdf.stem}.txt"
        if not gold.exists():
            gold = tess / f"{pdf.stem}.gold.txt"
        if gold.exists():
            out.append(Case(pdf.stem, pdf, gold.read_text(encoding="utf-8")))
    photo_gold = tess / "phototest.gold.txt"
    for png in sorted(tess.glob("phototest-rotated-*.png")):
        if photo_gold.exists():
            out.append(Case(png.stem, png, photo_gold.read_text(encoding="utf-8")))
    docling = data / "scanned" / "docling_ocr"
    docling_gold = docling / "groundtruth" / "ocr_test.tesseract.full_page.md"
    if docling_gold.exists():
        for pdf in sorted((docling / "pdf").glob("ocr_test*.pdf")):
            out.append(Case(pdf.stem, pdf, docling_gold.read_text(encoding="utf-8")))
    gnarly = data / "scanned" / "olmocr_gnarly"
    if (gnarly / "edgar.pdf").exists():
        with pymupdf.open(gnarly / "edgar.pdf") as doc:
            truth = doc[0].get_text()  # the producer's (HTML) order: infobox, article, URL
        for name in ("edgar_image", "edgar-rotated90"):
            if (gnarly / f"{name}.pdf").exists():
                out.append(Case(name, gnarly / f"{name}.pdf", truth))
    return out


def open_page(case: Case) -> tuple[pymupdf.Document, pymupdf.Page]:
    doc = pymupdf.open(case.path)
    if not doc.is_pdf:  # an image file: wrap it as a PDF page, as a scanner would
        pdf = pymupdf.open("pdf", doc.convert_to_pdf())
        doc.close()
        doc = pdf
    return doc, doc[case.index]


Reader = Callable[[pymupdf.Page, Path], str]


def folio_reader(engine: RapidOCREngine) -> Reader:
    def read(page: pymupdf.Page, _png: Path) -> str:
        result = engine.extract_page(page)
        return "\n".join(block.text for block in result.blocks)

    return read


def stock_reader(options: CpuOcrOptions) -> Reader:
    from rapidocr import RapidOCR

    reader = RapidOCR(params={"Global.log_level": "warning"})

    def read(page: pymupdf.Page, _png: Path) -> str:
        image = render_array(page, options.dpi, options.max_pixels).image
        result = reader(image)
        return "\n".join(getattr(result, "txts", None) or ())

    return read


def tesseract_reader(page: pymupdf.Page, png: Path) -> str:
    done = subprocess.run(
        ["tesseract", str(png), "-", "--psm", "1", "-l", "eng"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"tesseract failed: {done.stderr.strip()[-300:]}")
    return done.stdout


def run(readers: dict[str, Reader], pages: list[Case], options: CpuOcrOptions) -> dict[str, Score]:
    scores = {name: Score() for name in readers}
    with tempfile.TemporaryDirectory(prefix="folio-cpu-ocr-") as work:
        for case in pages:
            doc, page = open_page(case)
            render = render_array(page, options.dpi, options.max_pixels)
            png = Path(work) / f"{case.name}.png"
            pymupdf.Pixmap(
                pymupdf.csRGB,
                render.image.shape[1],
                render.image.shape[0],
                render.image.tobytes(),
                False,
            ).save(png)
            for name, read in readers.items():
                if scores[name].pages == 0:
                    read(page, png)  # warm-up: model loading and first-shape costs
                start = time.perf_counter()
                text = read(page, png)
                seconds = time.perf_counter() - start
                acc, recall = scores[name].add(case.gold, text, seconds)
                scores[name].rows.append(
                    f"| {case.name} | {name} | {seconds:.2f} | {acc:.3f} | {recall:.3f} |"
                )
                print(
                    f"  {case.name:<26} {name:<22} {seconds:6.2f} s  acc {acc:.3f}", file=sys.stderr
                )
            doc.close()
    return scores


def report(scores: dict[str, Score], command: str) -> None:
    print(f"`{command}`\n")
    print("| page | engine | s/page | char accuracy | word recall |\n|---|---|---:|---:|---:|")
    rows = list(zip(*(s.rows for s in scores.values()), strict=True))
    for group in rows:
        for row in group:
            print(row)
    print("\n| engine | pages | pages/s | char accuracy | word recall |\n|---|---:|---:|---:|---:|")
    for name, s in scores.items():
        rate = s.pages / s.seconds if s.seconds else 0.0
        print(f"| {name} | {s.pages} | {rate:.3f} | {s.accuracy:.3f} | {s.recall:.3f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--dpi", type=int, default=CpuOcrOptions().dpi)
    parser.add_argument("--det-side", type=int, default=DEFAULT_DET_SIDE)
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--only", action="append", default=[], help="page name (repeatable)")
    parser.add_argument("--no-stock", action="store_true", help="skip stock RapidOCR")
    parser.add_argument("--no-tesseract", action="store_true")
    parser.add_argument("--sweep", default="", help="also run folio at these det sides: 960,1600")
    parser.add_argument("--layout-off", action="store_true", help="also folio without layout")
    args = parser.parse_args(argv)
    pages = [c for c in cases(args.data) if not args.only or c.name in args.only]
    if not pages:
        print(f"skipped: no gold pages under {args.data} (the benchmark reads ../shared/data)")
        return 0
    options = CpuOcrOptions(dpi=args.dpi)
    readers: dict[str, Reader] = {
        f"folio rapidocr det {args.det_side}": folio_reader(
            RapidOCREngine(options, det_side=args.det_side, threads=args.threads)
        )
    }
    if args.layout_off:
        readers[f"folio rapidocr det {args.det_side}, layout off"] = folio_reader(
            RapidOCREngine(options, det_side=args.det_side, threads=args.threads, layout=False)
        )
    for side in (int(s) for s in args.sweep.split(",") if s.strip()):
        readers[f"folio rapidocr det {side}"] = folio_reader(
            RapidOCREngine(options, det_side=side, threads=args.threads)
        )
    if not args.no_stock:
        readers["rapidocr stock"] = stock_reader(options)
    if not args.no_tesseract:
        if shutil.which("tesseract"):
            readers["tesseract --psm 1"] = tesseract_reader
        else:
            print("tesseract not found: install it with `apt-get install -y tesseract-ocr`\n")
    scores = run(readers, pages, options)
    command = "python -m eval.cpu_ocr " + " ".join(argv if argv is not None else sys.argv[1:])
    report(scores, command.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
