"""Load engines behind one small port (the AGE paper's Strategy): Gatling, and wrk.

An engine takes the workload document (``gatebench.core.workload``), runs its phases in order
against 127.0.0.1 (locally) or the gateway VMs (cloud), and reports, while it runs, each phase
as soon as its raw records are known to be complete (so a crash or Ctrl-C loses nothing that
finished). It never decides anything about the benchmark: the runner does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gatebench.core.capabilities import ENGINES, injection_problem
from gatebench.core.errors import RunError
from gatebench.core.measure import PhaseResult
from gatebench.local.procs import Supervisor


@dataclass(frozen=True)
class EngineEvent:
    """Progress, for the live display: ``start`` / ``progress`` / ``end`` of a phase."""

    kind: str
    phase: int
    """The phase's index in the schedule."""
    done: int = 0
    """Requests completed so far in the phase (``progress``)."""
    at_ms: float = 0.0


@dataclass
class EngineRun:
    """What one engine invocation produced."""

    completed: list[int] = field(default_factory=list)
    exit_code: int | None = None
    crashed: bool = False
    reason: str = ""
    log_path: Path | None = None
    raw_log: Path | None = None
    control_failures: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    startup_s: float = 0.0
    """From launch to the first phase start (JVM start and simulation init for Gatling)."""


class Hooks(Protocol):
    def on_event(self, event: EngineEvent) -> None: ...

    def on_phase(self, result: PhaseResult) -> None: ...

    def tick(self) -> None:
        """Called every poll (about 5 times a second): health checks, skip decisions."""


class LoadEngine(Protocol):
    name: str

    def check(self) -> None:
        """Raise RunError saying how to install the engine when it is missing."""

    def version(self) -> str: ...

    def run(
        self,
        document: dict[str, Any],
        workdir: Path,
        hooks: Hooks,
        *,
        supervisor: Supervisor,
        cpu_groups: Mapping[str, Sequence[int]] | None = None,
        target_groups: Callable[[str], Sequence[str]] = ...,
        name: str = ...,
        env: Mapping[str, str] | None = None,
        ready: Callable[[], None] | None = None,
    ) -> EngineRun:
        """Run every phase of ``document`` in order, as processes of ``supervisor``; files go
        into ``workdir`` under ``name``. ``cpu_groups`` names process groups whose CPU is
        accounted (the tester's own group is added); ``target_groups(target)`` lists the
        groups that make up a target (gateway + backend). With ``ready``, the engine starts,
        calls ``ready()`` while it initialises (provisioning), then begins the first phase."""


def get_engine(name: str = "gatling") -> LoadEngine:
    if name == "gatling":
        from gatebench.local.engines.gatling import GatlingEngine

        return GatlingEngine()
    if name == "wrk":
        from gatebench.local.engines.wrk import WrkEngine

        return WrkEngine()
    if name == "loadgen":  # the capacity search's engine only (gatebench.kinds.capacity._stages)
        from gatebench.local.engines.loadgen import LoadgenEngine

        return LoadgenEngine()
    raise RunError(f"no load engine {name!r}; available: {', '.join(ENGINES)}")


__all__ = [
    "ENGINES",
    "EngineEvent",
    "EngineRun",
    "Hooks",
    "LoadEngine",
    "PhaseResult",
    "get_engine",
    "injection_problem",
]
