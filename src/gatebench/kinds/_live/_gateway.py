"""One gateway, measured as its API grows and while its configuration changes (docs/scale.md):
what the route-scale and change-under-load runs share, whichever machine they run on.

- :func:`start_grown`: check and start a rendered gateway on the description replicated to a
  size, probe the routes at the start, middle and end of its table until each answers
  correctly (the time from the process start), read its resident memory idle;
- :func:`load_positions`: load each of those routes in turn at the constant rate, sampling
  memory meanwhile: a :class:`~gatebench.kinds._live.metrics.ScalePoint`;
- :func:`change_under_load`: load the route at the end of the table at the constant rate and,
  ``change_after_s`` into the measured load, apply the description grown by ``routes_added``
  routes with the upstream moved to backend ``b`` through the gateway's own mechanism; probe
  every new route at a fixed interval until it answers correctly from ``b``: a
  :class:`~gatebench.kinds._live.metrics.ChangeOutcome`.

The gateway is a :class:`Gateway`: a process of this machine (``gatebench.local.provisioners._live
.LiveGateway``), or on the cloud path a container on its own VM that the tester drives through
the runs bucket (``gatebench.vm._live_agent.RemoteGateway``). A remote gateway must be told of a
start or a change ``lead_s`` seconds ahead, and says afterwards when it really happened
(``confirm_start``, ``confirm``): probes run from the planned moment, and the figures count from
the confirmed one (a probe before it cannot succeed: the gateway was stopped, or still served
the old configuration).

The load is a :class:`RateLoad`: requests to named routes at a fixed arrival rate, with a record
per request and callbacks at given moments (to apply a change), bound to its machine's
processes. A :class:`RouteProber` asks every route at a fixed interval, each probe on a new
connection (a kept connection could outlive a reload and hide what a new client meets; over
TLS, a new handshake trusting the run's CA alone), until it answers correctly; it records when
each first did. Times are ``time.monotonic()`` seconds.
"""

from __future__ import annotations

import http.client
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.ir import Api
from gatebench.core.renderers import LiveChange, Renderer
from gatebench.core.routescale import (
    Probe,
    added_routes,
    answer_problem,
    probes_for,
    routes_at_positions,
)
from gatebench.core.scaleplan import LoadSettings
from gatebench.core.stats import counted
from gatebench.kinds._live.metrics import (
    Arrival,
    ChangeOutcome,
    MeasuredFrom,
    ScalePoint,
    change_outcome,
    position_latency,
    rss_mb,
    schedule_problem,
)

PROBE_TIMEOUT_S = 2.0
"""One probe's connect + answer limit; a slower answer counts as not yet correct."""


@dataclass(frozen=True)
class ChangeApplied:
    """When a change reached the gateway (monotonic seconds)."""

    mechanism: LiveChange
    written_at: float
    """The new files were in place (all renamed)."""
    triggered_at: float
    """The mechanism was started: the signal sent, the admin request or command started, the
    old process stopped (``restart``); for a watched file, the same as ``written_at``."""
    returned_at: float
    """The mechanism returned: the admin request was answered, the commands finished, the
    new process answered its first request (``restart``); a signal returns at once."""
    check_s: float = 0.0
    """The checker's time on the staged files (before ``written_at``)."""


@dataclass
class ProbeOutcome:
    """Per probe: seconds from ``since`` to its first correct answer (None: never within the
    deadline), and the last wrong answer seen before."""

    since: float
    first_correct: dict[str, float | None] = field(default_factory=dict)
    last_problem: dict[str, str] = field(default_factory=dict)
    rounds: int = 0
    interval_s: float = 0.0
    """The interval asked for; a round that took longer starts the next one late (see
    ``late_rounds``)."""
    late_rounds: int = 0

    @property
    def all_correct(self) -> bool:
        return all(v is not None for v in self.first_correct.values())

    @property
    def slowest_s(self) -> float | None:
        values = [v for v in self.first_correct.values() if v is not None]
        return max(values) if values and self.all_correct else None


