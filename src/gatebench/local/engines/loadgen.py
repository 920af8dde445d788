"""The open-model engine of the capacity search: ``gatebench-loadgen`` (``loadgen/``, Go).

Why a load generator of our own (docs/capacity.md, "The engine"): a capacity search needs a
constant arrival rate whose latencies count from each request's *intended* start, and needs to
know when the generator itself fell behind. Gatling's open model (``constantUsersPerSec``)
starts the clock when Gatling tries to send (its documentation's definition of response time),
so a generator that falls behind hides its own queue; it records whole milliseconds; and its
JVM needs more CPU than most gateways on two cores (FACTS). Debian's wrk is wrk 4, not wrk2: it
has no arrival rate at all. ``gatebench-loadgen`` is a few hundred lines of Go's standard
library, built like the backend: it sends each arrival when it is due whether or not earlier
ones were answered, measures from the due time in microseconds, and records beside each request
how late it really left, what it dropped and the CPU it used (``gatebench.core.loadlog`` reads it).

One process runs a whole document (its constant-rate phases back to back, the schedule
continuing from one to the next), then this module reads its records and reports each phase
with the CPU the machine, the gateway and the engine used over the phase's window, sampled as
for the other engines (``engines/cpu.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.core.errors import Problem, RunError, UnsupportedFeature, pointer
from gatebench.core.loadlog import LoadLog, ScheduleSample, read_loadlog
from gatebench.local._resources import loadgen_binary
from gatebench.local.engines._process import Launch, ProcessEngine, WatchedProcess
from gatebench.local.engines.cpu import CpuSampler
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, EngineRun, Hooks, PhaseResult

"""How often the generator's CPU and the targets' are sampled while a probe runs."""
EXIT_POLL_S = 0.02
"""How often the run looks whether the generator has ended: a probe lasts a second or less in
a quick search, and its end is seen within this, not within a whole sampling period."""
DEFAULT_MAX_IN_FLIGHT = 10_000
"""Outstanding requests at most (each holds a socket; the hard descriptor limit here is 20,000)."""


def document_problems(document: Mapping[str, Any]) -> list[Problem]:
    """What this engine cannot run, located in the workload document."""
    out = []
    for i, phase in enumerate(document.get("phases", [])):
        kind = phase.get("injection", {}).get("kind")
        if kind != "constant_rate":
            out.append(
                Problem(
                    pointer("phases", i, "injection"),
                    f"the load generator runs constant arrival rates only; got {kind}",
                )
            )
    return out


def has_cores_of_its_own(supervisor: Supervisor) -> bool:
    """Whether the engine is pinned to cores no other role is pinned to (a role left unpinned
    moves away from a busy core). Only then does it run at a real-time priority (``-realtime``,
    loadgen/sys.go): woken by its timer it preempts whatever else runs there, which on a busy
    machine would otherwise delay it by milliseconds, and which a gateway or backend sharing its
    core would pay for."""
    mine = supervisor.affinity.get("engine")
    if not mine:
        return False
    return all(
        not (mine & cores) for role, cores in supervisor.affinity.items() if role != "engine"
    )


@dataclass
class LoadgenRun(EngineRun):
    """An engine run, with how the engine kept each phase's schedule."""

    schedules: dict[int, ScheduleSample] = field(default_factory=dict)
    records: Path | None = None


