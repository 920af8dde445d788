"""Change under load (``gatebench change-under-load``, docs/scale.md): each gateway's
configuration changed through its own mechanism while a constant-rate load runs::

    parse → backend → render → provision → load (the change) → teardown → score

The stages it shares with route scale are ``gatebench.kinds._live``'s; its own is the load
(:class:`ChangeLoad`): the change applied under the load, a
:class:`~gatebench.kinds._live.metrics.ChangeOutcome` per gateway, stored as soon as it is
known.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.model import RunStatus
from gatebench.core.routescale import replicate
from gatebench.kinds._live._gateway import RateLoad, change_under_load
from gatebench.kinds._live._report import CHANGE_KIND
from gatebench.kinds._live._stages import (
    BACKENDS,
    EchoBackends,
    Grown,
    GrowProvision,
    GrowRender,
    GrowTeardown,
    ScaleInput,
    ScaleParse,
    ScaleRequest,
    ScaleScore,
    StartEchoBackends,
)
from gatebench.run._base import Stage
from gatebench.run._context import RunContext
from gatebench.run._journal import Progress


class ChangeLoad(Stage):
    """Each gateway in turn: the change applied under the constant-rate load."""

    name = "load"
    step = RunStatus.LOADING
    moves: ClassVar[Literal["start", "end"] | None] = "start"
    needs = (ScaleInput, EchoBackends, Grown)

    def run(self, ctx: RunContext) -> None:
        scale, urls = ctx.get(ScaleInput), ctx.get(EchoBackends).urls
        grown, results = ctx.get(Grown), scale.results
        change = scale.request.change
        if change is None:
            raise RunError("a change-under-load run needs what to change")
        after = replicate(ctx.api, change.routes_before + change.routes_added)
        for gw, booted in sorted(grown.booted.items()):
            if booted.problem:
                ctx.journal.target_failed(gw, booted.problem)
                continue
            ctx.journal.display(Progress(step="loading", message=f"{gw}: change under load"))
            try:
                outcome = change_under_load(
                    booted,
                    after,
                    (BACKENDS[1], urls[BACKENDS[1]]),
                    load=scale.load,
                    settings=scale.request.settings,
                    change_after_s=change.change_after_s,
                    window_s=change.window_s,
                    workdir=ctx.run_dir / "load" / gw,
                )
            except GatebenchError as exc:
                ctx.journal.target_failed(gw, str(exc))
                continue
            finally:
                booted.live.stop()
            ctx.journal.put_result(CHANGE_KIND, gw, outcome.to_dict())
            results.changes.append(outcome)


def change_stages(request: ScaleRequest, load: RateLoad | None = None) -> tuple[Stage, ...]:
    """The change-under-load run."""
    if request.change is None:
        raise RunError("a change-under-load run needs what to change")
    return (
        ScaleParse(request, load),
        StartEchoBackends(),
        GrowRender(request.change.routes_before),
        GrowProvision(),
        ChangeLoad(),
        GrowTeardown(),
        ScaleScore(),
    )


__all__ = ["ChangeLoad", "change_stages"]
