"""Change under load as a kind of run (``gatebench change-under-load``, docs/scale.md): each
gateway's configuration changed through its own mechanism while a constant-rate load runs
(``_stages``: the change under the load; the stages it shares with route scale are
``gatebench.kinds._live``'s)."""

from __future__ import annotations

from gatebench.core.model import RunKind
from gatebench.kinds._live._stages import ScaleRequest, live_kind
from gatebench.kinds.change._stages import ChangeLoad, change_stages
from gatebench.run._kind import Kind

KIND: Kind[ScaleRequest] = live_kind(
    RunKind.CHANGE, "change under load", "change-under-load", change_stages
)

__all__ = ["KIND", "ChangeLoad", "change_stages"]
