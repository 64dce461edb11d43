"""`folio ingest` says what happened to each file: new, changed, unchanged, failed and removed
are counted apart, and a file name with a newline stays on one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ocr_engine.options import OcrMode
from server.services import build_services
from server.settings import Settings
from tests.pdfgen import FACTS, fact_pdf, random_bytes

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "FOLIO_OCR": "never"}


def _ingest(folder: Path, data: Path) -> subprocess.CompletedProcess[str]:
    return _folio("ingest", str(folder), "--data-dir", str(data))


def _folio(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _summary(run: subprocess.CompletedProcess[str]) -> str:
    [line] = [ln for ln in run.stderr.splitlines() if " files: " in ln or " file: " in ln]
    return line.split(";")[0] + ";" + line.split(";")[1]


def test_counts_say_what_happened_to_each_file(tmp_path: Path) -> None:
    folder, data = tmp_path / "pdfs", tmp_path / "data"
    folder.mkdir()
    for name, (title, sections) in FACTS.items():
        (folder / name).write_bytes(fact_pdf(title, sections))
    (folder / "bad\nname.pdf").write_bytes(random_bytes())

    first = _ingest(folder, data)
    assert first.returncode == 1  # one file failed
    assert _summary(first) == "3 files: 2 new, 0 changed, 0 unchanged, 1 failed; 0 removed"
    [failed] = [ln for ln in first.stderr.splitlines() if ln.startswith("FAILED")]
    assert "bad\\nname.pdf" in failed  # escaped, on its own line

    (folder / "bad\nname.pdf").unlink()
    title, sections = FACTS["bakery.pdf"]
    (folder / "bakery.pdf").write_bytes(fact_pdf(title, [*sections, ("Flour", "Rye only.")]))
    (folder / "new.pdf").write_bytes(fact_pdf("Harbour Logbook", [("Tides", "High at 04:12.")]))
    second = _ingest(folder, data)
    assert second.returncode == 0, second.stderr
    assert _summary(second) == "3 files: 1 new, 1 changed, 1 unchanged, 0 failed; 1 removed"
    assert "ingest:" in second.stderr  # the page bar, while documents are read

    third = _ingest(folder, data)
    assert _summary(third) == "3 files: 0 new, 0 changed, 3 unchanged, 0 failed; 0 removed"
    assert "ingest:" not in third.stderr, third.stderr  # nothing read: no empty bar

    listed = _folio("docs", "--data-dir", str(data), "--json")
    [volcano] = [row for row in json.loads(listed.stdout) if row["source"] == "volcano.pdf"]
    assert volcano["card"].startswith("Volcanic Activity Report"), volcano  # read from its content
    shown = _folio("docs", "--data-dir", str(data)).stdout.splitlines()
    at = next(i for i, line in enumerate(shown) if line.endswith("volcano.pdf"))
    assert shown[at + 1].strip() == volcano["card"]  # what it is, under its file name
    services = build_services(Settings(data_dir=data, ocr=OcrMode.never), command="test")
    try:
        services.sync.remove(volcano["doc_id"])  # what the web page's Remove does
    finally:
        services.close()
    removed = _folio("docs", "--data-dir", str(data), "--removed", "--json")
    assert removed.returncode == 0, removed.stderr
    [stone] = json.loads(removed.stdout)
    assert stone["path"] == str(folder / "volcano.pdf") and stone["doc_id"] == volcano["doc_id"]


def test_a_long_card_line_keeps_its_organisation_and_period() -> None:
    from server.cli.cli_support import card_shown

    title = "ISEP Student Guide of the Graduate School for Integrative Sciences " * 3
    shown = card_shown(f"{title.strip()} · National University of Singapore · 2020")
    assert len(shown) <= 120 and shown.endswith(" … · National University of Singapore · 2020")
    assert card_shown("Best Buy Co., Inc · quarterly report (10-Q)") == (
        "Best Buy Co., Inc · quarterly report (10-Q)"
    )
