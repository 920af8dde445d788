"""A constant-rate load on a few routes, with a record per request: the port the scale and
change-under-load runs use (docs/scale.md), and its adapters.

The runs need one thing from a load engine: send requests to named routes at a fixed arrival
rate, call back at given moments while doing so (to apply a change), and return one
:class:`~gatebench.kinds._live.metrics.Arrival` per request, with when it started and how it ended.
:class:`~gatebench.kinds._live.RateLoad` is that port, and says what its latencies count from
(``measured_from``). Both adapters run the plan from ``routescale.rate_plan`` (a warm-up at the
same rate, excluded, then each route in turn), every arrival on a new connection, so a gateway
that stops accepting during a reload is seen at once.

:class:`LoadgenRateLoad`, what every route-scale and change-under-load run uses: the open-model
engine the capacity search uses (``gatebench-loadgen``), each request's latency from the moment
the schedule meant it to start (``measured_from = "intended start"``, microseconds): a stall of
the engine or of the gateway delays no arrival and hides in no figure (no coordinated
omission), and each arrival's schedule lag is recorded. Its schedule starts at a wall-clock
time it is given, and its phases follow each other without a gap, so the moments of ``at``
are known before it starts.

:class:`GatlingRateLoad`, kept for comparison (``benchmarks scale`` can run either): Gatling's
open-model ``constantUsersPerSec``, latency from the moment Gatling *sent* the request
(``measured_from = "send"``), whole milliseconds; a stall of the JVM itself delays sends and
hides in the figures.

With either, every answer of the measured phases is checked against the request it answers
(the echo backends sign theirs: docs/trust.md, "Right answers under load"): a wrong answer is
an arrival that is not OK, counted apart from the failures (``Latency.wrong``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from gatebench.core.errors import RunError
from gatebench.core.ir import Api
from gatebench.core.measure import PhaseResult
from gatebench.core.routescale import LOAD_TARGET, WARMUP_WORKLOAD, rate_plan
from gatebench.core.simlog import RequestRecord, RunHeader, read_simlog
from gatebench.core.stats import counted
from gatebench.core.workload import CompiledLoad, compile_load
from gatebench.kinds._live._gateway import RateRun
from gatebench.kinds._live.metrics import Arrival, MeasuredFrom
from gatebench.local.engines._process import ProcessEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, EngineRun

R = TypeVar("R", bound=EngineRun)
Moments = Sequence[tuple[float, Callable[[], None]]]
"""Callbacks at their offsets (seconds) from the first measured phase's start."""
Tick = Callable[[], None] | None


class _ConstantRate:
    """What both adapters do alike: the port's ``run`` compiles the rate plan, the adapter's
    ``_load`` drives its engine (:meth:`_drive`) and reads the arrivals."""

    name: str
    measured_from: MeasuredFrom

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    def run(
        self,
        api: Api,
        routes: Mapping[str, str],
        base_url: str,
        *,
        rate: float,
        duration_s: float,
        warmup_s: float,
        workdir: Path,
        at: Moments = (),
        tick: Tick = None,
    ) -> RateRun:
        """The rate plan (``routescale.rate_plan``) compiled for the one target at
        ``base_url`` and loaded by the adapter's engine."""
        plan = rate_plan(routes, rate=rate, duration_s=duration_s, warmup_s=warmup_s)
        compiled = compile_load(plan, api, {LOAD_TARGET: base_url})
        return self._load(compiled, workdir, at, tick)

    def _load(self, compiled: CompiledLoad, workdir: Path, at: Moments, tick: Tick) -> RateRun:
        raise NotImplementedError

    def _drive(
        self, engine: ProcessEngine[R], compiled: CompiledLoad, workdir: Path, hooks: _Hooks
    ) -> tuple[R, RateRun]:
        """``engine`` run on the compiled plan until it ends, the callbacks joined."""
        engine.check()
        hooks.arm()  # a start known ahead: the moments fire on time, not at the engine's poll
        try:
            run = engine.run(compiled.document, workdir, hooks, supervisor=self.supervisor)
        except BaseException:
            for timer, _moment in hooks.armed:  # no change after a load that never ran
                timer.cancel()
            raise
        hooks.join()
        return run, RateRun(fired=hooks.fired)


