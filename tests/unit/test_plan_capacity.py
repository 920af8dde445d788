"""The plan's ``capacity`` settings: defaults, per-workload overrides, and located errors."""

from __future__ import annotations

from typing import Any

import pytest

from gatebench.core.ir import Api
from gatebench.core.plan import Backend, Capacity, CapacityPlan, Objective, build_plan
from plans import auction_api, plan_errors, section


@pytest.fixture(scope="module")
def auction() -> Api:
    return auction_api()


def two(**capacities: Any) -> list[dict[str, Any]]:
    """Two workloads; ``capacities`` gives each one's ``capacity`` key by name."""
    out = []
    for name in ("get", "bid"):
        w: dict[str, Any] = {
            "name": name,
            "operation": "getAuction" if name == "get" else "bid",
            "injection": {"sequential": 10},
        }
        if name in capacities:
            w["capacity"] = capacities[name]
        out.append(w)
    return out


def test_a_plan_without_capacity_has_none_and_a_capacity_run_uses_the_defaults(
    auction: Api,
) -> None:
    plan = build_plan(section(), auction)
    assert plan.capacity is None
    assert plan.capacity_settings() == {"get": Capacity()}
    defaults = Capacity()
    assert defaults.objective == Objective((("p99", 50.0),), 0.1)
    assert (defaults.start_rate, defaults.max_rate, defaults.growth, defaults.precision) == (
        100.0,
        100_000.0,
        2.0,
        0.05,
    )
    assert (defaults.warmup, defaults.probe, defaults.confirm) == (1.0, 2.0, 5.0)
    assert (defaults.repetitions, defaults.budget, defaults.connections) == (
        5,
        1800.0,
        "keep-alive",
    )


def test_capacity_true_is_the_defaults(auction: Api) -> None:
    assert build_plan(section(capacity=True), auction).capacity == CapacityPlan()


def test_every_setting(auction: Api) -> None:
    plan = build_plan(
        section(
            capacity={
                "objective": {"p95": "20ms", "p50": "5ms", "error_pct": "1%"},
                "start_rate": "50/s",
                "max_rate": 20000,
                "growth": 1.5,
                "precision": "2%",
                "warmup": "500ms",
                "probe": "3s",
                "confirm": 0,
                "repetitions": 8,
                "budget": "10m",
                "connections": "new",
            }
        ),
        auction,
    )
    assert plan.capacity is not None
    assert plan.capacity.default == Capacity(
        objective=Objective((("p95", 20.0), ("p50", 5.0)), 1.0),
        start_rate=50.0,
        max_rate=20000.0,
        growth=1.5,
        precision=0.02,
        warmup=0.5,
        probe=3.0,
        confirm=0.0,
        repetitions=8,
        budget=600.0,
        connections="new",
    )
    assert plan.capacity.default.objective.label() == "p95 ≤ 20 ms, p50 ≤ 5 ms, errors ≤ 1 %"


def test_an_objective_keeps_the_default_bound_it_does_not_name(auction: Api) -> None:
    only_errors = build_plan(section(capacity={"objective": {"error_pct": "0%"}}), auction)
    assert only_errors.capacity is not None
    assert only_errors.capacity.default.objective == Objective((("p99", 50.0),), 0.0)
    only_latency = build_plan(section(capacity={"objective": {"p90": "0.2s"}}), auction)
    assert only_latency.capacity is not None
    assert only_latency.capacity.default.objective == Objective((("p90", 200.0),), 0.1)


def test_a_workload_overrides_the_plan_settings_or_leaves_the_search(auction: Api) -> None:
    plan = build_plan(
        section(
            capacity={"probe": "3s", "objective": {"p99": "20ms"}},
            workloads=two(get={"probe": "5s"}, bid=False),
        ),
        auction,
    )
    settings = plan.capacity_settings()
    assert list(settings) == ["get"]
    assert settings["get"].probe == 5.0
    assert settings["get"].objective == Objective((("p99", 20.0),), 0.1)  # from the plan's


