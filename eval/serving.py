"""`folio serve` in a subprocess on loopback, for the benchmarks that drive its HTTP API."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import IO

import httpx

__all__ = ["ServerDidNotStartError", "folio_server"]


class ServerDidNotStartError(RuntimeError):
    """`folio serve` exited or did not answer /health in time."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def folio_server(
    data_dir: Path,
    *,
    env: dict[str, str] | None = None,
    log_file: Path | None = None,
    start_timeout_s: float = 120.0,
) -> Iterator[str]:
    """The base URL of a `folio serve` over `data_dir` once /health answers; stopped on exit."""
    port = _free_port()
    cmd = [sys.executable, "-m", "server", "serve", "--data-dir", str(data_dir)]
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    sink: ContextManager[IO[bytes] | int] = (
        log_file.open("wb") if log_file is not None else nullcontext(subprocess.DEVNULL)
    )
    with sink as out:
        proc = subprocess.Popen([*cmd, "--port", str(port)], env=full_env, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, proc, start_timeout_s, log_file)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_healthy(
    base: str, proc: subprocess.Popen[bytes], timeout_s: float, log_file: Path | None
) -> None:
    deadline = time.monotonic() + timeout_s
    with httpx.Client(base_url=base, timeout=10) as client:
        while True:
            try:
                if client.get("/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                where = f"; see {log_file}" if log_file is not None else ""
                raise ServerDidNotStartError(f"folio serve did not start{where}")
            time.sleep(0.3)
