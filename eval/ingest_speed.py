"""End-to-end ingest pages/s of folio beside the LlamaIndex recipe, same files, same run.

    python -m eval.ingest_speed [--data ../shared/data] [--corpus docling|financebench] [--limit N]

folio: extract, chunk, embed and index into Qdrant Edge (a fresh data directory). The recipe:
SimpleDirectoryReader, SentenceSplitter(1024, 200), the same embedding model, an in-memory
VectorStoreIndex. Both are timed from the files on disk to a searchable index, model already loaded.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from eval.financebench import run_folio, run_llamaindex

CORPORA = {"docling": ("docling", "pdf"), "financebench": ("financebench", "pdfs")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="docling")
    parser.add_argument("--limit", type=int, default=0, help="first N files by name (0 = all)")
    args = parser.parse_args(argv)
    folder = args.data.joinpath(*CORPORA[args.corpus])
    if not folder.exists():
        print(f"skipped: {folder} not found (the benchmark reads ../shared/data in place)")
        return 0
    pdfs = sorted(folder.glob("*.pdf"))
    if args.limit:
        pdfs = pdfs[: args.limit]
    with tempfile.TemporaryDirectory(prefix="folio-speed-") as work:
        folio = run_folio(pdfs, [], Path(work) / "data")
    recipe = run_llamaindex(pdfs, [])
    print(f"{args.corpus}: {len(pdfs)} PDFs\n")
    print("| system | pages | seconds | pages/s |\n|---|---:|---:|---:|")
    for name, res in (("folio", folio), ("LlamaIndex recipe", recipe)):
        pages, seconds = float(res["pages"]), float(res["seconds"])  # type: ignore[arg-type]
        print(f"| {name} | {pages:.0f} | {seconds:.1f} | {pages / seconds:.2f} |")
    if folio["failed"]:
        print("folio failed files:", folio["failed"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
