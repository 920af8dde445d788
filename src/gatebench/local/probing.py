"""Running capacity probes: one rate, one target, the load generator on one tester or several.

:class:`Prober` is the probe function the capacity search's loop calls
(``gatebench.kinds.capacity.search``): it renders the probe's document (``capacity.probe_document``),
runs ``gatebench-loadgen`` with it, and hands the measured phase to the metrics plugin
(``capacity.read_probe``). With several testers (local network namespaces, ``gatebench.local._netns``)
the probe's rate is split by the rule every phase is split by (``gatebench.core.testers``: tester i
sends ``count_i`` arrivals over the same window), every tester starts its schedule at the same
wall-clock time, and the records are merged exactly as a fixed-workload run's are
(``testers.merge_phase``: percentiles over every request) with the schedules summed
(``loadlog.merge_schedules``): the tester-bound rule then applies to the sum.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.core.errors import RunError
from gatebench.core.ir import Api
from gatebench.core.loadlog import ScheduleSample, merge_schedules
from gatebench.core.plan import Capacity, Plan
from gatebench.core.testers import PhasePart, merge_phase, split_document
from gatebench.core.trust import CEILING_TARGET
from gatebench.kinds.capacity import (
    ProbeMetrics,
    ProbeRequest,
    SearchResult,
    ceiling_of,
    ceiling_settings,
    late_threshold_ms,
    measured_index,
    probe_document,
    probe_template,
    read_probe,
    search,
)
from gatebench.local._netns import LoadHost
from gatebench.local.engines.loadgen import LoadgenEngine, LoadgenRun
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult

START_MARGIN_S = 0.3
"""Several testers start their schedules this long after the probe is launched: time for
every process to start (``ip netns exec`` included) and tester 0 to reset the backend."""


class _Collect:
    """Hooks that keep the phases an engine reports."""

    def __init__(self, tick: Callable[[], None] | None = None) -> None:
        self.phases: dict[int, PhaseResult] = {}
        self._tick = tick

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        self.phases[result.phase] = result

    def tick(self) -> None:
        if self._tick is not None:
            self._tick()


@dataclass
class Prober:
    """The probe function of one target on one workload."""

    plan: Plan
    api: Api
    workload: str
    target: str
    base_url: str
    supervisor: Supervisor
    workdir: Path
    late_ms: float
    engine: LoadgenEngine = field(default_factory=LoadgenEngine)
    reset_url: str | None = None
    reset_urls: Sequence[str] = ()
    """The other backend replicas' resets (a plan with ``backend.replicas``)."""
    cpu_groups: Mapping[str, Sequence[int]] | None = None
    target_groups: Callable[[str], Sequence[str]] = lambda target: ()
    env: Mapping[str, str] | None = None
    hosts: Sequence[LoadHost] = ()
    """Testers on hosts of their own (network namespaces); empty: one tester, here."""
    tick: Callable[[], None] | None = None
    """Called about 5 times a second while a probe runs (health checks)."""
    shared_core: str | None = None
    """Why the target may share a core with the generator (gatebench.core.pinning); every
    probe says so in its reasons."""
    seed: int = 0
    probes: int = 0
    template: dict[str, Any] = field(default_factory=dict)

    def __call__(self, request: ProbeRequest) -> ProbeMetrics:
        self.probes += 1
        if not self.template:
            self.template = probe_template(
                self.plan,
                self.api,
                self.workload,
                self.target,
                self.base_url,
                reset_url=self.reset_url,
                reset_urls=self.reset_urls,
            )
        document = probe_document(self.template, request, seed=self.seed + self.probes)
        index = measured_index(document)
        name = f"probe-{self.probes:03d}"
        workdir = self.workdir / name
        if not self.hosts:
            result, schedule = self._one(document, index, workdir, name)
        else:
            result, schedule = self._many(document, index, workdir, name)
        return read_probe(
            request, result, schedule, late_ms=self.late_ms, shared_core=self.shared_core
        )

    def _run(
        self,
        document: dict[str, Any],
        workdir: Path,
        name: str,
        hooks: _Collect,
        wrapper: Sequence[str] = (),
        start_at_ms: float | None = None,
    ) -> LoadgenRun:
        engine = self.engine
        if start_at_ms is not None:
            engine = LoadgenEngine(
                engine.binary,
                connections=engine.connections,
                max_in_flight=engine.max_in_flight,
                start_at_ms=start_at_ms,
            )
        return engine.run(
            document,
            workdir,
            hooks,
            supervisor=self.supervisor,
            cpu_groups=self.cpu_groups,
            target_groups=self.target_groups,
            name=name,
            env=self.env,
            wrapper=wrapper,
        )

    def _one(
        self, document: dict[str, Any], index: int, workdir: Path, name: str
    ) -> tuple[PhaseResult, ScheduleSample]:
        hooks = _Collect(self.tick)
        run = self._run(document, workdir, name, hooks)
        if run.crashed:
            raise RunError(run.reason)
        if run.control_failures:
            raise RunError(
                "the backend did not accept its reset (is it still running?): "
                + run.control_failures[0]
            )
        if index not in hooks.phases:
            raise RunError(f"{name}: the load generator reported no measured phase")
        return hooks.phases[index], run.schedules[index]

    def _many(
        self, document: dict[str, Any], index: int, workdir: Path, name: str
    ) -> tuple[PhaseResult, ScheduleSample]:
        from gatebench.local._fanout import TesterThreads, for_host

        documents = split_document(document, len(self.hosts))
        start_at = (time.time() + START_MARGIN_S) * 1000.0
        collected = {t: _Collect(self.tick if t == 0 else None) for t in range(len(self.hosts))}

        def tester(t: int) -> LoadgenRun:
            host = self.hosts[t]
            return self._run(
                for_host(documents[t], host),
                workdir,
                f"{name}-t{t}",
                collected[t],
                host.wrapper,
                start_at,
            )

        with_share = [
            t
            for t in range(len(self.hosts))
            if any(int(p["index"]) == index for p in documents[t]["phases"])
        ]
        collected = {t: collected[t] for t in with_share}
        threads = TesterThreads(with_share, tester, "probe-tester").start().join()
        runs, errors = threads.results, threads.errors
        parts = []
        schedules = []
        for t in sorted(collected):
            run = runs.get(t)
            failure = (
                str(errors[t])
                if t in errors
                else (run.reason.splitlines()[0] if run is not None and run.crashed else None)
            )
            if failure is not None:
                raise RunError(f"{name}: tester {t} failed: {failure}")
            assert run is not None
            if run.control_failures:
                raise RunError(
                    "the backend did not accept its reset (is it still running?): "
                    + run.control_failures[0]
                )
            parts.append(PhasePart(t, collected[t].phases.get(index)))
            schedules.append(run.schedules.get(index, ScheduleSample()))
        merged = merge_phase(index, parts)
        if "partial" in merged.flags:
            raise RunError(f"{name}: " + "; ".join(merged.reasons))
        return merged.result, merge_schedules(schedules)


