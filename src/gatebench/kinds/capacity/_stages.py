"""The capacity search as stages (docs/capacity.md): the same list as the fixed workload's, with
three stages of its own::

    parse (CapacityParse) → backend → render → provision ┐ → load (CapacityLoad) → teardown
                                                          └ runs while load starts   → score (CapacityScore)

- :class:`CapacityParse`: the load generator (``gatebench-loadgen``) is built; the plan's
  credentials are set; the run signs its tokens as any run does. The engine is ``loadgen``.
- ``backend``, ``render``, ``provision``, ``teardown``: the fixed workload's own stages (the
  ceiling server ``backend`` starts is the capacity ceiling's target).
- :class:`CapacityLoad` (``load``): provisions the gateways (``ctx.ready()``), measures the load
  generator's ceiling per workload (unless the run skips it), then runs the campaign
  (``gatebench.kinds.capacity.drive``): repetitions in a shuffled target order, one search per target
  and endpoint, each probe a :class:`~gatebench.local.probing.Prober` run, with
  ``--testers N`` every probe split over N generators in network namespaces of their own. Each
  search is appended to ``capacity-searches.jsonl`` as it ends, so an interrupted run keeps the
  searches that finished.
- :class:`CapacityScore` (``score``): the result (``gatebench.kinds.capacity.capacity_result``),
  one of the run's results (``capacity.jsonl`` and the store, through the journal); the report is
  built from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gatebench.core.errors import PlanError, RunError
from gatebench.core.fairness import plan_concurrency
from gatebench.core.model import RunStatus
from gatebench.core.renderers import jit_warmups
from gatebench.core.trust import TESTER_BOUND_SHARE
from gatebench.kinds.capacity import (
    BASELINE,
    RESULT_KEY,
    RESULT_KIND,
    Campaign,
    CapacityResult,
    ProbeMetrics,
    ProbeRequest,
    SearchKey,
    SearchResult,
    TargetDown,
    TesterLimits,
    below_text,
    capacity_problems,
    capacity_result,
    drive,
    evaluate_capacity,
    late_threshold_ms,
    rate_text,
)
from gatebench.kinds.capacity._machine import ProbeSite, capacity_machine
from gatebench.kinds.capacity._report import CapacityReport, build_capacity_report
from gatebench.run._base import Stage
from gatebench.run._journal import Progress
from gatebench.run.ports import Backend
from gatebench.run.stages.parse import Parse, Parsed
from gatebench.run.stages.provision import LoadStage, target_groups
from gatebench.run.stages.render import Rendered

if TYPE_CHECKING:
    from gatebench.core.plan import Plan
    from gatebench.run._context import RunContext

ENGINE = "loadgen"
SEARCHES = "capacity-searches.jsonl"


class CapacityParse(Parse):
    """``parse`` for a capacity run: the load generator instead of the plan's engine."""

    def check(self, ctx: RunContext) -> None:
        machine = capacity_machine(ctx.machine)
        machine.load_generator().check()
        unsupported = capacity_problems(ctx.plan)
        if unsupported:
            raise PlanError(unsupported)
        if not ctx.plan.capacity_settings():
            raise RunError(
                "every workload says capacity: false: nothing to search (docs/capacity.md)"
            )
        if ctx.options.testers > 1:
            problem = machine.namespaces_problem()
            if problem is not None:
                raise RunError(
                    f"--testers {ctx.options.testers} runs each load generator in a network "
                    f"namespace of its own, and {problem}; run as root or use --testers 1"
                )

    def engine(self, ctx: RunContext) -> str:
        return ENGINE

    def concurrency(self, plan: Plan) -> int:
        return plan_concurrency(plan, capacity=True)


@dataclass(frozen=True)
class Searched:
    campaign: Campaign
    ceilings: dict[str, float | None]
    """Workload → the load generator's ceiling here (None: not measured, or above max_rate)."""


