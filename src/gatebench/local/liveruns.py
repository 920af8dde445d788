"""One gateway, measured as its API grows and while its configuration changes (docs/scale.md).

The two measurements the scale and change-under-load runs repeat for every gateway and size:

- :func:`measure_size`: boot the gateway on the description replicated to ``routes`` routes,
  probe the routes at the start, middle and end of its table until each answers correctly
  (the time from the process start), read its resident memory idle, then load each of those
  routes in turn at the constant rate, sampling memory meanwhile: a
  :class:`~gatebench.kinds.scale.metrics.ScalePoint`.
- :func:`measure_change`: boot it on ``routes_before`` routes behind backend ``a``, load the
  route at the end of that table at the constant rate, and ``change_after_s`` into the measured
  load apply the description replicated to ``routes_before + routes_added`` routes with the
  upstream moved to backend ``b`` through the gateway's own mechanism; probe every new route at
  a fixed interval until it answers correctly from ``b``: a
  :class:`~gatebench.kinds.scale.metrics.ChangeOutcome`.

Each is made of parts a run's stages call one at a time: :func:`render_grown` (the files),
:func:`start_grown` (check, start, first correct answers, idle memory; both are
:func:`boot_grown`), :func:`load_positions` (the load and memory under it) and
:func:`change_under_load`.

The gateway is a :class:`Gateway`: a process here (``provisioners._live.LiveGateway``), or on
the cloud path a container on its own VM that the tester drives through the runs bucket
(``provisioners._vm_live.RemoteGateway``, docs/cloud.md, "Route scale and changes under load").
A remote gateway must be told of a start or a change ``lead_s`` seconds ahead, and says
afterwards when it really happened (``confirm_start``, ``confirm``): probes run from the
planned moment, and the figures count from the confirmed one (a probe before it cannot
succeed: the gateway was stopped, or still served the old configuration).

An edge: it starts processes (through the caller's supervisor) and a load engine; what is
measured and how it is summarised is the core's (``routescale``, ``scalemetrics``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from gatebench.local.engines.constant_rate import RateLoad
from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.ir import Api
from gatebench.local.procs import Supervisor
from gatebench.local.provisioners._live import ChangeApplied, LiveGateway, ProbeOutcome, RouteProber
from gatebench.core.renderers import LiveChange, Renderer
from gatebench.core.routescale import added_routes, probes_for, replicate, routes_at_positions
from gatebench.kinds.scale.metrics import (
    ChangeOutcome,
    ScalePoint,
    change_outcome,
    position_latency,
    rss_mb,
    schedule_problem,
)
from gatebench.core.scaleplan import LoadSettings

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


def _readiness_timeout(gateway: str | Renderer) -> float:
    """The gateway's own readiness limit (a large table may need the run's deadline instead:
    Varnish compiles its VCL before it listens)."""
    from gatebench.core.renderers import get_renderer

    renderer = get_renderer(gateway) if isinstance(gateway, str) else gateway
    return renderer.readiness_timeout


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


def boot_grown(
    gateway: str | Renderer,
    grown: Api,
    *,
    backend_url: str,
    instance: str,
    settings: LoadSettings,
    workdir: Path,
    supervisor: Supervisor,
) -> Booted:
    """:func:`render_grown`, then :func:`start_grown`."""
    live = LiveGateway(
        gateway,
        supervisor,
        workdir / "gateway",
        check_timeout=settings.check_timeout_s,
        boot_timeout=max(settings.deadline_s, _readiness_timeout(gateway)),
    )
    try:
        live.render(grown, backend_url)
    except GatebenchError as exc:
        return Booted(live, grown, instance, problem=f"cannot render: {exc}")
    return start_grown(live, grown, instance=instance, settings=settings)


def render_grown(
    gateway: str | Renderer,
    grown: Api,
    *,
    backend_url: str,
    settings: LoadSettings,
    workdir: Path,
    supervisor: Supervisor,
) -> LiveGateway:
    """The gateway's files for ``grown`` written into ``workdir/gateway`` (no process yet);
    raises what the renderer raises."""
    live = LiveGateway(
        gateway,
        supervisor,
        workdir / "gateway",
        check_timeout=settings.check_timeout_s,
        boot_timeout=max(settings.deadline_s, _readiness_timeout(gateway)),
    )
    live.render(grown, backend_url)
    return live


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
        booted.problem = "no correct answer: " + "; ".join(sorted(set(first.last_problem.values())))
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
    supervisor: Supervisor,
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
        warmup_s=settings.warmup_s,
        workdir=workdir,
        supervisor=supervisor,
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


def measure_size(
    gateway: str | Renderer,
    api: Api,
    routes: int,
    *,
    backend_url: str,
    instance: str,
    load: RateLoad,
    settings: LoadSettings,
    workdir: Path,
    supervisor: Supervisor,
) -> ScalePoint:
    """One :class:`ScalePoint` (module docstring): :func:`boot_grown`, then
    :func:`load_positions`; the gateway is stopped on return."""
    booted = boot_grown(
        gateway,
        replicate(api, routes),
        backend_url=backend_url,
        instance=instance,
        settings=settings,
        workdir=workdir,
        supervisor=supervisor,
    )
    try:
        return load_positions(
            booted, load=load, settings=settings, workdir=workdir / "load", supervisor=supervisor
        )
    finally:
        booted.live.stop()


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
    supervisor: Supervisor,
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

    run = load.run(
        before,
        {"end": loaded.operation_id},
        f"http://{live.host}:{live.port}",
        rate=settings.rate,
        duration_s=settings.duration_s,
        warmup_s=settings.warmup_s,
        workdir=workdir,
        supervisor=supervisor,
        # told ahead, a remote gateway applies it at change_after_s (LiveGateway: at once)
        at=[(max(0.0, change_after_s - live.lead_s), change)],
    )
    failed = [exc for _at, exc in run.fired if exc is not None]
    if failed or not done:
        reason = failed[0] if failed else "the change was never applied"
        raise RunError(f"{fields['gateway']}: the change failed: {reason}")
    planned, probed = done[0]
    applied = live.confirm(planned)
    late = applied.triggered_at - planned.triggered_at  # probes before it could not succeed
    change_at_ms = (applied.triggered_at + clock) * 1000.0
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
        new_routes_s={
            k: (None if v is None else round(v, 4)) for k, v in probed.first_correct.items()
        },
        mechanism_s=round(applied.returned_at - applied.triggered_at, 4),
        check_s=round(applied.check_s, 4),
        problem=run.problem,
        **fields,
    )


def measure_change(
    gateway: str | Renderer,
    api: Api,
    *,
    routes_before: int,
    routes_added: int,
    backends: tuple[tuple[str, str], tuple[str, str]],
    load: RateLoad,
    settings: LoadSettings,
    change_after_s: float,
    window_s: float,
    workdir: Path,
    supervisor: Supervisor,
) -> ChangeOutcome:
    """One :class:`ChangeOutcome` (module docstring): :func:`boot_grown` on ``routes_before``
    routes behind the first backend, then :func:`change_under_load` to ``routes_before +
    routes_added`` routes behind the second. ``backends``: ((name, URL) before, (name, URL)
    after); the gateway is stopped on return."""
    (old_name, old_url), new_backend = backends
    booted = boot_grown(
        gateway,
        replicate(api, routes_before),
        backend_url=old_url,
        instance=old_name,
        settings=settings,
        workdir=workdir,
        supervisor=supervisor,
    )
    try:
        return change_under_load(
            booted,
            replicate(api, routes_before + routes_added),
            new_backend,
            load=load,
            settings=settings,
            change_after_s=change_after_s,
            window_s=window_s,
            workdir=workdir / "load",
            supervisor=supervisor,
        )
    finally:
        booted.live.stop()


__all__ = [
    "Booted",
    "Gateway",
    "LoadSettings",
    "boot_grown",
    "change_under_load",
    "load_positions",
    "measure_change",
    "measure_size",
    "render_grown",
    "start_grown",
]