class LoadgenEngine(ProcessEngine[LoadgenRun]):
    name = "loadgen"
    resolution_ms = 0.001

    def __init__(
        self,
        binary: str | Path | None = None,
        *,
        connections: str = "keep-alive",
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        start_at_ms: float | None = None,
    ) -> None:
        self.binary = Path(binary) if binary is not None else None
        self.connections = connections
        self.max_in_flight = max_in_flight
        self.start_at_ms = start_at_ms
        """When the schedule starts (epoch ms): several testers start together."""

    def program(self) -> Path:
        return self.binary if self.binary is not None else loadgen_binary()

    def check(self) -> None:
        program = self.program()
        if not program.is_file():
            raise RunError(f"the load generator is not built ({program}); run `make setup-all`")

    def version(self) -> str:
        return "gatebench-loadgen (Go, open model, latency from the intended start, µs)"

    def argv(self, workload: Path, records: Path, *, realtime: bool = False) -> list[str]:
        return [
            str(self.program()),
            "-workload",
            str(workload),
            "-out",
            str(records),
            "-connections",
            self.connections,
            "-max-in-flight",
            str(self.max_in_flight),
            *(("-start-at", str(round(self.start_at_ms))) if self.start_at_ms else ()),
            *(("-realtime",) if realtime else ()),
        ]

    def launch(
        self, document: dict[str, Any], workdir: Path, hooks: Hooks, how: Launch
    ) -> LoadgenRun:
        """Run every phase of ``document``; report each through ``hooks`` once the process has
        ended (a probe lasts seconds: nothing is gained by reading it while it grows).
        ``how.wrapper`` prefixes the command (``ip netns exec NS``: a tester on a host of its own)."""
        problems = document_problems(document)
        if problems:
            raise UnsupportedFeature(problems)
        workdir = workdir.resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        workload = workdir / f"{how.name}-workload.json"
        from gatebench.core.workload import workload_json_text

        workload.write_text(workload_json_text(document), encoding="utf-8")
        records = workdir / f"{how.name}.records"
        records.unlink(missing_ok=True)
        log_path = workdir / f"{how.name}.log"
        result = LoadgenRun(log_path=log_path, records=records)
        started = time.monotonic()
        if how.ready is not None:
            how.ready()
        # one tester on cores of its own keeps its schedule at a real-time priority; testers
        # sharing cores (a wrapper: several of them) or a target on its cores stay fair
        realtime = not how.wrapper and has_cores_of_its_own(how.supervisor)
        watched = WatchedProcess(
            how.supervisor,
            how.name,
            [*how.wrapper, *self.argv(workload, records, realtime=realtime)],
            log_path=log_path,
            cwd=workdir,
            env=how.env,
        )
        watched.account(how.cpu_groups)
        code = watched.wait(hooks.tick, exit_poll_s=EXIT_POLL_S)
        proc, sampler = watched.proc, watched.sampler
        result.exit_code = code
        result.wall_s = time.monotonic() - started
        result.startup_s = 0.0
        if code != 0 or not records.is_file():
            result.crashed = True
            result.reason = (
                f"the load generator exited with code {code}; last log lines:\n{proc.log_tail(15)}"
            )
            return result
        log = read_loadlog(records)
        self._report(document, log, sampler, how.target_groups, hooks, result)
        return result

    @staticmethod
    def _report(
        document: Mapping[str, Any],
        log: LoadLog,
        sampler: CpuSampler,
        target_groups: Callable[[str], Sequence[str]],
        hooks: Hooks,
        result: LoadgenRun,
    ) -> None:
        for phase in document["phases"]:
            index = int(phase["index"])
            found = log.phases.get(index)
            if found is None:
                continue
            r = found.result
            names = target_groups(str(phase["target"]))
            cpu = sampler.usage(r.start_ms, r.end_ms, "tester", names)
            cost = sampler.resources(r.start_ms, r.end_ms, "tester", names)
            if found.control_failure is not None:
                result.control_failures.append(found.control_failure)
            hooks.on_event(EngineEvent("start", index, at_ms=r.start_ms))
            hooks.on_event(EngineEvent("end", index, at_ms=r.end_ms))
            result.completed.append(index)
            result.schedules[index] = found.schedule
            hooks.on_phase(PhaseResult(index, r.sample, r.start_ms, r.end_ms, cpu, cost))


__all__ = [
    "DEFAULT_MAX_IN_FLIGHT",
    "LoadgenEngine",
    "LoadgenRun",
    "document_problems",
    "has_cores_of_its_own",
]
