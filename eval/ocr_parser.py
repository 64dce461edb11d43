"""DeepSeek-OCR parser accuracy: recorded output for arXiv 2305.03393 p.9 against its text layer.

    python -m eval.ocr_parser [--data ../shared/data] [--blocks]

Parses `ocr_samples/deepseek_ocr__docling__deepseek_example.md` (real DeepSeek-OCR grounding
output for `docling/pdf/2305.03393v1-pg9.pdf`) with `ocr_engine.engines.deepseek.parse_grounding`
and matches its blocks one to one with the text-layer blocks of `PyMuPDFEngine` on the same page
(greedy on IoU, then text similarity for blocks that do not overlap). Reports per matched block the
box IoU and the text agreement (difflib ratio of normalised text: lower case, markup and
hyphenation spaces dropped; for tables the Dice overlap of cell words), and the estimated
line boxes of the matched blocks against the text layer's lines.
"""

from __future__ import annotations

import argparse
import difflib
import re
import statistics
import time
from collections import Counter
from pathlib import Path

import pymupdf

from ocr_engine.engines.deepseek import parse_grounding
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.geometry import iou
from ocr_engine.schema import Block, BlockType

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE = "ocr_samples/deepseek_ocr__docling__deepseek_example.md"
PDF = "docling/pdf/2305.03393v1-pg9.pdf"
_MARKUP = re.compile(r"\\[()\[\]]|</?[a-z]+[^>]*>|[#*|]|-{3,}")


def normalise(text: str) -> str:
    text = _MARKUP.sub(" ", text.lower())
    text = re.sub(r"(\w)- (\w)", r"\1-\2", text)  # "high- quality" as the model writes it
    return " ".join(text.split())


def block_text(block: Block) -> str:
    if block.type == BlockType.table:
        cells = sorted(block.cells, key=lambda c: (c.row, c.col))
        return normalise(" ".join(c.text for c in cells))
    return normalise(block.text)


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def agreement(p: Block, t: Block) -> float:
    """Text agreement of two matched blocks: difflib ratio, or for tables the Dice overlap of
    their cell words (the text layer may merge rows the model keeps apart, reordering them)."""
    if p.type == BlockType.table and t.type == BlockType.table:
        a, b = Counter(block_text(p).split()), Counter(block_text(t).split())
        total = sum(a.values()) + sum(b.values())
        return 2 * sum((a & b).values()) / total if total else 1.0
    return similarity(block_text(p), block_text(t))


def match(parsed: list[Block], truth: list[Block]) -> list[tuple[Block, Block]]:
    """One-to-one pairs, greedy on IoU (> 0.1), then on text similarity (> 0.6) for the rest."""
    pairs: list[tuple[Block, Block]] = []
    free_p, free_t = list(parsed), list(truth)
    candidates = sorted(
        ((iou(p.bbox, t.bbox), i, j) for i, p in enumerate(parsed) for j, t in enumerate(truth)),
        reverse=True,
    )
    for score, i, j in candidates:
        if score > 0.1 and parsed[i] in free_p and truth[j] in free_t:
            pairs.append((parsed[i], truth[j]))
            free_p.remove(parsed[i])
            free_t.remove(truth[j])
    for p in list(free_p):
        best = max(free_t, key=lambda t: similarity(block_text(p), block_text(t)), default=None)
        if best is not None and similarity(block_text(p), block_text(best)) > 0.6:
            pairs.append((p, best))
            free_p.remove(p)
            free_t.remove(best)
    return pairs


