"""Ingestion with the ledger: speed cold and warm, re-scan cost, memory by page count, crashes.

    python -m eval.ingest_ledger speed  [--data ../shared/data] [--smallest 6]
    python -m eval.ingest_ledger rescan [--files 5000]
    python -m eval.ingest_ledger memory [--pages 100 500 1000]
    python -m eval.ingest_ledger batch  [--chunks 128]
    python -m eval.ingest_ledger crash  [--kills 10] [--smallest 2]

All runs read the text layer (FOLIO_OCR=never), as the issue-2 figures did, with the packaged
all-MiniLM-L6-v2 loaded before timing starts. Each prints a markdown table and its command.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FINANCEBENCH = ("financebench", "pdfs")


def _financebench(data: Path, smallest: int = 0) -> list[Path]:
    """The FinanceBench dev PDFs, or the `smallest` N of them by size (in name order)."""
    folder = data.joinpath(*FINANCEBENCH)
    if not folder.exists():
        raise SystemExit(f"skipped: {folder} not found (the benchmark reads ../shared/data)")
    pdfs = sorted(folder.glob("*.pdf"))
    if smallest:
        pdfs = sorted(sorted(pdfs, key=lambda p: p.stat().st_size)[:smallest])
    return pdfs


def _linked_folder(pdfs: list[Path], work: Path) -> Path:
    folder = work / "in"
    folder.mkdir(parents=True, exist_ok=True)
    for pdf in pdfs:
        (folder / pdf.name).symlink_to(pdf.resolve())
    return folder


def _services(data_dir: Path, processes: int = 1, embedder: Any = None) -> Any:
    from ingest.pipeline.pipeline import IngestOptions
    from ocr_engine.options import ExtractOptions, OcrMode
    from server.services import build_services
    from server.settings import Settings

    options = IngestOptions(extract=ExtractOptions(ocr=OcrMode.never), extract_processes=processes)
    settings = Settings(data_dir=data_dir, ocr=OcrMode.never)
    return build_services(settings, embedder=embedder, options=options)


def _ingest(
    folder: Path, data_dir: Path, processes: int, *, embed_cache: bool = True
) -> dict[str, float]:
    services = _services(data_dir, processes)
    if not embed_cache:
        services.ingestor.embed_cache = None
    services.embedder.embed_query("warm up")
    try:
        started = time.perf_counter()
        results = services.sync.ingest_paths([folder])
        seconds = time.perf_counter() - started
        records = services.ledger.documents()
    finally:
        services.close()
    pages = sum(r.pages for r in results)
    failed = [r.source for r in results if r.status.value == "failed"]
    if failed:
        print("failed:", failed, file=sys.stderr)
    return {
        "pages": pages,
        "seconds": seconds,
        "extract_s": sum(r.timings.extract_s for r in records),
        "embed_s": sum(r.timings.embed_s for r in records),
        "embedded": sum(r.timings.chunks_embedded for r in records),
        "cached": sum(r.timings.chunks_cached for r in records),
    }


def _fresh_index(data_dir: Path, *, keep_embeddings: bool) -> None:
    """A new index and ledger over the same data directory; the caches stay."""
    shutil.rmtree(data_dir / "index")
    shutil.rmtree(data_dir / "documents")
    for name in os.listdir(data_dir):
        if name.startswith("ledger.sqlite3") or (
            not keep_embeddings and name.startswith("embed_cache.sqlite3")
        ):
            (data_dir / name).unlink()


def speed(args: argparse.Namespace) -> None:
    pdfs = _financebench(args.data, args.smallest)
    rows = []
    with tempfile.TemporaryDirectory(prefix="folio-ledger-") as tmp:
        work = Path(tmp)
        folder = _linked_folder(pdfs, work)
        # process, thread, process: the machine's load drifts, so the thread run is bracketed
        data_dir = work / "process"
        rows.append(("cold, extraction in a worker process", _ingest(folder, data_dir, 1)))
        thread = _ingest(folder, work / "thread", processes=0)
        rows.append(("cold, extraction in a thread", thread))
        second = _ingest(folder, work / "process2", processes=1)
        rows.append(("cold, extraction in a worker process (again)", second))
        _fresh_index(data_dir, keep_embeddings=True)
        rows.append(("page + embedding caches warm (new index)", _ingest(folder, data_dir, 1)))
        _fresh_index(data_dir, keep_embeddings=False)
        rows.append(
            ("page cache warm (new index)", _ingest(folder, data_dir, 1, embed_cache=False))
        )
        services = _services(data_dir)
        try:
            rescans = []
            for _ in range(20):
                started = time.perf_counter()
                report = services.sync.scan(folder)
                rescans.append(time.perf_counter() - started)
                assert report.hashed == 0 and not report.new
            started = time.perf_counter()
            unchanged = services.sync.ingest_paths([folder])
            again = time.perf_counter() - started
        finally:
            services.close()
    names = ", ".join(p.name for p in pdfs)
    print(f"FinanceBench dev, {len(pdfs)} PDFs ({names})\n")
    print("| run | pages | seconds | pages/s | extract s | embed s | chunks embedded | cached |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(
            f"| {name} | {r['pages']:.0f} | {r['seconds']:.1f} | {r['pages'] / r['seconds']:.2f} "
            f"| {r['extract_s']:.1f} | {r['embed_s']:.1f} | {r['embedded']:.0f} "
            f"| {r['cached']:.0f} |"
        )
    print(
        f"\nre-scan of the unchanged folder: median {statistics.median(rescans) * 1000:.2f} ms "
        f"(20 scans); `ingest_paths` on it: {again * 1000:.1f} ms, "
        f"{sum(r.status.value == 'unchanged' for r in unchanged)} files unchanged"
    )


def rescan(args: argparse.Namespace) -> None:
    """Scan cost by folder size: the first scan hashes every file, a re-scan only stats them."""
    import pymupdf

    from doubles.fakes import HashEmbedder

    print("| files | first scan (hash all) ms | re-scan median ms | per file µs |")
    print("|---:|---:|---:|---:|")
    for count in args.files:
        with tempfile.TemporaryDirectory(prefix="folio-rescan-") as tmp:
            folder = Path(tmp) / "in"
            for i in range(count):
                sub = folder / f"d{i // 500:02d}"
                sub.mkdir(parents=True, exist_ok=True)
                with pymupdf.open() as doc:
                    doc.new_page().insert_text((72, 72), f"Document {i}: a line of text.")
                    doc.save(sub / f"f{i:05d}.pdf")
            services = _services(Path(tmp) / "data", 0, embedder=HashEmbedder())
            try:
                started = time.perf_counter()
                services.sync.scan(folder)
                first = time.perf_counter() - started
                times = []
                for _ in range(10):
                    started = time.perf_counter()
                    report = services.sync.scan(folder)
                    times.append(time.perf_counter() - started)
                    assert report.hashed == 0
            finally:
                services.close()
        median = statistics.median(times)
        print(
            f"| {count} | {first * 1000:.0f} | {median * 1000:.1f} | {median / count * 1e6:.1f} |"
        )


def _long_pdf(source: Path, pages: int, out: Path) -> None:
    """`pages` pages made by repeating the pages of `source` (a real SEC filing)."""
    import pymupdf

    with pymupdf.open(source) as src, pymupdf.open() as doc:
        while doc.page_count < pages:
            doc.insert_pdf(src, to_page=min(src.page_count, pages - doc.page_count) - 1)
        doc.save(out, garbage=0)


def _children_peak_mb() -> float:
    """Peak RSS (VmHWM) of this process's live children: the extraction worker. (RUSAGE_CHILDREN
    would count the parent's pages the child had between fork and exec.)"""
    peak = 0.0
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        if f"\nPPid:\t{os.getpid()}\n" in status and "VmHWM:" in status:
            peak = max(peak, int(status.split("VmHWM:")[1].split()[0]) / 1024)
    return peak


