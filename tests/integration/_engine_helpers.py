"""Shared helpers of the engine's integration tests (real gateways, real Gatling)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil

from gatebench.core.ir import Api
from gatebench.core.plan import Plan, build_plan
from gatebench.core.spec import read_spec
from gatebench.local.procs import ManagedProcess, Supervisor, port_is_free, wait_port_free
from gatebench.run.ports import EngineEvent, PhaseResult

ROOT = Path(__file__).resolve().parents[2]
ITEMS = ROOT / "tests/data/engine/items.yaml"
TOKEN_ENV = "ITEMS_TOKEN"


class Hooks:
    """The engine's callbacks of a test: each phase's result, by phase."""

    def __init__(self) -> None:
        self.results: dict[int, PhaseResult] = {}

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        self.results[result.phase] = result

    def tick(self) -> None:
        pass


def interruptible() -> None:
    """``preexec_fn`` of a child a test interrupts with SIGINT: Ctrl-C reaches it even when this
    pytest was started in the background by a script (a shell starts background jobs with
    SIGINT ignored, children inherit that, and Python then installs no handler of its own)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def items(**overrides: Any) -> tuple[Api, Plan]:
    result = read_spec(str(ITEMS))
    assert result.api is not None
    section = {**result.benchmark, **overrides}
    plan = build_plan(section, result.api)
    return result.api, plan


class RecordingSupervisor(Supervisor):
    """A real Supervisor that also remembers what it started, so a test can kill one of its
    processes (a gateway, the JVM) to inject a fault."""

    started: list[ManagedProcess]

    def __init__(self) -> None:
        super().__init__()
        self.started = []

    def start(self, name: str, argv: Any, **kwargs: Any) -> ManagedProcess:
        proc = super().start(name, argv, **kwargs)
        self.started.append(proc)
        return proc

    def named(self, name: str) -> ManagedProcess:
        return next(p for p in reversed(self.started) if p.name == name)


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that mention ``text`` (a run folder)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid == os.getpid():
            continue
        cmd = " ".join(proc.info["cmdline"] or [])
        if text in cmd:
            found.append(f"{proc.pid}: {cmd[:200]}")
    return found


def ports_of_run(run_dir: Path) -> set[int]:
    from urllib.parse import urlsplit

    ports: set[int] = set()
    workload = run_dir / "workload.json"
    if workload.exists():
        doc = json.loads(workload.read_text())
        for phase in doc["phases"]:
            ports.add(urlsplit(phase["request"]["base_url"]).port or 80)
            for call in phase["before"]:
                ports.add(urlsplit(call["url"]).port or 80)
    return ports


def assert_torn_down(run_dir: Path) -> None:
    assert processes_mentioning(str(run_dir.resolve())) == []
    for port in ports_of_run(run_dir):
        assert wait_port_free(port, timeout=5), f"port {port} is still bound"
        assert port_is_free(port)
