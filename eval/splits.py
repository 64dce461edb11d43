"""The dev QA sets split by document into `tune` (two thirds) and `check` (one third).

    python -m eval.splits [--data ../shared/data]     # prints the split of every set

A document's place is fixed by the SHA-256 of `SEED` and its name: the documents of a set are
ordered by that digest and the first third (rounded down) is `check`. The split was written down
once, in `SPLIT_FILE` (`eval/splits.json`); the loaders read that file, so a document added later
does not move any other, and a test keeps the file equal to what the seed gives. The Office set
(`office`, keyed by file name) is split within each format (`office/docx`, ...), so every format
keeps a third of its files in `check`. Rules,
thresholds, word lists and tests come from `tune` only; `check` is read when a change is finished.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

__all__ = ["SEED", "SPLITS", "Split", "assign", "in_split", "load_splits", "split_of"]

Split = Literal["tune", "check", "all"]
SPLITS: tuple[Split, ...] = ("tune", "check", "all")
SEED = "folio-split-2026-12"
SPLIT_FILE = Path(__file__).with_name("splits.json")


def _digest(dataset: str, stem: str) -> str:
    return hashlib.sha256(f"{SEED}:{dataset}:{stem}".encode()).hexdigest()


def assign(dataset: str, stems: Iterable[str]) -> dict[str, str]:
    """Document stem -> 'tune' or 'check' for one set's documents, a third of them `check`."""
    ordered = sorted(set(stems), key=lambda stem: (_digest(dataset, stem), stem))
    n_check = len(ordered) // 3
    return {stem: ("check" if i < n_check else "tune") for i, stem in enumerate(ordered)}


def load_splits(path: Path = SPLIT_FILE) -> dict[str, dict[str, str]]:
    """The split written down once: dataset -> document stem -> 'tune' | 'check'."""
    data: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def split_of(dataset: str, stem: str) -> str:
    """'tune' or 'check' for one document; a document the split file does not hold is an error."""
    table = load_splits().get(dataset, {})
    if stem not in table:
        raise KeyError(f"{dataset}: document {stem!r} is in no split (eval/splits.json)")
    return table[stem]


def in_split(dataset: str, docs: Iterable[str], split: str) -> bool:
    """Whether a question over `docs` belongs to `split` (all of its documents in it)."""
    if split == "all":
        return True
    return all(split_of(dataset, stem) == split for stem in docs)


OFFICE_FORMATS = ("docx", "pptx", "xlsx", "odf", "html", "md")


def office_files(data: Path, fmt: str) -> list[Path]:
    """One format's Office sources (a page's image resource is not a source)."""
    folder = data / "office" / fmt / "sources"
    return sorted(p for p in folder.iterdir() if p.suffix != ".png") if folder.is_dir() else []


def _office(data: Path) -> dict[str, str]:
    """File name -> 'tune' | 'check' for the Office set, a third of each format `check`."""
    table: dict[str, str] = {}
    for fmt in OFFICE_FORMATS:
        table.update(assign(f"office/{fmt}", [p.name for p in office_files(data, fmt)]))
    return table


def _stems(data: Path) -> dict[str, list[str]]:
    """Every dev set's document stems under the shared data folder."""
    fb = data / "financebench" / "pdfs"
    mm = data / "mmlongbench_doc" / "documents"
    dg = data / "docugami_sec10q" / "docs"
    return {
        "financebench": sorted(p.stem for p in fb.glob("*.pdf")),
        "mmlongbench": sorted(p.stem for p in mm.glob("*.pdf")),
        "docugami": sorted(p.stem for p in dg.glob("*.pdf")),
    }


def main(argv: list[str] | None = None) -> int:
    """Print every set's split (and, with --write, write it down: done once)."""
    parser = argparse.ArgumentParser(prog="python -m eval.splits")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--write", action="store_true", help="write eval/splits.json (once)")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"no shared data at {args.data}: nothing to split")
        return 0
    table = {name: assign(name, stems) for name, stems in _stems(args.data).items()}
    table["office"] = _office(args.data)
    if args.write:
        SPLIT_FILE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for name, places in table.items():
        check = sorted(s for s, p in places.items() if p == "check")
        print(f"{name}: {len(places) - len(check)} tune, {len(check)} check: {', '.join(check)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
