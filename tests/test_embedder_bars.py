"""Loading the embedding model draws transformers' "Loading weights" bar only on a terminal: a
server's log, an MCP server's stderr and a notebook get none (the real model, in a subprocess
whose stderr is a pipe, then a pseudo-terminal)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

from tests.conftest import REPO_ROOT

LOAD = (
    "from retrieval.index.embedder import SentenceTransformerEmbedder as E\n"
    "E().embed_query('warm up')\n"
    "import sys; print('loaded', file=sys.stderr)\n"
)
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_no_bar_where_stderr_is_no_terminal() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOAD],
        cwd=REPO_ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "loaded" in done.stderr
    assert "Loading weights" not in done.stderr and "it/s]" not in done.stderr, done.stderr


def test_a_terminal_still_gets_the_bar() -> None:
    """The check above can fail: on a terminal the same load draws the bar."""
    leader, follower = pty.openpty()
    # a terminal of 24 x 100 (a new one is 0 columns wide, where tqdm draws nothing)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        [sys.executable, "-c", LOAD], cwd=REPO_ROOT, env=ENV, stderr=follower
    ) as proc:
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
        proc.wait(300)
    os.close(leader)
    text = seen.decode(errors="replace")
    assert proc.returncode == 0 and "loaded" in text, text
    assert "Loading weights" in text, text
