"""The plan's ``engine`` key: gatling by default, wrk for closed-model plans only, every
refusal located."""

from __future__ import annotations

from typing import Any

import pytest

from gatebench.core.errors import PlanError
from gatebench.core.ir import Api
from gatebench.core.plan import build_plan
from gatebench.core.spec import load_spec
from paths import EXAMPLES


@pytest.fixture(scope="module")
def auction() -> Api:
    api = load_spec(EXAMPLES / "auction" / "openapi.yaml").api
    assert api is not None
    return api


def section(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "gateways": ["nginx"],
        "workloads": [
            {
                "name": "get",
                "operation": "getAuction",
                "injection": {"concurrent": 4, "duration": "2s"},
            }
        ],
        "auth": {"bearer": {"env": "TOKEN"}},
    }
    base.update(overrides)
    return base


def errors(api: Api, data: Any) -> list[tuple[str, str]]:
    with pytest.raises(PlanError) as info:
        build_plan(data, api)
    return [(p.pointer, p.message) for p in info.value.errors]


def test_gatling_is_the_default_and_wrk_can_be_chosen(auction: Api) -> None:
    assert build_plan(section(), auction).engine == "gatling"
    plan = build_plan(section(engine="wrk"), auction)
    assert plan.engine == "wrk"
    assert plan.to_dict()["engine"] == "wrk"


def test_an_unknown_engine_lists_the_known(auction: Api) -> None:
    assert errors(auction, section(engine="k6")) == [
        ("/x-gatebench/engine", "unknown engine 'k6'; available: gatling, wrk")
    ]


def test_wrk_refuses_what_it_cannot_run_at_the_workload(auction: Api) -> None:
    workloads = [
        {"name": "ok", "operation": "getAuction", "injection": {"concurrent": 4, "duration": "2s"}},
        {"name": "once", "operation": "getAuction", "injection": {"at_once": 5}},
        {"name": "seq", "operation": "getAuction", "injection": {"sequential": 10}},
        {
            "name": "budget",
            "operation": "getAuction",
            "injection": {"concurrent": 2, "requests": 50},
        },
        {
            "name": "half",
            "operation": "getAuction",
            "injection": {"concurrent": 2, "duration": "1500ms"},
        },
    ]
    assert errors(auction, section(engine="wrk", workloads=workloads)) == [
        (
            "/x-gatebench/workloads/1/injection",
            "engine wrk runs only the closed model (concurrent users for a whole number of "
            "seconds); got at_once: use engine: gatling for it",
        ),
        (
            "/x-gatebench/workloads/2/injection",
            "engine wrk runs only the closed model (concurrent users for a whole number of "
            "seconds); got sequential: use engine: gatling for it",
        ),
        (
            "/x-gatebench/workloads/3/injection",
            "engine wrk cannot stop after a number of requests; give the concurrent users a "
            "duration instead, or use engine: gatling",
        ),
        ("/x-gatebench/workloads/4/injection", "engine wrk runs whole seconds; got 1.5s"),
    ]


def test_wrk_warms_up_for_a_duration_only(auction: Api) -> None:
    assert errors(auction, section(engine="wrk", warmup={"requests": 20})) == [
        (
            "/x-gatebench/warmup",
            "engine wrk warms up for a duration only; give warmup: {duration: ...}",
        )
    ]
    assert build_plan(section(engine="wrk", warmup={"duration": "1s"}), auction).engine == "wrk"


def test_the_auction_example_stays_on_gatling(auction: Api) -> None:
    data = load_spec(EXAMPLES / "auction" / "openapi.yaml").benchmark
    problems = errors(auction, {**data, "engine": "wrk"})
    assert [p for p, _ in problems] == [
        "/x-gatebench/workloads/0/injection",
        "/x-gatebench/workloads/1/injection",
        "/x-gatebench/workloads/2/injection",
    ]
