"""`make run` stopped by SIGTERM (to the server, as a process manager sends it) exits 0 and says it
stopped cleanly; by SIGINT (to the terminal's whole process group, as Ctrl-C sends it) it says so
too, and make reports no error; its log, written to a file and not a terminal, carries no
progress bar ("Loading weights: 100%")."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from doubles.loopback import free_port
from server.datadir import lock_holder
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _make_run(tmp_path: Path, sig: signal.Signals, to_make: bool = False) -> tuple[int, str]:
    """`make run` in its own process group until /health answers, then `sig` (to make itself
    with `to_make`): its status, its output."""
    venv = Path(sys.prefix)
    port = free_port()
    data, log = tmp_path / "data", tmp_path / f"make-{sig.name}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLIO_")}
    env.update(FOLIO_OCR="never", HF_HUB_OFFLINE="1")
    command = [
        "make",
        "--no-print-directory",
        "-C",
        str(REPO_ROOT),
        "-o",
        str(venv / ".setup-done"),  # the venv this test runs in is set up: no pip install
        "run",
        f"VENV={venv}",
        f"DATA_DIR={data}",
        f"INBOX={tmp_path / 'inbox'}",
        f"PORT={port}",
    ]
    with log.open("wb") as out:
        make = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            with httpx.Client(timeout=5) as client:
                while True:
                    try:
                        if client.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    assert make.poll() is None, log.read_text()
                    assert time.monotonic() < deadline, log.read_text()
                    time.sleep(0.3)
            holder = lock_holder(data)
            assert holder is not None and holder.pid != make.pid, log.read_text()
            if to_make:
                os.kill(make.pid, sig)  # `kill` of make's pid: make forwards it to its recipe
            elif sig is signal.SIGINT:
                os.killpg(make.pid, sig)  # Ctrl-C: make, its shell and the server all get it
            else:
                os.kill(holder.pid, sig)  # the server alone, as `kill PID` or systemd sends it
            status = make.wait(60)
            assert lock_holder(data) is None, "folio still holds the data directory"
        finally:
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait(30)
    return status, log.read_text(errors="replace")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_make_run_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    status, output = _make_run(tmp_path, sig)
    # a server's clean stop leaves make nothing to report; GNU make, interrupted itself (Ctrl-C
    # reaches the whole group), then ends by SIGINT as every interrupted program does, silently,
    # unless its recipe had already ended cleanly when it took the signal (seen on a loaded box)
    assert status in ((0,) if sig is signal.SIGTERM else (-signal.SIGINT, 0)), output
    assert f"folio stopped cleanly ({sig.name})" in output, output
    assert "make: ***" not in output and "Terminated" not in output, output
    assert "Loading weights" not in output and "it/s]" not in output, output  # no bar in a log


def test_make_run_stopped_through_make_stops_folio(tmp_path: Path) -> None:
    """SIGTERM to make's own pid reaches folio, which stops cleanly and releases the data
    directory; make, killed itself, then ends by SIGTERM and says "Terminated"."""
    status, output = _make_run(tmp_path, signal.SIGTERM, to_make=True)
    assert status == -signal.SIGTERM, output
    assert "folio stopped cleanly (SIGTERM)" in output, output
