"""Several local testers for one schedule (``gatebench run --testers N``).

The schedule's document is split across N testers (``gatebench.core.testers.split_document``: the
rule is there); each tester is a Gatling JVM of its own, in a network namespace of its own
(``gatebench.local._netns``: its requests cross veth, routing and NAT as between VMs), with its own
workload file, log and ``simulation.log`` in the run folder (``gatling-tN*``). Every JVM starts
and waits for its go file; the go files are written together once the gateways are up and every
tester has reached the barrier. Each tester reports its phases as its own log proves them
complete; a phase is merged (``gatebench.core.testers.merge_phase``: every raw record, throughput
over the union of the windows) once every tester with a share of it has reported, and handed
to the runner's hooks. A tester that dies leaves the phases it had not finished ``partial``,
with the reason: the others' records stand, never as a complete phase. No retry: the phases of
a dead tester cannot be re-run without the others.

Not root (or no ``ip``/``iptables``): N > 1 is refused before anything starts, with the reason;
a local multi-tester result without the network hop would compare nothing with the cloud.
"""

from __future__ import annotations

import contextlib
import copy
import http.server
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from gatebench.core.errors import RunError
from gatebench.core.measure import PhaseResult
from gatebench.core.plan import MAX_TESTERS
from gatebench.core.testers import MergedPhase, PhasePart, merge_phase, split_document
from gatebench.local._netns import LoadHost, LoadHostNetwork, namespaces_problem
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, EngineRun, FanOut, Hooks

BARRIER_TIMEOUT_S = 900.0
"""How long a started tester waits for the gateways to boot and the others to be ready."""
PHASE_BARRIER_S = 45.0
"""How long the testers at a phase barrier wait for one that does not come (under Gatling's
60-s request timeout, so the control call itself never fails); then they go on, with a note."""
LOOPBACK = "http://127.0.0.1:"


R = TypeVar("R")


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


def expected_testers(documents: Sequence[dict[str, Any]]) -> dict[int, set[int]]:
    """Phase index → the testers with a share of it (``documents``: one per tester, as
    ``split_document`` gives them)."""
    expected: dict[int, set[int]] = {}
    for t, doc in enumerate(documents):
        for p in doc["phases"]:
            expected.setdefault(int(p["index"]), set()).add(t)
    return expected


def barrier_controls(document: dict[str, Any], tester: int, base_url: str) -> dict[str, Any]:
    """``document`` with the calls to the phase barrier at ``base_url`` around each phase's
    controls (:class:`PhaseBarrier`)."""
    out = copy.deepcopy(document)
    for phase in out["phases"]:
        index = int(phase["index"])
        meet = [
            {"method": "POST", "url": f"{base_url}/{index}/{stage}/{tester}", "status": 204}
            for stage in ("a", "b")
        ]
        phase["before"] = [meet[0], *phase["before"], meet[1]]
    return out


