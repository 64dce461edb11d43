"""Text conservation: letters and digits of each text-layer page that no block holds, per corpus.

    python -m eval.conservation [--data ../shared/data] [--corpus financebench ...]
                                [--pages-per-file N] [--worst 10]

Every page of every PDF under ``--data`` is extracted as ``folio extract`` does with OCR off;
pages the router would send to OCR (no, invisible or garbage text layer) are left out. On each
page the letters and digits of MuPDF's plain text (``page.get_text("text")``, the same flags as
the engine) are compared, as a multiset, with those of the page's blocks: *lost* are in the text
layer and in no block, *doubled* are in blocks more often than in the text layer.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine
from ocr_engine.engines.routing import ocr_reason
from ocr_engine.layout.textlayer import TEXT_FLAGS
from ocr_engine.schema import Page

os.environ.setdefault("HF_HUB_OFFLINE", "1")

__all__ = ["PageBalance", "alnum", "block_chars", "layer_chars", "page_balance", "text_pages"]


def alnum(text: str) -> Counter[str]:
    """The letters and digits of `text`, counted."""
    return Counter(c for c in text if c.isalnum())


def layer_chars(page: pymupdf.Page) -> Counter[str]:
    """Letters and digits of the page's text layer."""
    return alnum(page.get_text("text", flags=TEXT_FLAGS))


def block_chars(page: Page) -> Counter[str]:
    """Letters and digits of every block of an extracted page (furniture included)."""
    counts: Counter[str] = Counter()
    for block in page.blocks:
        counts.update(alnum(block.text))
    return counts


@dataclass(frozen=True, slots=True)
class PageBalance:
    """Letters and digits of one page: in the text layer, lost, and doubled."""

    source: str
    number: int
    total: int
    lost: Counter[str]
    doubled: Counter[str]

    @property
    def lost_n(self) -> int:
        return sum(self.lost.values())

    @property
    def doubled_n(self) -> int:
        return sum(self.doubled.values())


def page_balance(source: str, page: pymupdf.Page, extracted: Page) -> PageBalance:
    """How the blocks of `extracted` account for the text layer of `page`."""
    layer = layer_chars(page)
    blocks = block_chars(extracted)
    return PageBalance(
        source, extracted.number, sum(layer.values()), layer - blocks, blocks - layer
    )


def text_pages(
    path: Path, engine: PyMuPDFEngine, limit: int | None = None
) -> Iterator[tuple[pymupdf.Page, Page]]:
    """(PyMuPDF page, extracted page) for the pages of `path` read from the text layer; with
    `limit`, that many pages spread over the file."""
    with pymupdf.open(path) as pdf:
        numbers = list(range(pdf.page_count))
        if limit is not None and len(numbers) > limit:
            step = len(numbers) / limit
            numbers = sorted({int(i * step) for i in range(limit)} | {numbers[-1]})
        for index in numbers:
            page = pdf[index]
            extracted = engine.extract_page(page)
            if extracted.blocks and ocr_reason(page, extracted) is None:
                yield page, extracted


@dataclass
class Tally:
    """Sums over one corpus."""

    files: int = 0
    pages: int = 0
    total: int = 0
    lost: int = 0
    doubled: int = 0
    pages_lost: int = 0
    worst: list[PageBalance] = field(default_factory=list)

    def add(self, balance: PageBalance) -> None:
        self.pages += 1
        self.total += balance.total
        self.lost += balance.lost_n
        self.doubled += balance.doubled_n
        self.pages_lost += balance.lost_n > 0
        if balance.lost_n or balance.doubled_n:
            self.worst.append(balance)


def measure(data: Path, corpora: Sequence[str], limit: int | None) -> dict[str, Tally]:
    """A tally per corpus folder (every PDF under it, encrypted ones with an empty password)."""
    engine = PyMuPDFEngine()
    tallies: dict[str, Tally] = {}
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        if corpora and folder.name not in corpora:
            continue
        tally = Tally()
        for path in sorted(folder.rglob("*.pdf")):
            try:
                balances = [
                    page_balance(path.name, page, extracted)
                    for page, extracted in text_pages(path, engine, limit)
                ]
            except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
                print(f"skipped {path}: {exc}")
                continue
            tally.files += 1
            for balance in balances:
                tally.add(balance)
        if tally.files:
            tallies[folder.name] = tally
    return tallies


def report(tallies: dict[str, Tally], worst: int) -> str:
    """A markdown table per corpus, then the pages that lost most."""
    rows = [
        "| corpus | files | text-layer pages | letters+digits | lost | doubled | pages losing |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, t in tallies.items():
        rows.append(
            f"| {name} | {t.files} | {t.pages} | {t.total} | {t.lost} | {t.doubled} "
            f"| {t.pages_lost} |"
        )
    every = sorted(
        (b for t in tallies.values() for b in t.worst),
        key=lambda b: (b.lost_n, b.doubled_n),
        reverse=True,
    )
    if every and worst:
        rows += ["", "Pages that lost or doubled most (source, page, lost, doubled, sample):"]
        for b in every[:worst]:
            sample = "".join(sorted(b.lost.elements()))[:40]
            rows.append(
                f"- {b.source} p{b.number}: lost {b.lost_n}, doubled {b.doubled_n} {sample!r}"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--corpus", nargs="*", default=[], help="corpus folders (default: all)")
    parser.add_argument("--pages-per-file", type=int, default=None, help="spread sample")
    parser.add_argument("--worst", type=int, default=10, help="pages listed after the table")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no data at {args.data}")
        return 2
    began = time.perf_counter()
    tallies = measure(args.data, args.corpus, args.pages_per_file)
    print(report(tallies, args.worst))
    print(f"\n{time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
