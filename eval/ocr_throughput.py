"""vLLM engine throughput against the OCR simulator's ideal, rendering included, and its CPU cost.

    python -m eval.ocr_throughput [--tokens-per-s 100] [--page-tokens 1000] [--capacity 64]
        [--levels 1,8,32,64] [--pages 2,24,96,256] [--render-workers 2] [--renderer process]

The simulator runs in a subprocess and answers every page after exactly ``page_tokens /
tokens_per_s`` seconds, at most `capacity` at once. For each level a new `VLLMEngine` starts its
render workers ("start s", `VLLMEngine.start`), then one `read_pages` call reads that many pages
(the 48 pages of the Docling test PDFs, in turn) with `max_in_flight` set to the level. Ideal:
``min(in_flight, capacity) / latency`` pages/s. Client CPU per page: this process's
``time.process_time()`` plus the render workers' CPU (render and PNG; base64 and the JSON body),
split into render, encode, parse and the rest (HTTP, asyncio).
``--renderer thread`` renders in threads instead of processes (PyMuPDF holds the GIL);
``both`` runs each level both ways.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pymupdf

from doubles.ocr_simulator import OcrSimulator
from ocr_engine.engines.vllm_engine import VLLMEngine
from ocr_engine.options import VLLMOptions
from ocr_engine.schema import PageStatus

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parent.parent
REAL_TOKENS_PER_S = 25.0  # DeepSeek-OCR, one A100: ~2,500 tokens/s over ~100 sequences


def corpus(data: Path) -> tuple[bytes, str]:
    """The Docling test PDFs as one document, or generated pages when the data is absent."""
    out = pymupdf.open()
    folder = data / "docling" / "pdf"
    if folder.is_dir():
        for path in sorted(folder.glob("*.pdf")):
            with pymupdf.open(path) as doc:
                out.insert_pdf(doc)
        source = f"the {out.page_count} pages of the Docling test PDFs"
    else:
        for i in range(48):
            page = out.new_page(width=612, height=792)
            page.insert_text((72, 72), f"Section {i + 1}", fontsize=16, fontname="hebo")
            page.insert_textbox(
                pymupdf.Rect(72, 100, 540, 700), f"Generated paragraph number {i}. " * 60
            )
        source = f"{out.page_count} generated pages ({folder} is absent)"
    data_bytes = out.tobytes()
    out.close()
    return data_bytes, source


def _measure(
    sim: OcrSimulator, pdf: bytes, count: int, level: int, pages: int, processes: bool, workers: int
) -> dict[str, float]:
    """One fresh `read_pages` call of `pages` pages at `level` in flight."""
    options = VLLMOptions(urls=[sim.url], max_in_flight=level, render_workers=workers)
    engine = VLLMEngine(options, render_processes=processes)
    started = time.perf_counter()
    engine.start()
    startup = time.perf_counter() - started
    sim.reset_stats()
    numbers = [i % count + 1 for i in range(pages)]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = engine.read_pages_sync(pdf, numbers)
    wall = time.perf_counter() - wall0
    main_cpu = time.process_time() - cpu0
    run = engine.last_run
    workers_cpu = run.render_cpu_s + run.encode_cpu_s if processes else 0.0
    in_process = run.parse_cpu_s + (0.0 if processes else run.render_cpu_s + run.encode_cpu_s)
    engine.close()
    return {
        "startup": startup,
        "wall": wall,
        "rate": pages / wall,
        "peak": sim.stats.max_concurrent,
        "failed": sum(1 for p in result if p.status is not PageStatus.ok),
        "cpu": (main_cpu + workers_cpu) / pages * 1000,
        "render": run.render_cpu_s / pages * 1000,
        "encode": run.encode_cpu_s / pages * 1000,
        "parse": run.parse_cpu_s / pages * 1000,
        "rest": max(0.0, main_cpu - in_process) / pages * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--tokens-per-s", type=float, default=100.0, help="per sequence")
    parser.add_argument("--page-tokens", type=int, default=1000)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--levels", default="1,8,32,64")
    parser.add_argument("--pages", default="2,24,96,256", help="pages read at each level")
    parser.add_argument("--render-workers", type=int, default=2)
    parser.add_argument("--renderer", choices=["process", "thread", "both"], default="process")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    levels = [int(v) for v in args.levels.split(",")]
    page_counts = [int(v) for v in args.pages.split(",")]
    if len(page_counts) != len(levels):
        parser.error("--pages needs one count per level")
    modes = {"process": [True], "thread": [False], "both": [True, False]}[args.renderer]
    latency = args.page_tokens / args.tokens_per_s
    pdf, source = corpus(args.data)
    with pymupdf.open(stream=pdf) as doc:
        count = doc.page_count
    rows = []
    load_before = os.getloadavg()[0]
    with OcrSimulator(process=True, capacity=args.capacity, prefill_seconds=latency) as sim:
        sim.register_pdf(pdf)
        for level, pages in zip(levels, page_counts, strict=True):
            for processes in modes:
                row = _measure(sim, pdf, count, level, pages, processes, args.render_workers)
                rows.append((level, pages, "processes" if processes else "threads", row))
    scale = args.tokens_per_s / REAL_TOKENS_PER_S
    print("## vLLM engine throughput against the OCR simulator\n")
    print(f"`{' '.join(['python -m eval.ocr_throughput', *argv])}`\n")
    print(
        f"Pages: {source}, read in turn. Each request takes {latency:.2f} s "
        f"({args.page_tokens} output tokens at {args.tokens_per_s:g} tokens/s per sequence; time "
        f"scaled down {scale:g}x from ~{REAL_TOKENS_PER_S:g} tokens/s per sequence for "
        f"DeepSeek-OCR on one A100); simulator capacity {args.capacity}, in a subprocess; "
        f"{args.render_workers} render workers; {os.cpu_count()} CPUs on this machine, load "
        f"average {load_before:.1f} before the run and {os.getloadavg()[0]:.1f} after it.\n"
    )
    print(
        "| in flight | pages | render in | start s | wall s | pages/s | ideal pages/s | % of ideal "
        "| max concurrent | failed | client CPU ms/page | render | encode | parse | rest |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level, pages, mode, r in rows:
        ideal = min(level, args.capacity) / latency
        print(
            f"| {level} | {pages} | {mode} | {r['startup']:.1f} | {r['wall']:.1f} "
            f"| {r['rate']:.2f} | {ideal:.2f} "
            f"| {100 * r['rate'] / ideal:.0f}% | {r['peak']:.0f} | {r['failed']:.0f} "
            f"| {r['cpu']:.1f} | {r['render']:.1f} | {r['encode']:.1f} | {r['parse']:.1f} "
            f"| {r['rest']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
