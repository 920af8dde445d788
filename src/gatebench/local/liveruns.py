"""One gateway of this machine, measured as its API grows and while its configuration changes
(docs/scale.md): the gateway as a process of the caller's supervisor
(``gatebench.local.provisioners._live.LiveGateway``), measured by the route-scale and
change-under-load runs' shared measurements (``gatebench.kinds._live``).

- :func:`render_grown`: the gateway's files for a grown description (no process yet);
- :func:`booted_grown`: those files, then ``start_grown``, the gateway stopped after the block;
- :func:`measure_size`, :func:`measure_change`: one scale point, one change outcome, the gateway
  stopped on return (the route-scale benchmark and its tests use them directly).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from gatebench.core.errors import GatebenchError
from gatebench.core.fairness import CpuPolicy, rate_concurrency
from gatebench.core.ir import Api
from gatebench.core.renderers import Renderer
from gatebench.core.routescale import replicate
from gatebench.core.scaleplan import LoadSettings
from gatebench.kinds._live._gateway import (
    Booted,
    RateLoad,
    change_under_load,
    load_positions,
    start_grown,
)
from gatebench.kinds._live._machine import GrownSite
from gatebench.kinds._live.metrics import ChangeOutcome, ScalePoint
from gatebench.local.procs import Supervisor
from gatebench.local.provisioners._live import LiveGateway


def _readiness_timeout(gateway: str | Renderer) -> float:
    """The gateway's own readiness limit (a large table may need the run's deadline instead:
    Varnish compiles its VCL before it listens)."""
    from gatebench.core.renderers import get_renderer

    renderer = get_renderer(gateway) if isinstance(gateway, str) else gateway
    return renderer.readiness_timeout


@contextlib.contextmanager
def booted_grown(
    gateway: str | Renderer,
    grown: Api,
    backend: tuple[str, str],
    settings: LoadSettings,
    workdir: Path,
    supervisor: Supervisor,
    cpu: CpuPolicy,
) -> Iterator[Booted]:
    """:func:`render_grown` forwarding to ``backend`` (its instance name, its URL), then
    :func:`start_grown`; the gateway is stopped when the block ends."""
    instance, backend_url = backend
    live = _live_gateway(gateway, settings, workdir, supervisor, cpu)
    try:
        live.render(grown, backend_url)
    except GatebenchError as exc:
        booted = Booted(live, grown, instance, problem=f"cannot render: {exc}")
    else:
        booted = start_grown(live, grown, instance=instance, settings=settings)
    try:
        yield booted
    finally:
        booted.live.stop()


def render_grown(site: GrownSite, supervisor: Supervisor) -> LiveGateway:
    """The gateway of ``site``, its files written into ``workdir/gateway`` (no process yet);
    raises what the renderer raises."""
    live = _live_gateway(site.gateway, site.settings, site.workdir, supervisor, site.cpu)
    live.render(site.grown, site.backend_url)
    return live


def _live_gateway(
    gateway: str | Renderer,
    settings: LoadSettings,
    workdir: Path,
    supervisor: Supervisor,
    cpu: CpuPolicy,
) -> LiveGateway:
    """The gateway of a grown description, in ``workdir/gateway``, for ``cpu``'s cores and
    pools that hold the constant rate."""
    return LiveGateway(
        gateway,
        supervisor,
        workdir / "gateway",
        cpu=cpu,
        concurrency=rate_concurrency(settings.rate),
        check_timeout=settings.check_timeout_s,
        boot_timeout=max(settings.deadline_s, _readiness_timeout(gateway)),
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
    cpu: CpuPolicy,
) -> ScalePoint:
    """One :class:`ScalePoint` (module docstring): :func:`booted_grown`, then
    :func:`load_positions`; the gateway is stopped on return."""
    grown = replicate(api, routes)
    with booted_grown(
        gateway, grown, (instance, backend_url), settings, workdir, supervisor, cpu
    ) as booted:
        return load_positions(booted, load=load, settings=settings, workdir=workdir / "load")


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
    cpu: CpuPolicy,
) -> ChangeOutcome:
    """One :class:`ChangeOutcome` (module docstring): :func:`booted_grown` on ``routes_before``
    routes behind the first backend, then :func:`change_under_load` to ``routes_before +
    routes_added`` routes behind the second. ``backends``: ((name, URL) before, (name, URL)
    after); the gateway is stopped on return."""
    before, after = backends
    grown = replicate(api, routes_before)
    with booted_grown(gateway, grown, before, settings, workdir, supervisor, cpu) as booted:
        return change_under_load(
            booted,
            replicate(api, routes_before + routes_added),
            after,
            load=load,
            settings=settings,
            change_after_s=change_after_s,
            window_s=window_s,
            workdir=workdir / "load",
        )


__all__ = [
    "LoadSettings",
    "booted_grown",
    "measure_change",
    "measure_size",
    "render_grown",
]