def measure_ceiling(
    plan: Plan,
    api: Api,
    workload: str,
    settings: Capacity,
    supervisor: Supervisor,
    workdir: Path,
    *,
    url: str | None = None,
    engine: LoadgenEngine | None = None,
    env: Mapping[str, str] | None = None,
    hosts: Sequence[LoadHost] = (),
    cpu_groups: Mapping[str, Sequence[int]] | None = None,
    tick: Callable[[], None] | None = None,
) -> tuple[float | None, SearchResult]:
    """The load generator's ceiling on this machine for one workload: a search
    (``capacity.ceiling_settings``) against the ceiling server (``gatebench.local.ceiling``; the one at
    ``url``, else one started here), with the workload's own requests. Returns (the ceiling or
    None, the search)."""
    from gatebench.local.ceiling import start_ceiling_server

    workdir.mkdir(parents=True, exist_ok=True)
    proc = None
    if url is None:
        proc, url = start_ceiling_server(supervisor, workdir / "ceiling-server")
    try:
        prober = Prober(
            plan,
            api,
            workload,
            CEILING_TARGET,
            url,
            supervisor,
            workdir,
            late_threshold_ms(settings.objective),
            engine=engine or LoadgenEngine(connections=settings.connections),
            env=env,
            hosts=hosts,
            tick=tick,
            cpu_groups=cpu_groups,
        )
        result = search(ceiling_settings(settings), prober, ceiling=True)
    finally:
        if proc is not None:
            supervisor.stop(proc)
    return ceiling_of(result), result


__all__ = ["START_MARGIN_S", "Prober", "measure_ceiling"]