class CapacityLoad(LoadStage):
    """``load`` for a capacity run: the gateways start, the ceilings, then the campaign."""

    gives = Searched

    def run(self, ctx: RunContext) -> Searched:
        ctx.ready()  # provision: the gateways start
        started = time.monotonic()
        try:
            machine = capacity_machine(ctx.machine)
            with machine.load_hosts(ctx.options.testers) as hosts:
                return self._search(ctx, hosts)
        finally:
            ctx.outcome.load_s = time.monotonic() - started

    def _search(self, ctx: RunContext, hosts: Sequence[object]) -> Searched:
        machine = capacity_machine(ctx.machine)
        parsed, backend, rendered = ctx.get(Parsed), ctx.get(Backend), ctx.get(Rendered)
        plan, journal = parsed.plan, ctx.journal
        settings = plan.capacity_settings()
        failed = set(journal.record.target_errors)
        targets = [t for t in plan.targets if t in rendered.urls and t not in failed]
        if not targets:
            raise RunError("no target could be started; see the reasons per gateway")
        seed = ctx.options.seed if ctx.options.seed is not None else (plan.seed or 0)
        campaign = Campaign(
            tuple(targets),
            settings,
            seed,
            next(iter(settings.values())).budget,
        )
        ceilings: dict[str, float | None] = {}
        started = time.monotonic()  # the budget covers the ceiling searches too
        for workload, s in settings.items():
            if backend.ceiling_url is None:
                ceilings[workload] = None
                continue
            journal.display(Progress(step="loading", message=f"engine ceiling · {workload}"))
            ceiling, search = machine.measure_ceiling(
                plan,
                ctx.api,
                workload,
                s,
                ctx.run_dir / "ceiling-search" / workload,
                url=backend.ceiling_url,
                hosts=hosts,
                cpu_groups=ctx.cpu_groups,
            )
            ceilings[workload] = ceiling
            ctx.journal.append(
                SEARCHES, {"ceiling": workload, "rate": ceiling, "search": search.to_dict()}
            )
        journal.environment(
            engine=machine.load_generator().version(),
            capacity_ceiling=dict(ceilings),
            testers=ctx.options.testers,
        )
        groups = target_groups(ctx)
        probers: dict[tuple[str, str], Callable[[ProbeRequest], ProbeMetrics]] = {}

        def probe_for(key: SearchKey) -> Callable[[ProbeRequest], ProbeMetrics]:
            found = probers.get((key.target, key.workload))
            if found is None:
                s = settings[key.workload]
                site = ProbeSite(
                    plan,
                    ctx.api,
                    key.workload,
                    key.target,
                    rendered.urls[key.target],
                    ctx.run_dir / "probes" / key.workload / key.target,
                    late_threshold_ms(s.objective),
                    connections=s.connections,
                    reset_url=backend.reset_url,
                    reset_urls=backend.reset_urls[1:],
                    cpu_groups=ctx.cpu_groups,
                    target_groups=groups,
                    hosts=hosts,
                    seed=seed,
                    tick=_watch(ctx, key.target),
                    shared_core=backend.layout.shared_with_engine(
                        ("backend",) if key.target == BASELINE else ("gateway", "backend")
                    ),
                )
                found = machine.prober(site)
                probers[(key.target, key.workload)] = found
            journal.display(
                Progress(
                    step="loading",
                    message=f"rep {key.repetition} · {key.target} · {key.workload}",
                )
            )
            return _announcing(ctx, key, found)

        def limits_for(key: SearchKey) -> TesterLimits:
            return TesterLimits(
                ceiling=ceilings.get(key.workload), ceiling_share=TESTER_BOUND_SHARE
            )

        def on_result(key: SearchKey, result: SearchResult) -> None:
            ctx.journal.append(
                SEARCHES,
                {
                    "repetition": key.repetition,
                    "target": key.target,
                    "workload": key.workload,
                    "search": result.to_dict(),
                },
            )
            knee = (
                below_text(result.below)
                if result.below is not None
                else "–"
                if result.knee is None
                else rate_text(result.knee)
            )
            journal.display(
                Progress(
                    step="loading",
                    message=f"rep {key.repetition} · {key.target} · {key.workload}: "
                    f"{result.status}, {knee} in {len(result.probes)} probes",
                )
            )

        drive(
            campaign,
            probe_for,
            limits_for=limits_for,
            on_result=on_result,
            first_warmup=jit_warmups(targets),
            started=started,
        )
        journal.environment(
            target_order=[list(o) for _, o in campaign.orders], capacity_stop=campaign.stop
        )
        return Searched(campaign, ceilings)


class _announcing:
    """A prober that shows each probe's rate before it runs, and stops a search whose
    gateway died."""

    def __init__(
        self, ctx: RunContext, key: SearchKey, prober: Callable[[ProbeRequest], ProbeMetrics]
    ) -> None:
        self.ctx, self.key, self.prober = ctx, key, prober

    def __call__(self, request: ProbeRequest) -> ProbeMetrics:
        _alive(self.ctx, self.key.target)
        self.ctx.journal.display(
            Progress(
                step="loading",
                message=f"rep {self.key.repetition} · {self.key.target} · {self.key.workload}: "
                f"{request.kind} {rate_text(request.rate)}",
            )
        )
        return self.prober(request)


def _watch(ctx: RunContext, target: str) -> Callable[[], None]:
    """The prober's tick: is the target still alive (about five times a second)."""

    def tick() -> None:
        _alive(ctx, target)

    return tick


def _alive(ctx: RunContext, target: str) -> None:
    """A gateway that died ends its search (``TargetDown``: the probe's errors would otherwise
    read as its knee) and is recorded as failed; the campaign goes on with the others."""
    rendered = ctx.get(Rendered)
    failure = rendered.provisioner.failure(target) if target in rendered.planned else None
    if failure:
        if target not in ctx.record.target_errors:
            ctx.journal.target_failed(target, failure)
        raise TargetDown(failure_line(failure))


def failure_line(failure: str) -> str:
    """A target's failure in one line: its first line, without a dangling "last log lines:",
    and the last line of the log when there is one (``nginx exited with code -9 during the
    run (last log line: ...)``)."""
    head, _, tail = failure.partition("\n")
    head = head.rstrip()
    if head.endswith("last log lines:"):
        head = head[: -len("last log lines:")].rstrip(" ;,:")
    last = next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")
    return f"{head} (last log line: {last})" if last else head


class CapacityScore(Stage):
    """``score`` for a capacity run: the result, in the run's folder and the store."""

    name = "score"
    step = RunStatus.SCORING
    moves = "start"
    needs = (Searched,)

    def run(self, ctx: RunContext) -> None:
        searched = ctx.get(Searched)
        if not any(searched.campaign.results.values()):
            raise RunError("no search finished")
        ceilings = [c for c in searched.ceilings.values() if c is not None]
        result = capacity_result(searched.campaign, ceiling=min(ceilings) if ceilings else None)
        ctx.journal.put_result(RESULT_KIND, RESULT_KEY, result.to_dict())
        ctx.put(result)
        ctx.outcome.report = capacity_report(ctx, result)


def capacity_report(ctx: RunContext, result: CapacityResult) -> CapacityReport:
    checks = evaluate_capacity(ctx.plan.thresholds, result)
    return build_capacity_report(ctx.record, result, thresholds=checks)


__all__ = [
    "SEARCHES",
    "CapacityLoad",
    "CapacityParse",
    "CapacityScore",
    "Searched",
    "capacity_report",
]
