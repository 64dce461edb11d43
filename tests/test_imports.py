"""Imports point one way: server -> ingest -> ocr_engine, server -> retrieval, ingest ->
retrieval; ocr_engine and retrieval never import ingest or server; product code never imports
eval, the tests or their doubles."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

FORBIDDEN = {
    "ocr_engine": {"ingest", "server", "retrieval", "eval", "tests", "doubles"},
    "retrieval": {"ingest", "server", "eval", "tests", "doubles"},
    "ingest": {"server", "eval", "tests", "doubles"},
    "server": {"eval", "tests", "doubles"},
    "doubles": {"eval", "tests"},
}


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_imports_point_one_way() -> None:
    wrong = []
    for package, forbidden in FORBIDDEN.items():
        files = sorted((REPO_ROOT / package).rglob("*.py"))
        assert files, package
        for path in files:
            if bad := _imported(path) & forbidden:
                wrong.append(f"{path.relative_to(REPO_ROOT)} imports {sorted(bad)}")
    assert wrong == []
