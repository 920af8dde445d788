"""``cross_check`` (local path only, ``--cross-check ENGINE``): a second load engine
re-measures, on the same targets and before teardown, every workload it can run (wrk: the
closed-model ones), for the plan's repetitions (at most CROSS_CHECK_REPETITIONS). Its
measurements are stored with the run (``environment.cross_check``) and in
``cross-check.jsonl``, never mixed with the run's own; the report compares the two
(docs/trust.md). A second engine that fails leaves the run's own measurements standing.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gatebench.core.capabilities import injection_problem
from gatebench.core.errors import GatebenchError
from gatebench.core.measure import PhaseResult, measurement_from
from gatebench.core.model import Measurement, RunStatus
from gatebench.core.trust import CROSS_CHECK_REPETITIONS
from gatebench.core.workload import Phase, compile_load
from gatebench.kinds.fixed.load import Loaded
from gatebench.run._base import Stage
from gatebench.run._journal import Progress, RunJournal
from gatebench.run.ports import Backend, EngineEvent, EngineRun
from gatebench.run.stages.parse import Parsed
from gatebench.run.stages.provision import target_groups
from gatebench.run.stages.render import Rendered, engine_warmup_of

if TYPE_CHECKING:
    from gatebench.run._context import RunContext


class CrossCheck(Stage):
    name = "cross_check"
    step = RunStatus.LOADING
    needs = (Parsed, Backend, Rendered, Loaded)
    local_only = (
        "a second engine on the same machine, to check the first; the cloud tester VM runs "
        "one engine"
    )

    def __init__(self, engine: str) -> None:
        self.engine = engine

    def check(self, ctx: RunContext) -> None:
        ctx.machine.engine(self.engine).check()

    def run(self, ctx: RunContext) -> None:
        name, plan, journal = self.engine, ctx.get(Parsed).plan, ctx.journal
        record: dict[str, Any] = {"name": name, "measurements": []}
        if name == ctx.get(Parsed).engine:
            record["note"] = f"the cross-check engine is the run's own ({name}): nothing to compare"
            journal.environment(cross_check=record)
            return
        engine = ctx.machine.engine(name)
        record["engine"] = engine.version()
        failed = ctx.get(Loaded).failed
        urls = {t: u for t, u in ctx.get(Rendered).urls.items() if t not in failed}
        workloads = tuple(
            w
            for w in plan.workloads
            if injection_problem(name, w.injection.kind, w.injection.duration, w.injection.requests)
            is None
        )
        if not workloads or not urls:
            record["note"] = f"{name} can run none of this plan's workloads (closed model only)"
            ctx.note(f"cross-check: {record['note']}")
            journal.environment(cross_check=record)
            return
        repetitions = min(plan.repetitions, CROSS_CHECK_REPETITIONS)
        check_plan = replace(plan, workloads=workloads, repetitions=repetitions)
        seed = None if ctx.options.seed is None else ctx.options.seed + 1
        backend = ctx.get(Backend)
        compiled = compile_load(
            check_plan,
            ctx.api,
            urls,
            reset_url=backend.reset_url,
            seed=seed,
            engine_warmup=engine_warmup_of(ctx.options, backend.url, name),
        )
        hooks = CrossCheckHooks(journal, {p.index: p for p in compiled.schedule.phases}, name)
        try:
            result = engine.run(
                compiled.document,
                ctx.run_dir,
                hooks,
                cpu_groups=ctx.cpu_groups,
                target_groups=target_groups(ctx),
                name=f"cross-check-{name}",
            )
        except GatebenchError as exc:  # the run's own measurements stand without it
            result = EngineRun(crashed=True, reason=str(exc))
        ctx.outcome.engine_runs.append(result)
        record.update(
            repetitions=repetitions,
            workloads=[w.name for w in workloads],
            seed=compiled.schedule.seed,
            measurements=[m.to_dict() for m in hooks.measurements],
        )
        if result.crashed or result.control_failures:
            reason = result.reason or "; ".join(result.control_failures)
            record["note"] = f"the cross-check stopped early: {reason.splitlines()[0]}"
            ctx.note(f"cross-check: {record['note']}")
        with (ctx.run_dir / "cross-check.jsonl").open("w", encoding="utf-8") as fh:
            for m in hooks.measurements:
                fh.write(json.dumps(m.to_dict()) + "\n")
        journal.environment(cross_check=record)


class CrossCheckHooks:
    """The second engine's phases: measurements collected, nothing stored per phase (the
    whole cross-check is stored with the run at the end)."""

    def __init__(self, journal: RunJournal, phases: dict[int, Phase], engine_name: str) -> None:
        self.journal = journal
        self.phases = phases
        self.engine_name = engine_name
        self.measurements: list[Measurement] = []

    def on_event(self, event: EngineEvent) -> None:
        phase = self.phases.get(event.phase)
        if phase is not None and event.kind == "start":
            self.journal.display(
                Progress(
                    step="loading",
                    message=f"cross-check ({self.engine_name}): {phase.label}",
                    phase=phase,
                    phase_number=sorted(self.phases).index(event.phase) + 1,
                    phases=len(self.phases),
                )
            )

    def on_phase(self, result: PhaseResult) -> None:
        phase = self.phases.get(result.phase)
        if phase is None or not phase.measured or result.sample.requests == 0:
            return
        self.measurements.append(
            measurement_from(self.journal.record.run_id, phase, result, engine=self.engine_name)
        )

    def tick(self) -> None:
        pass


__all__ = ["CrossCheck", "CrossCheckHooks"]
