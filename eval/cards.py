"""Document cards of the dev sets, read as ingest reads them, checked against FinanceBench's file
names (COMPANY_YEAR_KIND: the ground truth of this check only).

    python -m eval cards [--data ../shared/data] [--dataset financebench|mmlongbench|both]

Each PDF's first CARD_PAGES pages are read from its text layer (furniture marked as ingest marks
it) and carded under an opaque name (`doc_0001.pdf`), so nothing comes from the file name. Printed:
every card (organisation · kind · period, title, aliases), and for FinanceBench how many cards have
the right organisation (one of the card's aliases is, or begins with, the file name's company, or
the organisation run together does), kind (10K annual report, 10Q quarterly, 8K current report or
earnings release, EARNINGS earnings release), year (the file name's year among the card's years)
and quarter. Then which documents each question names (`NamedDocuments`, before the search's
agreement check): by file names alone (as before cards), by real names and cards, and by opaque
names and cards, counted as the gold document alone, the gold among others, none, or others;
and the questions whose named documents the cards change (real names).
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections import Counter
from pathlib import Path

from eval.retrieval_data import Corpus, load_corpus
from ingest.cards.cards import CARD_PAGES, document_card
from ocr_engine.engines.extract import iter_pages
from ocr_engine.engines.reader import PageReader
from ocr_engine.inputs.pdf import open_pdf
from ocr_engine.layout.furniture import FurnitureMarker
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import Document
from retrieval.doc_card import DocKind, DocumentCard, card_line
from retrieval.search.doc_names import Named, NamedDocuments

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_FILE = re.compile(
    r"^(?P<company>[A-Za-z0-9]+)_(?P<year>\d{4})(?:Q(?P<q>\d))?_(?P<kind>[A-Za-z0-9]+)"
)
_KINDS = {
    "10K": {DocKind.annual_report},
    "10Q": {DocKind.quarterly_report},
    "8K": {DocKind.current_report, DocKind.earnings_release},
    "EARNINGS": {DocKind.earnings_release},
}


def read_document(pdf: Path, opaque: str) -> Document:
    """The first CARD_PAGES pages of `pdf` as ingest reads them, under the name `opaque`."""
    data = pdf.read_bytes()
    with open_pdf(data, name=opaque) as doc:
        meta = {
            k: str(v)
            for k, v in (doc.metadata or {}).items()
            if k in ("title", "author", "subject")
        }
        count = doc.page_count
    marker = FurnitureMarker(count)
    pages = []
    with PageReader(ExtractOptions(ocr=OcrMode.never)) as reader:
        for page in iter_pages(data, name=opaque, reader=reader, last=CARD_PAGES):
            pages += marker.feed([page])
    pages += marker.finish()
    return Document(
        doc_id="0" * 64,
        source=opaque,
        page_count=count,
        pages=pages,
        metadata={k: v for k, v in meta.items() if v.strip()},
    )


def _org_ok(card: DocumentCard, company: str) -> bool:
    want = company.lower()
    run = re.sub(r"[^a-z0-9]", "", (card.organisation or "").lower()).removeprefix("the")
    return run.startswith(want) or any(a == want or a.startswith(want) for a in card.aliases)


def _routing(
    corpus: Corpus, named: dict[str, DocumentCard], cards: dict[str, DocumentCard]
) -> None:
    """How the questions name documents: by file names alone, by the cards read under the real
    names (`named`) with those names, by the cards read under opaque names with those."""
    stems = sorted(cards)
    ways: dict[str, dict[str, str | Named]] = {
        "file names alone": {s: f"{s}.pdf" for s in stems},
        "real names and cards": {s: Named(f"{s}.pdf", named[s]) for s in stems},
        "opaque names and cards": {
            s: Named(f"doc_{i:04d}.pdf", cards[s]) for i, s in enumerate(stems, 1)
        },
    }
    print("\n| questions name | gold alone | gold among others | none | others only |")
    print("|---|---:|---:|---:|---:|")
    for label, way in ways.items():
        names = NamedDocuments(lambda way=way: way)  # type: ignore[misc]
        counts: Counter[str] = Counter()
        for case in corpus.cases:
            found = set(names.match(case.question).doc_ids)
            gold = found & case.docs
            kind = (
                "none" if not found else "alone" if gold == found else "among" if gold else "other"
            )
            counts[kind] += 1
        row = " | ".join(str(counts[k]) for k in ("alone", "among", "none", "other"))
        print(f"| {label} | {row} |")
    print(f"({len(corpus.cases)} questions)")
    before = NamedDocuments(lambda: ways["file names alone"])
    after = NamedDocuments(lambda: ways["real names and cards"])
    for case in corpus.cases:
        was, now = before.match(case.question).doc_ids, after.match(case.question).doc_ids
        if was != now:
            print(f"- {case.question[:80]!r} (gold {sorted(case.docs)}): {was} -> {now}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument(
        "--dataset", choices=("financebench", "mmlongbench", "both"), default="both"
    )
    args = parser.parse_args(argv)
    names = ("financebench", "mmlongbench") if args.dataset == "both" else (args.dataset,)
    for name in names:
        try:
            corpus = load_corpus(name, args.data)
        except FileNotFoundError as exc:
            print(f"skipped {name}: {exc.filename} not found")
            continue
        started = time.perf_counter()
        tally: Counter[str] = Counter()
        print(f"\n## {name}: {len(corpus.pdfs)} PDFs\n")
        cards: dict[str, DocumentCard] = {}
        named: dict[str, DocumentCard] = {}  # the same documents carded under their real names
        for i, pdf in enumerate(corpus.pdfs, 1):
            document = read_document(pdf, f"doc_{i:04d}.pdf")
            card = cards[pdf.stem] = document_card(document)
            named[pdf.stem] = document_card(document.model_copy(update={"source": pdf.name}))
            print(
                f"- {pdf.name}: {card_line(card)} | title {card.title!r} | {card.language} | "
                f"aliases {card.aliases}"
            )
            match = _FILE.match(pdf.stem) if name == "financebench" else None
            if match is None:
                continue
            ok_org = _org_ok(card, match["company"])
            ok_kind = card.kind in _KINDS.get(match["kind"].upper(), set())
            ok_year = match["year"] in card.years
            tally["organisation"] += ok_org
            tally["kind"] += ok_kind
            tally["year"] += ok_year
            if match["q"]:
                tally["quarters"] += 1
                tally["quarter"] += card.quarter == int(match["q"])
            misses = [
                k
                for k, ok in (("organisation", ok_org), ("kind", ok_kind), ("year", ok_year))
                if not ok
            ]
            if misses:
                print(f"  MISS {', '.join(misses)}")
        n = len(corpus.pdfs)
        print(f"\n{name}: {n} cards in {time.perf_counter() - started:.0f} s")
        _routing(corpus, named, cards)
        if name == "financebench":
            q_ok, q_n = tally["quarter"], tally["quarters"]
            print(
                f"right organisation {tally['organisation']}/{n}, kind {tally['kind']}/{n}, "
                f"year {tally['year']}/{n}, quarter {q_ok}/{q_n} (of the quarterly file names)"
            )
    print(f"\ncommand: python -m eval cards --data {args.data} --dataset {args.dataset}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