def _fmt(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.mean(values):.3f} / {statistics.median(values):.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--blocks", action="store_true", help="print every matched block")
    args = parser.parse_args(argv)
    sample, pdf = args.data / SAMPLE, args.data / PDF
    if not sample.exists() or not pdf.exists():
        print(f"skipped: need {sample} and {pdf}")
        return 0
    text = sample.read_text(encoding="utf-8")
    with pymupdf.open(pdf) as doc:
        truth = PyMuPDFEngine().extract_page(doc[0])
    started = time.perf_counter()
    rounds = 200
    for _ in range(rounds):
        parsed = parse_grounding(text, width=truth.width, height=truth.height, page_number=1)
    parse_ms = (time.perf_counter() - started) / rounds * 1000
    pairs = match(parsed, truth.blocks)
    matched_p = {id(p) for p, _ in pairs}
    matched_t = {id(t) for _, t in pairs}

    print("## DeepSeek-OCR parser vs the text layer (arXiv 2305.03393 p.9)\n")
    print("`python -m eval.ocr_parser" + (" --blocks" if args.blocks else "") + "`\n")
    if args.blocks:
        print("| parsed | text layer | IoU | text agreement |")
        print("|---|---|---:|---:|")
        for p, t in pairs:
            print(
                f"| {p.id} {p.type.value} | {t.id} {t.type.value} | {iou(p.bbox, t.bbox):.3f} "
                f"| {agreement(p, t):.3f} |"
            )
        print()
    ious = [iou(p.bbox, t.bbox) for p, t in pairs]
    texts = [agreement(p, t) for p, t in pairs]
    same_type = sum(1 for p, t in pairs if p.type == t.type)
    line_ious, count_errors = [], []
    for p, t in pairs:
        if p.type == BlockType.table or len(t.lines) < 2:
            continue
        count_errors.append(abs(len(p.lines) - len(t.lines)))
        for line in t.lines:
            line_ious.append(max((iou(line.bbox, e.bbox) for e in p.lines), default=0.0))
    print("| measure | value |")
    print("|---|---|")
    print(f"| parsed blocks matched | {len(pairs)} of {len(parsed)} |")
    print(f"| text-layer blocks matched | {len(pairs)} of {len(truth.blocks)} |")
    print(f"| box IoU, mean / median | {_fmt(ious)} |")
    print(f"| box IoU >= 0.8 | {sum(v >= 0.8 for v in ious)} of {len(ious)} |")
    print(f"| text agreement, mean / median | {_fmt(texts)} |")
    print(f"| same block type | {same_type} of {len(pairs)} |")
    print(
        f"| estimated lines vs text-layer lines (multi-line blocks), IoU mean / median "
        f"| {_fmt(line_ious)} over {len(line_ious)} lines |"
    )
    print(
        f"| text-layer lines with an estimated line at IoU > 0.5 "
        f"| {sum(v > 0.5 for v in line_ious)} of {len(line_ious)} |"
    )
    print(
        f"| line count off by (per block), mean / max | "
        f"{statistics.mean(count_errors) if count_errors else 0:.2f} / "
        f"{max(count_errors, default=0)} |"
    )
    print(f"| parse time per page | {parse_ms:.2f} ms |")
    from eval.bench_results import BenchRow, record

    page = "DeepSeek-OCR recorded output of arXiv 2305.03393 p.9, against its text layer"
    record(
        "ocr-parser",
        "Reading pages",
        "python -m eval ocr_parser",
        [
            BenchRow(
                set=page,
                figure="text-layer blocks matched",
                value=f"{len(pairs)}/{len(truth.blocks)}",
            ),
            BenchRow(
                set=page,
                figure="box IoU >= 0.8",
                value=f"{sum(v >= 0.8 for v in ious)}/{len(ious)}",
            ),
            BenchRow(set=page, figure="text agreement, mean / median", value=_fmt(texts)),
            BenchRow(set=page, figure="same block type", value=f"{same_type}/{len(pairs)}"),
        ],
    )
    unmatched_t = [t for t in truth.blocks if id(t) not in matched_t]
    unmatched_p = [p for p in parsed if id(p) not in matched_p]
    print()
    for label, blocks in (("text layer", unmatched_t), ("parsed", unmatched_p)):
        for b in blocks:
            print(f"- unmatched {label} block {b.id} ({b.type.value}): {b.text[:60]!r}")
    types = [(p.id, p.type.value, t.type.value) for p, t in pairs if p.type != t.type]
    for pid, got, want in types:
        print(f"- {pid}: parsed as {got}, text layer says {want}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