def ask(
    base: tuple[str, int],
    probe: Probe,
    timeout: float = PROBE_TIMEOUT_S,
    *,
    ca_file: str | None = None,
) -> tuple[int, dict[str, str], bytes] | str:
    """One request of ``probe`` on a new connection: (status, lower-case headers, body), or
    why no answer came. With ``ca_file``, over TLS trusting that CA alone (host name
    checked)."""
    conn: http.client.HTTPConnection
    if ca_file is not None:
        context = ssl.create_default_context(cafile=ca_file)
        conn = http.client.HTTPSConnection(base[0], base[1], timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(base[0], base[1], timeout=timeout)
    try:
        conn.putrequest(probe.method, probe.path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", f"{base[0]}:{base[1]}")
        conn.putheader("User-Agent", "gatebench-probe")
        conn.endheaders()
        response = conn.getresponse()
        body = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        return response.status, headers, body
    except (OSError, http.client.HTTPException) as exc:
        return f"no answer: {type(exc).__name__}: {exc}"
    finally:
        conn.close()


class RouteProber:
    """Probes routes at a fixed interval until each answers correctly (module docstring)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        instance: str | None = None,
        normalizes_path: bool = False,
        interval_s: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        ca_file: str | None = None,
    ) -> None:
        self.base = (host, port)
        self.ca_file = ca_file
        """The run's CA certificate when the gateway terminates TLS (probes speak TLS)."""
        self.instance = instance
        self.normalizes_path = normalizes_path
        self.interval_s = interval_s
        self.clock = clock

    def problem(self, probe: Probe, timeout: float = PROBE_TIMEOUT_S) -> str | None:
        """Why ``probe`` is not answered correctly now (within ``timeout`` seconds), or None
        when it is."""
        got = ask(self.base, probe, timeout, ca_file=self.ca_file)
        if isinstance(got, str):
            return got
        return answer_problem(
            probe,
            *got,
            instance=self.instance,
            normalizes_path=self.normalizes_path,
        )

    def until_correct(
        self,
        probes: Sequence[Probe],
        *,
        since: float,
        deadline_s: float,
        alive: Callable[[], bool] = lambda: True,
    ) -> ProbeOutcome:
        """Probe every pending route once per round, a round every ``interval_s``, until all
        answer correctly, ``deadline_s`` after ``since`` passes, or ``alive()`` is false.

        The deadline bounds each probe too: a probe waits at most for the time left, and an
        answer that came after the deadline does not count (a round started in time could
        otherwise end up to :data:`PROBE_TIMEOUT_S` later, and a route answering then would
        count as answering within it); a route never asked has no ``last_problem``."""
        out = ProbeOutcome(since=since, interval_s=self.interval_s)
        out.first_correct = {p.operation_id: None for p in probes}
        pending = list(probes)
        next_round = self.clock()
        while pending and self.clock() - since < deadline_s and alive():
            out.rounds += 1
            still = []
            for probe in pending:
                left = deadline_s - (self.clock() - since)
                if left <= 0:  # the deadline passed during the round: not asked
                    still.append(probe)
                    continue
                problem = self.problem(probe, min(PROBE_TIMEOUT_S, left))
                answered = self.clock() - since
                if problem is None and answered <= deadline_s:
                    out.first_correct[probe.operation_id] = answered
                    out.last_problem.pop(probe.operation_id, None)
                else:
                    out.last_problem[probe.operation_id] = problem or (
                        f"answered correctly only after the {deadline_s:g} s deadline "
                        f"({answered:.2f} s)"
                    )
                    still.append(probe)
            pending = still
            next_round += self.interval_s
            wait = next_round - self.clock()
            if wait > 0:
                time.sleep(wait)
            elif pending:
                out.late_rounds += 1
                next_round = self.clock()
        return out


@dataclass
class RateRun:
    """What a constant-rate load produced."""

    arrivals: list[Arrival] = field(default_factory=list)
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per route label: epoch ms of its phase's first start and last end."""
    fired: list[tuple[float, BaseException | None]] = field(default_factory=list)
    """Per callback of ``at``, in order: epoch ms when it was called, and what it raised."""
    problem: str = ""
    """Why the load did not complete (the engine crashed), empty when it did."""


class RateLoad(Protocol):
    name: str
    measured_from: MeasuredFrom

    def check(self) -> None:
        """Raise RunError saying how to install the engine when it is missing."""

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
        """Load each route of ``routes`` (label → operation id of ``api``) in turn at ``rate``
        requests a second for ``duration_s`` after a ``warmup_s`` warm-up. Each callback of
        ``at`` runs (in a thread of its own) once ``offset`` seconds of the first measured
        phase have passed; ``tick`` runs about five times a second (memory sampling)."""


SETTLE_S = 1.0
"""Pause between the first correct answers and the idle memory reading (lazy allocations,
JIT threads and connection pools settle)."""


class Gateway(Protocol):
    """What the measurements need of a gateway (module docstring)."""

    @property
    def renderer(self) -> Renderer: ...

    @property
    def mechanism(self) -> LiveChange: ...

    @property
    def host(self) -> str:
        """Where the load and the probes reach it."""
        ...

    @property
    def port(self) -> int: ...

    @property
    def ca_file(self) -> str | None: ...

    @property
    def lead_s(self) -> float:
        """How long before a start or a change the gateway must be told of it (0: at once)."""
        ...

    def start(self) -> float:
        """Start it; the monotonic moment it was (to be) started."""
        ...

    def confirm_start(self, started: float) -> float:
        """The monotonic moment the start :meth:`start` returned really happened."""
        ...

    @property
    def pids(self) -> Sequence[int]:
        """Its processes on this machine, for the CPU accounting (empty: elsewhere)."""
        ...

    def alive(self) -> bool: ...

    def rss_bytes(self) -> int | None:
        """Its resident memory now (None: read elsewhere, as a gateway VM's meter does)."""
        ...

    def config_bytes(self) -> int: ...

    def prepare(
        self, api: Api, backend_url: str | None = None, replicas: Sequence[str] = ()
    ) -> Any: ...

    def apply(self, prepared: Any) -> ChangeApplied: ...

    def confirm(self, applied: ChangeApplied) -> ChangeApplied:
        """The change :meth:`apply` returned, with the times it really happened."""
        ...

    def stop(self) -> None: ...


def warmup_s(renderer: Renderer, settings: LoadSettings) -> float:
    """The warm-up before a measured load: the settings', or longer for a gateway that
    compiles its code at run time (``Renderer.jit_warmup_s``): each load here follows a fresh
    start of the gateway."""
    return max(settings.warmup_s, renderer.jit_warmup_s)


def _prober(live: Gateway, instance: str, settings: LoadSettings) -> RouteProber:
    return RouteProber(
        live.host,
        live.port,
        instance=instance,
        normalizes_path=live.renderer.normalizes_path,
        interval_s=settings.probe_interval_s,
        ca_file=live.ca_file,
    )


@dataclass
class Booted:
    """A gateway booted on a grown description: what provisioning measured."""

    live: Gateway
    api: Api
    """The grown description it serves."""
    instance: str
    """The backend instance it forwards to."""
    start_s: float | None = None
    """From the process start to the first correct answer of every probed route."""
    rss_idle_mb: float | None = None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem and self.live.alive()


def never_correct(probed: ProbeOutcome, deadline_s: float) -> str:
    """Why the routes of ``probed`` that never answered correctly did not: the last problem
    each met, and the ones never asked (the deadline, counted from the process start, passed
    before a round reached them: nothing was wrong with what they answered)."""
    said = sorted(set(probed.last_problem.values()))
    unasked = [
        k for k, v in probed.first_correct.items() if v is None and k not in probed.last_problem
    ]
    if unasked:
        said.append(
            f"{counted(len(unasked), 'route')} not probed within the {deadline_s:g} s deadline "
            "(it counts from the process start)"
        )
    return "; ".join(said)


def start_grown(live: Gateway, grown: Api, *, instance: str, settings: LoadSettings) -> Booted:
    """Check and start a rendered gateway, probe the start, middle and end routes until each
    answers correctly, read its memory idle. A gateway that does not start or never answers
    correctly is returned with its ``problem`` (and stopped)."""
    booted = Booted(live, grown, instance)
    try:
        started = live.start()
    except GatebenchError as exc:
        live.stop()
        booted.problem = f"did not start: {exc}"
        return booted
    positions = routes_at_positions(grown)
    probes = probes_for(grown, [r.operation for r in positions.values()])
    first = _prober(live, instance, settings).until_correct(
        probes, since=started, deadline_s=settings.deadline_s, alive=live.alive
    )
    if not first.all_correct:
        booted.rss_idle_mb = rss_mb([live.rss_bytes()])
        live.stop()
        booted.problem = "no correct answer: " + never_correct(first, settings.deadline_s)
        return booted
    late = live.confirm_start(started) - started  # probes before the real start all failed
    booted.start_s = round(max(0.0, (first.slowest_s or 0.0) - late), 4)
    time.sleep(SETTLE_S)
    booted.rss_idle_mb = rss_mb([live.rss_bytes()])
    return booted


def load_positions(
    booted: Booted,
    *,
    load: RateLoad,
    settings: LoadSettings,
    workdir: Path,
) -> ScalePoint:
    """The constant-rate load on the start, middle and end routes of a booted gateway, with
    its memory sampled meanwhile: its :class:`ScalePoint` (a booted one that has a problem
    gets a point that says so, without load)."""
    live = booted.live
    base = {
        "gateway": live.renderer.name,
        "routes": len(booted.api.operations),
        "config_bytes": live.config_bytes(),
        "start_s": booted.start_s,
        "rss_idle_mb": booted.rss_idle_mb,
        "rate": settings.rate,
        "engine": load.name,
        "measured_from": load.measured_from,
    }
    if booted.problem:
        return ScalePoint(rss_load_mb=None, problem=booted.problem, **base)  # type: ignore[arg-type]
    positions = routes_at_positions(booted.api)
    samples: list[int | None] = []
    run = load.run(
        booted.api,
        {label: route.operation_id for label, route in positions.items()},
        f"http://{live.host}:{live.port}",
        rate=settings.rate,
        duration_s=settings.duration_s,
        warmup_s=warmup_s(live.renderer, settings),
        workdir=workdir,
        tick=lambda: samples.append(live.rss_bytes()),
    )
    problem = run.problem or ("" if live.alive() else "the gateway stopped during the load")
    latency = position_latency(run.arrivals)
    stalled = [
        schedule_problem(
            latency[label].requests if label in latency else 0,
            settings.rate,
            settings.duration_s,
            f"to the {label} route",
        )
        for label in positions
    ]
    problem = "; ".join(p for p in (problem, *stalled) if p)
    return ScalePoint(
        rss_load_mb=rss_mb(samples),
        latency=latency,
        problem=problem,
        **base,  # type: ignore[arg-type]
    )


def change_under_load(
    booted: Booted,
    after: Api,
    new_backend: tuple[str, str],
    *,
    load: RateLoad,
    settings: LoadSettings,
    change_after_s: float,
    window_s: float,
    workdir: Path,
) -> ChangeOutcome:
    """Load the route at the end of a booted gateway's table at the constant rate and,
    ``change_after_s`` into the measured load, apply ``after`` with the upstream moved to
    ``new_backend`` ((name, URL)) through the gateway's own mechanism; every new route is
    probed until it answers correctly from that backend. The new files are rendered and
    checked before the load starts; at the moment only the mechanism runs. Raises RunError
    (or ConfigRejected) when the change could not be applied (a refused configuration, a
    failed mechanism)."""
    live, before = booted.live, booted.api
    new_name, new_url = new_backend
    if change_after_s + window_s > settings.duration_s:
        raise RunError(
            f"the change at {change_after_s:g} s and its {window_s:g} s window must end within "
            f"the {settings.duration_s:g} s of measured load"
        )
    if booted.problem:
        raise RunError(f"{live.renderer.name}: {booted.problem}")
    loaded = routes_at_positions(before)["end"]
    mech = live.mechanism
    fields = {
        "gateway": live.renderer.name,
        "mechanism": mech.mechanism,
        "kind": mech.kind,
        "routes_before": len(before.operations),
        "routes_added": len(added_routes(before, after)),
        "upstream_changed": new_name != booted.instance,
        "rate": settings.rate,
        "engine": load.name,
        "measured_from": load.measured_from,
    }
    new_probes = probes_for(after, added_routes(before, after))
    prepared = live.prepare(after, new_url)
    clock = time.time() - time.monotonic()
    done: list[tuple[ChangeApplied, ProbeOutcome]] = []

    def change() -> None:
        applied = live.apply(prepared)
        probed = _prober(live, new_name, settings).until_correct(
            new_probes,
            since=applied.triggered_at,
            deadline_s=settings.deadline_s,
            alive=live.alive,
        )
        done.append((applied, probed))

    offset_s = max(0.0, change_after_s - live.lead_s)
    run = load.run(
        before,
        {"end": loaded.operation_id},
        f"http://{live.host}:{live.port}",
        rate=settings.rate,
        duration_s=settings.duration_s,
        warmup_s=warmup_s(live.renderer, settings),
        workdir=workdir,
        # told ahead, a remote gateway applies it at change_after_s (LiveGateway: at once)
        at=[(offset_s, change)],
    )
    failed = [exc for _at, exc in run.fired if exc is not None]
    if failed or not done:
        reason = failed[0] if failed else "the change was never applied"
        raise RunError(f"{fields['gateway']}: the change failed: {reason}")
    planned, probed = done[0]
    applied = live.confirm(planned)
    late = applied.triggered_at - planned.triggered_at  # probes before it could not succeed
    change_at_ms = (applied.triggered_at + clock) * 1000.0
    # the callback was called offset_s into the measured load: the load's schedule ends
    # duration_s - offset_s later (a change triggered late has less of its window loaded)
    load_end_ms = run.fired[0][0] + (settings.duration_s - offset_s) * 1000.0
    probed = replace(
        probed,
        first_correct={
            k: None if v is None else max(0.0, v - late) for k, v in probed.first_correct.items()
        },
    )
    return change_outcome(
        run.arrivals,
        change_at_ms,
        window_s=window_s,
        calm_s=min(change_after_s, window_s),
        load_end_ms=load_end_ms,
        new_routes_s={
            k: (None if v is None else round(v, 4)) for k, v in probed.first_correct.items()
        },
        mechanism_s=round(applied.returned_at - applied.triggered_at, 4),
        check_s=round(applied.check_s, 4),
        problem=run.problem,
        **fields,
    )


__all__ = [
    "PROBE_TIMEOUT_S",
    "Booted",
    "ChangeApplied",
    "Gateway",
    "ProbeOutcome",
    "RateLoad",
    "RateRun",
    "RouteProber",
    "ask",
    "change_under_load",
    "load_positions",
    "start_grown",
]
