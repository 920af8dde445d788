"""The stages of the route-scale and change-under-load runs (docs/scale.md).

Each kind is a list of these, built by :mod:`.kinds` from the sizes asked for::

    scale:              parse → backend → render(n) → provision(n) → load(n) → teardown(n)
                        (for every size n, smallest first) → score
    change-under-load:  parse → backend → render → provision → load (the change) → teardown
                        → score

``parse`` checks the load engine; ``backend`` starts two echo backends that name themselves
(``a``, ``b``: the change moves the upstream from one to the other); ``render`` writes every
gateway's files for the description grown to the size (``routescale.replicate``, the files
each gateway's live mechanism needs); ``provision`` starts the gateways one at a time and
probes until the start, middle and end routes answer correctly (the start time, then the idle
memory); ``load`` loads each gateway in turn at the constant rate (a scale point), or applies
the change under that load (a change outcome); each result is written to the run's folder
and the store as soon as it is known (``ResultStore.put_result``); ``score`` writes the run's
document and HTML report. A gateway that fails is recorded with its reason; the others go on.

The lifecycle moves forward once: the first size's stages move the run to ``rendered``,
``provisioning`` and ``loading``; the next sizes' stages run inside ``loading``.

The cloud workflow runs both kinds with its own steps of the same names (docs/cloud.md, "Route
scale and changes under load"): its render renders every size, its load measures every size,
its teardown comes once, after score. The stages that have no step of their own there say so
(``local_only``, ``cloud_order``); tests/unit/test_stages.py compares the lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.fairness import CpuPolicy, cpu_environment, rate_concurrency
from gatebench.core.ir import Api
from gatebench.core.model import ResultStore, RunKind, RunRecord, RunStatus
from gatebench.core.plan import Backend as PlanBackend
from gatebench.core.plan import Plan, Warmup
from gatebench.core.renderers import get_renderer
from gatebench.core.routescale import replicate
from gatebench.core.scaleplan import ChangeSpec, LoadSettings, ScaleAsk
from gatebench.core.score import Profile
from gatebench.kinds._live._gateway import (
    Booted,
    Gateway,
    RateLoad,
    start_grown,
)
from gatebench.kinds._live._machine import GrownSite, NotRendered, live_machine
from gatebench.kinds._live._report import (
    cpu_policy_of,
    failed_of,
    render_scale_csv,
    render_scale_html,
    render_scale_markdown,
    scale_document,
    scale_view,
    stored_scale_document,
)
from gatebench.kinds._live.metrics import ChangeOutcome, ScalePoint
from gatebench.run._base import Stage
from gatebench.run._context import RunContext
from gatebench.run._journal import Progress
from gatebench.run._kind import Kind, KindReport, Prepared
from gatebench.run.stages.backend import layout_environment

BACKENDS = ("a", "b")


@dataclass(frozen=True)
class ScaleRequest:
    """What a scale or change-under-load run measures (from the command line)."""

    gateways: tuple[str, ...]
    sizes: tuple[int, ...] = ()
    settings: LoadSettings = field(default_factory=LoadSettings)
    change: ChangeSpec | None = None


@dataclass
class Results:
    points: list[ScalePoint] = field(default_factory=list)
    changes: list[ChangeOutcome] = field(default_factory=list)


@dataclass(frozen=True)
class ScaleInput:
    request: ScaleRequest
    gateways: tuple[str, ...]
    """The gateways that run here (the others are recorded as failed, with the reason)."""
    load: RateLoad
    results: Results
    """What the run measured so far (the load stages add to it)."""


@dataclass(frozen=True)
class EchoBackends:
    urls: dict[str, str]
    """Backend name (``a``, ``b``) → base URL."""
    cpu: CpuPolicy
    """The cores every gateway is given (the plan's ``cpus:`` on this machine)."""
    concurrency: int
    """What every gateway's pools hold: the constant rate's."""


@dataclass
class Grown:
    """The gateways of one table size, from render to teardown."""

    size: int
    api: Api
    """The description grown to ``size`` routes."""
    lives: dict[str, Gateway] = field(default_factory=dict)
    booted: dict[str, Booted] = field(default_factory=dict)

    def stop(self) -> None:
        for live in self.lives.values():
            live.stop()


class ScaleParse(Stage):
    name = "parse"
    step = RunStatus.PARSED
    moves = "end"
    gives = ScaleInput

    def __init__(self, request: ScaleRequest, load: RateLoad | None = None) -> None:
        self.request = request
        self.load = load
        """The constant-rate load; None: the machine's (``LiveMachine.rate_load``)."""

    def check(self, ctx: RunContext) -> None:
        (self.load or live_machine(ctx.machine).rate_load()).check()
        if not self.request.gateways:
            raise RunError("no gateway to measure")

    def run(self, ctx: RunContext) -> ScaleInput:
        machine = live_machine(ctx.machine)
        runnable = []
        for gw in self.request.gateways:
            reason = machine.unavailable(gw)
            if reason is None:
                runnable.append(gw)
            else:
                ctx.journal.target_failed(gw, reason)
        if not runnable:
            raise RunError("none of the gateways runs here; see the reasons per gateway")
        load = self.load or live_machine(ctx.machine).rate_load()
        return ScaleInput(self.request, tuple(runnable), load, Results())


class StartEchoBackends(Stage):
    name = "backend"
    step = RunStatus.PROVISIONING
    needs = (ScaleInput,)
    gives = EchoBackends
    local_only = (
        "the gateways' configurations point at the backends' ports, chosen as they start; on "
        "the cloud path the backend VM serves both echo backends on fixed ports "
        "(gatebench.cloud._live) and the provision step creates it"
    )

    def run(self, ctx: RunContext) -> EchoBackends:
        scale, machine = ctx.get(ScaleInput), live_machine(ctx.machine)
        layout, cpu = machine.gateway_cores(ctx)
        concurrency = rate_concurrency(scale.request.settings.rate)
        ctx.journal.environment(
            **layout_environment(layout), **cpu_environment(cpu, scale.gateways, concurrency)
        )
        return EchoBackends(machine.echo_backends(BACKENDS, ctx), cpu, concurrency)


class GrowRender(Stage):
    """Every gateway's files for the description grown to ``size`` routes."""

    name = "render"
    step = RunStatus.RENDERED
    moves: ClassVar[Literal["start", "end"] | None] = "end"
    needs = (ScaleInput, EchoBackends)
    gives = Grown

    def __init__(self, size: int) -> None:
        self.size = size

    def run(self, ctx: RunContext) -> Grown:
        scale, backends = ctx.get(ScaleInput), ctx.get(EchoBackends)
        urls = backends.urls
        grown_api = replicate(ctx.api, self.size)
        grown = Grown(self.size, grown_api)
        ctx.resources.callback(grown.stop)
        for gw in scale.gateways:
            ctx.journal.display(Progress(step="rendered", message=f"{gw} {self.size} routes"))
            try:
                workdir = ctx.run_dir / "gateways" / gw / str(self.size)
                site = GrownSite(
                    gw, grown_api, urls[BACKENDS[0]], scale.request.settings, workdir, backends.cpu
                )
                grown.lives[gw] = live_machine(ctx.machine).live_gateway(site)
            except GatebenchError as exc:
                grown.booted[gw] = Booted(
                    NotRendered(get_renderer(gw)),
                    grown_api,
                    BACKENDS[0],
                    problem=f"cannot render: {exc}",
                )
        return grown


class GrowProvision(Stage):
    """Start the gateways one at a time: start time, idle memory."""

    name = "provision"
    step = RunStatus.PROVISIONING
    moves: ClassVar[Literal["start", "end"] | None] = "start"
    needs = (ScaleInput, Grown)

    def run(self, ctx: RunContext) -> None:
        scale, grown = ctx.get(ScaleInput), ctx.get(Grown)
        for gw, live in grown.lives.items():
            ctx.journal.display(Progress(step="provisioning", message=f"{gw} {grown.size} routes"))
            booted = start_grown(
                live,
                grown.api,
                instance=BACKENDS[0],
                settings=scale.request.settings,
            )
            grown.booted[gw] = booted
            if booted.ok:
                ctx.cpu_groups[f"gw:{gw}"] = list(live.pids)


class LiveLoad(Stage):
    """``load`` of a live run: each gateway in turn (:meth:`measure`), stopped once measured."""

    name = "load"
    step = RunStatus.LOADING
    moves: ClassVar[Literal["start", "end"] | None] = "start"
    needs: ClassVar[tuple[type, ...]] = (ScaleInput, Grown)

    def run(self, ctx: RunContext) -> None:
        scale, grown = ctx.get(ScaleInput), ctx.get(Grown)
        for gw, booted in sorted(grown.booted.items()):
            try:
                self.measure(ctx, scale, grown, gw, booted)
            finally:
                booted.live.stop()

    def measure(
        self, ctx: RunContext, scale: ScaleInput, grown: Grown, gw: str, booted: Booted
    ) -> None:
        """Measure one gateway and store what it gave (``ctx.journal.put_result``)."""
        raise NotImplementedError


class GrowTeardown(Stage):
    """Stop this size's gateways before the next size starts."""

    name = "teardown"
    step = RunStatus.LOADING
    needs = (Grown,)
    cloud_order = (
        "the cloud workflow deletes the VMs once, after score, on every way out; between sizes "
        "each gateway VM's container is started again on the next size's files inside the load "
        "step (gatebench.vm._live_tester)"
    )

    def run(self, ctx: RunContext) -> None:
        ctx.get(Grown).stop()


class ScaleScore(Stage):
    """The run's document (``scale.json``) and HTML report (``scale.html``) in its folder."""

    name = "score"
    step = RunStatus.SCORING
    moves: ClassVar[Literal["start", "end"] | None] = "start"
    needs = (ScaleInput,)

    def run(self, ctx: RunContext) -> None:
        scale = ctx.get(ScaleInput)
        results = scale.results
        document = scale_document(
            results.points,
            results.changes,
            run=ctx.record.run_id,
            title=ctx.api.title,
            kind=ctx.record.plan.get("kind"),
            # the plan as the store gives it back (keys sorted), so that the report rebuilt
            # from the store (``live_report``) says the same in the same order
            **(
                {"plan": json.loads(json.dumps(ctx.record.plan, sort_keys=True))}
                if ctx.record.plan
                else {}
            ),
            rate=scale.request.settings.rate,
            engine=scale.load.name,
            measured_from=scale.load.measured_from,
            **cpu_policy_of(ctx.record.environment),
            **failed_of(ctx.record.target_errors),
        )
        (ctx.run_dir / "scale.json").write_text(
            json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        (ctx.run_dir / "scale.html").write_text(render_scale_html(document), encoding="utf-8")
        ctx.outcome.report = document


class GrowRenderNext(GrowRender):
    """:class:`GrowRender` for a later size: the run is already past ``rendered``."""

    moves = None
    local_only = (
        "the cloud's render step renders every size at once: each later size's files go to the "
        "runs bucket beside the first's (gatebench.cloud._live)"
    )


class GrowProvisionNext(GrowProvision):
    moves = None
    local_only = (
        "the cloud's VMs are created once; each later size's start, the gateway VM's container "
        "started again on that size's files, is measured inside the load step"
    )


def live_stages(
    request: ScaleRequest,
    load: RateLoad | None,
    sizes: Iterable[int],
    load_stage: Callable[[bool], LiveLoad],
) -> tuple[Stage, ...]:
    """A live run's stages: render, provision, load (``load_stage(first)``) and tear down each
    size, smallest first, between parse and backend and the score."""
    stages: list[Stage] = [ScaleParse(request, load), StartEchoBackends()]
    for i, size in enumerate(sorted(sizes)):
        first = i == 0
        stages += [
            GrowRender(size) if first else GrowRenderNext(size),
            GrowProvision() if first else GrowProvisionNext(),
            load_stage(first),
            GrowTeardown(),
        ]
    stages.append(ScaleScore())
    return tuple(stages)


def live_plan(kind: RunKind, request: ScaleRequest) -> Prepared:
    """What a live run records (``ScaleAsk.about``) and the plan its context holds: the
    gateways, the echo backend, one repetition, no workload."""
    ask = ScaleAsk(kind, request.sizes, request.change, request.settings)
    plan = Plan(
        gateways=request.gateways,
        baseline=False,
        repetitions=1,
        warmup=Warmup(duration=request.settings.warmup_s),
        order="fixed",
        seed=0,
        backend=PlanBackend("builtin", builtin="echo"),
        workloads=(),
    )
    return Prepared(plan, request.gateways, ask.about(request.gateways))


def live_report(
    store: ResultStore, run: RunRecord, fmt: str, profile: Profile | None
) -> KindReport:
    """A scale or change-under-load run's own report (docs/scale.md): HTML, JSON, CSV or
    Markdown."""
    document = stored_scale_document(store, run.run_id) or {}
    if fmt == "html":
        return KindReport(render_scale_html(document), "scale.html")
    if fmt == "json":
        return KindReport(json.dumps(document, indent=1, sort_keys=True) + "\n")
    if fmt == "csv":
        return KindReport(render_scale_csv(document))
    if fmt == "md":
        return KindReport(render_scale_markdown(document))
    raise RunError(
        f"run {run.run_id} is a scale or change-under-load run: its report is html, json, csv or md"
    )


def live_view(store: ResultStore, run: RunRecord) -> dict[str, Any]:
    """The dashboard's page of a scale or change-under-load run (``scale_view``: its tables;
    its charts are in its report, ``live_report``)."""
    return scale_view(run, stored_scale_document(store, run.run_id) or {})


def live_status(ctx: RunContext) -> RunStatus:
    """The status rule of these kinds: they measure no workload phases, so the run is
    ``partial`` when a gateway failed, or a point or a change has a problem (the load generator
    fell behind, the engine failed, a new route never answered: the tables mark it
    ``(problem)`` alike), else ``done``."""
    try:
        results = ctx.get(ScaleInput).results
    except RunError:
        return RunStatus.PARTIAL
    if ctx.record.target_errors or any(p.problem for p in results.points):
        return RunStatus.PARTIAL
    if any(c.problem for c in results.changes):
        return RunStatus.PARTIAL
    if not all(c.all_new_routes_answered for c in results.changes):  # not delivered
        return RunStatus.PARTIAL
    return RunStatus.DONE


def live_kind(
    name: RunKind,
    title: str,
    command: str,
    stages: Callable[[ScaleRequest], tuple[Stage, ...]],
) -> Kind[ScaleRequest]:
    """A kind of live run (route scale, change under load): everything but its stage list is
    these kinds' own, defined here once."""
    return Kind(
        name=name,
        title=title,
        command=command,
        prepare=lambda api, request, options: live_plan(name, request),
        stages=lambda request, options: stages(request),
        report=live_report,
        view=live_view,
        status_rule=live_status,
        live=True,
    )


__all__ = [
    "BACKENDS",
    "EchoBackends",
    "GrowProvision",
    "GrowProvisionNext",
    "GrowRender",
    "GrowRenderNext",
    "GrowTeardown",
    "Grown",
    "LiveLoad",
    "Results",
    "ScaleInput",
    "ScaleParse",
    "ScaleRequest",
    "ScaleScore",
    "StartEchoBackends",
    "live_kind",
    "live_plan",
    "live_report",
    "live_stages",
    "live_status",
]