class PhaseBarrier:
    """Testers meet before every phase: an HTTP endpoint the run serves (locally on 127.0.0.1,
    the testers reach it as they reach the targets; on the cloud path tester 0 serves it on
    its VM and the other testers reach it over the network), called as a control before each
    phase.

    Before phase P every tester with a share of it calls ``/P/a/T``, which answers once every
    tester still running has reached phase P or a later one (so every earlier phase is over
    everywhere, also on the testers without a share of P); tester 0 then resets the backend,
    and the testers of P call ``/P/b/T`` (nobody starts before the reset). So the
    testers' phases line up, the backend reset never lands among another tester's requests,
    and the start skew stays small. ``/gone/T`` says tester T has ended (its load is over):
    nobody waits for it any more. A tester that does not arrive within ``timeout`` is left
    behind with a note: later barriers do not wait for it until it arrives at one again."""

    def __init__(
        self,
        expected: Mapping[int, set[int]],
        timeout: float = PHASE_BARRIER_S,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.expected = expected
        self.timeout = timeout
        self.arrived: dict[tuple[int, str], set[int]] = {}
        self.reached: dict[int, int] = {}
        """Tester → the latest phase whose first barrier it called."""
        self.testers: set[int] = set().union(*expected.values()) if expected else set()
        self.dead: set[int] = set()
        self.behind: set[int] = set()
        """Testers that missed a barrier and have not arrived at one since."""
        self.notes: list[str] = []
        self.cond = threading.Condition()
        barrier = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                parts = self.path.strip("/").split("/")
                ok = len(parts) == 3 and parts[0].isdigit() and parts[2].isdigit()
                gone = len(parts) == 2 and parts[0] == "gone" and parts[1].isdigit()
                if ok:
                    barrier.wait(int(parts[0]), parts[1], int(parts[2]))
                elif gone:
                    barrier.gone(int(parts[1]))
                self.send_response(204 if ok or gone else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def __enter__(self) -> PhaseBarrier:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _met(self, phase: int, stage: str) -> set[int]:
        """Who is still missing at this barrier."""
        if stage == "a":
            behind = {t for t in self.testers if self.reached.get(t, -1) < phase}
            return behind - self.dead - self.behind
        missing = self.expected.get(phase, set()) - self.arrived[(phase, stage)]
        return missing - self.dead - self.behind

    def wait(self, phase: int, stage: str, tester: int) -> None:
        key = (phase, stage)
        with self.cond:
            self.arrived.setdefault(key, set()).add(tester)
            self.behind.discard(tester)
            if stage == "a":
                self.reached[tester] = max(phase, self.reached.get(tester, -1))
            self.cond.notify_all()
            met = self.cond.wait_for(lambda: not self._met(phase, stage), self.timeout)
            if not met and tester == min(self.arrived[key]):
                missing = sorted(self._met(phase, stage))
                self.behind.update(missing)
                self.cond.notify_all()
                self.notes.append(
                    f"phase {phase}: tester(s) {missing} did not reach the barrier within "
                    f"{self.timeout:g}s; the others went on"
                )

    def gone(self, tester: int) -> None:
        """A tester ended: nobody waits for it any more."""
        with self.cond:
            self.dead.add(tester)
            self.cond.notify_all()

    def controls(self, document: dict[str, Any], tester: int) -> dict[str, Any]:
        """``document`` with the barrier calls around each phase's controls."""
        return barrier_controls(document, tester, f"http://127.0.0.1:{self.port}")

    def record(self) -> dict[str, Any]:
        """Who arrived at each phase's two barriers, and the notes (JSON: the cloud path
        keeps it with tester 0's ``load-done``, and ingest copies each phase's into
        ``testers.jsonl``)."""
        with self.cond:
            phases: dict[str, dict[str, list[int]]] = {}
            for (phase, stage), testers in sorted(self.arrived.items()):
                phases.setdefault(str(phase), {})[stage] = sorted(testers)
            return {"phases": phases, "notes": list(self.notes)}


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


class _Merger:
    """Collects each tester's phases; hands a phase on once every tester with a share is in."""

    def __init__(self, hooks: Hooks, documents: Sequence[dict[str, Any]], out: FanOut) -> None:
        self.hooks = hooks
        self.out = out
        self.lock = threading.Lock()
        self.expected = expected_testers(documents)
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


class TesterThreads(Generic[R]):
    """Several testers at once, each in a thread of its own: ``run_one(t)`` for every tester
    ``t`` given; what each returned or raised. The one definition of the fan-out a run's
    split load (:func:`run_testers`) and a capacity probe over several hosts
    (``gatebench.local.probing``) both use."""

    def __init__(self, testers: Iterable[int], run_one: Callable[[int], R], name: str) -> None:
        self.results: dict[int, R] = {}
        self.errors: dict[int, BaseException] = {}

        def body(t: int) -> None:
            try:
                self.results[t] = run_one(t)
            except BaseException as exc:  # reported by the caller, per tester
                self.errors[t] = exc

        self.threads = [
            threading.Thread(target=body, args=(t,), name=f"{name}-{t}", daemon=True)
            for t in testers
        ]

    def start(self) -> TesterThreads[R]:
        for thread in self.threads:
            thread.start()
        return self

    def join(self) -> TesterThreads[R]:
        for thread in self.threads:
            while thread.is_alive():
                thread.join(0.2)  # short joins: Ctrl-C reaches this thread
        return self


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
    # Provisioning (``ready``) runs in this thread, never in a tester's: a process started from
    # a thread is killed when that thread ends (procs: PR_SET_PDEATHSIG follows the thread), and
    # tester 0 may finish before the others. The testers wait for it on the same barrier.
    barrier = threading.Barrier(testers + (1 if ready is not None else 0))
    provisioning: list[BaseException] = []

    with LoadHostNetwork(testers) as network, PhaseBarrier(merger.expected) as phases:

        def go(t: int) -> None:
            barrier.wait(BARRIER_TIMEOUT_S)

        def tester(t: int) -> EngineRun:
            try:
                return engine.run(
                    for_host(phases.controls(documents[t], t), network.hosts[t]),
                    workdir,
                    _TesterHooks(t, merger, hooks),
                    supervisor=supervisor,
                    cpu_groups=cpu_groups,
                    target_groups=target_groups,
                    name=f"gatling-t{t}",
                    ready=lambda: go(t),
                    wrapper=network.hosts[t].wrapper,
                )
            finally:
                phases.gone(t)

        threads = TesterThreads(range(testers), tester, "tester").start()
        if ready is not None:
            try:
                ready()
            except BaseException as exc:
                barrier.abort()
                provisioning.append(exc)
            else:
                with contextlib.suppress(threading.BrokenBarrierError):
                    barrier.wait(BARRIER_TIMEOUT_S)  # a tester that failed reports it itself
        threads.join()
    runs, errors = threads.results, threads.errors
    out.notes.extend(phases.notes)
    if provisioning:
        raise provisioning[0]  # the runner reports it as it does for one tester
    first = errors.get(0)
    if first is not None and not isinstance(first, threading.BrokenBarrierError):
        raise first  # tester 0 could not start at all (not a barrier another one broke)
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


__all__ = [
    "FanOut",
    "PhaseBarrier",
    "TesterThreads",
    "barrier_controls",
    "expected_testers",
    "fanout_problem",
    "for_host",
    "run_testers",
]
