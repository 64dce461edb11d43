"""The results file docs/benchmarks.md is generated from: each benchmark run records its figures
there with its command and the code it measured (`code_hash`), so `python -m eval report` can
tell a current figure from a stale one.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["RESULTS", "BenchRow", "BenchRun", "Results", "code_hash", "load", "record"]

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "bench-results.json"
# what a figure depends on: the packages and the project file, not docs, tests or the web page
_CODE = ("ocr_engine", "ingest", "retrieval", "server", "eval", "pyproject.toml")
_NOT_CODE = ("server/web/static/", "eval/report.py", "eval/bench_results.py")
_SUFFIXES = (".py", ".json", ".jsonl", ".toml")


class BenchRow(BaseModel):
    """One figure: the set it is measured on, what it counts, its value and its baseline."""

    set: str
    figure: str
    value: str
    baseline: str = "—"  # chance, or the end-to-end figure beside a conditional one


class BenchRun(BaseModel):
    """One benchmark run: what it measured, with what command, at which code, on what machine."""

    area: str
    command: str
    commit: str
    code: str
    date: str
    machine: str
    rows: list[BenchRow]
    notes: list[str] = Field(default_factory=list)


class Results(BaseModel):
    """Every recorded run, by name (a rerun replaces its name's record)."""

    runs: dict[str, BenchRun] = Field(default_factory=dict)


def _code_files(root: Path) -> list[Path]:
    """The tracked code files under `root` (every file on disk when it is not a git checkout)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", *_CODE],
            cwd=root,
            capture_output=True,
            check=True,
            text=True,
        ).stdout.split("\0")
        names = [n for n in listed if n]
    except (OSError, subprocess.CalledProcessError):
        names = [
            str(p.relative_to(root))
            for top in _CODE
            for p in ([root / top] if (root / top).is_file() else (root / top).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        ]
    return sorted(
        root / n
        for n in names
        if n.endswith(_SUFFIXES) and not n.startswith(_NOT_CODE) and (root / n).is_file()
    )


def code_hash(root: Path = REPO) -> str:
    """A hash of the code's contents: equal for two checkouts whose code is the same."""
    digest = hashlib.sha256()
    for path in _code_files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _commit(root: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            check=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", *_CODE], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    return f"{head}+changes" if dirty else head


def load(path: Path = RESULTS) -> Results:
    """The recorded runs (none when the file is absent)."""
    if not path.exists():
        return Results()
    return Results.model_validate_json(path.read_text(encoding="utf-8"))


def record(
    name: str,
    area: str,
    command: str,
    rows: Iterable[BenchRow],
    notes: Sequence[str] = (),
    path: Path = RESULTS,
) -> BenchRun:
    """Write a run's figures into the results file under `name`, stamped with the code measured."""
    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    run = BenchRun(
        area=area,
        command=command,
        commit=_commit(REPO),
        code=code_hash(REPO),
        date=time.strftime("%Y-%m-%d", time.gmtime()),
        machine=f"{os.cpu_count()} cores, load average {load_avg:.1f} at the end",
        rows=list(rows),
        notes=list(notes),
    )
    results = load(path)
    results.runs[name] = run
    path.write_text(
        json.dumps(results.model_dump(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return run
