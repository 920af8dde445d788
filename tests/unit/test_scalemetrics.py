"""The figures of the scale and change-under-load runs (gatebench.kinds._live.metrics) from
per-request records: windows, failures kept with their time, the spike, percentiles."""

from __future__ import annotations

from gatebench.kinds._live.metrics import (
    Arrival,
    ScalePoint,
    buckets,
    change_outcome,
    latency_of,
    position_latency,
    rss_mb,
    scale_rows,
    schedule_problem,
)

T0 = 1_700_000_000_000.0


def _load(rate: int = 100, seconds: int = 4) -> list[Arrival]:
    """``rate`` requests a second; 2 ms each, 40 ms and failing in 200-300 ms after T0 + 2 s."""
    out = []
    for i in range(rate * seconds):
        at = T0 + i * 1000.0 / rate
        after = at - (T0 + 2000)
        bad = 200 <= after < 300
        out.append(
            Arrival(
                at,
                40.0 if bad else 2.0,
                not bad,
                "start" if i % 2 else "end",
                "connection refused" if bad else "",
            )
        )
    return out


def _fields() -> dict[str, object]:
    return {
        "gateway": "nginx",
        "mechanism": "SIGHUP",
        "kind": "signal",
        "routes_before": 10,
        "routes_added": 90,
        "upstream_changed": True,
        "rate": 100.0,
        "engine": "test",
        "measured_from": "intended start",
        "new_routes_s": {"a": 0.2, "b": 0.4},
        "mechanism_s": 0.0,
        "check_s": 0.05,
    }


def test_a_change_counts_every_failure_in_its_window_with_the_time_from_the_change() -> None:
    out = change_outcome(_load(), T0 + 2000, window_s=1.0, calm_s=1.0, **_fields())
    assert out.failures == 10
    assert out.failure_kinds == {"connection refused": 10}
    assert [f["after_ms"] for f in out.failed] == [200.0 + 10 * k for k in range(10)]
    assert out.before.requests == 100 and out.before.ko == 0 and out.before.p99_ms == 2.0
    assert out.during.requests == 100 and out.during.max_ms == 40.0
    assert out.during.p99_ms == 40.0
    assert out.worst_bucket_p99_ms == 40.0
    spikes = [b for b in out.series if b["ko"]]
    assert [b["t_ms"] for b in spikes] == [200.0]
    assert out.series[0]["t_ms"] == -1000.0 and out.series[-1]["t_ms"] == 900.0
    assert out.slowest_new_route_s == 0.4 and out.all_new_routes_answered
    data = out.to_dict()
    assert data["slowest_new_route_s"] == 0.4 and data["before"]["p99_ms"] == 2.0


def test_failures_outside_the_window_are_not_the_changes() -> None:
    out = change_outcome(_load(), T0 + 2400, window_s=1.0, calm_s=0.3, **_fields())
    assert out.failures == 0
    # The calm reference before this change held the failures: it says so in its latency.
    assert out.before.ko == 10


def test_a_route_that_never_answered_has_no_slowest_time() -> None:
    fields = _fields() | {"new_routes_s": {"a": 0.2, "b": None}}
    out = change_outcome(_load(), T0 + 2000, window_s=1.0, calm_s=1.0, **fields)
    assert not out.all_new_routes_answered and out.slowest_new_route_s is None
    assert out.problem == "1 of 2 new routes never answered correctly"


def test_latency_percentiles_are_nearest_rank_over_every_request() -> None:
    arrivals = [Arrival(T0, float(v), v != 100, "x") for v in range(1, 101)]
    lat = latency_of(arrivals)
    assert (lat.requests, lat.ko, lat.p50_ms, lat.p99_ms, lat.max_ms) == (100, 1, 50.0, 99.0, 100.0)
    assert latency_of([]).p99_ms is None
    by = position_latency(_load(seconds=1))
    assert set(by) == {"start", "end"} and by["start"].requests == 50


def test_buckets_leave_out_empty_ones_and_keep_time_order() -> None:
    got = buckets([Arrival(T0 + 250, 1, True, "x"), Arrival(T0 - 10, 3, False, "x")], T0)
    assert got == [
        {"t_ms": -100.0, "requests": 1, "ko": 1, "wrong": 0, "p99_ms": 3},
        {"t_ms": 200.0, "requests": 1, "ko": 0, "wrong": 0, "p99_ms": 1},
    ]


def test_scale_points_flatten_to_rows() -> None:
    point = ScalePoint(
        "haproxy",
        100,
        2048,
        0.5,
        20.0,
        21.5,
        200.0,
        "test",
        "send",
        position_latency(_load(seconds=1)),
    )
    rows = scale_rows([point])
    assert {"gateway": "haproxy", "routes": 100, "metric": "rss_load_mb", "value": 21.5} in rows
    assert {"gateway": "haproxy", "routes": 100, "metric": "end_p99_ms", "value": 2.0} in rows
    # the requests that failed, as the table counts them: not 2xx, and wrong answers apart
    bad = [
        Arrival(T0, 1.0, False, "end", "status 502"),
        Arrival(T0 + 5, 1.0, False, "end", "wrong answer (crossed): body is x"),
        Arrival(T0 + 10, 1.0, True, "start"),
    ]
    failing = ScalePoint("nginx", 10, 1, 0.1, 1.0, 1.0, 200.0, "t", "send", position_latency(bad))
    counts = {
        r["metric"]: r["value"]
        for r in scale_rows([failing])
        if r["metric"].endswith(("not_2xx", "wrong_answers"))
    }
    assert counts == {
        "end_not_2xx": 1,
        "end_wrong_answers": 1,
        "start_not_2xx": 0,
        "start_wrong_answers": 0,
    }
    assert point.to_dict()["latency"]["start"]["requests"] == 50
    assert rss_mb([1024 * 1024, 3 * 1024 * 1024]) == 3.0 and rss_mb([]) is None


