"""Load engines behind one small port (the AGE paper's Strategy): Gatling, and wrk.

An engine takes the workload document (``gatebench.core.workload``), runs its phases in order
against 127.0.0.1 (locally) or the gateway VMs (cloud), and reports, while it runs, each phase
as soon as its raw records are known to be complete (so a crash or Ctrl-C loses nothing that
finished). It never decides anything about the benchmark: the runner does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gatebench.core.capabilities import ENGINES, injection_problem
from gatebench.core.errors import RunError
from gatebench.core.measure import PhaseResult
from gatebench.local.engines._process import Launch, ProcessEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, EngineRun, Hooks


class BoundEngine:
    """An engine bound to a supervisor: the port the run's stages use
    (``gatebench.run.ports.LoadEngine``)."""

    def __init__(self, engine: ProcessEngine[EngineRun], supervisor: Supervisor) -> None:
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


def get_engine(name: str = "gatling") -> ProcessEngine[EngineRun]:
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
    "Launch",
    "PhaseResult",
    "ProcessEngine",
    "get_engine",
    "injection_problem",
]
