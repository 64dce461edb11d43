"""End-to-end ingest pages/s of folio beside the LlamaIndex recipe, same files, same run.

    python -m eval.ingest_speed [--data ../shared/data] [--corpus docling|financebench] [--limit N]
                                [--skip-llamaindex]

folio: extract, chunk, embed and index into Qdrant Edge (a fresh data directory). The recipe:
SimpleDirectoryReader, SentenceSplitter(1024, 200), the same embedding model, an in-memory
VectorStoreIndex. Both are timed from the files on disk to a searchable index, model already loaded.
Also prints the size of folio's data directory and of its caches after the ingest.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from eval.financebench import run_folio, run_llamaindex

CORPORA = {"docling": ("docling", "pdf"), "financebench": ("financebench", "pdfs")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="docling")
    parser.add_argument("--limit", type=int, default=0, help="first N files by name (0 = all)")
    parser.add_argument("--skip-llamaindex", action="store_true", help="folio alone")
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
        sizes = _sizes(Path(work) / "data")
    runs = [("folio", folio)]
    if not args.skip_llamaindex:
        runs.append(("LlamaIndex recipe", run_llamaindex(pdfs, [])))
    print(f"{args.corpus}: {len(pdfs)} PDFs\n")
    print("| system | pages | seconds | pages/s |\n|---|---:|---:|---:|")
    for name, res in runs:
        pages, seconds = float(res["pages"]), float(res["seconds"])  # type: ignore[arg-type]
        print(f"| {name} | {pages:.0f} | {seconds:.1f} | {pages / seconds:.2f} |")
    print(f"\nfolio's data directory: {sizes}")
    from eval.bench_results import BenchRow, record

    speed = {name: (float(res["pages"]), float(res["seconds"])) for name, res in runs}  # type: ignore[arg-type]
    recipe = speed.get("LlamaIndex recipe")
    record(
        "ingest-speed",
        "Ingest speed",
        "python -m eval ingest_speed " + " ".join(argv if argv is not None else sys.argv[1:]),
        [
            BenchRow(
                set=f"{args.corpus}: {len(pdfs)} PDFs, {pages:.0f} pages",
                figure=f"{name}: pages/s (text layer, the shipped embedder)",
                value=f"{pages / seconds:.2f}",
                baseline=f"{recipe[1] / seconds:.2f}x the recipe"
                if recipe is not None and name == "folio"
                else "—",
            )
            for name, (pages, seconds) in speed.items()
        ],
        [f"folio's data directory: {sizes}"],
    )
    if folio["failed"]:
        print("folio failed files:", folio["failed"])
    return 0


def _mb(paths: Iterable[Path]) -> float:
    return sum(p.stat().st_size for p in paths if p.is_file()) / 1e6


def _sizes(data: Path) -> str:
    """The data directory's size in MB, and that of each of its SQLite files (with their logs)."""
    files = {p.name.split(".")[0]: _mb(data.glob(p.name + "*")) for p in data.glob("*.sqlite3")}
    parts = ", ".join(f"{name} {size:.1f}" for name, size in sorted(files.items()))
    return f"{_mb(data.rglob('*')):.1f} MB in all ({parts})"


if __name__ == "__main__":
    raise SystemExit(main())