class GatlingRateLoad(_ConstantRate):
    """:class:`~gatebench.kinds._live.RateLoad` on Gatling (module docstring), as processes of
    ``supervisor``."""

    name = "gatling"
    measured_from: MeasuredFrom = "send"

    def check(self) -> None:
        from gatebench.local.engines.gatling import GatlingEngine

        GatlingEngine().check()

    def _load(self, compiled: CompiledLoad, workdir: Path, at: Moments, tick: Tick) -> RateRun:
        from gatebench.local.engines.gatling import GatlingEngine

        measured = [p for p in compiled.schedule.phases if p.workload != WARMUP_WORKLOAD]
        label_of = {p.id: p.workload for p in measured}
        first = min(p.index for p in measured)
        run, out = self._drive(GatlingEngine(), compiled, workdir, _Hooks(first, at, tick))
        if run.crashed or run.raw_log is None:
            out.problem = run.reason or "Gatling wrote no simulation.log"
        if run.raw_log is not None:
            out.arrivals, out.windows = _arrivals(run.raw_log, label_of)
        return out


START_MARGIN_S = 0.5
"""The load generator's schedule starts this long after it is launched (its start, its first
connections): the moment ``at`` counts from is then known before it runs."""


class LoadgenRateLoad(_ConstantRate):
    """:class:`~gatebench.kinds._live.RateLoad` on the open-model load generator (module
    docstring), as processes of ``supervisor``."""

    name = "loadgen"
    measured_from: MeasuredFrom = "intended start"

    def __init__(self, supervisor: Supervisor, binary: str | Path | None = None) -> None:
        super().__init__(supervisor)
        self.binary = binary

    def check(self) -> None:
        from gatebench.local.engines.loadgen import LoadgenEngine

        LoadgenEngine(self.binary).check()

    def _load(self, compiled: CompiledLoad, workdir: Path, at: Moments, tick: Tick) -> RateRun:
        from gatebench.core.loadlog import sent_requests
        from gatebench.local.engines.loadgen import LoadgenEngine

        phases = sorted(compiled.schedule.phases, key=lambda p: p.index)
        label_of = {p.index: p.workload for p in phases if p.workload != WARMUP_WORKLOAD}
        # the phases follow each other without a gap: the first measured one starts after the
        # warm-up's duration
        before_s = sum(p.injection.duration or 0.0 for p in phases if p.workload == WARMUP_WORKLOAD)
        start_at_ms = (time.time() + START_MARGIN_S) * 1000.0
        hooks = _Hooks(-1, at, tick, started=time.monotonic() + START_MARGIN_S + before_s)
        engine = LoadgenEngine(self.binary, connections="new", start_at_ms=start_at_ms)
        run, out = self._drive(engine, compiled, workdir, hooks)
        if run.crashed or run.records is None:
            out.problem = run.reason or "the load generator wrote no records"
            return out
        arrivals: list[Arrival] = []
        for request in sent_requests(run.records.read_bytes(), str(run.records)):
            label = label_of.get(request.phase)
            if label is None:
                continue
            arrivals.append(
                Arrival(
                    request.due_ms,
                    request.latency_ms,
                    not request.message,
                    label,
                    request.message,
                )
            )
            lo, hi = out.windows.get(label, (request.due_ms, request.due_ms))
            out.windows[label] = (
                min(lo, request.due_ms),
                max(hi, request.due_ms + request.latency_ms),
            )
        arrivals.sort(key=lambda a: a.at_ms)
        out.arrivals = arrivals
        return out


