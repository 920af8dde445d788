"""Signals held while a record is written to two places (a file and the store), or while
processes are torn down."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def signals_held(*, deliver: bool = True) -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done, then deliver them: a record written to
    two places (a file and the store) is in both or in neither. Without ``deliver`` they are
    dropped (a teardown that a second Ctrl-C must not cut short). Main thread only (elsewhere
    the block runs as it is: signals reach the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    old = {s: signal.signal(s, remember) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(received) if deliver else ():
            signal.raise_signal(signum)


__all__ = ["signals_held"]
