"""Thresholds on capacity: a CI gate on the rate each target carries within the objective.

::

    thresholds:
      - {metric: capacity, min: 2000/s}                  # every gateway, every searched workload
      - {metric: capacity, min: 500/s, gateway: envoy, workload: bid}

The value is the target's knee on the endpoint: the mean over the repetitions, or, for a target
reported as "≥ R" (the tester's limit, the plan's max_rate), R itself: a lower bound that meets
a minimum proves it. A target or workload that has no knee fails (as every threshold on a value
that was not measured does: gatebench.core.thresholds).
"""

from __future__ import annotations

from collections.abc import Sequence

from gatebench.core.model import BASELINE
from gatebench.core.thresholds import CAPACITY_METRICS, Threshold, ThresholdResult
from gatebench.kinds.capacity._result import CapacityResult


def evaluate_capacity(
    thresholds: Sequence[Threshold], result: CapacityResult
) -> list[ThresholdResult]:
    """One result per capacity threshold × target × workload (the others are a fixed run's)."""
    workloads = [e.workload for e in result.endpoints]
    gateways = sorted(
        {s.target for e in result.endpoints for s in e.summaries if s.target != BASELINE}
    )
    out = []
    for t in thresholds:
        if t.metric not in CAPACITY_METRICS:
            continue
        targets = [t.gateway] if t.gateway else gateways
        for target in targets:
            for workload in [t.workload] if t.workload else workloads:
                endpoint = result.endpoint(workload)
                summary = endpoint.summary(target) if endpoint is not None else None
                value = summary.estimate if summary is not None else None
                out.append(ThresholdResult(t, target, workload, value))
    return out


__all__ = ["evaluate_capacity"]
