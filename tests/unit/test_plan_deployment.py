"""The deployment keys of a plan: ``tls``, ``backend.replicas`` / ``balance`` and ``fault``,
with their located errors (docs/input.md)."""

from __future__ import annotations

from typing import Any

import pytest

from gatebench.core.plan import Fault, Tls, build_plan
from plans import auction_api, plan_errors, section

API = auction_api()
TIMED = [{"name": "bid", "operation": "bid", "injection": {"concurrent": 5, "duration": "10s"}}]


def _plan(**overrides: Any) -> Any:
    return build_plan(section(**overrides), API)


def test_no_deployment_keys_keep_the_old_plan() -> None:
    plan = _plan()
    assert plan.tls is None
    assert plan.fault is None
    assert (plan.backend.replicas, plan.backend.balance) == (1, "round_robin")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, Tls()),
        ({}, Tls()),
        ({"key": "rsa-2048"}, Tls(key="rsa-2048")),
        ({"http2": True, "resumption": False}, Tls(http2=True, resumption=False)),
    ],
)
def test_tls_values(value: Any, expected: Tls) -> None:
    assert _plan(tls=value).tls == expected


def test_tls_false_is_plain_http() -> None:
    assert _plan(tls=False).tls is None


def test_tls_errors_are_located() -> None:
    errors = plan_errors(API, section(tls={"key": "rsa-1024", "http2": "yes", "resumtion": True}))
    assert errors == [
        (
            "/x-gatebench/tls/resumtion",
            "unknown key 'resumtion' in tls; did you mean 'resumption'?",
        ),
        ("/x-gatebench/tls/key", "expected one of ecdsa-p256, rsa-2048, got 'rsa-1024'"),
        ("/x-gatebench/tls/http2", "expected true or false, got 'yes'"),
    ]
    assert plan_errors(API, section(tls="on")) == [
        (
            "/x-gatebench/tls",
            "expected true, false or a mapping {key, http2, resumption}, got a string",
        )
    ]


def test_tls_needs_an_engine_that_checks_certificates() -> None:
    errors = plan_errors(API, section(tls={"http2": True}, engine="wrk", workloads=TIMED))
    assert errors == [
        (
            "/x-gatebench/engine",
            "engine wrk speaks no HTTP/2 and accepts any server certificate, so it cannot load "
            "a TLS plan trusting the run's CA only; use engine: gatling",
        )
    ]


def test_tls_refuses_an_https_service_as_the_baseline() -> None:
    errors = plan_errors(API, section(tls=True, backend={"url": "https://api.example.com"}))
    assert [p for p, _ in errors] == ["/x-gatebench/backend/url"]
    assert "trusts the run's own CA only" in errors[0][1]
    plan = _plan(tls=True, backend={"url": "https://api.example.com"}, baseline=False)
    assert plan.tls == Tls()


def test_tls_with_your_own_http_service_warns_about_the_baseline() -> None:
    plan = _plan(tls=True, backend={"url": "http://10.0.0.5:8080"}, workloads=TIMED)
    assert [(w.pointer, w.severity) for w in plan.warnings] == [
        ("/x-gatebench/baseline", "warning")
    ]


def test_replicas_and_balance() -> None:
    backend = _plan(backend={"builtin": "auction", "replicas": 3, "balance": "least_conn"}).backend
    assert (backend.kind, backend.builtin, backend.replicas, backend.balance) == (
        "builtin",
        "auction",
        3,
        "least_conn",
    )
    mock = _plan(backend={"replicas": 2}).backend
    assert (mock.kind, mock.replicas) == ("mock", 2)
    latency = _plan(backend={"mock": {"latency": "5ms"}, "replicas": 4}).backend
    assert (latency.latency, latency.replicas) == (0.005, 4)


def test_replica_errors_are_located() -> None:
    errors = plan_errors(API, section(backend={"mock": True, "replicas": 17, "balance": "random"}))
    assert errors == [
        ("/x-gatebench/backend/replicas", "expected a whole number from 1 to 16, got 17"),
        ("/x-gatebench/backend/balance", "expected one of round_robin, least_conn, got 'random'"),
    ]
    errors = plan_errors(API, section(backend={"url": "http://10.0.0.5:8080", "replicas": 2}))
    assert [p for p, _ in errors] == ["/x-gatebench/backend/replicas"]
    assert "copies of a backend gatebench starts" in errors[0][1]


