"""Change under load as a kind of run (``gatebench change-under-load``, docs/scale.md): each
gateway's configuration changed through its own mechanism while a constant-rate load runs
(``_stages``: the change under the load; the stages it shares with route scale are
``gatebench.kinds._live``'s)."""

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
from gatebench.kinds.change._stages import ChangeLoad, change_stages
from gatebench.run._context import RunOptions
from gatebench.run._kind import Kind, Prepared


def prepare(api: Api, request: ScaleRequest, options: RunOptions) -> Prepared:
    return live_plan(RunKind.CHANGE, request)


KIND: Kind[ScaleRequest] = Kind(
    name=RunKind.CHANGE,
    title="change under load",
    command="change-under-load",
    prepare=prepare,
    stages=lambda request, options: change_stages(request),
    report=live_report,
    view=live_view,
    status_rule=live_status,
)

__all__ = ["KIND", "ChangeLoad", "change_stages"]
