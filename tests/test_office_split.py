"""The Office set's tune/check split written down in eval/splits.json is the one its seed gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.splits import OFFICE_FORMATS, assign, load_splits, office_files

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def test_the_office_split_is_the_seeded_third_of_each_format() -> None:
    table = load_splits()["office"]
    if not (DATA / "office").is_dir():
        pytest.skip("no shared Office data here")
    for fmt in OFFICE_FORMATS:
        names = [p.name for p in office_files(DATA, fmt)]
        assert {n: table[n] for n in names} == assign(f"office/{fmt}", names)
        assert sum(table[n] == "check" for n in names) == len(names) // 3
    assert len(table) == sum(len(office_files(DATA, f)) for f in OFFICE_FORMATS)
