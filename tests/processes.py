"""What the tests of processes share (the grid's, the safety tests'): whether a process is alive, and waiting on a
condition with a deadline (never a bare sleep). Written apart from :func:`crossner_hf.executors.pid_alive` on
purpose: a test that a cell's process is gone must not trust the liveness check it tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs; a zombie (reaped by no one yet) is gone for a test's purpose."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):  # no /proc (macOS): kill(0) is the answer
        return True


def wait_for(condition: Callable[[], object], what: str, seconds: float = 300) -> None:
    """Poll ``condition`` until it holds; an ``AssertionError`` naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
