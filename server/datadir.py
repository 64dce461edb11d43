"""The data directory's lock: one process holds `DATA_DIR/folio.lock` before it opens any file of
the index or the ledger, and the file says who holds it (pid, command, and the API address of a
`folio serve`), so a second command can go through that server instead of touching the index.

The lock is an OS file lock (`flock`) on an open descriptor: the OS releases it when the process
dies, however it dies, so a killed server leaves no stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ocr_engine.errors import FolioError

__all__ = ["LOCK_FILE", "DataDirBusyError", "DataDirLock", "LockHolder", "lock_holder"]

LOCK_FILE = "folio.lock"


class LockHolder(BaseModel):
    """What the holder of a data directory wrote into its lock file."""

    pid: int
    command: str
    url: str | None = None
    started_at: float


class DataDirBusyError(FolioError):
    """Another process holds the data directory."""

    def __init__(self, data_dir: Path, holder: LockHolder | None) -> None:
        self.data_dir = data_dir
        self.holder = holder
        who = "another folio process"
        if holder is not None:
            who = f"`folio {holder.command}` (pid {holder.pid}"
            who += f", serving {holder.url})" if holder.url else ")"
        super().__init__(f"{data_dir} is in use by {who}")


def _read(fd: int) -> LockHolder | None:
    raw = os.pread(fd, 4096, 0)
    try:
        return LockHolder.model_validate_json(raw) if raw.strip() else None
    except ValidationError:
        return None


class DataDirLock:
    """An exclusive lock on a data directory, taken with `acquire` and held until `release` or
    the end of the process."""

    def __init__(self, data_dir: Path, command: str) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / LOCK_FILE
        self.command = command
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        """Take the lock or raise DataDirBusyError naming its holder; never waits."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_settled(fd)
            os.close(fd)
            raise DataDirBusyError(self.data_dir, holder) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._write(LockHolder(pid=os.getpid(), command=self.command, started_at=time.time()))
        return self

    def announce(self, url: str) -> None:
        """Say in the lock file where this process serves the API."""
        holder = self.holder()
        if holder is not None:
            self._write(holder.model_copy(update={"url": url}))

    def holder(self) -> LockHolder | None:
        return _read(self._fd) if self._fd is not None else None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor drops the flock

    def _write(self, holder: LockHolder) -> None:
        assert self._fd is not None
        data = holder.model_dump_json().encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def __enter__(self) -> DataDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_settled(fd: int) -> LockHolder | None:
    """The holder's record; a holder that has just taken the lock may not have written it yet."""
    for _ in range(20):
        holder = _read(fd)
        if holder is not None:
            return holder
        time.sleep(0.01)
    return None


def lock_holder(data_dir: Path) -> LockHolder | None:
    """Who holds `data_dir` now, or None when nobody does (checked without taking the lock)."""
    path = Path(data_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_settled(fd) or LockHolder(pid=0, command="?", started_at=0.0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