def test_a_load_that_did_not_keep_its_schedule_is_flagged_as_the_testers() -> None:
    assert schedule_problem(181, 100, 2, "x") == ""
    assert schedule_problem(179, 100, 2, "to the end route") == (
        "tester-bound: the load sent 179 of the 200 requests due to the end route; the load "
        "generator did not keep its schedule, so these figures are not the gateway's alone"
    )
    sparse = [a for i, a in enumerate(_load()) if not (2000 <= a.at_ms - T0 < 3000) or i % 3 == 0]
    out = change_outcome(sparse, T0 + 2000, window_s=1.0, calm_s=1.0, **_fields())
    assert out.problem.startswith("tester-bound: the load sent 33 of the 100 requests due in")
    fine = change_outcome(_load(), T0 + 2000, window_s=1.0, calm_s=1.0, **_fields())
    assert fine.problem == ""


def test_wrong_answers_are_counted_apart_from_failures_and_by_their_kind() -> None:
    """A constant-rate load checks its answers (docs/trust.md): a wrong answer is not OK, is
    not among the latency's KO, and the change's failures name it by its kind, not by the
    words that name its request."""
    load = _load()
    for i in (250, 251):  # two answers crossed in the window, after the refused ones
        a = load[i]
        load[i] = Arrival(
            a.at_ms,
            a.latency_ms,
            False,
            a.route,
            f"wrong answer (crossed): request t.p0001.{i} GET /a; expected its own answer; "
            f"got the answer to request t.p0001.{i + 1}",
        )
    lat = latency_of(load)
    assert (lat.requests, lat.ko, lat.wrong) == (400, 10, 2)
    out = change_outcome(load, T0 + 2000, window_s=1.0, calm_s=1.0, **_fields())
    assert out.failures == 12
    assert out.failure_kinds == {"connection refused": 10, "wrong answer (crossed)": 2}
    assert out.during.wrong == 2 and out.during.ko == 10


def test_a_window_past_the_loads_end_counts_the_requests_due_only_until_that_end() -> None:
    # the change came 120 ms late: the 1 s window runs 120 ms past the load's last due request,
    # and the load sent every one of the 88 due before its end, on schedule
    change = T0 + 2120
    load = [a for a in _load(seconds=3) if a.at_ms >= T0 + 1000]
    out = change_outcome(load, change, window_s=1.0, calm_s=1.0, load_end_ms=T0 + 3000, **_fields())
    assert out.during.requests == 88
    assert out.window_loaded_s == 0.88 and out.to_dict()["window_loaded_s"] == 0.88
    assert "tester-bound" not in out.problem
    # what the load did not send within that part is still the load generator's
    thin = [a for a in load if a.at_ms < change or int(a.at_ms) % 20]
    short = change_outcome(
        thin, change, window_s=1.0, calm_s=1.0, load_end_ms=T0 + 3000, **_fields()
    )
    assert "tester-bound: the load sent 44 of the 88 requests due" in short.problem
    assert "its first 0.88 s, until the load ended" in short.problem
    # a window inside the load is whole
    inside = change_outcome(
        load, T0 + 1500, window_s=1.0, calm_s=0.5, load_end_ms=T0 + 3000, **_fields()
    )
    assert inside.window_loaded_s is None and not inside.problem


def test_a_request_the_change_cut_off_is_one_of_its_failures_before_its_moment() -> None:
    load = [Arrival(T0 + i * 10.0, 1.0, True, "end") for i in range(300)]
    # due 4 ms before the change, in flight when the reload reset its connection
    load.append(Arrival(T0 + 996.0, 30.0, False, "end", "connection reset by the target"))
    # due before the change and over before it: the calm's, not the change's
    load.append(Arrival(T0 + 500.0, 3.0, False, "end", "502"))
    load.sort(key=lambda a: a.at_ms)
    out = change_outcome(load, T0 + 1000, window_s=1.0, calm_s=1.0, **_fields())
    assert out.failures == 1
    assert out.failure_kinds == {"connection reset by the target": 1}
    assert out.failed == [
        {"after_ms": -4.0, "route": "end", "error": "connection reset by the target"}
    ]


def test_buckets_carry_wrong_answers_beside_failures() -> None:
    load = [
        Arrival(T0, 1.0, True, "end"),
        Arrival(T0 + 10, 1.0, False, "end", "wrong answer (crossed): body is another request's"),
        Arrival(T0 + 20, 1.0, False, "end", "502"),
    ]
    assert [(b["ko"], b["wrong"]) for b in buckets(load, T0)] == [(1, 1)]
