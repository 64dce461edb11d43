"""Imports point one way (docs/architecture.md): between packages server -> ingest -> ocr_engine,
server -> retrieval, ingest -> retrieval, retrieval -> ocr_engine; inside a package from its
stage folders to the earlier ones and to its root (the contract), never back; another package
is reached through its root modules and its stage folders' public names; product code never
imports eval, the tests or their doubles."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

FORBIDDEN = {
    "ocr_engine": {"ingest", "server", "retrieval", "eval", "tests", "doubles"},
    "retrieval": {"ingest", "server", "eval", "tests", "doubles"},
    "ingest": {"server", "eval", "tests", "doubles"},
    "server": {"eval", "tests", "doubles"},
    "doubles": {"eval", "tests"},
}
ORDER = {
    "ocr_engine": ["inputs", "layout", "engines", "exports"],
    "ingest": ["ledger", "cards", "pipeline", "queue", "sync"],
    "retrieval": ["index", "search", "answer"],
    "server": ["http", "routes", "web", "serve", "cli"],
}
# stage folders another package may not import at all: answers are drawn at query time, and
# retrieval reads only ocr_engine's contract (its root modules)
OUT_OF_REACH = {
    "ingest": {"retrieval.answer"},
    "retrieval": {f"ocr_engine.{stage}" for stage in ORDER["ocr_engine"]},
}
HEAVY = ("torch", "onnxruntime", "fitz", "pymupdf", "qdrant_edge", "qdrant_client", "fastapi")


def _imports(path: Path) -> list[str]:
    """Every module path the file imports, at any level of the file (names of a `from` included:
    `from a.b import c` gives `a.b.c`, which may be a module or a name in `a.b`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def _module(path: Path) -> list[str]:
    return list(path.relative_to(REPO_ROOT).with_suffix("").parts)


def _stage(parts: list[str]) -> str | None:
    """The stage folder a module path is in (None for a package's root modules)."""
    stages = ORDER.get(parts[0], [])
    return parts[1] if len(parts) > 2 and parts[1] in stages else None


def _product_files() -> list[Path]:
    return [p for package in ORDER for p in sorted((REPO_ROOT / package).rglob("*.py"))]


def test_imports_point_one_way() -> None:
    wrong = []
    for package, forbidden in FORBIDDEN.items():
        files = sorted((REPO_ROOT / package).rglob("*.py"))
        assert files, package
        for path in files:
            if bad := {name.split(".")[0] for name in _imports(path)} & forbidden:
                wrong.append(f"{path.relative_to(REPO_ROOT)} imports {sorted(bad)}")
    assert wrong == []


def test_stages_inside_a_package_point_one_way() -> None:
    wrong = []
    for path in _product_files():
        me = _module(path)
        if me[-1] == "__main__":  # an entry point runs the package; it is nobody's import
            continue
        mine = _stage(me)
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != me[0] or (theirs := _stage(parts)) is None or theirs == mine:
                continue
            order = ORDER[me[0]]
            if mine is None or order.index(theirs) > order.index(mine):
                wrong.append(f"{'.'.join(me)} ({mine or 'root'}) imports {name} ({theirs})")
    assert wrong == []


def test_other_packages_are_reached_through_their_public_names() -> None:
    wrong = []
    for path in _product_files():
        me = _module(path)
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == me[0] or parts[0] not in ORDER:
                continue
            stage = _stage(parts)
            if stage is not None and len(parts) > 3:
                wrong.append(f"{'.'.join(me)} imports {name}: import it from {parts[0]}.{stage}")
            if stage is not None and f"{parts[0]}.{stage}" in OUT_OF_REACH.get(me[0], set()):
                wrong.append(f"{'.'.join(me)} imports {name}, out of {me[0]}'s reach")
    assert wrong == []


def test_every_stage_folder_declares_its_public_names() -> None:
    missing = []
    for package, stages in ORDER.items():
        folders = {p.parent.name for p in (REPO_ROOT / package).glob("*/__init__.py")}
        assert folders == set(stages), (package, folders)
        for stage in stages:
            if not (REPO_ROOT / package / stage / "__init__.pyi").is_file():
                missing.append(f"{package}/{stage}/__init__.pyi")
    assert missing == []


def test_stage_folders_import_nothing_heavy() -> None:
    """Importing every stage folder (not using a name) loads none of the heavy libraries."""
    folders = [f"{package}.{stage}" for package, stages in ORDER.items() for stage in stages]
    code = (
        "import importlib, sys\n"
        f"for name in {folders!r}:\n"
        "    assert importlib.import_module(name).__all__, name\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def test_modules_and_functions_stay_small() -> None:
    """No product module over 400 lines; a function over 60 lines says why in a comment above
    it (or above its decorators)."""
    wrong = []
    for path in _product_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        where = path.relative_to(REPO_ROOT)
        if len(lines) > MAX_MODULE_LINES:
            wrong.append(f"{where}: {len(lines)} lines")
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if length > MAX_FUNCTION_LINES and not lines[first - 2].lstrip().startswith("#"):
                wrong.append(f"{where}:{node.lineno} {node.name}: {length} lines, no reason given")
    assert wrong == []


def _drawn(text: str) -> dict[str, list[str]]:
    """The folder tree a doc draws: each package line, then its indented stage folders."""
    tree: dict[str, list[str]] = {}
    package = None
    for line in text.splitlines():
        if (top := line.split("/")[0]) in ORDER and line.startswith(f"{top}/ "):
            package = top
            tree[package] = []
        elif package is not None and line.startswith("  ") and line.strip().split("/")[0]:
            tree[package].append(line.strip().split("/")[0])
        elif not line.startswith("  "):
            package = None
    return tree


def test_readme_and_architecture_draw_the_folders_as_they_are() -> None:
    for doc in ("README.md", "docs/architecture.md"):
        assert _drawn((REPO_ROOT / doc).read_text(encoding="utf-8")) == ORDER, doc
