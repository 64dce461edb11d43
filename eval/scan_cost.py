"""Cost of a scanned page on the CPU path, and the time to the document card of a 50-page scan.

    python -m eval scan_cost [--data ../shared/data] [--source financebench/pdfs/3M_2018_10K.pdf]
                             [--pages 50] [--dpi 150] [--cost-pages 8] [--skip-ingest]

The scan: the first ``--pages`` pages of ``--source`` (a FinanceBench 10-K) rendered at ``--dpi``
in grey and put back as image-only pages, as a scanner would give them.

Cost per page: the first ``--cost-pages`` pages of the scan read by the CPU engine in this
process (``RapidOCREngine.extract_page``, onnxruntime's default threads, i.e. the machine's 2
cores), layout on, then the same OCR lines laid out with the layout off: OCR (render, detect,
orient, recognise), the layout model and the table model (ONNX runs) apart, and the whole page.

Time to the card: the scan ingested by a fresh service (``build_services``, default settings and
embedder, loaded before the clock starts) through ``Sync.ingest_paths``; the times of its events
from the call: the first page read, the 12th (the pages the document card is read from,
``CARD_PAGES``), the document's card point in the index (ingest writes it once those pages are
read, `ingest.cards.card_ahead`; watched every 0.2 s), the last page read, and the end (the card
point written again, same id, with the last batch). The card first written and the final card are
both printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import pymupdf

from eval.scan_structure import CachedOcr
from ocr_engine.options import CpuOcrOptions
from retrieval.doc_card import DocumentCard

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def make_scan(source: Path, pages: int, dpi: int, out: Path) -> int:
    """The first `pages` pages of `source` as image-only grey pages in `out`; the page count."""
    with pymupdf.open(source) as doc, pymupdf.open() as scan:
        for page in list(doc)[:pages]:
            pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
            new = scan.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, pixmap=pix)
        scan.save(out, deflate=True)
        return scan.page_count


def page_costs(scan: Path, pages: int) -> list[str]:
    """Seconds per page: OCR, layout model, table model, the whole page with layout on and off."""
    on = CachedOcr(CpuOcrOptions())
    off = CachedOcr(CpuOcrOptions(), layout=False)
    off.memory = on.memory
    walls: dict[str, list[float]] = {"on": [], "off": []}
    tables = 0
    with pymupdf.open(scan) as doc:
        on.extract_page(doc[0])  # warm-up: model loading is not timed
        on.memory.clear()
        on.ocr_seconds, on.ocr_pages = 0.0, 0
        on.scan_models.seconds.clear()
        for page in list(doc)[:pages]:
            start = time.perf_counter()
            read = on.extract_page(page)
            walls["on"].append(time.perf_counter() - start)
            tables += sum(b.type.value == "table" for b in read.blocks)
            off._models = on._models
            start = time.perf_counter()
            off.extract_page(page)  # the OCR lines are remembered: this is the layout alone
            walls["off"].append(time.perf_counter() - start)
    n = len(walls["on"])
    seconds = on.scan_models.seconds
    ocr = on.ocr_seconds / max(on.ocr_pages, 1)
    layout, table = seconds.get("layout", 0.0) / n, seconds.get("table", 0.0) / n
    whole_on, whole_off = statistics.mean(walls["on"]), ocr + statistics.mean(walls["off"])
    return [
        f"Cost per page over the first {n} pages (s/page, mean; load average "
        f"{os.getloadavg()[0]:.1f}):",
        "",
        "| step | s/page |",
        "|---|---:|",
        f"| OCR: render, detect, orient, recognise | {ocr:.2f} |",
        f"| layout model (CDLA PicoDet) | {layout:.2f} |",
        f"| table model (SLANet-plus; {tables} tables found) | {table:.2f} |",
        f"| whole page, layout on | {whole_on:.2f} |",
        f"| whole page, layout off (OCR + heuristics) | {whole_off:.2f} |",
    ]


def time_to_card(scan: Path, work: Path) -> list[str]:
    """Event times of the scan's ingest by a fresh service, from the call."""
    from ingest.cards.cards import CARD_PAGES
    from ingest.ledger.files import file_sha256
    from ingest.pipeline.events import EventKind, IngestEvent
    from retrieval.doc_card import CARD_CHUNK_ID
    from server.services import build_services
    from server.settings import Settings

    services = build_services(Settings(data_dir=work))
    services.embedder.embed_query("warm up")
    started = time.perf_counter()
    read: list[float] = []
    finished: list[float] = []

    def seen(event: IngestEvent) -> None:
        now = time.perf_counter() - started
        if event.kind is EventKind.progress and event.stage == "extract":
            read.append(now)
        elif event.kind is EventKind.finished:
            finished.append(now)

    doc_id = file_sha256(scan)
    first_card: list[tuple[float, DocumentCard | None]] = []
    done = threading.Event()

    def watch() -> None:  # the card point, as a replica polling the index would see it
        while not done.wait(0.2):
            found = services.store.get(doc_id, [CARD_CHUNK_ID])
            if found:
                first_card.append((time.perf_counter() - started, found[0].card))
                return

    watcher = threading.Thread(target=watch, daemon=True)
    unsubscribe = services.events.subscribe(seen)
    try:
        watcher.start()
        (result,) = services.sync.ingest_paths([scan])
        total = time.perf_counter() - started
        card = services.ledger.get(result.doc_id).card if result.doc_id else None
    finally:
        done.set()
        watcher.join()
        unsubscribe()
        services.close()
    card_at = read[CARD_PAGES - 1] if len(read) >= CARD_PAGES else float("nan")
    end = finished[0] if finished else total
    written, early = first_card[0] if first_card else (float("nan"), None)
    same = early is not None and card is not None and _settled(early) == _settled(card)
    return [
        f"Ingest of the {len(read)}-page scan, default settings: first page read at "
        f"{read[0]:.1f} s, page {CARD_PAGES} (the card's pages read) at {card_at:.1f} s, the "
        f"document's card point in the index at {written:.1f} s, last page at {read[-1]:.1f} s, "
        f"document finished (card point written again) at "
        f"{end:.1f} s ({result.status.value}, {result.pages} pages).",
        f"Card first written: {early.summary if early else 'none'}",
        f"Card at the end: {card.summary if card else 'none'}",
        f"Same card but for its contents: {same}",
        f"Card: {card.model_dump_json(exclude_none=True)[:400] if card else 'none'}",
    ]


def _settled(card: DocumentCard) -> dict[str, object]:
    """What a card says of the document, without its contents (read from every page)."""
    return card.model_dump(exclude={"contents"})


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m eval scan_cost", description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--source", default="financebench/pdfs/3M_2018_10K.pdf")
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--cost-pages", type=int, default=8)
    parser.add_argument("--skip-ingest", action="store_true", help="the cost per page alone")
    args = parser.parse_args(argv)
    source = args.data / args.source
    if not source.exists():
        print(f"skipped: {source} not found (the benchmark reads ../shared/data in place)")
        return 0
    with tempfile.TemporaryDirectory(prefix="folio-scan-cost-") as work:
        scan = Path(work) / f"{source.stem}_scan{args.pages}.pdf"
        count = make_scan(source, args.pages, args.dpi, scan)
        flags = " ".join(argv if argv is not None else sys.argv[1:])
        print(f"`{f'python -m eval scan_cost {flags}'.strip()}`")
        print(f"Scan: {count} pages of {args.source} at {args.dpi} dpi, grey, image-only.\n")
        print("\n".join(page_costs(scan, args.cost_pages)), flush=True)
        if not args.skip_ingest:
            print("\n" + "\n".join(time_to_card(scan, Path(work) / "data")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
