"""The deployment in the stages: what the load refuses before anything starts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gatebench.core.errors import RunError
from gatebench.core.plan import build_plan
from gatebench.kinds.fixed.load import LoadSplit
from gatebench.local.machine import LocalMachine
from plans import auction_api, section


@pytest.mark.parametrize(
    "extra",
    [
        {"tls": True},
        {
            "backend": {"replicas": 2},
            "fault": {"at": "1s"},
            "workloads": [
                {
                    "name": "get",
                    "operation": "getAuction",
                    "injection": {"concurrent": 2, "duration": "4s"},
                }
            ],
        },
    ],
)
def test_several_testers_refuse_tls_and_a_fault(extra: dict[str, object]) -> None:
    plan = build_plan(section(**extra), auction_api())
    ctx = SimpleNamespace(
        plan=plan, options=SimpleNamespace(testers=2, engine=None), machine=LocalMachine()
    )
    with pytest.raises(RunError, match=r"^--testers splits the load over network namespaces"):
        LoadSplit().check(ctx)  # type: ignore[arg-type]
    plain = SimpleNamespace(
        plan=build_plan(section(), auction_api()),
        options=SimpleNamespace(testers=2, engine=None),
        machine=LocalMachine(),
    )
    LoadSplit().check(plain)  # type: ignore[arg-type]
