"""A child process that ends when its parent dies, so that a SIGKILLed folio leaves none behind,
and leaves Ctrl-C to its parent."""

from __future__ import annotations

import os
import signal
import threading
import time

__all__ = ["watch_parent"]

_POLL_S = 1.0


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_POLL_S)
    os._exit(1)


def watch_parent(parent: int) -> None:
    """Exit this process within about a second of `parent` (its parent's pid) dying; ignore
    Ctrl-C, which the terminal sends the whole process group: the parent stops its pool (a
    worker interrupted in its queue read printed a traceback at every Ctrl-C of `folio serve`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="parent-watch").start()
