"""Route scale (``gatebench scale``, docs/scale.md): each gateway measured as its route table
grows, one size after another, smallest first::

    parse → backend → render(n) → provision(n) → load(n) → teardown(n)   (for every size n)
    → score

The stages it shares with change under load are ``gatebench.kinds._live``'s; its own is the
load of each size (:class:`GrowLoad`): the constant-rate load on the start, middle and end
routes of each gateway's table, a :class:`~gatebench.kinds._live.metrics.ScalePoint` per
gateway and size, stored as soon as it is known.
"""

from __future__ import annotations

from gatebench.kinds._live._gateway import Booted, RateLoad, load_positions
from gatebench.kinds._live._report import SCALE_KIND, point_key
from gatebench.kinds._live._stages import (
    Grown,
    LiveLoad,
    ScaleInput,
    ScaleRequest,
    live_stages,
)
from gatebench.run._base import Stage
from gatebench.run._context import RunContext
from gatebench.run._journal import Progress


class GrowLoad(LiveLoad):
    """The constant-rate load on each gateway in turn: its scale point, stored at once."""

    def measure(
        self, ctx: RunContext, scale: ScaleInput, grown: Grown, gw: str, booted: Booted
    ) -> None:
        ctx.journal.display(Progress(step="loading", message=f"{gw} {grown.size} routes"))
        point = load_positions(
            booted,
            load=scale.load,
            settings=scale.request.settings,
            workdir=ctx.run_dir / "load" / gw / str(grown.size),
        )
        ctx.journal.put_result(SCALE_KIND, point_key(point), point.to_dict())
        scale.results.points.append(point)
        if point.problem:
            ctx.note(f"{gw} at {grown.size} routes: {point.problem.splitlines()[0]}")


class GrowLoadNext(GrowLoad):
    moves = None
    local_only = (
        "the cloud's load step is one build in which the tester loads every size in turn "
        "(gatebench.vm._live_tester.run_live_program)"
    )


def scale_stages(request: ScaleRequest, load: RateLoad | None = None) -> tuple[Stage, ...]:
    """The route-scale run: render, provision, load and tear down each size, smallest first."""
    return live_stages(
        request, load, request.sizes, lambda first: GrowLoad() if first else GrowLoadNext()
    )


__all__ = ["GrowLoad", "GrowLoadNext", "scale_stages"]