def test_a_workload_capacity_alone_starts_from_the_defaults(auction: Api) -> None:
    plan = build_plan(section(workloads=two(bid={"repetitions": 2})), auction)
    assert plan.capacity is not None
    assert plan.capacity_settings() == {"get": Capacity(), "bid": Capacity(repetitions=2)}


BAD = [
    (
        {"objective": {"p99": 50}},
        "/objective/p99",
        "the unit is missing: expected a latency such as '50ms' or '0.5s', got 50",
    ),
    (
        {"objective": {"p99": "0ms"}},
        "/objective/p99",
        "a latency objective must be above 0 ms, got '0ms'",
    ),
    (
        {"objective": {"error_pct": "150%"}},
        "/objective/error_pct",
        "expected an error rate from 0% to 100% such as '1%', got '150%'",
    ),
    ({"objective": {}}, "/objective", "an objective needs at least one bound, such as {p99: 50ms}"),
    (
        {"start_rate": 0},
        "/start_rate",
        "expected an arrival rate above 0 and at most 1,000,000/s, such as 100/s, got 0",
    ),
    (
        {"max_rate": "fast"},
        "/max_rate",
        "expected an arrival rate above 0 and at most 1,000,000/s, such as 100/s, got 'fast'",
    ),
    ({"max_rate": "50/s"}, "/max_rate", "max_rate (50/s) is below start_rate (100/s)"),
    ({"growth": 1}, "/growth", "expected a factor above 1 and at most 10 (such as 2), got 1"),
    (
        {"precision": 5},
        "/precision",
        "expected a precision from 0.1% to 50% such as '5%' (the unit % is needed), got 5",
    ),
    (
        {"precision": "80%"},
        "/precision",
        "expected a precision from 0.1% to 50% such as '5%', got '80%'",
    ),
    ({"probe": 0}, "/probe", "a duration must be more than 0"),
    ({"repetitions": 0}, "/repetitions", "expected a whole number from 1 to 100, got 0"),
    (
        {"connections": "close"},
        "/connections",
        "expected 'keep-alive' (a pool of kept-alive connections) or 'new' (a new connection per request), got 'close'",
    ),
]


@pytest.mark.parametrize(("value", "where", "message"), BAD, ids=[b[1] for b in BAD])
def test_bad_settings_are_located(
    auction: Api, value: dict[str, Any], where: str, message: str
) -> None:
    assert plan_errors(auction, section(capacity=value)) == [
        (f"/x-gatebench/capacity{where}", message)
    ]


def test_an_unknown_key_in_an_objective_hides_none_of_its_other_problems(auction: Api) -> None:
    """Only the unknown key was said: the bounds were read after the whole mapping passed."""
    objective = {"p99": 50, "error_pct": "200%", "p42": "3ms"}
    assert plan_errors(auction, section(capacity={"objective": objective})) == [
        (
            "/x-gatebench/capacity/objective/p42",
            "unknown key 'p42' in capacity.objective; expected one of: p50, p90, p95, p99, "
            "mean, max, error_pct",
        ),
        (
            "/x-gatebench/capacity/objective/p99",
            "the unit is missing: expected a latency such as '50ms' or '0.5s', got 50",
        ),
        (
            "/x-gatebench/capacity/objective/error_pct",
            "expected an error rate from 0% to 100% such as '1%', got '200%'",
        ),
    ]


def test_errors_in_a_workload_capacity_are_located_there(auction: Api) -> None:
    errors = plan_errors(
        auction, section(workloads=two(get={"budget": "1h", "growth": 20}, bid="yes"))
    )
    assert errors == [
        (
            "/x-gatebench/workloads/0/capacity/growth",
            "expected a factor above 1 and at most 10 (such as 2), got 20",
        ),
        (
            "/x-gatebench/workloads/0/capacity/budget",
            "the budget is the whole capacity run's: give it in x-gatebench.capacity",
        ),
        ("/x-gatebench/workloads/1/capacity", "capacity must be a mapping, got a string"),
    ]


