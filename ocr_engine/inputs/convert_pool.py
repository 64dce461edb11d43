"""A bounded pool of converter processes (LibreOffice, Chromium), each with a time and memory cap.

At most `processes` converters run at once in this process; a caller waits for a slot. Each runs
in a session of its own, so a hung or runaway converter and every child it started are killed
together (SIGKILL to its process group) when it passes `timeout_s` or its processes' resident
memory passes `memory_mb`; the conversion then fails with `ConversionError` saying which, and
nothing else is touched. Limits come from `FOLIO_CONVERT_PROCESSES`, `FOLIO_CONVERT_TIMEOUT_S` and
`FOLIO_CONVERT_MEMORY_MB` when not given.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from ocr_engine.errors import BadInputError

__all__ = ["ConversionError", "ConvertLimits", "ConvertPool", "Converted", "default_pool"]

_POLL_S = 0.2
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class ConversionError(BadInputError):
    """A file could not be rendered to pages: the converter failed, hung or ran out of memory."""


class ConvertLimits(BaseModel):
    """How many converters run at once, and how long and how large each may grow."""

    processes: int = Field(default=2, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    memory_mb: int = Field(default=2048, ge=64)

    @classmethod
    def from_env(cls) -> ConvertLimits:
        env = os.environ
        return cls(
            processes=int(env.get("FOLIO_CONVERT_PROCESSES", "2")),
            timeout_s=float(env.get("FOLIO_CONVERT_TIMEOUT_S", "120")),
            memory_mb=int(env.get("FOLIO_CONVERT_MEMORY_MB", "2048")),
        )


class Converted(BaseModel):
    """One converter run that exited by itself: its exit status, output and time."""

    returncode: int
    output: str
    seconds: float
    peak_mb: float


def _session_rss(session: int) -> int:
    """Resident bytes of every process in session `session` (the converter and its children)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 21 and int(fields[3]) == session:  # field 6 of stat: the session id
            total += int(fields[21]) * _PAGE  # field 24: rss in pages
    return total


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


class ConvertPool:
    """Runs converter commands, `limits.processes` at a time, each bounded in time and memory."""

    poll_s = _POLL_S  # how often a run's memory is read (a measuring subclass reads it more often)

    def __init__(self, limits: ConvertLimits | None = None) -> None:
        self.limits = limits or ConvertLimits.from_env()
        self._slots = threading.BoundedSemaphore(self.limits.processes)

    def run(
        self, argv: Sequence[str], *, cwd: Path, what: str, env: dict[str, str] | None = None
    ) -> Converted:
        """Run `argv` in `cwd`; `ConversionError` when it was killed (`what` names the file)."""
        with self._slots:
            return self._run(list(argv), cwd, what, env)

    def _run(self, argv: list[str], cwd: Path, what: str, env: dict[str, str] | None) -> Converted:
        limits = self.limits
        started = time.monotonic()
        log_path = cwd / ".converter.log"
        try:
            with log_path.open("wb") as log:
                process = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env={**os.environ, **(env or {})},
                )
        except OSError as exc:
            raise ConversionError(
                f"{what}: the converter {argv[0]} cannot be started ({exc})"
            ) from None
        peak = 0
        reason = ""
        try:
            while process.poll() is None:
                elapsed = time.monotonic() - started
                rss = _session_rss(process.pid)
                peak = max(peak, rss)
                if elapsed > limits.timeout_s:
                    reason = f"did not finish in {limits.timeout_s:g} s (hung or too large); killed"
                elif rss > limits.memory_mb << 20:
                    reason = f"used more than {limits.memory_mb} MiB of memory; killed"
                if reason:
                    break
                time.sleep(self.poll_s)
        finally:
            if process.poll() is None or reason:
                _kill(process)
            else:  # the leader exited: children it left behind go too
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
        output = log_path.read_bytes().decode("utf-8", "replace")[-2000:]
        if reason:
            raise ConversionError(f"{what}: the converter {Path(argv[0]).name} {reason}")
        return Converted(
            returncode=process.returncode,
            output=output,
            seconds=time.monotonic() - started,
            peak_mb=peak / (1 << 20),
        )


_default: ConvertPool | None = None
_default_lock = threading.Lock()


def default_pool() -> ConvertPool:
    """This process's pool, made on first use with limits from the environment."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ConvertPool()
        return _default
