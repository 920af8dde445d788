"""The plan's keys for recorded traffic: the ``arrivals`` injection (a recorded arrival curve,
scaled or compressed), ``weights`` and ``others`` on a list of values (a recorded value
distribution, drawn the same by every engine), and ``traffic`` (where it came from, named by
the report); each read with located errors, rendered for the engines, split over testers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gatebench.core.ir import Api
from gatebench.core.model import RunRecord
from gatebench.core.plan import Injection, build_plan
from gatebench.core.plan._traffic import scaled_counts
from gatebench.core.report import traffic_source
from gatebench.core.testers import split_document, split_injection
from gatebench.core.workload import (
    build_schedule,
    injection_from_json,
    injection_json,
    quick_plan,
    render_workload,
    unit_draw,
    weighted_value,
)
from plans import auction_api, plan_errors, section


@pytest.fixture(scope="module")
def auction() -> Api:
    return auction_api()


def _plan(api: Api, workload: dict[str, Any], **extra: Any) -> Any:
    base = {"name": "get", "operation": "getAuction", **workload}
    return build_plan(section(workloads=[base], **extra), api)


def test_arrivals_replay_counts_per_step(auction: Api) -> None:
    plan = _plan(auction, {"injection": {"arrivals": {"counts": [3, 0, 5], "step": "500ms"}}})
    inj = plan.workloads[0].injection
    assert (inj.kind, inj.counts, inj.step, inj.duration) == ("arrivals", (3, 0, 5), 0.5, 1.5)
    assert inj.expected_requests == 8


def test_scale_keeps_the_total_and_speed_shortens_the_steps(auction: Api) -> None:
    plan = _plan(
        auction,
        {"injection": {"arrivals": {"counts": [1, 1, 1, 1, 3], "scale": 0.5, "speed": 4}}},
    )
    inj = plan.workloads[0].injection
    assert inj.counts == (1, 0, 1, 0, 2)  # 3.5 requests rounded to 4, the shape kept
    assert inj.step == 0.25 and inj.duration == 1.25
    assert scaled_counts((10, 20, 30), 3) == (30, 60, 90)
    assert sum(scaled_counts(tuple(range(100)), 0.37)) == round(sum(range(100)) * 0.37)


@pytest.mark.parametrize(
    ("arrivals", "where", "message"),
    [
        (
            {"counts": []},
            "counts",
            "expected a non-empty list of arrivals per step such as [3, 5, 4], got a list",
        ),
        ({"counts": [1, -2]}, "counts/1", "expected a whole number of arrivals, got -2"),
        ({"counts": [0, 0]}, "counts", "no arrival in any step: nothing would be sent"),
        (
            {"counts": [1], "speed": 2000},
            "speed",
            "expected a number above 0 and at most 1000, got 2000",
        ),
        (
            {"counts": [1], "step": "1ms", "speed": 4},
            "speed",
            "each step would last 0.25 ms; the engines time arrivals to the millisecond: a "
            "step must last at least 1 ms",
        ),
        (
            {"counts": [1], "every": "1s"},
            "every",
            "unknown key 'every' in arrivals; expected one of: counts, step, scale, speed",
        ),
    ],
)
def test_arrival_errors_are_located(
    auction: Api, arrivals: dict[str, Any], where: str, message: str
) -> None:
    workload = {"name": "get", "operation": "getAuction", "injection": {"arrivals": arrivals}}
    errors = plan_errors(auction, section(workloads=[workload]))
    assert (f"/x-gatebench/workloads/0/injection/arrivals/{where}", message) in errors


def test_too_many_steps_is_an_error(auction: Api) -> None:
    workload = {
        "name": "get",
        "operation": "getAuction",
        "injection": {"arrivals": {"counts": [1] * 86_401}},
    }
    assert plan_errors(auction, section(workloads=[workload])) == [
        (
            "/x-gatebench/workloads/0/injection/arrivals/counts",
            "at most 86,400 steps, got 86,401; use a longer step",
        )
    ]


def test_the_engines_document_carries_each_step_to_the_microsecond(auction: Api) -> None:
    plan = _plan(auction, {"injection": {"arrivals": {"counts": [2, 1, 4], "speed": 3}}})
    inj = plan.workloads[0].injection
    data = injection_json(inj)
    assert data == {"kind": "arrivals", "duration_ms": 1000, "step_us": 333333, "counts": [2, 1, 4]}
    back = injection_from_json(data)
    assert back.counts == inj.counts and back.step == pytest.approx(inj.step, abs=1e-6)


def test_testers_split_every_step(auction: Api) -> None:
    inj = Injection("arrivals", duration=4.0, counts=(5, 0, 3, 1), step=1.0)
    shares = split_injection(inj, 3)
    assert [s.counts if s else None for s in shares] == [(2, 0, 1, 1), (2, 0, 1, 0), (1, 0, 1, 0)]
    assert [sum(c) for c in zip(*(s.counts for s in shares if s), strict=True)] == [5, 0, 3, 1]
    assert split_injection(Injection("arrivals", duration=1.0, counts=(1,), step=1.0), 2)[1] is None


def test_quick_keeps_the_first_two_seconds(auction: Api) -> None:
    plan = _plan(auction, {"injection": {"arrivals": {"counts": [4000, 3000, 9, 9]}}})
    inj = quick_plan(plan).workloads[0].injection
    assert inj.counts == (2857, 2143) and inj.duration == 2.0


def test_a_weighted_list_with_others(auction: Api) -> None:
    plan = _plan(
        auction,
        {
            "params": {
                "auctionId": {
                    "list": [7, 8],
                    "weights": [6, 2],
                    "others": {"count": 10, "weight": 2, "start": 100},
                }
            },
            "injection": {"at_once": 1},
        },
    )
    gen = plan.workloads[0].param("auctionId")
    assert gen is not None and gen.weights == (6.0, 2.0) and gen.random_order
    assert gen.others is not None and gen.others.value(0) == 100
    doc = render_workload(plan, auction, build_schedule(plan, {"baseline": "http://x"}, seed=1))
    spec = doc["phases"][-1]["params"]["auctionId"]
    assert spec["kind"] == "weighted" and spec["cumulative"] == [6.0, 8.0] and spec["total"] == 10.0
    # the same draws for every phase of a workload (every target sees the same sequence)
    assert all(p["params"]["auctionId"] == spec for p in doc["phases"])
    drawn = Counter(weighted_value(spec, n) for n in range(20_000))
    assert drawn[7] / 20_000 == pytest.approx(0.6, abs=0.015)
    assert drawn[8] / 20_000 == pytest.approx(0.2, abs=0.015)
    others = {v: c for v, c in drawn.items() if v not in (7, 8)}
    assert set(others) == set(range(100, 110))
    assert sum(others.values()) / 20_000 == pytest.approx(0.2, abs=0.015)


def test_text_others_are_padded_and_prefixed() -> None:
    spec = {
        "kind": "weighted",
        "values": [],
        "cumulative": [],
        "total": 1.0,
        "seed": 5,
        "others": {
            "count": 3,
            "weight": 1.0,
            "start": 8,
            "text": True,
            "prefix": "id-",
            "width": 3,
        },
    }
    assert {weighted_value(spec, n) for n in range(200)} == {"id-008", "id-009", "id-010"}


def test_testers_take_every_nth_draw_of_one_sequence(auction: Api) -> None:
    plan = _plan(
        auction,
        {
            "params": {"auctionId": {"list": [1, 2, 3], "weights": [1, 1, 1]}},
            "injection": {"at_once": 6},
        },
        warmup=False,
    )
    doc = render_workload(plan, auction, build_schedule(plan, {"baseline": "http://x"}, seed=1))
    one = doc["phases"][0]["params"]["auctionId"]
    parts = split_document(doc, 2)
    specs = [p["phases"][0]["params"]["auctionId"] for p in parts]
    merged = [weighted_value(specs[n % 2], n // 2) for n in range(12)]
    assert merged == [weighted_value(one, n) for n in range(12)]


def test_unit_draws_are_splitmix64() -> None:
    # SplitMix64's first outputs for seed 0 (its reference values), top 53 bits
    expected = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    assert [unit_draw(0, n) for n in range(3)] == [(x >> 11) * 2.0**-53 for x in expected]


@pytest.mark.parametrize(
    ("param", "where", "message"),
    [
        ({"list": [1, 2], "weights": [1]}, "weights", "expected one weight per value (2), got [1]"),
        ({"list": [1], "weights": [-1]}, "weights/0", "expected a number from 0, got -1"),
        ({"list": [1], "weights": [0]}, "weights", "at least one weight must be above 0"),
        (
            {"list": [1], "others": {"count": 1, "weight": 1}},
            "others",
            "'others' needs the list's 'weights'",
        ),
        (
            {"list": [1], "weights": [1], "order": "random"},
            "order",
            "a weighted list draws its values at random; leave 'order' out",
        ),
        ({"range": [1, 2], "weights": [1]}, "weights", "'weights' applies to a list"),
        (
            {"list": [1], "weights": [1], "others": {"count": 2, "weight": 1, "prefix": "a/b"}},
            "others/prefix",
            "expected at most 64 letters, digits or URL-safe punctuation (no '/', '%', '?', '#', "
            "'&' or space), got 'a/b'",
        ),
    ],
)
def test_weighted_list_errors_are_located(
    auction: Api, param: dict[str, Any], where: str, message: str
) -> None:
    workload = {
        "name": "get",
        "operation": "getAuction",
        "params": {"auctionId": param},
        "injection": {"at_once": 1},
    }
    errors = plan_errors(auction, section(workloads=[workload]))
    assert (f"/x-gatebench/workloads/0/params/auctionId/{where}", message) in errors


def test_the_traffic_source_is_read_and_reported(auction: Api) -> None:
    traffic = {
        "files": ["access.log.1", "access.log"],
        "format": "combined",
        "requests": 2000,
        "matched": 1990,
        "start": "2026-01-31T12:00:00Z",
        "end": "2026-01-31T13:00:00Z",
    }
    plan = build_plan(section(traffic=traffic), auction)
    assert plan.traffic is not None and plan.traffic.matched_pct == 99.5
    run = RunRecord("r", "spec.yaml", "0" * 64, plan=plan.to_dict())
    assert traffic_source(run) == (
        "replayed from access.log.1, access.log (combined, 2026-01-31T12:00:00Z to "
        "2026-01-31T13:00:00Z): 2,000 requests, 1,990 (99.5 %) matched to the description's "
        "operations"
    )
    assert traffic_source(RunRecord("r", "spec.yaml", "0" * 64)) is None
    errors = plan_errors(auction, section(traffic={**traffic, "matched": 3000}))
    assert errors == [("/x-gatebench/traffic/matched", "3,000 matched of 2,000 requests read")]
