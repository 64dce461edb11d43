"""Which text-layer pages the current code reads differently from pages cached by older code.

    python -m eval.text_layer_changes --cache DIR/page_cache.sqlite3 [--corpus financebench]
        [--key 'pymupdf||2.0|x4'] [--data ../shared/data] [--show N]

Reads every page of the corpus's PDFs that the page cache holds under `--key` (an older
text-layer engine key: engine, model, version and extraction version, as `PageReader.cache_key`
writes it) with today's `PyMuPDFEngine`, and compares block types and texts. Prints the pages
compared and changed, per document; with `--show N`, the first N changed pages' blocks as a diff.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
from collections import Counter
from pathlib import Path

__all__ = ["main"]

CORPORA = {
    "mmlongbench": "mmlongbench_doc/documents/*.pdf",
    "financebench": "financebench/pdfs/*.pdf",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="a page_cache.sqlite3")
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="financebench")
    parser.add_argument("--key", default="pymupdf||2.0|x4", help="the older text-layer key")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--show", type=int, default=0, help="print the first N changed pages")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"skipped: {args.data} not found (the benchmark reads ../shared/data in place)")
        return 0
    import pymupdf

    from ingest.pipeline.page_cache import SqlitePageCache
    from ocr_engine.engines.pymupdf_engine import PyMuPDFEngine

    cache = SqlitePageCache(args.cache)
    engine = PyMuPDFEngine()
    compared = 0
    changed: Counter[str] = Counter()
    shown = 0
    for path in sorted(args.data.glob(CORPORA[args.corpus])):
        data = path.read_bytes()
        doc_id = hashlib.sha256(data).hexdigest()
        with pymupdf.open(stream=data, filetype="pdf") as pdf:
            for index in range(pdf.page_count):
                old = cache.get(doc_id, index + 1, args.key)
                if old is None:
                    continue
                compared += 1
                new = engine.extract_page(pdf[index])
                before = [f"{b.type.value}: {b.text}" for b in old.blocks]
                after = [f"{b.type.value}: {b.text}" for b in new.blocks]
                if before == after:
                    continue
                changed[path.name] += 1
                if shown < args.show:
                    shown += 1
                    print(f"--- {path.name} page {index + 1}")
                    for line in difflib.unified_diff(before, after, lineterm="", n=0):
                        print(line[:300])
    cache.close()
    print(f"{args.corpus}: {sum(changed.values())} of {compared} cached pages read differently")
    for name, count in changed.most_common():
        print(f"  {count:4d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