class _Hooks:
    """Fires the callbacks at their offsets from the first measured phase's start (seen as it
    starts, or known ahead: ``started``, monotonic seconds).

    Each callback runs on a timer of its own (a thread), armed as soon as the start is known
    (:meth:`arm`: before the engine runs when it is known ahead), so it fires at its offset to
    within the scheduler's wake-up, not at the engine's next poll (every ``POLL_S``, 200 ms):
    from the poll, a change came up to that much late, and its window ran past the load's end.
    :meth:`join` cancels a moment the load ended before, and says so."""

    def __init__(
        self,
        first_measured: int,
        at: Sequence[tuple[float, Callable[[], None]]],
        tick: Callable[[], None] | None,
        *,
        started: float | None = None,
    ) -> None:
        self.first = first_measured
        self.pending = sorted(at, key=lambda item: item[0])
        self.user_tick = tick
        self.started: float | None = started
        self.fired: list[tuple[float, BaseException | None]] = []
        self.armed: list[tuple[threading.Timer, tuple[float, Callable[[], None]]]] = []
        self.called: set[int] = set()
        """Which of ``armed`` (by index) began to run: a cancelled timer's never did."""
        self.lock = threading.Lock()

    def on_event(self, event: EngineEvent) -> None:
        if event.kind == "start" and event.phase == self.first and self.started is None:
            self.started = time.monotonic()
            self.arm()

    def on_phase(self, result: PhaseResult) -> None:
        return None

    def arm(self) -> None:
        """A timer per pending callback, due at its offset from ``started`` (none before the
        start is known; each callback armed once)."""
        if self.started is None:
            return
        with self.lock:  # the engine's events and its poll may both arm
            pending, self.pending = self.pending, []
            for moment in pending:
                delay = max(0.0, self.started + moment[0] - time.monotonic())
                timer = threading.Timer(delay, self._fire, args=(len(self.armed), moment[1]))
                timer.name, timer.daemon = "gatebench-change", True
                self.armed.append((timer, moment))
                timer.start()

    def _fire(self, index: int, call: Callable[[], None]) -> None:
        with self.lock:
            self.called.add(index)
            slot = len(self.fired)
            self.fired.append((time.time() * 1000.0, None))
        try:
            call()
        except BaseException as exc:  # reported with the run, never lost
            with self.lock:
                self.fired[slot] = (self.fired[slot][0], exc)

    def tick(self) -> None:
        if self.user_tick is not None:
            self.user_tick()
        self.arm()

    def join(self) -> None:
        """Once the load ended: cancel the timers not yet due (a change is never applied after
        the load, nor after an engine that failed), wait for the callbacks that fired (a
        change's probing), and raise for a moment the load ended before."""
        for timer, _moment in self.armed:
            timer.cancel()
        for timer, _moment in self.armed:
            timer.join()
        missed = [m for i, (_t, m) in enumerate(self.armed) if i not in self.called]
        self.pending = sorted([*self.pending, *missed], key=lambda item: item[0])
        if self.pending:
            raise RunError(
                f"the load ended before {counted(len(self.pending), 'planned moment')} of it: "
                "make the measured phase longer than the change's offset"
            )


def _arrivals(
    path: Path, label_of: Mapping[str, str]
) -> tuple[list[Arrival], dict[str, tuple[float, float]]]:
    header: RunHeader | None = None
    arrivals: list[Arrival] = []
    windows: dict[str, tuple[float, float]] = {}
    for record in read_simlog(path):
        if isinstance(record, RunHeader):
            header = record
        elif isinstance(record, RequestRecord) and record.name in label_of and header:
            label = label_of[record.name]
            start = float(header.start_ms + record.start)
            end = float(header.start_ms + record.end)
            arrivals.append(
                Arrival(start, float(record.end - record.start), record.ok, label, record.message)
            )
            lo, hi = windows.get(label, (start, end))
            windows[label] = (min(lo, start), max(hi, end))
    arrivals.sort(key=lambda a: a.at_ms)
    return arrivals, windows


__all__ = ["GatlingRateLoad", "LoadgenRateLoad"]
