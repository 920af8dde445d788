"""``teardown``: stop every gateway (their folders redacted of API keys), delete the run's
token file, stop every process the supervisor started (backend, ceiling, engines).

The executor tears down on every way out; this stage does it as soon as no later stage needs
the processes, so scoring runs on a quiet machine. On Google Cloud the workflow's teardown
runs after ``score``, because the score function first waits for the gateway VMs' meters to
upload their last reading (docs/cloud.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gatebench.core.model import RunStatus
from gatebench.run._base import Stage

if TYPE_CHECKING:
    from gatebench.run._context import RunContext


class Teardown(Stage):
    name = "teardown"
    step = RunStatus.LOADING
    """Teardown follows the load: a failure there is recorded at ``loading``."""
    cloud_order = (
        "the workflow tears down after score, because the score function first waits for the "
        "gateway VMs' meters to upload their last reading; locally nothing needs the "
        "processes once the load is done"
    )

    def run(self, ctx: RunContext) -> None:
        ctx.teardown()


__all__ = ["Teardown"]
