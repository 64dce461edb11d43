"""A file name with a newline stays on one line in every log line and CLI table (escaped)."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
from pathlib import Path

from server.cli.cli_support import OneLine, shown
from tests.pdfgen import random_bytes

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "FOLIO_OCR": "never"}
NAME = "line1\nline2 naïve\t文件.pdf"
ESCAPED = "line1\\nline2 naïve\\t文件.pdf"


def _folio(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _split(text: str) -> list[str]:
    """Lines that a name's second half begins (a name split across lines)."""
    return [line for line in text.splitlines() if line.startswith("line2")]


def test_shown_escapes_control_characters_only() -> None:
    assert shown(NAME) == ESCAPED
    assert shown("naïve 文件 ® .pdf") == "naïve 文件 ® .pdf"


def test_a_log_record_is_one_line_whatever_it_names() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(OneLine())
    log = logging.getLogger("tests.one_line")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("failed: %s: %s", NAME, "the PDF is truncated")
        log.warning(f"ok: {NAME}, 3 pages")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("reading %s", NAME)
    finally:
        log.removeHandler(handler)
    lines = out.getvalue().splitlines()
    assert lines[:3] == [
        f"failed: {ESCAPED}: the PDF is truncated",
        f"ok: {ESCAPED}, 3 pages",
        f"reading {ESCAPED}",
    ]
    assert lines[3] == "Traceback (most recent call last):"  # a traceback keeps its lines


def test_ingest_log_and_docs_table_keep_a_name_on_one_line(tmp_path: Path) -> None:
    folder, data = tmp_path / "inbox", tmp_path / "data"
    folder.mkdir()
    (folder / NAME).write_bytes(random_bytes())
    ingest = _folio("ingest", str(folder), "--data-dir", str(data))
    assert ingest.returncode == 1, ingest.stderr
    assert not _split(ingest.stderr), ingest.stderr
    logged = [ln for ln in ingest.stderr.splitlines() if "WARNING" in ln and "failed:" in ln]
    assert logged and ESCAPED in logged[0], ingest.stderr

    docs = _folio("docs", "--data-dir", str(data))
    assert docs.returncode == 0, docs.stderr
    assert not _split(docs.stdout), docs.stdout
    [row] = [line for line in docs.stdout.splitlines() if line.startswith("failed")]
    assert row.endswith(ESCAPED), docs.stdout
