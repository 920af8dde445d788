"""A kind reads a plan one way wherever it is read: its ``prepare`` in the registry (a run
here) and a request checked before anything runs (``kinds.request``: the upload API and the
cloud steps, which may not load the registry) give the same plan as run and the same
workloads' summary."""

from __future__ import annotations

import pytest

from gatebench.core.model import RunKind
from gatebench.core.plan import build_plan
from gatebench.kinds.registry import KINDS
from gatebench.kinds.request import AS_RUN, RunRequest
from gatebench.run._context import RunOptions
from plans import auction_api, section

PLAN_KINDS = [k for k in KINDS if k in (RunKind.FIXED, RunKind.CAPACITY)]
"""The kinds whose ask is the plan itself (scale and change under load take their sizes)."""


def test_every_kind_has_its_reading() -> None:
    assert set(AS_RUN) == set(KINDS) == set(RunKind)


@pytest.mark.parametrize("quick", [False, True])
@pytest.mark.parametrize("kind", PLAN_KINDS)
def test_the_registry_and_the_request_read_a_plan_alike(kind: RunKind, quick: bool) -> None:
    api = auction_api()
    plan = build_plan(
        section(
            workloads=[
                {
                    "name": "get",
                    "operation": "getAuction",
                    "injection": {"concurrent": 4, "duration": "30s"},
                }
            ],
            capacity={"objective": {"p99": "50ms"}, "budget": "20m"},
        ),
        api,
    )
    prepared = KINDS[kind].prepare(api, plan, RunOptions(quick=quick))
    request = RunRequest(quick=quick, kind=kind)
    assert request.apply(plan) == prepared.plan
    assert AS_RUN[kind].workloads(request.apply(plan), api) == prepared.workloads
    changed = prepared.plan.capacity if kind == RunKind.CAPACITY else prepared.plan.workloads
    original = plan.capacity if kind == RunKind.CAPACITY else plan.workloads
    assert (changed != original) == quick  # the quick profile is the kind's own
