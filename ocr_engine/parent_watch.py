"""A child process that ends when its parent dies, so that a SIGKILLed folio leaves none behind."""

from __future__ import annotations

import os
import threading
import time

__all__ = ["watch_parent"]

_POLL_S = 1.0


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_S)
    os._exit(1)


def watch_parent(parent: int) -> None:
    """Exit this process within about a second of `parent` (its parent's pid) dying."""
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="parent-watch").start()
