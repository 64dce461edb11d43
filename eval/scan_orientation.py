"""Page orientation on scans: the text boxes' shape + direction vote (today) against the classifier.

    python -m eval.scan_orientation [--data ../shared/data] [--dpi 100]

Pages: the turned files of ``scanned`` as displayed (``ocrmypdf/cardinal.pdf``'s four pages at 0,
90, 180 and 270, ``ocrmypdf/rotated_skew.pdf``, ``olmocr_gnarly/edgar-rotated90.pdf``, the two
turned phototest PNGs, Docling's turned ``ocr_test`` pages and ``sample_with_rotation_mismatch``;
their right answer was read off the pages by eye and is written below), and every upright TIFF of
``tesseract_test`` and Docling's ``ocr_test.pdf`` turned by 0, 90, 180 and 270 in the benchmark.
Each method says how many quarter turns right the render (``RapidOCREngine.orient``:
``orientation="text"`` or ``"model"``); the share it gets right, and its seconds per page.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pymupdf
from PIL import Image

from eval.extraction import REPO_ROOT
from ocr_engine.engines.rapid_engine import RapidOCREngine
from ocr_engine.options import CpuOcrOptions

# file under scanned/, page (0-based) -> quarter turns (np.rot90) that right the displayed page
TURNED = {
    ("ocrmypdf/cardinal.pdf", 0): 0,
    ("ocrmypdf/cardinal.pdf", 1): 1,
    ("ocrmypdf/cardinal.pdf", 2): 2,
    ("ocrmypdf/cardinal.pdf", 3): 3,
    ("ocrmypdf/rotated_skew.pdf", 0): 0,
    ("olmocr_gnarly/edgar-rotated90.pdf", 0): 1,
    ("tesseract_test/phototest-rotated-R.png", 0): 1,
    ("tesseract_test/phototest-rotated-180.png", 0): 2,
    ("docling_ocr/pdf/ocr_test_rotated_90.pdf", 0): 3,
    ("docling_ocr/pdf/ocr_test_rotated_180.pdf", 0): 2,
    ("docling_ocr/pdf/ocr_test_rotated_270.pdf", 0): 1,
    ("docling_ocr/pdf/sample_with_rotation_mismatch.pdf", 0): 0,
}
UPRIGHT = ["tesseract_test/*.tif", "docling_ocr/pdf/ocr_test.pdf"]


def render(path: Path, number: int, dpi: int) -> np.ndarray:
    """Page `number` of a PDF or image file as displayed, RGB."""
    if path.suffix.lower() in (".png", ".tif", ".tiff", ".jpg"):
        with Image.open(path) as image:
            image.seek(number)
            return np.asarray(image.convert("RGB"))
    with pymupdf.open(path) as doc:
        pix = doc[number].get_pixmap(dpi=dpi, alpha=False)
        return np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3).copy()


def cases(root: Path, dpi: int) -> Iterator[tuple[str, np.ndarray, int]]:
    """(name, image, right turns) of every page measured."""
    for (name, number), turns in TURNED.items():
        if (root / name).exists():
            yield f"{name}:{number}", render(root / name, number, dpi), turns
    for pattern in UPRIGHT:
        for path in sorted(root.glob(pattern)):
            upright = render(path, 0, dpi)
            for k in range(4):
                yield f"{path.name} turned {k}", np.ascontiguousarray(np.rot90(upright, k)), -k % 4


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval.scan_orientation", description=__doc__)
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--dpi", type=int, default=100, help="render of the PDF pages")
    parser.add_argument("--verbose", action="store_true", help="every page's answers")
    args = parser.parse_args(argv)
    root = args.data / "scanned"
    if not root.exists():
        parser.error(f"no scanned data under {args.data}")
    text = RapidOCREngine(CpuOcrOptions())
    model = RapidOCREngine(CpuOcrOptions(), orientation="model")
    model._models = text._load()  # the same RapidOCR sessions
    right = {"text": 0, "model": 0}
    seconds = {"text": 0.0, "model": 0.0}
    turned = {"text": 0, "model": 0}
    total = n_turned = 0
    for name, image, want in cases(root, args.dpi):
        total += 1
        n_turned += want != 0
        answers = []
        for label, engine in (("text", text), ("model", model)):
            start = time.perf_counter()
            got = engine.orient(image)[2]
            seconds[label] += time.perf_counter() - start
            right[label] += got == want
            turned[label] += got == want and want != 0
            answers.append(f"{label} {got}")
        if args.verbose:
            print(f"{name}: want {want}, " + ", ".join(answers))
    print(f"`python -m eval.scan_orientation --dpi {args.dpi}` ({total} pages, {n_turned} turned)")
    print()
    print("| method | right | right among the turned | s/page (detect + orient) |")
    print("|---|---:|---:|---:|")
    for label in ("text", "model"):
        print(
            f"| {label} | {right[label]}/{total} | {turned[label]}/{n_turned} "
            f"| {seconds[label] / max(total, 1):.2f} |"
        )
    from eval.bench_results import BenchRow, record

    pages = f"scanned test files ({total} pages, {n_turned} turned)"
    record(
        "scan-orientation",
        "Reading pages",
        f"python -m eval scan_orientation --dpi {args.dpi}",
        [
            BenchRow(
                set=pages,
                figure=f"orientation right: {label}"
                + (" (the default)" if label == "text" else ""),
                value=f"{right[label]}/{total}",
                baseline="chance 0.25",
            )
            for label in ("text", "model")
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
