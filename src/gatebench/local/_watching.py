"""What the load watches besides the engine, alike on this machine (``gatebench.local._deployed``)
and on a tester VM (``gatebench.vm._deployed``): a replica fault's timer per phase, and the watch
that follows the engine's phase events (the fault's kill and restart, each phase's TLS
handshakes over its window).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from gatebench.core.measure import PhaseResult
from gatebench.local._wire import LoopbackObserver

WINDOW_MARGIN_S = 0.05
"""Handshakes this close outside a phase's window count for it."""


class PhaseTimers:
    """One timer per phase: armed when the phase starts, taken back when it ends. ``lock`` is
    held while a timer is armed or taken back: a timer that fires checks :meth:`armed` under it,
    so it never acts for a phase that has ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._timers: dict[int, threading.Timer] = {}

    def arm(self, phase: int, delay: float, fire: Callable[[], None]) -> None:
        timer = threading.Timer(delay, fire)
        timer.daemon = True
        with self.lock:
            self._timers[phase] = timer
        timer.start()

    def armed(self, phase: int) -> bool:
        """Whether ``phase``'s timer is still armed (call it holding ``lock``)."""
        return phase in self._timers

    def disarm(self, phase: int) -> threading.Timer | None:
        """``phase``'s timer, cancelled (it may be firing right now); None: none was armed."""
        with self.lock:
            timer = self._timers.pop(phase, None)
        if timer is not None:
            timer.cancel()
        return timer

    def close(self) -> None:
        with self.lock:
            timers = list(self._timers.values())
            self._timers.clear()
        for timer in timers:
            timer.cancel()


class Fault(Protocol):
    def on_start(self, index: int, at_ms: float) -> None: ...

    def on_end(self, index: int) -> None: ...

    def close(self) -> None: ...


class PhaseWatch:
    """What both watches do with the engine's phase events; each sets these attributes."""

    observer: LoopbackObserver | None
    fault: Fault | None
    started_ms: dict[int, float]
    """Phase → the engine's start marker (epoch ms): connections (and their handshakes) open
    before a request's own start time."""

    def follow(self, kind: str, phase: int, at_ms: float) -> None:
        """A phase event of the engine (``start``, ``end``): noted, and handed to the fault."""
        if kind == "start" and at_ms:
            self.started_ms[phase] = at_ms
        if self.fault is None:
            return
        if kind == "start":
            self.fault.on_start(phase, at_ms)
        elif kind == "end":
            self.fault.on_end(phase)

    def phase_handshakes(self, result: PhaseResult, port: int) -> tuple[int, int] | None:
        """The new and resumed handshakes ``port`` answered over the phase's window (None:
        not observed)."""
        if self.observer is None:
            return None
        start_ms = min(result.start_ms, self.started_ms.get(result.phase, result.start_ms))
        return self.observer.handshakes_between(
            start_ms / 1000.0 - WINDOW_MARGIN_S, result.end_ms / 1000.0 + WINDOW_MARGIN_S, port
        )

    def close(self) -> None:
        if self.fault is not None:
            self.fault.close()
        if self.observer is not None:
            self.observer.close()


__all__ = ["WINDOW_MARGIN_S", "Fault", "PhaseTimers", "PhaseWatch"]
