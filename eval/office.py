"""Office, OpenDocument, HTML and Markdown files against Docling's ground truth (issue 39).

Per format: text conserved (letters and digits of the ground truth's texts and cells found in
folio's JSON, as a multiset), headings and list items found with the right type (by their
letters and digits), tables found (a folio table holding at least half of a ground-truth
table's cell texts) and their cells found, web links found (a ground-truth text's http, https,
mailto or ftp link among folio's block links, by URL), and conversion seconds per rendered page.
`python -m eval office [--split tune|check|all] [--data ../shared/data] [--limit N]
[--formats docx pptx ...]`: files of the split (`eval/splits.json`, `office`); rules come from
`tune` files only.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from eval.splits import OFFICE_FORMATS, SPLITS, office_files, split_of
from ocr_engine.extract import extract_document
from ocr_engine.office import render_pdf
from ocr_engine.office_match import norm
from ocr_engine.options import ExtractOptions, OcrMode
from ocr_engine.schema import BlockType, Document

FORMATS = OFFICE_FORMATS
_HEADINGS = ("title", "section_header")
_SCHEMES = ("http://", "https://", "mailto:", "ftp://")


def _chars(texts: list[str]) -> Counter[str]:
    return Counter(ch for text in texts for ch in norm(text))


def _truth(path: Path) -> dict[str, Any] | None:
    truth = path.parent.parent / "groundtruth" / f"{path.name}.json"
    return json.loads(truth.read_text()) if truth.exists() else None


def _score(document: Document, truth: dict[str, Any]) -> dict[str, float]:
    texts = [t.get("text", "") for t in truth["texts"]]
    tables = [[c["text"] for c in t["data"]["table_cells"]] for t in truth["tables"]]
    want = _chars(texts + [c for t in tables for c in t])
    blocks = [b for p in document.pages for b in p.blocks]
    got = _chars([b.text for b in blocks if b.type is not BlockType.table])
    got += _chars([c.text for b in blocks for c in b.cells] or [b.text for b in blocks])
    heads = {norm(b.text) for b in blocks if b.type in (BlockType.title, BlockType.section_header)}
    items = {norm(b.text) for b in blocks if b.type is BlockType.list_item}
    gt_heads = [norm(t["text"]) for t in truth["texts"] if t["label"] in _HEADINGS]
    gt_items = [norm(t["text"]) for t in truth["texts"] if t["label"] == "list_item"]
    # a rendered list item keeps its number or bullet ("1. Leaves"): its end is the item
    found_items = sum(any(k and i.endswith(k) for i in items) for k in gt_items)
    folio_tables = [{norm(c.text) for c in b.cells} for b in blocks if b.type is BlockType.table]
    tables_found, cells_found, cells_all = 0, 0, 0
    for cells in tables:
        keys = [norm(c) for c in cells if norm(c)]
        if not keys:
            continue
        best = max((sum(k in t for k in keys) for t in folio_tables), default=0)
        tables_found += best >= len(keys) / 2
        cells_found += best
        cells_all += len(keys)
    total = sum(want.values())
    links = Counter(
        str(t["hyperlink"])
        for t in truth["texts"]
        if str(t.get("hyperlink") or "").lower().startswith(_SCHEMES) and norm(t.get("text", ""))
    )
    got_links = Counter(k.url for b in blocks for k in b.links)
    return {
        "chars": total,
        "chars_found": sum(min(n, got[c]) for c, n in want.items()),
        "heads": len(gt_heads),
        "heads_found": sum(h in heads for h in gt_heads),
        "items": len(gt_items),
        "items_found": found_items,
        "tables": sum(1 for t in tables if any(norm(c) for c in t)),
        "tables_found": tables_found,
        "cells": cells_all,
        "cells_found": cells_found,
        "links": sum(links.values()),
        "links_found": sum(min(n, got_links[u]) for u, n in links.items()),
    }


def _share(found: float, total: float) -> str:
    return f"{found / total:.3f} ({int(found)}/{int(total)})" if total else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--limit", type=int, default=None, help="files per format")
    parser.add_argument("--formats", nargs="*", default=list(FORMATS))
    parser.add_argument("--split", choices=SPLITS, default="all", help="tune, check or all")
    args = parser.parse_args(argv)
    root = args.data / "office"
    if not root.is_dir():
        print(f"no data at {root}")
        return 1
    options = ExtractOptions(ocr=OcrMode.never)
    print(f"split: {args.split}")
    print(
        "| format | files | text conserved | headings | list items | tables | cells | links "
        "| s/page |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for fmt in args.formats:
        sources = [
            p
            for p in office_files(args.data, fmt)
            if args.split == "all" or split_of("office", p.name) == args.split
        ]
        sums: Counter[str] = Counter()
        files, seconds, pages, failed = 0, 0.0, 0, []
        for path in sources[: args.limit]:
            truth = _truth(path)
            if truth is None:
                continue
            data = path.read_bytes()
            started = time.perf_counter()
            try:
                render_pdf(data, path.name)  # timed alone; extraction reuses the rendering
                seconds += time.perf_counter() - started
                document = extract_document(data, source=path.name, options=options)
            except Exception as exc:
                failed.append(f"{path.name}: {exc}")
                sums.update(
                    _score(Document(doc_id="0" * 64, source="", page_count=0, pages=[]), truth)
                )
                files += 1
                continue
            pages += document.page_count
            sums.update(_score(document, truth))
            files += 1
        per_page = f"{seconds / pages:.2f}" if pages else "-"
        print(
            f"| {fmt} | {files} | {_share(sums['chars_found'], sums['chars'])} | "
            f"{_share(sums['heads_found'], sums['heads'])} | "
            f"{_share(sums['items_found'], sums['items'])} | "
            f"{_share(sums['tables_found'], sums['tables'])} | "
            f"{_share(sums['cells_found'], sums['cells'])} | "
            f"{_share(sums['links_found'], sums['links'])} | {per_page} |"
        )
        for line in failed:
            print(f"  failed: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
