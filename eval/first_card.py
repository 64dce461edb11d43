"""Time to the first page card: POST /extract on a 50-page scan, with CPU OCR and with the OCR
simulator as the vLLM endpoint; checks that pages arrive in order and at the engine's pace.

    python -m eval first_card [--pages 50] [--cpu-cards 5] [--seconds-per-token 0.01]

The scan is generated: text pages rendered at 144 dpi and put back as image-only pages. CPU OCR
is measured for its first `--cpu-cards` cards (the stream is then closed), the simulator for all.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pymupdf
import uvicorn

from doubles.fakes import HashEmbedder
from doubles.loopback import free_port
from doubles.ocr_simulator import OcrSimulator
from ocr_engine.options import OcrMode
from server.serve.app import create_app
from server.services import build_services
from server.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


WORDS = [
    "revenue",
    "margin",
    "ledger",
    "harbour",
    "volcano",
    "bakery",
    "invoice",
    "quarter",
    "audit",
    "freight",
    "pension",
    "tariff",
    "cobalt",
    "meadow",
    "lantern",
    "orchard",
    "granite",
    "compass",
    "saffron",
    "glacier",
    "beacon",
    "thimble",
    "walnut",
]


def scan(pages: int) -> tuple[bytes, bytes]:
    """(an image-only PDF, the text PDF it was rendered from)."""
    text = pymupdf.open()
    for i in range(pages):
        page = text.new_page(width=612, height=792)
        page.insert_text((72, 72), f"Section {i + 1}", fontsize=16, fontname="hebo")
        pick = random.Random(i)
        words = [pick.choice(WORDS) for _ in range(160)]
        page.insert_textbox(pymupdf.Rect(72, 100, 540, 500), f"Page {i + 1}: " + " ".join(words))
    out = pymupdf.open()
    for number in range(text.page_count):
        page = text[number]
        pix = page.get_pixmap(dpi=144, alpha=False)
        new = out.new_page(width=page.rect.width, height=page.rect.height)
        new.insert_image(new.rect, pixmap=pix)
    return out.tobytes(), text.tobytes()


def _arrivals(base: str, pdf: bytes, limit: int | None) -> list[tuple[int, float]]:
    """(page number, seconds since the request) of each page event, up to `limit` of them."""
    out: list[tuple[int, float]] = []
    started = time.perf_counter()
    with (
        httpx.Client(base_url=base, timeout=None) as client,
        client.stream("POST", "/extract", files={"file": ("scan.pdf", pdf)}) as stream,
    ):
        if stream.status_code != 200:
            raise RuntimeError(f"/extract answered {stream.status_code}: {stream.read()!r}")
        kind = ""
        for line in stream.iter_lines():
            if kind == "error" and line.startswith("data: "):
                raise RuntimeError(f"/extract stream ended in error: {line}")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind == "page":
                out.append((json.loads(line[6:])["number"], time.perf_counter() - started))
                if limit is not None and len(out) >= limit:
                    break
    return out


def _serve(settings: Settings) -> tuple[uvicorn.Server, threading.Thread, str]:
    services = build_services(settings, embedder=HashEmbedder())
    app = create_app(services, watch=False)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    server.services = services  # type: ignore[attr-defined]
    return server, thread, f"http://127.0.0.1:{port}"


def _report(label: str, arrivals: list[tuple[int, float]]) -> None:
    numbers = [n for n, _ in arrivals]
    times = [t for _, t in arrivals]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    ordered = numbers == list(range(1, len(numbers) + 1))
    print(
        f"{label}: first card {times[0]:.2f} s; {len(times)} cards, last at {times[-1]:.2f} s; "
        f"in page order: {ordered}; "
        f"median gap {sorted(gaps)[len(gaps) // 2] if gaps else 0:.2f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval first_card")
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--cpu-cards", type=int, default=5)
    parser.add_argument("--seconds-per-token", type=float, default=0.01)
    args = parser.parse_args(argv)
    pdf, text = scan(args.pages)
    with tempfile.TemporaryDirectory() as root:
        with OcrSimulator(seconds_per_token=args.seconds_per_token, process=True) as sim:
            sim.register_pdf(pdf, text_source=text)
            settings = Settings(data_dir=Path(root) / "sim", ocr=OcrMode.auto, ocr_url=[sim.url])
            server, thread, base = _serve(settings)
            try:
                _report(f"simulator ({args.seconds_per_token} s/token)", _arrivals(base, pdf, None))
            finally:
                server.should_exit = True
                thread.join(15)
                server.services.close()  # type: ignore[attr-defined]
        settings = Settings(data_dir=Path(root) / "cpu", ocr=OcrMode.auto)
        server, thread, base = _serve(settings)
        try:
            _report("CPU OCR (RapidOCR)", _arrivals(base, pdf, args.cpu_cards))
        finally:
            server.should_exit = True
            thread.join(15)
            server.services.close()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
