"""Load engines behind one small port (the AGE paper's Strategy): Gatling, and wrk.

An engine takes the workload document (``gatebench.core.workload``), runs its phases in order
against 127.0.0.1 (locally) or the gateway VMs (cloud), and reports, while it runs, each phase
as soon as its raw records are known to be complete (so a crash or Ctrl-C loses nothing that
finished). It never decides anything about the benchmark: the runner does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from gatebench.core.capabilities import ENGINES, injection_problem
from gatebench.core.errors import RunError
from gatebench.core.measure import PhaseResult
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, EngineRun, Hooks


class ProcessEngine(Protocol):
    """A load engine as processes of a :class:`~gatebench.local.procs.Supervisor`; the run's
    stages see it bound to the machine's supervisor (``gatebench.run.ports.LoadEngine``)."""

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


class BoundEngine:
    """An engine bound to a supervisor: the port the run's stages use
    (``gatebench.run.ports.LoadEngine``)."""

    def __init__(self, engine: ProcessEngine, supervisor: Supervisor) -> None:
        self.engine, self.supervisor = engine, supervisor
        self.name = engine.name

    def check(self) -> None:
        self.engine.check()

    def version(self) -> str:
        return self.engine.version()

    def run(
        self, document: dict[str, Any], workdir: Path, hooks: Hooks, **options: Any
    ) -> EngineRun:
        return self.engine.run(document, workdir, hooks, supervisor=self.supervisor, **options)


def get_engine(name: str = "gatling") -> ProcessEngine:
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
    "BoundEngine",
    "EngineEvent",
    "EngineRun",
    "Hooks",
    "PhaseResult",
    "ProcessEngine",
    "get_engine",
    "injection_problem",
]
