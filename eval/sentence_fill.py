"""When a new question gets its answer's sentences from the cache: ingest, then the idle filler.

    python -m eval.sentence_fill [--data ../shared/data] [--corpus docling|financebench]
                                 [--limit N] [--modes idle,ingest]

For each FOLIO_ANSWER_SENTENCES mode, a fresh data directory whose watched folder holds the
corpus's PDFs (links to them), one `folio serve` started on it, and timed from the moment it
answers `/health`: every document read (searchable: `GET /documents` all ok, partial or
failed) and, with `idle`, the answer sentences of every indexed chunk embedded
(`GET /health` -> `answer_sentences.settled`). Prints the two times, the sentences embedded and
the sentence cache's bytes a sentence.

Then what a new question costs: with `idle`, while the filler works, one of `_QUESTIONS`' first
half every 3 s (the filler resumes 2 s after a query, so each of them meets it busy); once the
sentences are all in (or after ingest, with `ingest`), the second half, one every 0.5 s.
Latency of `POST /query`, client-side on loopback; the median and the largest.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx

from eval.ingest_speed import CORPORA
from eval.serving import folio_server

__all__ = ["main"]

log = logging.getLogger(__name__)

_FINAL = {"ok", "partial", "failed"}
_QUESTIONS = (
    "What method does the paper propose?",
    "Which datasets were used in the evaluation?",
    "What are the main results?",
    "How is the model trained?",
    "What are the limitations of the approach?",
    "Which baseline is it compared with?",
    "What does Table 1 show?",
    "What is the conclusion?",
    "Which metric is reported?",
    "What does Figure 2 show?",
    "Which hardware was used?",
    "Who funded the work?",
)
T = TypeVar("T")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="docling")
    parser.add_argument("--limit", type=int, default=0, help="first N files by name (0 = all)")
    parser.add_argument("--modes", default="idle,ingest", help="FOLIO_ANSWER_SENTENCES values")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per mode")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    folder = args.data.joinpath(*CORPORA[args.corpus])
    if not folder.exists():
        print(f"skipped: {folder} not found (the benchmark reads ../shared/data in place)")
        return 0
    pdfs = sorted(folder.glob("*.pdf"))[: args.limit or None]
    rows = []
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        with tempfile.TemporaryDirectory(prefix="folio-fill-") as work:
            rows.append((mode, *_run(mode, pdfs, Path(work), args.timeout)))
    print(f"\n{args.corpus}: {len(pdfs)} PDFs\n")
    print(
        "| FOLIO_ANSWER_SENTENCES | pages | searchable after (s) | sentences embedded after (s) "
        "| sentences | cache bytes a sentence | new question while filling: p50 / max (ms) "
        "| new question after: p50 / max (ms) |\n|---|---:|---:|---:|---:|---:|---|---|"
    )
    for mode, pages, searchable, settled, texts, size, during, after in rows:
        per = f"{size / texts:,.0f}" if texts else "-"
        done = f"{settled:.1f}" if settled is not None else "(at ingest)"
        print(
            f"| {mode} | {pages} | {searchable:.1f} | {done} | {texts:,} | {per} "
            f"| {_spread(during)} | {_spread(after)} |"
        )
    return 0


def _spread(latencies: list[float]) -> str:
    if not latencies:
        return "-"
    return f"{statistics.median(latencies):.0f} / {max(latencies):.0f}"


def _run(
    mode: str, pdfs: list[Path], work: Path, timeout_s: float
) -> tuple[int, float, float | None, int, int, list[float], list[float]]:
    """Pages, seconds to searchable, seconds to settled (idle), sentences cached, cache bytes,
    and the latencies of new questions while the filler works and after it."""
    inbox, data = work / "inbox", work / "data"
    inbox.mkdir()
    for pdf in pdfs:
        (inbox / pdf.name).symlink_to(pdf.resolve())
    env = {"FOLIO_ANSWER_SENTENCES": mode, "FOLIO_WATCH_DIR": str(inbox), "FOLIO_API_KEY": ""}
    with folio_server(data, env=env, log_file=work / "server.log") as base:
        began = time.monotonic()
        deadline = began + timeout_s
        with httpx.Client(base_url=base, timeout=30) as client:
            docs = _until(client, deadline, lambda c: _all_read(c, len(pdfs)))
            searchable = time.monotonic() - began
            log.info("%s: %d documents read in %.1f s", mode, len(docs), searchable)
            settled, during = None, []
            half = len(_QUESTIONS) // 2
            if mode == "idle":
                during = _ask(client, _QUESTIONS[:half], every_s=3.0)
                _until(client, deadline, _settled)
                settled = time.monotonic() - began
            after = _ask(client, _QUESTIONS[half:], every_s=0.5)
        pages = sum(int(d["pages"]) for d in docs)
    cache = data / "sentence_cache.sqlite3"
    size = cache.stat().st_size if cache.exists() else 0
    return pages, searchable, settled, _rows(cache), size, during, after


def _ask(client: httpx.Client, questions: Sequence[str], every_s: float) -> list[float]:
    """Milliseconds of each question's `POST /query`, one every `every_s` seconds."""
    latencies = []
    for question in questions:
        time.sleep(every_s)
        began = time.perf_counter()
        client.post("/query", json={"question": question, "top_k": 5}).raise_for_status()
        latencies.append((time.perf_counter() - began) * 1000)
    return latencies


def _all_read(client: httpx.Client, expected: int) -> list[dict[str, Any]] | None:
    docs = client.get("/documents").json()
    return docs if len(docs) >= expected and all(d["status"] in _FINAL for d in docs) else None


def _settled(client: httpx.Client) -> bool | None:
    sentences = client.get("/health").json().get("answer_sentences") or {}
    return True if sentences.get("settled") else None


def _until(client: httpx.Client, deadline: float, check: Callable[[httpx.Client], T | None]) -> T:
    while (found := check(client)) is None:
        if time.monotonic() > deadline:
            raise TimeoutError("folio serve did not finish in time")
        time.sleep(0.5)
    return found


def _rows(cache: Path) -> int:
    if not cache.exists():
        return 0
    from ingest.pipeline.embed_cache import EmbeddingCache

    opened = EmbeddingCache(cache)
    try:
        return opened.count()
    finally:
        opened.close()


if __name__ == "__main__":
    raise SystemExit(main())