def test_capacity_false_at_the_top_is_refused(auction: Api) -> None:
    assert plan_errors(auction, section(capacity=False)) == [
        (
            "/x-gatebench/capacity",
            "capacity: false at the top leaves nothing out; remove it, or write capacity: "
            "false in a workload to leave that workload out of the search",
        )
    ]


def test_a_mock_backend_with_workers_has_a_known_capacity(auction: Api) -> None:
    plan = build_plan(section(backend={"mock": {"latency": "10ms", "workers": 4}}), auction)
    assert plan.backend == Backend("mock", latency=0.01, workers=4)
    assert plan_errors(auction, section(backend={"mock": {"workers": 4}})) == [
        (
            "/x-gatebench/backend/mock/workers",
            "workers need a latency (each request holds a worker for it): mock: {latency: "
            "10ms, workers: 4} serves 400 requests per second",
        )
    ]
    assert plan_errors(auction, section(backend={"mock": {"latency": "1ms", "workers": 0}})) == [
        ("/x-gatebench/backend/mock/workers", "expected a whole number from 1 to 100,000, got 0")
    ]


def test_gatebench_plan_describes_the_capacity_settings(auction: Api) -> None:
    from gatebench.core.plan import describe_plan

    plan = build_plan(
        section(
            capacity={"objective": {"p95": "20ms"}, "confirm": 0},
            workloads=two(bid=False),
            backend={"mock": {"latency": "10ms", "workers": 4}},
        ),
        auction,
    )
    lines = describe_plan(plan, auction)
    assert (
        "  backend:     mock built from the description, 10ms latency, 4 workers (capacity 400 req/s)"
        in lines
    )
    assert lines[-2:] == [
        "  capacity:    p95 ≤ 20 ms, errors ≤ 0.1 %; from 100/s ×2 (at most 100000/s) to 5 %; "
        "probes 1s + 2s, no confirmation; 5 repetitions, keep-alive connections, budget 30m",
        "    bid: not searched",
    ]


def test_a_run_overrides_the_repetitions_and_quick_shortens_the_search(auction: Api) -> None:
    """``gatebench capacity --quick --repetitions N`` (gatebench.kinds.capacity.capacity_as_run):
    every searched workload's settings, the defaults and each override alike; a workload that
    says ``capacity: false`` stays out; nothing else of the plan changes."""
    from gatebench.kinds.capacity import QUICK, capacity_as_run

    plan = build_plan(
        section(workloads=two(bid={"probe": "10s", "precision": "1%"}, get=False)), auction
    )
    quick = capacity_as_run(plan, quick=True)
    (bid,) = quick.capacity_settings().values()
    assert (bid.probe, bid.precision, bid.repetitions) == (QUICK["probe"], 0.2, 1)
    assert (bid.warmup, bid.confirm, bid.budget) == (0.5, 1.0, 300.0)
    assert capacity_as_run(plan, repetitions=9).capacity_settings()["bid"].repetitions == 9
    assert (
        capacity_as_run(plan, quick=True, repetitions=3).capacity_settings()["bid"].repetitions == 3
    )
    assert quick.workloads == plan.workloads and quick.repetitions == plan.repetitions
    assert capacity_as_run(plan) == plan


def test_a_capacity_run_refuses_tls_and_a_fault_with_located_errors(auction: Api) -> None:
    from dataclasses import replace

    from gatebench.core.plan import Fault, Tls
    from gatebench.kinds.capacity import capacity_problems

    plan = build_plan(section(), auction)
    assert capacity_problems(plan) == []
    refused = replace(plan, tls=Tls(), fault=Fault(replica=1, workload="get"))
    assert [p.pointer for p in capacity_problems(refused)] == [
        "/x-gatebench/tls",
        "/x-gatebench/fault",
    ]
