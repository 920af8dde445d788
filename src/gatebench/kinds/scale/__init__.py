"""Route scale as a kind of run (``gatebench scale``, docs/scale.md): each gateway measured as
its route table grows (``_stages``: its load of each size; the stages it shares with change
under load are ``gatebench.kinds._live``'s)."""

from __future__ import annotations

from gatebench.core.ir import Api
from gatebench.core.model import RunKind
from gatebench.kinds._live._stages import (
    ScaleRequest,
    live_plan,
    live_report,
    live_status,
    live_view,
)
from gatebench.kinds.scale._stages import GrowLoad, GrowLoadNext, scale_stages
from gatebench.run._context import RunOptions
from gatebench.run._kind import Kind, Prepared


def prepare(api: Api, request: ScaleRequest, options: RunOptions) -> Prepared:
    return live_plan(RunKind.SCALE, request)


KIND: Kind[ScaleRequest] = Kind(
    name=RunKind.SCALE,
    title="route scale",
    command="scale",
    prepare=prepare,
    stages=lambda request, options: scale_stages(request),
    report=live_report,
    view=live_view,
    status_rule=live_status,
)

__all__ = ["KIND", "GrowLoad", "GrowLoadNext", "scale_stages"]
