"""``render``: every gateway's configuration, and the load the engine will run.

The gateways' files go into ``results/<run>/gateways/<name>/`` (the machine's provisioner: here on
free loopback ports, so the load can be compiled before anything starts; the configurations
point at the backend). A gateway that cannot apply the plan's policies is left out, or run
without them with ``--allow-missing-policies``; one that fails to render or runs only on the
cloud path is recorded as failed, and the others go on. Then one call,
``workload.compile_load``, turns the plan and the targets' URLs into the schedule and the
workload document (the cloud render step makes the same call). The run reaches ``rendered``.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gatebench.core.errors import RunError
from gatebench.core.fairness import cpu_environment
from gatebench.core.fault import RESET_WAIT_S
from gatebench.core.model import BASELINE, RunStatus
from gatebench.core.plan import CANNOT_APPLY, Plan, left_out
from gatebench.core.trust import ENGINE_RESOLUTION_MS
from gatebench.core.workload import CompiledLoad, compile_load, engine_warmup
from gatebench.run._base import Stage
from gatebench.run.ports import Backend, Provisioner
from gatebench.run.stages.backend import layout_environment
from gatebench.run.stages.parse import Parsed

if TYPE_CHECKING:
    from gatebench.run._context import RunContext, RunOptions

FAULT_RESET_WAIT_S = RESET_WAIT_S
"""With a fault, how long a reset may wait for the replica that restarts as its phase ends."""
SKIP_FILE = "skip-targets.txt"
"""Targets the engine skips from now on (one per line), rewritten as gateways fail."""


@dataclass(frozen=True)
class Rendered:
    provisioner: Provisioner
    """Holds the rendered gateways until provision starts them (and teardown stops them)."""
    planned: dict[str, str]
    """Gateway → base URL, for those rendered that run here."""
    urls: dict[str, str]
    """Every target the load reaches (the gateways, and the baseline when the plan has it)."""
    load: CompiledLoad


class Render(Stage):
    name = "render"
    step = RunStatus.RENDERED
    moves = "end"
    needs = (Parsed, Backend)
    gives = Rendered

    def __init__(self, *, engine_warmup: bool = False) -> None:
        self.engine_warmup = engine_warmup
        """The kind's engine runs the compiled load, so it warms itself first
        (:func:`engine_warmup_of`); a kind that drives its own load compiles none."""

    def run(self, ctx: RunContext) -> Rendered:
        parsed, backend = ctx.get(Parsed), ctx.get(Backend)
        plan, options, journal = parsed.plan, ctx.options, ctx.journal
        pool = backend.origins
        provisioner = ctx.machine.provisioner(
            cpu=backend.cpu,
            concurrency=parsed.concurrency,
            policies=parsed.policies,
            allow_missing_policies=options.allow_missing_policies,
            tls=backend.tls.gateway if backend.tls is not None else None,
            replicas=pool if len(pool) > 1 else (),
            balance=plan.backend.balance,
        )
        ctx.resources.callback(provisioner.teardown)
        left = left_out(plan)
        # run without the policies they cannot apply (--allow-missing-policies), marked
        bare: dict[str, str] = {}
        for gw, why in left.items():
            if why.cannot == CANNOT_APPLY and options.allow_missing_policies:
                ctx.note(f"{gw}: run WITHOUT its policies: {why.reason}")
                bare[gw] = why.reason
            else:
                journal.target_left_out(gw, why.reason, why.cannot)
        gateways = [g for g in plan.gateways if g not in left or g in bare]
        needed = {w.operation_id for w in plan.workloads}
        failures = provisioner.render(gateways, ctx.api, backend.origin, ctx.run_dir, needed=needed)
        for gw, reason in failures.items():
            journal.target_failed(gw, reason)
        note_routes_left_out(ctx, provisioner.routes_left_out)
        for gw, reason in provisioner.unsupported.items():
            journal.target_failed(gw, f"not run here: {reason}")
            ctx.note(f"{gw}: not measured here: {reason.removeprefix(gw + ': ')}")
        planned = provisioner.planned()
        urls = dict(planned)
        if plan.baseline:
            urls[BASELINE] = backend.url
        if not urls:
            if not plan.gateways:
                raise RunError(
                    "no target was asked for: no gateway is selected (the plan's gateways or "
                    "--gateways) and baseline is false"
                )
            raise RunError("no target can run here; see the reasons per gateway")
        warm = engine_warmup_of(options, backend.url, parsed.engine) if self.engine_warmup else None
        compiled = compile_load(
            plan,
            ctx.api,
            urls,
            reset_url=backend.reset_url,
            seed=options.seed,
            keep=options.phase_filter,
            ceiling_url=backend.ceiling_url,
            skip_file=str((ctx.run_dir / SKIP_FILE).resolve()),
            reset_urls=backend.reset_urls[1:],
            trust_store=str(backend.tls.trust_store) if backend.tls is not None else None,
            reset_wait_s=FAULT_RESET_WAIT_S if plan.fault is not None else 0.0,
            engine_warmup=warm,
        )
        ctx.outcome.schedule = schedule = compiled.schedule
        journal.environment(
            **environment(
                ctx.machine.engine(parsed.engine).version(), plan, options, parsed.engine
            ),
            testers=options.testers,
            engine_warmup_s=warm[1] if warm is not None else 0.0,
            seed=schedule.seed,
            target_order=[list(o) for o in schedule.target_order],
            **layout_environment(backend.layout),
            **cpu_environment(
                backend.cpu, [g for g in gateways if g not in failures], parsed.concurrency
            ),
            **({"without_policies": bare} if bare else {}),
        )
        return Rendered(provisioner, planned, urls, compiled)


def engine_warmup_of(options: RunOptions, url: str, engine: str) -> tuple[str, float] | None:
    """The engine's own warm-up against the backend at ``url`` (``core.workload.engine_warmup``)
    unless the run asks for none (``--no-engine-warmup``)."""
    return engine_warmup(url, engine, quick=options.quick) if options.engine_warmup else None


def note_routes_left_out(ctx: RunContext, summaries: dict[str, str]) -> None:
    """Routes a gateway left out of its files (no workload uses them): a note, and a line of
    the report (the run record's environment keeps them)."""
    if not summaries:
        return
    for gw in sorted(summaries):
        ctx.note(summaries[gw])
    ctx.journal.environment(routes_left_out=dict(sorted(summaries.items())))


def environment(
    engine_version: str, plan: Plan, options: RunOptions, engine_name: str = "gatling"
) -> dict[str, Any]:
    resolution = ENGINE_RESOLUTION_MS.get(engine_name, 1.0)
    return {
        "engine": engine_version,
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "quick": options.quick,
        "repetitions": plan.repetitions,
        "resolution": (
            "Gatling records whole milliseconds"
            if resolution >= 1
            else f"{engine_name} records latencies to {resolution * 1000:g} µs"
        ),
        "note": (
            "on 2 cores every load generator but wrk uses more CPU than the server it "
            "loads: results measure the shared machine, not only the gateway"
            if (os.cpu_count() or 1) <= 4
            else ""
        ),
    }


__all__ = [
    "SKIP_FILE",
    "Render",
    "Rendered",
    "engine_warmup_of",
    "environment",
    "note_routes_left_out",
]
