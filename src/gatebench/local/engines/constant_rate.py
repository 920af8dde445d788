"""A constant-rate load on a few routes, with a record per request: the port the scale and
change-under-load runs use (docs/scale.md), and its adapter on Gatling.

The runs need one thing from a load engine: send requests to named routes at a fixed arrival
rate, call back at given moments while doing so (to apply a change), and return one
:class:`~gatebench.kinds._live.metrics.Arrival` per request, with when it started and how it ended.
:class:`RateLoad` is that port, and says what its latencies count from (``measured_from``).

:class:`GatlingRateLoad` is the adapter on the engine gatebench has: the plan from
``routescale.rate_plan`` (Gatling's open-model ``constantUsersPerSec``: arrivals do not wait
for answers), run by :class:`~gatebench.local.engines.gatling.GatlingEngine`, its raw
``simulation.log`` read back request by request. What it measures, and what it does not:

- latency counts from the moment Gatling *sent* the request (``measured_from = "send"``), in
  whole milliseconds; a stall of the JVM itself would delay sends and hide in the figures
  (coordinated omission), which an engine that measures from the intended start does not;
- every arrival is a new virtual user with its own connection: each request opens a
  connection, so a gateway that stops accepting during a reload is seen at once;
- the first measured phase starts after a warm-up at the same rate (excluded), so the JIT
  outliers of the JVM's first seconds stay out of the figures;
- every answer of the measured phases is checked against the request it answers (the echo
  backends sign theirs: docs/trust.md, "Right answers under load"): a wrong answer is an
  arrival that is not OK, counted apart from the failures (``Latency.wrong``).

An open-model engine that measures from the intended start is a second adapter behind the
same port.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from gatebench.core.errors import RunError
from gatebench.core.ir import Api
from gatebench.core.measure import PhaseResult
from gatebench.core.routescale import LOAD_TARGET, WARMUP_WORKLOAD, rate_plan
from gatebench.core.simlog import RequestRecord, RunHeader, read_simlog
from gatebench.core.workload import compile_load
from gatebench.kinds._live._gateway import RateRun
from gatebench.kinds._live.metrics import Arrival, MeasuredFrom
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent


class GatlingRateLoad:
    """:class:`~gatebench.kinds._live.RateLoad` on Gatling (module docstring), as processes of
    ``supervisor``."""

    name = "gatling"
    measured_from: MeasuredFrom = "send"

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    def check(self) -> None:
        from gatebench.local.engines.gatling import GatlingEngine

        GatlingEngine().check()

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
        at: Sequence[tuple[float, Callable[[], None]]] = (),
        tick: Callable[[], None] | None = None,
    ) -> RateRun:
        from gatebench.local.engines.gatling import GatlingEngine

        plan = rate_plan(
            routes, rate=rate, duration_s=duration_s, warmup_s=warmup_s, backend_url=base_url
        )
        # the gateway forwards to gatebench's own echo backends, which sign every answer
        compiled = compile_load(plan, api, {LOAD_TARGET: base_url}, signed=True)
        measured = [p for p in compiled.schedule.phases if p.workload != WARMUP_WORKLOAD]
        label_of = {p.id: p.workload for p in measured}
        first = min(p.index for p in measured)
        hooks = _Hooks(first, at, tick)
        engine = GatlingEngine()
        engine.check()
        run = engine.run(compiled.document, workdir, hooks, supervisor=self.supervisor)
        hooks.join()
        out = RateRun(fired=hooks.fired)
        if run.crashed or run.raw_log is None:
            out.problem = run.reason or "Gatling wrote no simulation.log"
        if run.raw_log is not None:
            out.arrivals, out.windows = _arrivals(run.raw_log, label_of)
        return out


class _Hooks:
    """Fires the callbacks at their offsets from the first measured phase's start."""

    def __init__(
        self,
        first_measured: int,
        at: Sequence[tuple[float, Callable[[], None]]],
        tick: Callable[[], None] | None,
    ) -> None:
        self.first = first_measured
        self.pending = sorted(at, key=lambda item: item[0])
        self.user_tick = tick
        self.started: float | None = None
        self.fired: list[tuple[float, BaseException | None]] = []
        self.threads: list[threading.Thread] = []

    def on_event(self, event: EngineEvent) -> None:
        if event.kind == "start" and event.phase == self.first and self.started is None:
            self.started = time.monotonic()

    def on_phase(self, result: PhaseResult) -> None:
        return None

    def tick(self) -> None:
        if self.user_tick is not None:
            self.user_tick()
        while self.pending and self.started is not None:
            offset, call = self.pending[0]
            if time.monotonic() - self.started < offset:
                break
            self.pending.pop(0)
            slot = len(self.fired)
            self.fired.append((time.time() * 1000.0, None))

            def run(call: Callable[[], None] = call, slot: int = slot) -> None:
                try:
                    call()
                except BaseException as exc:  # reported with the run, never lost
                    self.fired[slot] = (self.fired[slot][0], exc)

            thread = threading.Thread(target=run, name="gatebench-change", daemon=True)
            thread.start()
            self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join()
        if self.pending:
            raise RunError(
                f"the load ended before {len(self.pending)} planned moment(s) of it: "
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


__all__ = ["GatlingRateLoad"]
