"""``load``: the load engine runs the whole schedule against every target.

One engine process runs every phase (docs/engine.md); it starts first and calls ``ctx.ready()``
while it initialises, which runs ``provision``, then begins the first phase. Each measured
phase is stored as it completes (:mod:`._load_hooks`), so a crash or Ctrl-C keeps what
finished. Two ways to drive it, two stages with the same name:

- :class:`Load`: one load generator; an engine crash is retried once for the phases not yet
  complete, after the warm-ups the crashed engine had run (:func:`retry_phases`), then the
  run fails;
- :class:`LoadSplit` (``--testers N``): every phase split across N generators, each in a
  network namespace of its own, their logs merged exactly (gatebench.local._fanout); no retry.

A backend that refuses its reset fails the run either way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from gatebench.core.errors import RunError
from gatebench.core.stats import counted
from gatebench.core.workload import is_engine_warmup
from gatebench.run._journal import Progress
from gatebench.run.ports import Backend, EngineRun, Watch
from gatebench.run.stages._load_hooks import LoadHooks
from gatebench.run.stages.parse import Parsed
from gatebench.run.stages.provision import LoadStage, target_groups
from gatebench.run.stages.render import SKIP_FILE, Rendered

if TYPE_CHECKING:
    from gatebench.run._context import RunContext


@dataclass(frozen=True)
class Loaded:
    failed: frozenset[str]
    """Targets that failed before or during the load (their phases were skipped)."""


class Load(LoadStage):
    gives = Loaded

    def run(self, ctx: RunContext) -> Loaded:
        hooks = start_hooks(ctx)
        started = time.monotonic()
        try:
            self.drive(ctx, hooks, ctx.get(Rendered).load.document)
        finally:
            ctx.outcome.load_s = time.monotonic() - started
            if hooks.watch is not None:
                hooks.watch.close()
        return Loaded(frozenset(hooks.failed))

    def drive(self, ctx: RunContext, hooks: LoadHooks, document: dict[str, Any]) -> None:
        """One engine; a crash is retried once with the phases not yet complete
        (:func:`retry_phases`)."""
        engine = ctx.machine.engine(ctx.get(Parsed).engine)
        remaining = document
        for attempt in (1, 2):
            result = engine.run(
                remaining,
                ctx.run_dir,
                hooks,
                cpu_groups=ctx.cpu_groups,
                target_groups=target_groups(ctx),
                name=engine.name if attempt == 1 else f"{engine.name}-retry",
                ready=ready_then_skip(ctx, hooks) if attempt == 1 else None,
            )
            record_runs(ctx, [result])
            if not result.crashed:
                return
            left = [p for p in remaining["phases"] if p["index"] not in hooks.completed]
            if not left:
                return
            if attempt == 2:
                raise RunError(f"the load engine failed twice: {result.reason}")
            retry = retry_phases(remaining["phases"], hooks.completed)
            again = f" after {retry.rerun}" if retry.rerun else ""
            ctx.note(
                f"the load engine crashed; retrying {counted(len(left), 'phase')}{again}: "
                f"{result.reason.splitlines()[0]}"
            )
            ctx.journal.display(
                Progress(step="loading", message="load engine crashed; retrying once")
            )
            remaining = dict(remaining, phases=retry.phases)


@dataclass(frozen=True)
class Retry:
    phases: list[dict[str, Any]]
    """What the retried engine runs, in the schedule's order."""
    rerun: str
    """The completed phases run again, in words ("" when none)."""


def retry_phases(phases: Sequence[dict[str, Any]], completed: Collection[int]) -> Retry:
    """The phases an engine started again after a crash runs: those not yet complete, after
    the warm-ups the crashed engine had run, so that its phases are measured as the others
    were: the engine's own warm-up (a fresh engine is cold again), and the warm-up of the
    target whose phase was cut, the first after the last complete one (its measured phases
    follow their own warm-up; a later target's warm-up is not yet complete, and runs anyway;
    the phases of a target skipped before are never complete, and are no cut). A completed
    measured phase is not run again."""
    left = [p for p in phases if p["index"] not in completed]
    if not left:
        return Retry([], "")
    engine_warmup = [p for p in phases if _is_engine_warmup(p)]
    last = max(completed, default=-1)
    cut = next((p for p in left if p["index"] > last), left[0])
    own_warmup = (
        []
        if _is_engine_warmup(cut)
        else [
            p
            for p in phases
            if p["target"] == cut["target"]
            and p.get("repetition") == cut.get("repetition")
            and not p.get("measured")
            and p["index"] < cut["index"]
        ]
    )
    again = [p for p in (*engine_warmup, *own_warmup) if p["index"] in completed]
    words = []
    if any(_is_engine_warmup(p) for p in again):
        words.append("the engine's own warm-up")
    if any(not _is_engine_warmup(p) for p in again):
        rep = cut.get("repetition")
        words.append(f"{cut['target']}'s warm-up" + (f" of repetition {rep}" if rep else ""))
    chosen = {p["index"] for p in (*again, *left)}
    return Retry(
        [p for p in phases if p["index"] in chosen],
        f"running {' and '.join(words)} again" if words else "",
    )


