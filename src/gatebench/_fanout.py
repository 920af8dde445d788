"""Several local testers for one schedule (``gatebench run --testers N``).

The schedule's document is split across N testers (``gatebench.testers.split_document``: the
rule is there); each tester is a Gatling JVM of its own, in a network namespace of its own
(``gatebench._netns``: its requests cross veth, routing and NAT as between VMs), with its own
workload file, log and ``simulation.log`` in the run folder (``gatling-tN*``). Every JVM starts
and waits for its go file; the go files are written together once the gateways are up and every
tester has reached the barrier. Each tester reports its phases as its own log proves them
complete; a phase is merged (``gatebench.testers.merge_phase``: every raw record, throughput
over the union of the windows) once every tester with a share of it has reported, and handed
to the runner's hooks. A tester that dies leaves the phases it had not finished ``partial``,
with the reason: the others' records stand, never as a complete phase. No retry: the phases of
a dead tester cannot be re-run without the others.

Not root (or no ``ip``/``iptables``): N > 1 is refused before anything starts, with the reason;
a local multi-tester result without the network hop would compare nothing with the cloud.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._netns import LoadHost, LoadHostNetwork, namespaces_problem
from .engines import EngineEvent, EngineRun, Hooks
from .engines.gatling import GatlingEngine
from .errors import RunError
from .measure import PhaseResult
from .plan import MAX_TESTERS
from .procs import Supervisor
from .testers import MergedPhase, PhasePart, merge_phase, split_document

BARRIER_TIMEOUT_S = 900.0
"""How long a started tester waits for the gateways to boot and the others to be ready."""
LOOPBACK = "http://127.0.0.1:"


def fanout_problem(testers: int, engine: str) -> str | None:
    """Why ``--testers N`` cannot run here (None: it can)."""
    if not 1 <= testers <= MAX_TESTERS:
        return f"--testers: expected 1 to {MAX_TESTERS}, got {testers}"
    if testers == 1:
        return None
    if engine != "gatling":
        return f"--testers {testers}: only the gatling engine runs as several testers, not {engine}"
    problem = namespaces_problem()
    if problem is not None:
        return (
            f"--testers {testers} runs each tester in a network namespace of its own, and "
            f"{problem}; run as root or use --testers 1"
        )
    return None


def for_host(document: dict[str, Any], host: LoadHost) -> dict[str, Any]:
    """The tester's document with every loopback URL pointed at the host's way back to it."""
    out = copy.deepcopy(document)
    to = f"http://{host.target}:"
    for phase in out["phases"]:
        request = phase["request"]
        if str(request.get("base_url", "")).startswith(LOOPBACK):
            request["base_url"] = to + request["base_url"][len(LOOPBACK) :]
        for control in phase["before"]:
            if str(control["url"]).startswith(LOOPBACK):
                control["url"] = to + control["url"][len(LOOPBACK) :]
    return out


@dataclass
class FanOut:
    runs: list[EngineRun] = field(default_factory=list)
    merged: list[MergedPhase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class _Merger:
    """Collects each tester's phases; hands a phase on once every tester with a share is in."""

    def __init__(self, hooks: Hooks, documents: Sequence[dict[str, Any]], out: FanOut) -> None:
        self.hooks = hooks
        self.out = out
        self.lock = threading.Lock()
        self.expected: dict[int, set[int]] = {}
        for t, doc in enumerate(documents):
            for p in doc["phases"]:
                self.expected.setdefault(int(p["index"]), set()).add(t)
        self.parts: dict[int, dict[int, PhaseResult]] = {}
        self.done: set[int] = set()

    def report(self, tester: int, result: PhaseResult) -> None:
        with self.lock:
            self.parts.setdefault(result.phase, {})[tester] = result
            if set(self.parts[result.phase]) >= self.expected.get(result.phase, set()):
                self._emit(result.phase, {})

    def finish(self, failures: Mapping[int, str]) -> None:
        with self.lock:
            for phase in sorted(set(self.expected) - self.done):
                self._emit(phase, failures)

    def _emit(self, phase: int, failures: Mapping[int, str]) -> None:
        got = self.parts.pop(phase, {})
        parts = [
            PhasePart(t, got.get(t), None if t in got else failures.get(t, "no records"))
            for t in sorted(self.expected[phase])
        ]
        merged = merge_phase(phase, parts)
        self.done.add(phase)
        self.out.merged.append(merged)
        on_merged: Callable[[MergedPhase], None] | None = getattr(self.hooks, "on_merged", None)
        if on_merged is not None:
            on_merged(merged)
        else:
            self.hooks.on_phase(merged.result)


