"""dots.ocr and MinerU2.5: their recorded outputs parsed, and every docling page through the
simulator in each model's protocol (what the client does per page, what it costs on the CPU).

    python -m eval.vlm_parsers [--data ../shared/data] [--pages N]

1. dots.ocr's recorded output for `docling/pdf/multi_page.pdf` page 1 (`ocr_samples/dots_ocr__
   docling__dots_list.json`) parsed by `ocr_engine.engines.dots_ocr.parse_dots` for the page
   rendered at 144 dpi, matched one to one with the page's text-layer blocks
   (`eval.ocr_parser.match`).
2. MinerU2.5's recorded layout (its page is not in the shared data): regions kept, requests a page.
3. Every page of `docling/pdf/*.pdf` (at most N) registered with the OCR simulator serving each
   model, read by `VLLMEngine` (render processes, as in production), its blocks matched with the
   text layer's: the synthesised answers are exact, so this measures the protocol and the
   coordinate round trip (grids, smart_resize, crops), not the model.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import pymupdf

from doubles.ocr_simulator import OcrSimulator
from eval.ocr_parser import agreement, match
from ocr_engine.engines.dots_ocr import parse_dots
from ocr_engine.engines.mineru import content_prompt, parse_layout
from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.render import render_page
from ocr_engine.engines.vllm_engine import VLLMEngine
from ocr_engine.geometry import iou
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import PageStatus

REPO_ROOT = Path(__file__).resolve().parent.parent
DOTS_SAMPLE = "ocr_samples/dots_ocr__docling__dots_list.json"
MINERU_SAMPLE = "ocr_samples/mineru25__myhloli_mineru-vl-utils__baige_page8_layout.txt"
MODELS = ("deepseek-ai/DeepSeek-OCR", "rednote-hilab/dots.ocr", "opendatalab/MinerU2.5-2509-1.2B")


def _mean_median(values: list[float]) -> str:
    if not values:
        return "—"
    return f"{statistics.mean(values):.3f} / {statistics.median(values):.3f}"


def recorded(data: Path) -> None:
    pdf = data / "docling/pdf/multi_page.pdf"
    with pymupdf.open(pdf) as doc:
        truth = PyMuPDFEngine().extract_page(doc[0])
        image = render_page(doc[0], dpi=144)
    text = (data / DOTS_SAMPLE).read_text(encoding="utf-8")
    started = time.perf_counter()
    for _ in range(100):
        parsed = parse_dots(
            text,
            width=image.width_pt,
            height=image.height_pt,
            page_number=1,
            width_px=image.width_px,
            height_px=image.height_px,
        )
    parse_ms = (time.perf_counter() - started) * 10
    pairs = match(parsed, truth.blocks)
    ious = [iou(p.bbox, t.bbox) for p, t in pairs]
    print("## dots.ocr recorded output vs the text layer (docling multi_page.pdf p.1)\n")
    print("| measure | value |\n|---|---|")
    print(f"| parsed blocks matched | {len(pairs)} of {len(parsed)} |")
    print(f"| text-layer blocks matched | {len(pairs)} of {len(truth.blocks)} |")
    print(f"| box IoU, mean / median | {_mean_median(ious)} |")
    print(f"| box IoU >= 0.8 | {sum(v >= 0.8 for v in ious)} of {len(ious)} |")
    print(
        f"| text agreement, mean / median | {_mean_median([agreement(p, t) for p, t in pairs])} |"
    )
    print(f"| same block type | {sum(p.type == t.type for p, t in pairs)} of {len(pairs)} |")
    print(f"| parse time | {parse_ms:.2f} ms |\n")
    layout = (data / MINERU_SAMPLE).read_text(encoding="utf-8")
    regions = parse_layout(layout)
    asked = sum(content_prompt(r) is not None for r in regions)
    print("## MinerU2.5 recorded layout (mineru-vl-utils' baige page 8)\n")
    print(
        f"{layout.count('<|box_start|>')} layout lines -> {len(regions)} regions after dedup; "
        f"{asked} region requests, so {1 + asked} requests for the page\n"
    )


def simulated(data: Path, limit: int) -> None:
    pdfs = sorted((data / "docling/pdf").glob("*.pdf"))
    print(
        f"## Every docling page through the simulator ({len(pdfs)} PDFs, at most {limit} pages)\n"
    )
    print(
        "| model | pages ok | requests / page | client CPU ms / page (render+encode+parse) "
        "| blocks matched | box IoU mean / median | same type | text agreement mean |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for model in MODELS:
        ok = pages = requests = 0
        cpu = 0.0
        ious: list[float] = []
        texts: list[float] = []
        same = matched = total = 0
        with OcrSimulator(model=model) as sim:
            options = VLLMOptions(urls=[sim.url], model=model, retries=0)
            with VLLMEngine(options) as engine:
                for path in pdfs:
                    data_bytes = path.read_bytes()
                    with pymupdf.open(stream=data_bytes) as doc:
                        numbers = list(range(1, min(doc.page_count, limit - pages) + 1))
                        truths = [PyMuPDFEngine().extract_page(doc[n - 1]) for n in numbers]
                    if not numbers:
                        break
                    sim.register_pdf(data_bytes)
                    read = engine.read_pages_sync(data_bytes, numbers)
                    stats = engine.last_run
                    pages += len(numbers)
                    requests += stats.requests
                    cpu += stats.render_cpu_s + stats.encode_cpu_s + stats.parse_cpu_s
                    for page, truth in zip(read, truths, strict=True):
                        if page.status is not PageStatus.ok:
                            continue
                        ok += 1
                        pairs = match(page.blocks, truth.blocks)
                        total += len(truth.blocks)
                        matched += len(pairs)
                        same += sum(p.type == t.type for p, t in pairs)
                        ious += [iou(p.bbox, t.bbox) for p, t in pairs]
                        texts += [agreement(p, t) for p, t in pairs]
        print(
            f"| {model} | {ok} of {pages} | {requests / max(pages, 1):.1f} "
            f"| {cpu / max(pages, 1) * 1000:.0f} | {matched} of {total} | {_mean_median(ious)} "
            f"| {same} of {matched} | {statistics.mean(texts) if texts else 0:.3f} |"
        )
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--pages", type=int, default=60, help="at most this many pages a model")
    args = parser.parse_args(argv)
    needed = [args.data / DOTS_SAMPLE, args.data / MINERU_SAMPLE, args.data / "docling/pdf"]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        print(f"skipped: need {', '.join(missing)}")
        return 0
    print(
        "`python -m eval.vlm_parsers"
        + (f" --pages {args.pages}" if args.pages != 60 else "")
        + "`\n"
    )
    recorded(args.data)
    simulated(args.data, args.pages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
