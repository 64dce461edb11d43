"""Which pages' unruled tables change when running text beside a chart is kept out of its labels.

    python -m eval.text_beside_tables [--data ../shared/data] [--show]

Extracts every text-layer page of the shared corpora with the PyMuPDF engine, and on each page
where the unruled-table finder runs, compares its tables with and without
`ocr_engine.layout.unruled_tables._without_text_beside` (the "without" run replaces it by the
identity, in this process only). Prints, per corpus, the pages read and the pages whose tables
differ; with `--show`, each such page's tables before and after (first 300 characters).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]

CORPORA = {
    "mmlongbench": "mmlongbench_doc/documents/*.pdf",
    "financebench": "financebench/pdfs/*.pdf",
    "docugami": "docugami_sec10q/docs/*.pdf",
    "docling": "docling/pdf/*.pdf",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--show", action="store_true", help="print the changed tables")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"skipped: {args.data} not found (the benchmark reads ../shared/data in place)")
        return 0
    import pymupdf

    import ocr_engine.engines.pymupdf_engine as engine_module
    import ocr_engine.layout.unruled_tables as unruled
    from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine

    dropping = unruled._without_text_beside
    changed: list[tuple[str, int, list[str], list[str]]] = []
    where: list[tuple[str, int]] = [("", 0)]

    def both(frame: Any, words: Sequence[Any], exclude: Sequence[Any] = ()) -> list[Any]:
        after = unruled.find_unruled_tables(frame, words, exclude)
        unruled._without_text_beside = lambda rows, n_head, cols: (rows, n_head)
        try:
            before = unruled.find_unruled_tables(frame, words, exclude)
        finally:
            unruled._without_text_beside = dropping
        if [t.markdown for t in after] != [t.markdown for t in before]:
            name, number = where[0]
            changed.append(
                (name, number, [t.markdown for t in before], [t.markdown for t in after])
            )
        return after

    engine_module.find_unruled_tables = both
    engine = PyMuPDFEngine()
    print("| corpus | pages | pages whose tables change |\n|---|---:|---:|")
    for corpus, pattern in CORPORA.items():
        pages, first = 0, len(changed)
        for pdf in sorted(args.data.glob(pattern)):
            with pymupdf.open(pdf) as doc:
                for number, page in enumerate(doc, 1):
                    where[0] = (pdf.name, number)
                    engine.extract_page(page)
                    pages += 1
        print(f"| {corpus} | {pages:,} | {len(changed) - first} |")
    if args.show:
        for name, number, before, after in changed:
            print(f"\n{name} p{number}")
            print("  before:", " // ".join(" ".join(t.split())[:300] for t in before))
            print("  after: ", " // ".join(" ".join(t.split())[:300] for t in after))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
