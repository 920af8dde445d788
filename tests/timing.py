"""Timing bands judged against what the machine did meanwhile (a test helper: nothing in the
product imports it). One definition for every test that asserts a measured latency or rate
within a band (they are marked ``timing_band``).

Why: this machine is shared (2 cores, several people's tests at once). A measured figure can
miss its band because the code is wrong, or because other work held the CPU while it was
measured; the figure alone cannot tell which. What the machine did meanwhile can, and gatebench
measures it anyway:

- the CPU other processes used during each measured phase (``Measurement.other_cpu_pct``, from
  /proc/stat by ``gatebench.local.engines.cpu``; above ``gatebench.core.measure.NOISY_OTHERS_PCT`` the
  product itself flags the phase ``noisy``), or around a test's own requests
  (:func:`others_cpu_during`);
- the mock backend's own lateness (``GET /__gatebench__/stats``: how late after its deadline it
  released each held response; tens of µs on an idle machine, docs/trust.md), read while the run
  still holds the backend (:class:`BackendWatch`).

The rule (:func:`measure_within_bands`):

1. Every band holds: the test goes on.
2. A band is missed on the side other work cannot push it to (a latency under the delay, more
   requests than the hold allows, a rate that is too high), or on the busy side while the
   machine was not busy, or while a *witness* moved (a figure load cannot move but a real error
   would: the fastest request of the ground truth still reads the delay, since scheduling delays
   some requests and a wrong delay every one): the test fails at once, with the figures and
   what the machine did.
3. A band is missed on the busy side (latency up, rate down) while the machine was busy (others
   used more than ``NOISY_OTHERS_PCT`` of it during a measured phase, or the backend released
   its median response ``BACKEND_LATE_MS`` or more late): the miss is explained. The helper waits
   for a quieter moment (others under ``NOISY_OTHERS_PCT`` over a second, at most
   ``QUIET_WAIT_S``) and measures again, at most ``ATTEMPTS`` times in all; if the miss remains,
   the test fails with every attempt's figures.

It never passes by skipping: a test passes only on a measurement inside every band.
``tests/integration/test_ground_truth.py::test_a_wrong_delay_of_the_same_size_still_fails``
shows that an error of the size a busy machine causes (2 ms on a 20 ms delay) still fails.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

import pytest

from gatebench.core.measure import NOISY_OTHERS_PCT
from gatebench.local.engines.cpu import CpuSampler
from gatebench.local.procs import Supervisor

T = TypeVar("T")

ATTEMPTS = 3
"""Measurements at most, the first included."""
QUIET_WAIT_S = 30.0
"""How long to wait for a quieter moment before measuring again (then it measures anyway)."""
QUIET_WINDOW_S = 1.0
BACKEND_LATE_MS = 1.0
"""The backend's median lateness that marks it delayed by the machine: its idle figure is tens
of microseconds (docs/trust.md), and its own test bounds it under 1 ms."""


@dataclass(frozen=True)
class Band:
    """One measured figure and the band it must lie in; ``busy`` is the side other work on the
    machine pushes it to (``up`` for a latency or a gap, ``down`` for a rate or a count)."""

    what: str
    value: float
    low: float = -math.inf
    high: float = math.inf
    busy: Literal["up", "down"] = "up"

    @property
    def missed(self) -> Literal["below", "above"] | None:
        if self.value < self.low:
            return "below"
        if self.value > self.high:
            return "above"
        return None

    @property
    def on_the_busy_side(self) -> bool:
        return (self.missed, self.busy) in (("above", "up"), ("below", "down"))

    def describe(self) -> str:
        bounds = (
            f"[{self.low:g}, {self.high:g}]"
            if math.isfinite(self.low) and math.isfinite(self.high)
            else f">= {self.low:g}"
            if math.isfinite(self.low)
            else f"<= {self.high:g}"
        )
        return f"{self.what} = {self.value:.6g}, expected {bounds}"


@dataclass(frozen=True)
class Meanwhile:
    """What the machine did while one attempt measured."""

    others_cpu_pct: float | None
    """The highest share of the machine other processes used during a measured phase."""
    backend_late_ms: float | None = None
    """How late the backend released its median held response (None: not read)."""

    @property
    def busy(self) -> bool:
        return (self.others_cpu_pct is not None and self.others_cpu_pct > NOISY_OTHERS_PCT) or (
            self.backend_late_ms is not None and self.backend_late_ms >= BACKEND_LATE_MS
        )

    def describe(self) -> str:
        others = (
            "others' CPU not measured"
            if self.others_cpu_pct is None
            else f"others used {self.others_cpu_pct:.0f} % of the CPU"
        )
        late = (
            ""
            if self.backend_late_ms is None
            else f", the backend released its median response {self.backend_late_ms:.3f} ms late"
        )
        return others + late


@dataclass(frozen=True)
class Timed(Generic[T]):
    """One attempt: what the test measured, its bands, and what the machine did meanwhile."""

    result: T
    bands: Sequence[Band]
    meanwhile: Meanwhile
    witnesses: Sequence[Band] = ()
    """Figures other work cannot move (much) but a real error would: while one is outside its
    band, the machine's load does not explain a miss. The ground truth's: the fastest request
    still reads the delay (scheduling delays some requests, a wrong delay moves every one)."""


@dataclass(frozen=True)
class Judgement:
    passed: bool
    explained: bool
    """A miss the machine's load explains (only when not passed)."""
    text: str


def judge(attempt: Timed[T]) -> Judgement:
    """Rules 1–3 of the module docstring, for one attempt."""
    missed = [b for b in attempt.bands if b.missed]
    if not missed:
        return Judgement(True, False, "every band holds")
    moved = [w for w in attempt.witnesses if w.missed]
    explained = attempt.meanwhile.busy and all(b.on_the_busy_side for b in missed) and not moved
    text = "; ".join(b.describe() for b in missed)
    if moved:
        text += "; and what load cannot move moved: " + "; ".join(w.describe() for w in moved)
    return Judgement(False, explained, text + f" (meanwhile {attempt.meanwhile.describe()})")


