"""docs/benchmarks.md is generated from the results file: a run measured at other code is named
without its figures, an area with no current run says what to run, and the code hash follows
the code, not the docs (issue 36, item 15)."""

from __future__ import annotations

import shutil
from pathlib import Path

from eval.bench_results import BenchRow, BenchRun, Results, code_hash, load, record
from eval.report import AREAS, render


def _run(code: str, value: str) -> BenchRun:
    return BenchRun(
        area="Answers right",
        command="python -m eval answers --split check",
        commit="abc",
        code=code,
        date="2026-12-04",
        machine="2 cores",
        rows=[
            BenchRow(set="FinanceBench", figure="number in answer", value=value, baseline="0.003")
        ],
    )


def test_only_figures_of_the_current_code_are_shown() -> None:
    results = Results(
        runs={"answers-check": _run("new", "2/6"), "answers-tune": _run("old", "9/9")}
    )
    text = render(results, "new")
    assert "| FinanceBench | number in answer | 2/6 | 0.003 | answers-check |" in text
    assert "9/9" not in text
    assert "## Not current" in text and "`answers-tune`" in text
    for area in AREAS:
        assert f"## {area}" in text
    assert f"Not measured at this code. Run: `{AREAS['Query latency']}`." in text


def test_a_record_replaces_its_names_run_and_stamps_the_code(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    record("x", "Scale-out", "cmd", [BenchRow(set="s", figure="f", value="1")], path=path)
    record("x", "Scale-out", "cmd", [BenchRow(set="s", figure="f", value="2")], path=path)
    runs = load(path).runs
    assert list(runs) == ["x"] and runs["x"].rows[0].value == "2"
    assert runs["x"].code == code_hash()
    assert "| s | f | 2 |" in render(load(path), code_hash())


def test_the_code_hash_follows_code_not_docs(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for name in ("retrieval/a.py", "docs/b.md", "pyproject.toml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x = 1\n")
    before = code_hash(root)
    (root / "docs/b.md").write_text("changed\n")
    assert code_hash(root) == before
    (root / "retrieval/a.py").write_text("x = 2\n")
    assert code_hash(root) != before
    shutil.rmtree(root / "retrieval")
    assert code_hash(root) != before


def test_docs_benchmarks_is_what_the_results_give_at_this_code() -> None:
    """A hand edit, or a code change after the figures were measured, fails here until
    `python -m eval report` writes the page again (stale figures then move to "Not current")."""
    from eval.report import REPORT

    assert REPORT.read_text(encoding="utf-8") == render(load(), code_hash()), (
        "docs/benchmarks.md is not what docs/bench-results.json gives: run `python -m eval report`"
    )
