"""The executor: runs a list of stages over one run context and owns what no stage keeps in
step by hand (as pytest's run protocol owns setup and teardown around each test):

1. every stage's ``check`` before any stage runs (a refusal fails the run at the first);
2. the stages in order, the run moved to each one's step as it starts or once it has finished
   (``Stage.moves``), what each returns kept by type; a stage that overlaps the next runs when
   that one calls ``ctx.ready()``, and the next one's own status waits for it;
3. every process the run starts in the machine's session, which a guardian process ends if
   gatebench dies first (``Machine.session``); teardown (``ctx.teardown``) where a stage does it and,
   whatever happened, before the outcome is recorded: ``done`` / ``partial``
   (``ctx.final_status``), or ``failed`` / ``partial`` (measurements kept) at the step of the
   innermost stage that raised, a full disk said in one line (gatebench.store._disk).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

from gatebench.core.errors import GatebenchError
from gatebench.core.model import RunStatus
from gatebench.run._base import Stage, check_order
from gatebench.run._context import RunContext, RunOutcome
from gatebench.store._disk import as_no_space

INTERRUPTED = "interrupted (Ctrl-C or SIGTERM)"
KEPT = "; completed measurements kept"
"""Said of an interrupted run that measured something (its status ``partial``)."""


class Executor:
    def __init__(self, stages: Sequence[Stage], ctx: RunContext) -> None:
        check_order(stages)
        self.stages = tuple(stages)
        self.ctx = ctx
        self.current = self.stages[0]  # the last to start: a failure between stages is its
        self.failed: Stage | None = None  # the innermost stage a failure went through

    def run(self) -> RunOutcome:
        ctx, start = self.ctx, time.monotonic()
        try:
            try:
                ctx.resources.enter_context(ctx.machine.session(ctx.run_dir))
                for stage in self.stages:
                    stage.check(ctx)
                guest: Stage | None = None
                for stage in self.stages:
                    if stage.overlaps_next:
                        guest = stage
                    else:
                        self._run(stage, guest)
                        guest = None
            finally:
                ctx.teardown()
            ctx.journal.finish(ctx.final_status())
        except KeyboardInterrupt:
            self._record_failure(INTERRUPTED + (KEPT if ctx.journal.measurements else ""))
            ctx.outcome.wall_s = time.monotonic() - start
            raise
        except Exception as exc:
            at = self.failed or self.current
            full = as_no_space(exc, ctx.run_dir, f"the {at.name} stage")
            self._record_failure(str(full or exc))
            if full is not None and full is not exc:
                raise full from None  # one line, whatever the full disk broke
            raise
        ctx.outcome.wall_s = time.monotonic() - start
        return ctx.outcome

    def _run(self, stage: Stage, guest: Stage | None = None) -> None:
        ctx = self.ctx
        if guest is not None:

            def ready() -> None:
                ctx.ready = _once
                self._run(guest)
                self.current = stage
                self._move(stage, "start")

            ctx.ready = ready
        else:
            self._move(stage, "start")
        self.current = stage
        try:
            output = stage.run(ctx)
        except BaseException:
            self.failed = self.failed or stage
            raise
        finally:
            ctx.ready = _once
        if output is not None:
            ctx.put(output)
        self._move(stage, "end")

    def _move(self, stage: Stage, when: str) -> None:
        if stage.moves == when:
            self.ctx.journal.status(stage.step)

    def _record_failure(self, error: str) -> None:
        journal = self.ctx.journal
        with contextlib.suppress(GatebenchError, OSError):
            journal.flag_whole_run()
        status = RunStatus.PARTIAL if journal.measurements else RunStatus.FAILED
        step = (self.failed or self.current).step
        journal.finish(status, failed_step=str(step), error=error)


def _once() -> None:
    """``ctx.ready`` once called, or outside an overlapping stage: nothing to run."""


def execute(stages: Sequence[Stage], ctx: RunContext) -> RunOutcome:
    """Run ``stages`` over ``ctx``; see the module's docstring."""
    return Executor(stages, ctx).run()


__all__ = ["INTERRUPTED", "KEPT", "Executor", "execute"]