class _TesterHooks:
    def __init__(self, tester: int, merger: _Merger, hooks: Hooks) -> None:
        self.tester = tester
        self.merger = merger
        self.hooks = hooks

    def on_event(self, event: EngineEvent) -> None:
        if self.tester == 0:  # the live display follows tester 0 (it runs every phase)
            with self.merger.lock:
                self.hooks.on_event(event)

    def on_phase(self, result: PhaseResult) -> None:
        self.merger.report(self.tester, result)

    def tick(self) -> None:
        with self.merger.lock:
            self.hooks.tick()


def run_testers(
    document: dict[str, Any],
    testers: int,
    workdir: Path,
    hooks: Hooks,
    *,
    supervisor: Supervisor,
    cpu_groups: Mapping[str, Sequence[int]] | None = None,
    target_groups: Callable[[str], Sequence[str]] = lambda target: (),
    ready: Callable[[], None] | None = None,
    engine: GatlingEngine | None = None,
) -> FanOut:
    """Run ``document`` split across ``testers`` Gatling JVMs, each on a host of its own."""
    problem = fanout_problem(testers, "gatling")
    if problem is not None:
        raise RunError(problem)
    engine = engine or GatlingEngine()
    documents = split_document(document, testers)
    out = FanOut()
    merger = _Merger(hooks, documents, out)
    barrier = threading.Barrier(testers)
    errors: dict[int, BaseException] = {}
    runs: dict[int, EngineRun] = {}

    with LoadHostNetwork(testers) as network:

        def go(t: int) -> None:
            if t == 0 and ready is not None:
                try:
                    ready()
                except BaseException:
                    barrier.abort()
                    raise
            barrier.wait(BARRIER_TIMEOUT_S)

        def tester(t: int) -> None:
            try:
                runs[t] = engine.run(
                    for_host(documents[t], network.hosts[t]),
                    workdir,
                    _TesterHooks(t, merger, hooks),
                    supervisor=supervisor,
                    cpu_groups=cpu_groups,
                    target_groups=target_groups,
                    name=f"gatling-t{t}",
                    ready=lambda: go(t),
                    wrapper=network.hosts[t].wrapper,
                )
            except BaseException as exc:
                errors[t] = exc

        threads = [
            threading.Thread(target=tester, args=(t,), name=f"tester-{t}", daemon=True)
            for t in range(testers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)  # short joins: Ctrl-C reaches this thread
    first = errors.get(0)
    if first is not None and not isinstance(first, threading.BrokenBarrierError):
        raise first  # provisioning failed: the runner reports it as it does for one tester
    failures: dict[int, str] = {}
    for t in range(testers):
        run = runs.get(t)
        if run is not None:
            out.runs.append(run)
            if run.crashed:
                failures[t] = run.reason.splitlines()[0] if run.reason else "crashed"
        else:
            failures[t] = str(errors.get(t) or "did not run")
    merger.finish(failures)
    for t, reason in sorted(failures.items()):
        out.notes.append(f"tester {t} failed: {reason}; its unfinished phases are partial")
    if len(failures) == testers and not any(m.result.sample.requests for m in out.merged):
        raise RunError(f"every tester failed; tester 0: {failures[0]}")
    return out


__all__ = ["FanOut", "fanout_problem", "for_host", "run_testers"]