def test_balance_with_one_replica_warns() -> None:
    plan = _plan(backend={"mock": True, "balance": "least_conn"}, workloads=TIMED)
    assert [w.pointer for w in plan.warnings] == ["/x-gatebench/backend/balance"]


def test_fault_defaults_to_the_middle_of_the_first_workload() -> None:
    plan = _plan(backend={"replicas": 3}, workloads=TIMED, fault={})
    assert plan.fault == Fault(replica=1, workload="bid", at_fraction=0.5)
    assert plan.fault is not None
    assert plan.fault.offset(10.0) == 5.0


def test_fault_at_a_duration() -> None:
    workloads = [*TIMED, {"name": "get", "operation": "getAuction", "injection": {"sequential": 5}}]
    plan = _plan(
        backend={"replicas": 2},
        workloads=workloads,
        fault={"replica": 2, "workload": "get", "at": "2s"},
    )
    assert plan.fault == Fault(replica=2, workload="get", at_s=2.0)
    assert plan.fault is not None
    assert plan.fault.offset(None) == 2.0


@pytest.mark.parametrize(
    ("backend", "fault", "workloads", "expected"),
    [
        (
            {"replicas": 1},
            {},
            TIMED,
            [
                (
                    "/x-gatebench/fault",
                    "killing a replica needs at least two (backend: {replicas: 2} or more): with "
                    "one, there is nothing left to send to",
                )
            ],
        ),
        (
            {"replicas": 3},
            {"replica": 4},
            TIMED,
            [("/x-gatebench/fault/replica", "expected a whole number from 1 to 3, got 4")],
        ),
        (
            {"replicas": 3},
            {"workload": "nope"},
            TIMED,
            [("/x-gatebench/fault/workload", "no workload named 'nope'; the plan has: bid")],
        ),
        (
            {"replicas": 3},
            {"at": "10s"},
            TIMED,
            [("/x-gatebench/fault/at", "'10s' is not inside the phase: workload 'bid' lasts 10s")],
        ),
        (
            {"replicas": 3},
            {"at": "100%"},
            TIMED,
            [("/x-gatebench/fault/at", "expected a percentage above 0 and below 100, got '100%'")],
        ),
        (
            {"replicas": 3},
            {"type": "partition"},
            TIMED,
            [
                (
                    "/x-gatebench/fault/type",
                    "expected 'kill_replica' (the only fault), got 'partition'",
                )
            ],
        ),
        (
            {"replicas": 3},
            {"at": "50%"},
            [{"name": "get", "operation": "getAuction", "injection": {"sequential": 10}}],
            [
                (
                    "/x-gatebench/fault/at",
                    "workload 'get' ends after a number of requests, so a percentage of it has "
                    "no time; give a duration from the phase's start (at: 5s) or a workload "
                    "with a duration",
                )
            ],
        ),
        (
            {"replicas": 3},
            {"replicas": 2},
            TIMED,
            [
                (
                    "/x-gatebench/fault/replicas",
                    "unknown key 'replicas' in fault; did you mean 'replica'?",
                )
            ],
        ),
    ],
)
def test_fault_errors_are_located(
    backend: dict[str, Any],
    fault: dict[str, Any],
    workloads: list[dict[str, Any]],
    expected: list[tuple[str, str]],
) -> None:
    assert plan_errors(API, section(backend=backend, fault=fault, workloads=workloads)) == expected


def test_plan_dict_carries_the_deployment() -> None:
    data = _plan(
        tls={"key": "rsa-2048", "http2": True},
        backend={"replicas": 3},
        workloads=TIMED,
        fault={"replica": 2},
    ).to_dict()
    assert data["tls"] == {"key": "rsa-2048", "http2": True, "resumption": True}
    assert data["backend"]["replicas"] == 3
    assert data["fault"]["replica"] == 2


def test_a_fault_without_a_warm_up_to_recover_in_warns() -> None:
    plan = _plan(backend={"replicas": 2}, workloads=TIMED, fault={}, warmup=False)
    assert plan.fault is not None
    warnings = [(w.pointer, w.message) for w in plan.warnings]
    assert warnings[0][0] == "/x-gatebench/fault"
    assert "a warm-up of at least 3s" in warnings[0][1]
    assert _plan(backend={"replicas": 2}, workloads=TIMED, fault={}).warnings == ()
