"""One gateway, measured as its API grows and while its configuration changes (docs/scale.md).

The two measurements the scale and change-under-load runs repeat for every gateway and size:

- :func:`measure_size`: boot the gateway on the description replicated to ``routes`` routes,
  probe the routes at the start, middle and end of its table until each answers correctly
  (the time from the process start), read its resident memory idle, then load each of those
  routes in turn at the constant rate, sampling memory meanwhile: a
  :class:`~gatebench.scalemetrics.ScalePoint`.
- :func:`measure_change`: boot it on ``routes_before`` routes behind backend ``a``, load the
  route at the end of that table at the constant rate, and ``change_after_s`` into the measured
  load apply the description replicated to ``routes_before + routes_added`` routes with the
  upstream moved to backend ``b`` through the gateway's own mechanism; probe every new route at
  a fixed interval until it answers correctly from ``b``: a
  :class:`~gatebench.scalemetrics.ChangeOutcome`.

An edge: it starts processes (through the caller's supervisor) and a load engine; what is
measured and how it is summarised is the core's (``routescale``, ``scalemetrics``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .engines.constant_rate import RateLoad
from .errors import GatebenchError, RunError
from .ir import Api
from .procs import Supervisor
from .provisioners._live import ChangeApplied, LiveGateway, ProbeOutcome, RouteProber
from .renderers import Renderer
from .routescale import added_routes, probes_for, replicate, routes_at_positions
from .scalemetrics import ChangeOutcome, ScalePoint, change_outcome, position_latency, rss_mb

SETTLE_S = 1.0
"""Pause between the first correct answers and the idle memory reading (lazy allocations,
JIT threads and connection pools settle)."""


@dataclass(frozen=True)
class LoadSettings:
    """The constant-rate load both measurements run."""

    rate: float = 200.0
    duration_s: float = 10.0
    """Per measured phase (a scale point runs three: start, middle, end)."""
    warmup_s: float = 3.0
    probe_interval_s: float = 0.05
    deadline_s: float = 120.0
    """How long a route may take to answer correctly (boot or change) before it counts as
    never answering."""
    check_timeout_s: float = 600.0


def _prober(live: LiveGateway, instance: str, settings: LoadSettings) -> RouteProber:
    return RouteProber(
        "127.0.0.1",
        live.port,
        instance=instance,
        normalizes_path=live.renderer.normalizes_path,
        interval_s=settings.probe_interval_s,
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
    """One :class:`ScalePoint` (module docstring); the gateway is stopped on return."""
    grown = replicate(api, routes)
    positions = routes_at_positions(grown)
    live = LiveGateway(
        gateway, supervisor, workdir / "gateway", check_timeout=settings.check_timeout_s
    )
    name = live.renderer.name
    base = {
        "gateway": name,
        "routes": routes,
        "rate": settings.rate,
        "engine": load.name,
        "measured_from": load.measured_from,
    }
    try:
        try:
            started = live.boot(grown, backend_url)
        except GatebenchError as exc:
            return ScalePoint(
                config_bytes=live.config_bytes(),
                start_s=None,
                rss_idle_mb=None,
                rss_load_mb=None,
                problem=f"did not start: {exc}",
                **base,  # type: ignore[arg-type]
            )
        probes = probes_for(grown, [r.operation for r in positions.values()])
        first = _prober(live, instance, settings).until_correct(
            probes, since=started, deadline_s=settings.deadline_s, alive=live.alive
        )
        if not first.all_correct:
            return ScalePoint(
                config_bytes=live.config_bytes(),
                start_s=None,
                rss_idle_mb=rss_mb([live.rss_bytes()]),
                rss_load_mb=None,
                problem="no correct answer: " + "; ".join(sorted(set(first.last_problem.values()))),
                **base,  # type: ignore[arg-type]
            )
        time.sleep(SETTLE_S)
        idle = rss_mb([live.rss_bytes()])
        samples: list[int] = []
        run = load.run(
            grown,
            {label: route.operation_id for label, route in positions.items()},
            f"http://127.0.0.1:{live.port}",
            rate=settings.rate,
            duration_s=settings.duration_s,
            warmup_s=settings.warmup_s,
            workdir=workdir / "load",
            supervisor=supervisor,
            tick=lambda: samples.append(live.rss_bytes()),
        )
        return ScalePoint(
            config_bytes=live.config_bytes(),
            start_s=round(first.slowest_s or 0.0, 4),
            rss_idle_mb=idle,
            rss_load_mb=rss_mb(samples),
            latency=position_latency(run.arrivals),
            problem=run.problem,
            **base,  # type: ignore[arg-type]
        )
    finally:
        live.stop()


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
    """One :class:`ChangeOutcome` (module docstring). ``backends``: ((name, URL) before,
    (name, URL) after); the gateway is stopped on return."""
    (old_name, old_url), (new_name, new_url) = backends
    before, after = replicate(api, routes_before), replicate(api, routes_before + routes_added)
    loaded = routes_at_positions(before)["end"]
    live = LiveGateway(
        gateway, supervisor, workdir / "gateway", check_timeout=settings.check_timeout_s
    )
    mech = live.mechanism
    fields = {
        "gateway": live.renderer.name,
        "mechanism": mech.mechanism,
        "kind": mech.kind,
        "routes_before": routes_before,
        "routes_added": routes_added,
        "upstream_changed": old_url != new_url,
        "rate": settings.rate,
        "engine": load.name,
        "measured_from": load.measured_from,
    }
    done: list[tuple[ChangeApplied, float, ProbeOutcome]] = []
    try:
        started = live.boot(before, old_url)
        ready = _prober(live, old_name, settings).until_correct(
            probes_for(before, [loaded.operation]),
            since=started,
            deadline_s=settings.deadline_s,
            alive=live.alive,
        )
        if not ready.all_correct:
            raise RunError(f"{live.renderer.name} never answered correctly before the change")
        new_probes = probes_for(after, added_routes(before, after))
        clock = time.time() - time.monotonic()

        def change() -> None:
            applied = live.change(after, new_url)
            probed = _prober(live, new_name, settings).until_correct(
                new_probes,
                since=applied.triggered_at,
                deadline_s=settings.deadline_s,
                alive=live.alive,
            )
            done.append((applied, (applied.triggered_at + clock) * 1000.0, probed))

        run = load.run(
            before,
            {"end": loaded.operation_id},
            f"http://127.0.0.1:{live.port}",
            rate=settings.rate,
            duration_s=settings.duration_s,
            warmup_s=settings.warmup_s,
            workdir=workdir / "load",
            supervisor=supervisor,
            at=[(change_after_s, change)],
        )
    finally:
        live.stop()
    failed = [exc for _at, exc in run.fired if exc is not None]
    if failed or not done:
        reason = failed[0] if failed else "the change was never applied"
        raise RunError(f"{fields['gateway']}: the change failed: {reason}")
    applied, change_at_ms, probed = done[0]
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


__all__ = ["LoadSettings", "measure_change", "measure_size"]