def _is_engine_warmup(phase: dict[str, Any]) -> bool:
    return is_engine_warmup(phase["target"], phase.get("repetition"), phase.get("measured"))


class LoadSplit(Load):
    """``--testers N``: the schedule split across several testers (``Machine.run_testers``)."""

    def check(self, ctx: RunContext) -> None:
        problem = ctx.machine.fanout_problem(
            ctx.options.testers, ctx.options.engine or ctx.plan.engine
        )
        if problem is not None:
            raise RunError(problem)
        if ctx.plan.tls is not None or ctx.plan.fault is not None:
            # Testers reach the targets from network namespaces of their own: the run's
            # certificate names loopback only, and the loopback observer sees none of it.
            raise RunError(
                "--testers splits the load over network namespaces, which the run's TLS "
                "certificate (loopback only) and the handshake and fault observer do not "
                "reach; run a plan with tls or fault with one tester"
            )

    def drive(self, ctx: RunContext, hooks: LoadHooks, document: dict[str, Any]) -> None:
        fan = ctx.machine.run_testers(
            document,
            ctx.options.testers,
            ctx.run_dir,
            hooks,
            cpu_groups=ctx.cpu_groups,
            target_groups=target_groups(ctx),
            ready=ready_then_skip(ctx, hooks),
        )
        ctx.outcome.notes.extend(fan.notes)
        record_runs(ctx, fan.runs)


def start_hooks(ctx: RunContext) -> LoadHooks:
    """The engine's callbacks, the skip file (the targets failed so far) and the workload
    document in the run folder."""
    rendered = ctx.get(Rendered)
    schedule, document = rendered.load.schedule, rendered.load.document
    skip_file = ctx.run_dir / SKIP_FILE
    skip_file.write_text("", encoding="utf-8")
    (ctx.run_dir / "workload.json").write_text(
        json.dumps(document, indent=1) + "\n", encoding="utf-8"
    )
    hooks = LoadHooks(
        ctx.journal,
        {p.index: p for p in schedule.phases},
        rendered.provisioner,
        skip_file,
        len(schedule.phases),
        ctx.get(Parsed).engine,
        ctx.get(Backend).ceiling,
        start_watch(ctx),
        ctx.get(Backend).ceiling_label,
        ctx.get(Backend).watched,
    )
    if hooks.failed:
        skip_file.write_text("\n".join(sorted(hooks.failed)) + "\n", encoding="utf-8")
    return hooks


def start_watch(ctx: RunContext) -> Watch | None:
    """The deployment's watch over the load (``Machine.deployment_watch``): for a TLS plan,
    each target's handshakes; with a fault, the replica killed and started again. None for a
    plain plan."""
    ports = {t: urlsplit(u).port or 443 for t, u in ctx.get(Rendered).urls.items()}
    watch = ctx.machine.deployment_watch(
        ctx.plan, ctx.get(Rendered).load.schedule.phases, ports, ctx.run_dir
    )
    if watch is not None:
        for note in watch.notes:
            ctx.note(note)
    return watch


def ready_then_skip(ctx: RunContext, hooks: LoadHooks) -> Callable[[], None]:
    """What the engine calls while it starts: the overlapped stage (provision), then skip the
    targets that failed meanwhile."""

    def ready() -> None:
        ctx.ready()
        hooks.skip_failed()

    return ready


def record_runs(ctx: RunContext, runs: Sequence[EngineRun]) -> None:
    ctx.outcome.engine_runs.extend(runs)
    down = ctx.journal.record.environment.get("backend_failure")
    if down:
        raise RunError(
            f"the backend gatebench started stopped during repetition {down['repetition']}: "
            "every phase after it was skipped, and those it overlaps are left out of every "
            "figure (flagged backend-failed)"
        )
    for run in runs:
        if run.control_failures:
            raise RunError(
                "the backend did not accept its reset (is it still running?): "
                + run.control_failures[0]
            )


__all__ = ["Load", "LoadSplit", "Loaded", "Retry", "retry_phases"]
