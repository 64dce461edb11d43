"""`eval office` records a whole split's per-format figures under "Office files", each beside the
ground truth's count, with the converter's measured peak memory; a run with --limit records
nothing."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import eval.office as office
from eval.report import AREAS, BENCH


def test_the_measured_pool_reads_a_converters_peak_memory(tmp_path: Path) -> None:
    pool = office._MeasuredPool()
    hold = "b = bytearray(120 << 20); b[::4096] = b'x' * len(b[::4096]); import time; time.sleep(1)"
    done = pool.run([sys.executable, "-c", hold], cwd=tmp_path, what="stand-in")
    assert done.returncode == 0
    assert pool.peaks == [done.peak_mb] and 120 <= done.peak_mb < 400


def _measured(sources: list[Path], options: object) -> office._Format:
    sums = Counter({"chars": 100, "chars_found": 91, "heads": 4, "heads_found": 3})
    return office._Format(files=2, pages=5, seconds=4.0, sums=sums, peaks=[200.0, 215.4, 300.0])


@pytest.mark.parametrize("limit", [[], ["--limit", "1"]])
def test_a_whole_splits_run_records_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: list[str]
) -> None:
    (tmp_path / "office").mkdir()
    monkeypatch.delenv("FOLIO_CONVERT_MEMORY_MB", raising=False)  # the cap in the baseline
    recorded: list[tuple[Any, ...]] = []
    monkeypatch.setattr(office, "_measure", _measured)
    monkeypatch.setattr(office, "record", lambda *args: recorded.append(args))
    assert office.main(["--data", str(tmp_path), "--split", "check", *limit]) == 0
    if limit:
        assert recorded == []
        return
    [(name, area, command, rows, notes)] = recorded
    assert (name, area, command) == ("office-check", "Office files", AREAS["Office files"])
    docx = [
        (r.figure, r.value, r.baseline) for r in rows if r.set == "check: docx, 2 files, 5 pages"
    ]
    assert docx == [
        ("text conserved (letters and digits)", "0.910 (91)", "of 100 in the ground truth"),
        ("headings found with a heading type", "0.750 (3)", "of 4 in the ground truth"),
        ("s of conversion per page (converter start and layout included)", "0.80", "—"),
        (
            "converter peak RSS MiB per conversion, median / max",
            "215 / 300",
            "cap 2048 (killed past it)",
        ),
    ]
    assert any("peak RSS" in n for n in notes)
    assert ("office", "--split", "check") in BENCH
