"""Route scale as a kind of run (``gatebench scale``, docs/scale.md): each gateway measured as
its route table grows (``_stages``: its load of each size; the stages it shares with change
under load are ``gatebench.kinds._live``'s)."""

from __future__ import annotations

from gatebench.core.model import RunKind
from gatebench.kinds._live._stages import ScaleRequest, live_kind
from gatebench.kinds.scale._stages import GrowLoad, GrowLoadNext, scale_stages
from gatebench.run._kind import Kind

KIND: Kind[ScaleRequest] = live_kind(RunKind.SCALE, "route scale", "scale", scale_stages)

__all__ = ["KIND", "GrowLoad", "GrowLoadNext", "scale_stages"]
