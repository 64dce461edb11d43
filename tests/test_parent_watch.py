"""Pool workers leave Ctrl-C to the process that owns the pool."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor

from ocr_engine.parent_watch import watch_parent


def _interrupt_self() -> str:
    try:
        os.kill(os.getpid(), signal.SIGINT)  # what the terminal's Ctrl-C does to the group
        time.sleep(0.2)
    except KeyboardInterrupt:
        return "interrupted"
    return "still here"


def test_a_pool_worker_ignores_ctrl_c() -> None:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        1, mp_context=context, initializer=watch_parent, initargs=(os.getpid(),)
    ) as pool:
        assert pool.submit(_interrupt_self).result(timeout=60) == "still here"
