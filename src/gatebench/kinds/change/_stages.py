"""Change under load (``gatebench change-under-load``, docs/scale.md): each gateway's
configuration changed through its own mechanism while a constant-rate load runs::

    parse → backend → render → provision → load (the change) → teardown → score

The stages it shares with route scale are ``gatebench.kinds._live``'s; its own is the load
(:class:`ChangeLoad`): the change applied under the load, a
:class:`~gatebench.kinds._live.metrics.ChangeOutcome` per gateway, stored as soon as it is
known.
"""

from __future__ import annotations

from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.routescale import replicate
from gatebench.kinds._live._gateway import Booted, RateLoad, change_under_load
from gatebench.kinds._live._report import CHANGE_KIND
from gatebench.kinds._live._stages import (
    BACKENDS,
    EchoBackends,
    Grown,
    LiveLoad,
    ScaleInput,
    ScaleRequest,
    live_stages,
)
from gatebench.run._base import Stage
from gatebench.run._context import RunContext
from gatebench.run._journal import Progress


class ChangeLoad(LiveLoad):
    """Each gateway in turn: the change applied under the constant-rate load."""

    needs = (ScaleInput, EchoBackends, Grown)

    def measure(
        self, ctx: RunContext, scale: ScaleInput, grown: Grown, gw: str, booted: Booted
    ) -> None:
        change = scale.request.change
        if change is None:
            raise RunError("a change-under-load run needs what to change")
        if booted.problem:
            ctx.journal.target_failed(gw, booted.problem)
            return
        ctx.journal.display(Progress(step="loading", message=f"{gw}: change under load"))
        after = replicate(ctx.api, change.routes_before + change.routes_added)
        try:
            outcome = change_under_load(
                booted,
                after,
                (BACKENDS[1], ctx.get(EchoBackends).urls[BACKENDS[1]]),
                load=scale.load,
                settings=scale.request.settings,
                change_after_s=change.change_after_s,
                window_s=change.window_s,
                workdir=ctx.run_dir / "load" / gw,
            )
        except GatebenchError as exc:
            ctx.journal.target_failed(gw, str(exc))
            return
        ctx.journal.put_result(CHANGE_KIND, gw, outcome.to_dict())
        scale.results.changes.append(outcome)


def change_stages(request: ScaleRequest, load: RateLoad | None = None) -> tuple[Stage, ...]:
    """The change-under-load run: one size, the routes before the change."""
    if request.change is None:
        raise RunError("a change-under-load run needs what to change")
    return live_stages(request, load, (request.change.routes_before,), lambda first: ChangeLoad())


__all__ = ["ChangeLoad", "change_stages"]