def _child(args: argparse.Namespace) -> None:
    """Runs in a subprocess: ingest one PDF (or extract+chunk it whole) and report peak RSS."""
    started = time.perf_counter()
    children = 0.0
    if args.mode == "whole":
        from ingest.pipeline.chunker import chunk_document
        from ocr_engine.engines.extract import extract_document
        from ocr_engine.options import ExtractOptions, OcrMode
        from retrieval.index.embedder import SentenceTransformerEmbedder

        model = SentenceTransformerEmbedder()
        model.embed_query("warm up")  # the same model in memory as the windowed run
        document = extract_document(args.pdf, options=ExtractOptions(ocr=OcrMode.never))
        chunks = chunk_document(document, count_tokens=model.count_tokens)
        pages = document.page_count
        count = len(chunks)
    else:
        services = _services(args.data_dir, args.processes)
        services.embedder.embed_query("warm up")
        try:
            [result] = services.sync.ingest_paths([args.pdf])
            children = _children_peak_mb()
        finally:
            services.close()
        pages, count = result.pages, result.chunks
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    seconds = time.perf_counter() - started
    report = {"pages": pages, "chunks": count, "rss_mb": own, "worker_mb": children, "s": seconds}
    print(json.dumps(report))


def memory(args: argparse.Namespace) -> None:
    source = _financebench(args.data)
    filing = next(p for p in source if p.name == args.source)
    print(f"Peak RSS, one PDF made of {filing.name}'s pages repeated\n")
    print("| pages | windowed ingest: main MB | worker MB | chunks | s | whole document MB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for pages in args.pages:
        with tempfile.TemporaryDirectory(prefix="folio-rss-") as tmp:
            pdf = Path(tmp) / f"long{pages}.pdf"
            _long_pdf(filing, pages, pdf)
            out = {}
            for mode in ("windowed", "whole"):
                command = [sys.executable, "-m", "eval.ingest_ledger", "_child", mode, str(pdf)]
                command += ["--data-dir", str(Path(tmp) / "data")]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                out[mode] = json.loads(done.stdout.strip().splitlines()[-1])
        w, whole = out["windowed"], out["whole"]
        print(
            f"| {pages} | {w['rss_mb']:.0f} | {w['worker_mb']:.0f} | {w['chunks']} | {w['s']:.0f} "
            f"| {whole['rss_mb']:.0f} |"
        )


def batch(args: argparse.Namespace) -> None:
    """Embedding throughput by batch size, on chunks of a real filing."""
    from ingest.pipeline.chunker import chunk_document
    from ocr_engine.engines.extract import extract_document
    from ocr_engine.options import ExtractOptions, OcrMode
    from retrieval.index.embedder import SentenceTransformerEmbedder

    filing = next(p for p in _financebench(args.data) if p.name == args.source)
    probe = SentenceTransformerEmbedder()
    document = extract_document(filing, options=ExtractOptions(ocr=OcrMode.never))
    texts = [c.embed_text for c in chunk_document(document, count_tokens=probe.count_tokens)]
    texts = texts[: args.chunks]
    print(f"{len(texts)} chunks of {filing.name}\n\n| batch size | chunks/s |\n|---:|---:|")
    for size in args.sizes:
        embedder = SentenceTransformerEmbedder(batch_size=size)
        embedder.embed_documents(texts[:size])  # load and warm up
        started = time.perf_counter()
        embedder.embed_documents(texts)
        print(f"| {size} | {len(texts) / (time.perf_counter() - started):.1f} |")


def _processing(data_dir: Path) -> list[str]:
    from ingest.ledger.ledger import Ledger
    from ingest.ledger.records import DocStatus

    if not (data_dir / "ledger.sqlite3").exists():
        return []
    ledger = Ledger(data_dir)
    try:
        return [r.doc_id for r in ledger.documents(DocStatus.processing)]
    finally:
        ledger.close()


def crash(args: argparse.Namespace) -> None:
    """`folio ingest` SIGKILLed at random moments, then run to the end; compared to a clean run."""
    from doubles.crash_driver import snapshot

    pdfs = _financebench(args.data, args.smallest)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="folio-crash-") as tmp:
        work = Path(tmp)
        folder = _linked_folder(pdfs, work)
        env = dict(os.environ, FOLIO_OCR="never")
        folio = [str(Path(sys.executable).with_name("folio")), "ingest", str(folder), "--data-dir"]

        def run(data_dir: Path) -> float:
            started = time.perf_counter()
            subprocess.run([*folio, str(data_dir)], env=env, capture_output=True, check=False)
            return time.perf_counter() - started

        clean = run(work / "clean")
        kills: list[float] = []
        interrupted = 0
        while len(kills) < args.kills:
            after = rng.uniform(2.0, clean / 2)  # a run does at most half of the work
            proc = subprocess.Popen(
                [*folio, str(work / "crashed")],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                proc.wait(timeout=after)
                break  # this run finished the work before its kill
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills.append(after)
                interrupted += bool(_processing(work / "crashed"))
        final = run(work / "crashed")
        expected, got = snapshot(work / "clean", dim=384), snapshot(work / "crashed", dim=384)
    docs = expected["documents"]
    doc_mismatch = sum(got["documents"].get(d) != v for d, v in docs.items())
    doc_mismatch += len(set(got["documents"]) - set(docs))
    point_mismatch = sum(got["points"].get(d) != v for d, v in expected["points"].items())
    point_mismatch += len(set(got["points"]) - set(expected["points"]))
    names = ", ".join(p.name for p in pdfs)
    print(f"`folio ingest` over {names}; clean run {clean:.1f} s, final run {final:.1f} s\n")
    print(
        "| kills | documents | points, clean | points, killed | ledger mismatches "
        "| point mismatches |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {len(kills)} | {len(docs)} | {expected['total']} | {got['total']} | {doc_mismatch} "
        f"| {point_mismatch} |"
    )
    print(f"\nkills at (s after start): {', '.join(f'{k:.1f}' for k in kills)}; {interrupted} of")
    print("them left a document `processing` in the ledger")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("speed")
    p.add_argument("--smallest", type=int, default=6, help="the N smallest PDFs (0: all 31)")
    p = sub.add_parser("rescan")
    p.add_argument("--files", type=int, nargs="+", default=[100, 1000, 5000])
    p = sub.add_parser("memory")
    p.add_argument("--pages", type=int, nargs="+", default=[100, 500, 1000])
    p.add_argument("--source", default="AMCOR_2023Q2_10Q.pdf")
    p = sub.add_parser("batch")
    p.add_argument("--chunks", type=int, default=128)
    p.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 32, 64])
    p.add_argument("--source", default="3M_2018_10K.pdf")
    p = sub.add_parser("crash")
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--smallest", type=int, default=6, help="the N smallest PDFs")
    p.add_argument("--seed", type=int, default=7)
    p = sub.add_parser("_child")
    p.add_argument("mode", choices=["windowed", "whole"])
    p.add_argument("pdf", type=Path)
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--processes", type=int, default=1)
    given = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(given or ["speed"])
    started = time.perf_counter()
    commands = {"speed": speed, "rescan": rescan, "memory": memory, "batch": batch}
    commands.update(crash=crash, _child=_child)
    commands[args.command](args)
    if args.command != "_child":
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"\nload average at the end (1, 5, 15 min): {load} on {os.cpu_count()} cores")
        shown = " ".join(given or ["speed"])
        print(f"\n`python -m eval.ingest_ledger {shown}` ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
