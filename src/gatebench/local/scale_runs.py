"""The local route-scale and change-under-load runs: ``run_scale`` builds the run's record and
context and executes the stage list of its kind (``gatebench.kinds.scale._stages``; docs/scale.md).

The run moves through ``received → parsed → rendered → provisioning → loading → scoring →
done | failed | partial`` like every run; each scale point or change outcome is written to the
run's folder (``scale.jsonl``, ``change.jsonl``) and the store (``ResultStore.put_result``) as
soon as it is known, and the last stage writes ``scale.json`` and ``scale.html``.
"""

from __future__ import annotations

from collections.abc import Callable

from gatebench.local.engines.constant_rate import RateLoad
from gatebench.core.ir import Api
from gatebench.core.plan import Backend, Plan, Warmup
from gatebench.local.procs import Supervisor
from gatebench.local.runner import local_journal
from gatebench.core.scaleplan import LiveKind, ScaleAsk
from gatebench.run import Progress, RunOptions, RunOutcome, execute
from gatebench.kinds.scale._stages import ScaleContext, ScaleRequest, change_stages, scale_stages
from gatebench.store import ResultStore

Kind = LiveKind


def run_scale(
    api: Api,
    request: ScaleRequest,
    *,
    kind: Kind,
    spec_uri: str,
    spec_sha256: str,
    options: RunOptions,
    store: ResultStore | None = None,
    display: Callable[[Progress], None] = lambda p: None,
    load: RateLoad | None = None,
    supervisor_factory: Callable[[], Supervisor] = Supervisor,
) -> RunOutcome:
    """Run a scale (``kind="scale"``) or change-under-load run here. Raises RunError for a
    run-level failure (after recording it); a gateway's failure is recorded, not raised."""
    settings = request.settings
    ask = ScaleAsk(kind, request.sizes, request.change, settings)
    journal = local_journal(
        api,
        spec_uri=spec_uri,
        spec_sha256=spec_sha256,
        options=options,
        store=store,
        display=display,
        gateways=request.gateways,
        plan=ask.about(request.gateways),
    )
    plan = Plan(
        gateways=request.gateways,
        baseline=False,
        repetitions=1,
        warmup=Warmup(duration=settings.warmup_s),
        order="fixed",
        seed=0,
        backend=Backend("builtin", builtin="echo"),
        workloads=(),
    )
    context = ScaleContext(api, plan, options, journal, supervisor_factory())
    stages = scale_stages(request, load) if kind == "scale" else change_stages(request, load)
    return execute(stages, context)


__all__ = ["Kind", "run_scale"]