def measure_within_bands(
    measure: Callable[[], Timed[T]],
    *,
    attempts: int = ATTEMPTS,
    wait_for_quiet: Callable[[], str] | None = None,
) -> T:
    """``measure`` until every band holds (rule 1), failing the test on a miss the machine's
    load does not explain (rule 2) or one that remains after ``attempts`` (rule 3). Returns the
    passing attempt's result."""
    quiet = wait_for_quiet or wait_for_a_quiet_moment
    history: list[str] = []
    for number in range(1, attempts + 1):
        if number > 1:
            history.append(f"  then {quiet()}")
        verdict = judge(attempt := measure())
        if verdict.passed:
            # what it took, in the test's captured output (``pytest -rA`` shows it)
            print(*history, f"  attempt {number}: every band holds", sep="\n")
            return attempt.result
        history.append(f"  attempt {number}: {verdict.text}")
        if not verdict.explained:
            reason = (
                "a miss the machine's load does not explain"
                if attempt.meanwhile.busy
                else "a miss on a machine that was not busy"
            )
            pytest.fail(f"{reason}:\n" + "\n".join(history), pytrace=False)
    pytest.fail(
        f"the miss remains after {attempts} attempts, each explained by the machine's load:\n"
        + "\n".join(history),
        pytrace=False,
    )


def fastest_reads_the_delay(engine: str, fastest_ms: float, delay_ms: float) -> Band:
    """The ground truth's witness: load delays some requests, a wrong delay every one, so the
    fastest request reads the backend's hold within the engine's resolution (Gatling's whole
    ms) whatever the machine does."""
    return Band(f"{engine} min (ms)", fastest_ms, delay_ms, delay_ms + 1.0)


def others_cpu_pct(seconds: float) -> float:
    """The share of the machine other processes used over the next ``seconds`` (this process
    idles meanwhile, so it is the machine's busy share less this process's own)."""
    sampler = CpuSampler()
    first = sampler.sample()
    time.sleep(seconds)
    last = sampler.sample()
    usage = sampler.usage(first.wall_ms, last.wall_ms, "", [])
    return usage.others_pct if usage is not None else 0.0


def wait_for_a_quiet_moment(limit_s: float = QUIET_WAIT_S, window_s: float = QUIET_WINDOW_S) -> str:
    """Wait until other processes use at most ``NOISY_OTHERS_PCT`` of the machine over a
    ``window_s`` window, for at most ``limit_s``; says what it found."""
    start = time.monotonic()
    seen: list[float] = []
    while True:
        seen.append(others_cpu_pct(window_s))
        waited = time.monotonic() - start
        if seen[-1] <= NOISY_OTHERS_PCT:
            return f"waited {waited:.0f} s for a quieter moment (others {seen[-1]:.0f} %)"
        if waited >= limit_s:
            return (
                f"no quieter moment within {limit_s:.0f} s (others {min(seen):.0f}–"
                f"{max(seen):.0f} %); measured again anyway"
            )


@dataclass
class OthersCpu:
    pct: float | None = None


@contextmanager
def others_cpu_during(ours: Sequence[int] = ()) -> Iterator[OthersCpu]:
    """The share of the machine other processes used during the block: the machine's busy
    share less this process's and that of the process groups ``ours`` (a backend the test
    started, by pid)."""
    sampler = CpuSampler()
    sampler.set_groups({"ours": [os.getpgid(pid) for pid in ours]})
    first = sampler.sample()
    found = OthersCpu()
    yield found
    last = sampler.sample()
    usage = sampler.usage(first.wall_ms, last.wall_ms, "ours", [])
    found.pct = usage.others_pct if usage is not None else None


def backend_late_ms(port: int) -> float | None:
    """The mock backend's median lateness (``late_us.p50`` of its stats), in ms; None when it
    reports none (no latency configured, or it cannot be reached)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/__gatebench__/stats")
        stats = json.loads(conn.getresponse().read())
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        conn.close()
    late = stats.get("latency", {}).get("late_us", {}).get("p50")
    return None if late is None else late / 1000.0


@dataclass
class BackendWatch:
    """Reads the run's mock backend's own lateness at the run's teardown step, while the run
    still holds the backend: pass ``supervisor_factory=watch.supervisor`` and
    ``display=watch.display`` to ``run_benchmark``. The backend resets its record at every
    phase, so this is the lateness of the run's last phase."""

    late_ms: float | None = None
    _supervisor: Supervisor | None = field(default=None, repr=False)

    def supervisor(self) -> Supervisor:
        self._supervisor = Supervisor()
        return self._supervisor

    def display(self, progress: object) -> None:
        if getattr(progress, "step", None) != "teardown" or self._supervisor is None:
            return
        for proc in list(self._supervisor.processes):
            if proc.name == "backend-mock" and proc.alive() and "-listen" in proc.argv:
                listen = proc.argv[proc.argv.index("-listen") + 1]
                self.late_ms = backend_late_ms(int(listen.rsplit(":", 1)[1]))


def highest(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


__all__ = [
    "ATTEMPTS",
    "BACKEND_LATE_MS",
    "QUIET_WAIT_S",
    "BackendWatch",
    "Band",
    "Meanwhile",
    "Timed",
    "backend_late_ms",
    "fastest_reads_the_delay",
    "highest",
    "judge",
    "measure_within_bands",
    "others_cpu_during",
    "others_cpu_pct",
    "wait_for_a_quiet_moment",
]
