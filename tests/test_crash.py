"""SIGKILL an ingest at random moments, restart it, and end with exactly a clean run's index.

Each run is `python -m doubles.crash_driver` (the real services, the hash embedder) in its own
process; the reference is a run nobody kills, over the same folder, in another data directory.
Compared: every document's ledger entry and every point id, per document, and the point total.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from doubles.crash_driver import snapshot
from ingest.ledger.ledger import Ledger
from ingest.ledger.records import DocStatus
from tests.conftest import REPO_ROOT
from tests.pdfgen import encrypted_pdf, fact_pdf, html_named_pdf

KILLS_PER_PHASE = 4


def _corpus(folder: Path) -> None:
    folder.mkdir(parents=True)
    topics = ["Kilns", "Harbours", "Orchards", "Glaciers", "Looms", "Comets"]
    for i, topic in enumerate(topics):
        sections = [(f"{topic} {n}", f"Notes on {topic.lower()} number {n}.") for n in range(3)]
        (folder / f"{topic.lower()}.pdf").write_bytes(
            fact_pdf(f"{topic} Handbook", sections, filler_pages=2 + 2 * i)
        )
    shutil.copy(folder / "kilns.pdf", folder / "kilns copy.pdf")
    (folder / "locked.pdf").write_bytes(encrypted_pdf("s3cret"))
    (folder / "locked.pdf.password").write_text("s3cret\n")
    (folder / "page.pdf").write_bytes(html_named_pdf())


def _change(folder: Path) -> None:
    """Edits a user makes between two runs: change, rename, delete, copy, add."""
    (folder / "harbours.pdf").write_bytes(
        fact_pdf("Harbours Handbook", [("Tides", "High tide is at noon.")], filler_pages=5)
    )
    (folder / "orchards.pdf").rename(folder / "orchards 2024.pdf")
    (folder / "glaciers.pdf").unlink()
    (folder / "kilns copy.pdf").unlink()
    shutil.copy(folder / "looms.pdf", folder / "looms again.pdf")
    (folder / "bridges.pdf").write_bytes(
        fact_pdf("Bridges Handbook", [("Spans", "The span is 300 m.")], filler_pages=6)
    )


def _env(mark: str) -> dict[str, str]:
    env = dict(os.environ, FOLIO_CRASH_MARK=mark, PYTHONPATH=str(REPO_ROOT))
    env.pop("FOLIO_DATA_DIR", None)
    return env


def _command(data_dir: Path, folder: Path) -> list[str]:
    return [sys.executable, "-m", "doubles.crash_driver", str(data_dir), str(folder)]


def _start(data_dir: Path, folder: Path, mark: str) -> tuple[subprocess.Popen[str], float]:
    """A run, once it has started up (the driver says `ready`); and when that was."""
    proc = subprocess.Popen(
        _command(data_dir, folder),
        env=_env(mark),
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", f"the driver did not start: {line!r}"
    return proc, time.monotonic()


def _run(data_dir: Path, folder: Path, mark: str) -> float:
    """A run to its end; the seconds it spent after starting up."""
    proc, ready = _start(data_dir, folder, mark)
    assert proc.stdout is not None
    with proc.stdout:
        proc.stdout.read()
    assert proc.wait(timeout=300) == 0
    return time.monotonic() - ready


def _kill_at(data_dir: Path, folder: Path, mark: str, after: float) -> bool:
    """SIGKILL a run `after` seconds after it started up; True when it had not ended by then."""
    proc, _ = _start(data_dir, folder, mark)
    try:
        proc.wait(timeout=after)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return True
    finally:
        assert proc.stdout is not None
        proc.stdout.close()
    return False


def _half_done(data_dir: Path) -> list[str]:
    """Documents a killed run left processing."""
    if not (data_dir / "ledger.sqlite3").exists():
        return []
    ledger = Ledger(data_dir)
    try:
        return [r.doc_id for r in ledger.documents(DocStatus.processing)]
    finally:
        ledger.close()


def _marked_processes(mark: str) -> list[int]:
    """Processes (workers included) a run started and left behind, found by their environment."""
    needle = f"FOLIO_CRASH_MARK={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_killed_ingests_end_with_exactly_the_points_of_a_clean_run(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    _corpus(folder)
    mark = uuid.uuid4().hex
    rng = random.Random(20240604)
    crashed = tmp_path / "crashed"
    kills: list[float] = []
    interrupted = 0
    for phase in (1, 2):
        if phase == 2:
            _change(folder)
        clean = tmp_path / f"clean{phase}"
        seconds = _run(clean, folder, mark)
        expected = snapshot(clean)
        assert expected["total"] > 0 and expected["points"]
        for _ in range(KILLS_PER_PHASE):
            after = rng.uniform(0.0, seconds)
            if _kill_at(crashed, folder, mark, after):
                kills.append(round(after, 2))
                interrupted += bool(_half_done(crashed))
        _run(crashed, folder, mark)
        got = snapshot(crashed)
        assert got["documents"] == expected["documents"], f"phase {phase}, kills at {kills}"
        assert got["points"] == expected["points"], f"phase {phase}, kills at {kills}"
        assert got["total"] == expected["total"] == sum(map(len, got["points"].values()))
    print(f"{len(kills)} kills at {kills} s, {interrupted} in the middle of a document")
    assert interrupted >= 1, f"no kill interrupted a document (kills at {kills})"
    deadline = time.monotonic() + 10
    while _marked_processes(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _marked_processes(mark) == [], "a killed run left a worker process behind"
