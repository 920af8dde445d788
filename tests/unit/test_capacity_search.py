"""The capacity search's parts, each alone, then together on a simulated target
(tests/capacity_sim.py: an exact, seeded queue; deterministic): the step controller, the
metrics plugin, the scoring function, the loop, the repetitions and the summary."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from capacity_sim import SimulatedTarget
from gatebench.core.plan import Capacity, Objective
from gatebench.kinds.capacity import (
    MAX_CONFIRMATIONS,
    MIN_RATE,
    Campaign,
    KneeSummary,
    Probe,
    ProbeMetrics,
    ProbeOutcome,
    ProbeRequest,
    SearchKey,
    SearchResult,
    StepController,
    Verdict,
    compare,
    drive,
    late_threshold_ms,
    price_per_million,
    score_probe,
    search,
    start_rate_for,
    summarize,
    verdict,
)
from gatebench.kinds.capacity import (
    TesterLimits as Limits,
)

SETTINGS = Capacity()  # start 100/s, growth 2, precision 5 %, p99 ≤ 50 ms, errors ≤ 0.1 %


def against(
    controller: StepController, carried: float, *, saturates: bool = False
) -> list[tuple[float, str]]:
    """Run a controller against a perfect target that carries exactly ``carried``/s; one that
    ``saturates`` completes ``carried``/s when offered more (else it keeps up, too slowly)."""
    seen = []
    while (request := controller.next_probe()) is not None:
        seen.append((request.rate, request.kind))
        held = request.rate <= carried
        achieved = request.rate if held or not saturates else carried
        controller.update("within" if held else "breached", achieved=achieved)
    return seen


def noisy(
    controller: StepController, short: float, long: float, served: float | None = None
) -> list[tuple[int, str]]:
    """Run a controller against a noisy machine's target: short probes hold up to ``short``/s,
    the longer confirmations only up to ``long``/s (a broken one serving ``served``/s when
    given: overloaded); the probes as (rate, kind)."""
    seen = []
    while (request := controller.next_probe()) is not None:
        seen.append((round(request.rate), request.kind))
        limit = long if request.kind == "confirm" else short
        if request.rate <= limit:
            controller.update("within")
        else:
            controller.update("breached", achieved=served if request.kind == "confirm" else None)
    return seen


def confirmations(seen: list[tuple[int, str]]) -> list[int]:
    return [rate for rate, kind in seen if kind == "confirm"]


# -- the step controller -------------------------------------------------------------------


def test_growth_then_geometric_bisection_then_confirmation() -> None:
    c = StepController(SETTINGS, 100.0)  # a start the run knew: growth by 2
    seen = against(c, 400.0)
    rates = [r for r, _ in seen]
    kinds = [k for _, k in seen]
    assert rates[:4] == [100.0, 200.0, 400.0, 800.0]
    assert kinds[:4] == ["grow"] * 4
    # bisection is geometric: the first midpoint of [400, 800] is sqrt(400 × 800)
    assert rates[4] == pytest.approx(math.sqrt(400 * 800), abs=0.001)
    assert kinds[-1] == "confirm" and rates[-1] == pytest.approx(c.knee, abs=0.001)
    assert c.status == "found"
    assert c.high is not None and c.knee is not None
    assert c.high / c.knee - 1 <= SETTINGS.precision + 1e-6
    assert 400 / 1.05 <= c.knee <= 400.0
    assert len(seen) <= 10


def test_a_cold_search_grows_by_the_square_of_the_growth() -> None:
    c = StepController(SETTINGS)  # nothing of the run to start from
    seen = against(c, 1500.0)
    assert [r for r, k in seen if k == "grow"] == [100.0, 400.0, 1600.0]
    # a target that keeps up too slowly says nothing of its capacity: bisection from [400, 1600]
    assert seen[3][0] == pytest.approx(800.0) and seen[3][1] == "bisect"
    assert c.status == "found" and c.knee is not None and 1500 / 1.05 <= c.knee <= 1500


def test_an_overloaded_probe_says_what_the_target_carries() -> None:
    # offered 1,600/s, the target completed 1,200/s: the next probe goes just under 1,200,
    # the one after just above the rate that held, and the bracket is the precision
    c = StepController(SETTINGS)
    seen = against(c, 1200.0, saturates=True)
    assert [round(r, 3) for r, _ in seen] == [100.0, 400.0, 1600.0, 1170.0, 1228.5, 1170.0]
    assert [k for _, k in seen] == ["grow", "grow", "grow", "bisect", "bisect", "confirm"]
    assert (c.status, c.knee) == ("found", 1170.0)
    assert c.high is not None and c.high / c.knee - 1 <= SETTINGS.precision + 1e-9


@pytest.mark.parametrize("capacity", [400.0, 1_000.0, 2_000.0, 5_000.0, 10_000.0, 40_000.0])
def test_a_cold_search_needs_at_most_ten_probes(capacity: float) -> None:
    # the ground truth's backends (docs/benchmarks.md, "Capacity ground truth"), from 100/s
    c = StepController(SETTINGS)
    seen = against(c, capacity, saturates=True)
    assert c.status == "found" and c.knee is not None
    assert capacity / 1.05 <= c.knee <= capacity
    assert len(seen) <= 10, seen


def test_a_first_overloaded_probe_jumps_down_instead_of_halving() -> None:
    c = StepController(SETTINGS, 2000.0)
    seen = against(c, 130.0, saturates=True)
    assert seen[1] == (pytest.approx(130.0 * 0.975), "shrink")
    assert c.status == "found" and c.knee is not None and 130 / 1.05 <= c.knee <= 130.0
    assert len(seen) <= 5


def test_the_tester_cap_is_never_offered() -> None:
    # the engine's ceiling is 10,000/s: a probe at 8,000/s or more would be tester-bound
    c = StepController(SETTINGS, cap=8_000.0)
    seen = against(c, 1e9)
    assert max(r for r, _ in seen) < 8_000.0 and seen[-1][0] == 7999.999
    assert (c.status, c.knee) == ("tester-bound", 7999.999)
    assert "just under the share of the engine's ceiling" in c.note
    below = StepController(SETTINGS, cap=8_000.0)
    against(below, 3000.0, saturates=True)
    assert below.status == "found" and below.knee is not None and below.knee <= 3000.0


def test_a_cold_search_starts_a_sixteenth_of_the_tester_cap_up() -> None:
    """Nothing of the run to start from, but the tester's cap is known (40,000/s): the knee is
    under it or the tester is the limit, so the search starts two cold growth steps under it
    (2,500/s) instead of growing from the plan's 100/s through 400 and 1,600/s."""
    c = StepController(SETTINGS, cap=40_000.0)
    seen = against(c, 6_000.0, saturates=True)
    assert seen[0] == (2_500.0, "grow") and seen[1] == (10_000.0, "grow")
    assert c.status == "found" and c.knee is not None and 6_000 / 1.05 <= c.knee <= 6_000
    assert len(seen) <= 6, seen
    # a start the run knew (not cold) keeps its rate; so does a cold start above a 16th
    assert StepController(SETTINGS, 100.0, cap=40_000.0).rate == 100.0
    assert StepController(SETTINGS, 3_000.0, cold=True, cap=40_000.0).rate == 3_000.0
    assert StepController(SETTINGS, 30.0, cold=True, cap=40_000.0).rate == 2_500.0


def test_the_probes_have_the_plan_durations() -> None:
    settings = replace(SETTINGS, warmup=0.5, probe=3.0, confirm=7.0)
    c = StepController(settings)
    first = c.next_probe()
    assert first == ProbeRequest(100.0, "grow", 0.5, 3.0)
    while (request := c.next_probe()) is not None and request.kind != "confirm":
        c.update("within" if request.rate <= 300 else "breached")
    assert request is not None and request.duration_s == 7.0 and request.seconds == 7.5


def test_a_first_rate_that_breaks_shrinks_instead_of_giving_up() -> None:
    c = StepController(SETTINGS)
    seen = against(c, 30.0)
    assert [r for r, k in seen if k == "shrink"] == [50.0, 25.0]
    assert c.status == "found" and c.knee is not None
    assert 30 / 1.05 <= c.knee <= 30.0


def test_a_target_that_breaks_even_at_the_lowest_rate_carries_nothing() -> None:
    c = StepController(SETTINGS)
    seen = against(c, 0.5)
    # the lowest rate: 20 arrivals in the 2-s window (MIN_ARRIVALS), above MIN_RATE
    assert seen[-1][0] == c.floor == 10.0 > MIN_RATE
    # an upper bound (it carries less than 10/s), never a knee of 0
    assert (c.status, c.knee, c.high) == ("nothing", None, 10.0)
    assert c.note == "the objective broke even at 10/s, the lowest rate probed"
    long = StepController(replace(SETTINGS, probe=60.0))
    against(long, 0.5)
    assert long.floor == MIN_RATE


def test_a_probe_without_arrivals_says_nothing_about_the_target() -> None:
    v = score_probe(metrics(scheduled=0, sent=0, requests=0, ok=0), OBJECTIVE, Limits())
    assert v == Verdict("tester-bound", ("the probe sent no request: its window held no arrival",))


def test_the_plan_upper_bound_makes_the_knee_a_lower_bound() -> None:
    c = StepController(replace(SETTINGS, max_rate=1000.0))
    seen = against(c, 1e9)
    assert [r for r, _ in seen] == [100.0, 400.0, 1000.0]
    assert (c.status, c.knee) == ("at-max", 1000.0)


def test_a_tester_bound_probe_ends_the_search_at_the_last_rate_that_held() -> None:
    c = StepController(SETTINGS)
    for outcome in ("within", "within", "tester-bound"):
        assert c.next_probe() is not None
        c.update(outcome, "the engine dropped 3 % of arrivals")  # type: ignore[arg-type]
    assert c.next_probe() is None
    assert (c.status, c.knee, c.note) == (
        "tester-bound",
        400.0,
        "the engine dropped 3 % of arrivals",
    )


def test_a_first_rate_the_tester_cannot_offer_sends_the_search_under_it() -> None:
    """The first rate is tester-bound (no rate held yet): the search shrinks from it and grows
    back up to one precision step under it; held there, the knee is that bound, and the note
    names the rate the tester could not offer and why."""
    c = StepController(replace(SETTINGS, start_rate=800.0))
    seen = []
    while (request := c.next_probe()) is not None:
        seen.append(request.rate)
        c.update("tester-bound" if request.rate >= 800 else "within", "the engine dropped 9 %")
    cap = math.floor(800.0 / 1.05 * 1000.0 - 1.0) / 1000.0
    assert seen == [800.0, 400.0, cap]
    assert (c.status, c.knee) == ("tester-bound", cap)
    assert c.note == (
        f"{cap:,.0f}/s held, just under 800/s, which the tester could not offer "
        "(the engine dropped 9 %)"
    )


def test_under_the_rate_the_tester_could_not_offer_the_targets_knee_is_found() -> None:
    """An upload the engine can send at 60/s at most, to a target that carries 25/s: the first
    probe (100/s) is the tester's limit, not the target's; the search goes under it and finds
    the target's knee, confirmed (before, the search ended there with no knee)."""
    target = SimulatedTarget(workers=1, service_ms=40.0, engine_rate=60.0)
    result = search(SETTINGS, target)
    assert [p.verdict.outcome for p in result.probes][:1] == ["tester-bound"]
    assert result.status == "found" and result.knee is not None
    assert abs(result.knee - target.capacity) / target.capacity <= SETTINGS.precision + 0.03


def test_a_tester_bound_probe_at_the_lowest_rate_ends_the_search_without_a_knee() -> None:
    c = StepController(replace(SETTINGS, start_rate=20.0))
    seen = []
    while (request := c.next_probe()) is not None:
        seen.append(request.rate)
        c.update("tester-bound", "the engine dropped 30 %")
    assert (c.status, c.knee, c.note) == ("tester-bound", None, "the engine dropped 30 %")
    assert seen == [20.0, 10.0]  # the floor: 20 arrivals in a 2 s probe


def test_a_failed_confirmation_searches_on_below_it() -> None:
    c = StepController(SETTINGS)
    confirmed_fail = 0
    seen = []
    while (request := c.next_probe()) is not None:
        seen.append(request)
        if request.kind == "confirm" and confirmed_fail == 0:
            confirmed_fail += 1
            c.update("breached")  # held a short probe, not the long one
            continue
        c.update("within" if request.rate <= 400 else "breached")
    confirms = [r for r in seen if r.kind == "confirm"]
    assert len(confirms) == 2
    assert confirms[1].rate < confirms[0].rate
    assert c.status == "found" and c.knee is not None and c.knee < confirms[0].rate


def test_confirmations_that_keep_failing_end_unconfirmed() -> None:
    c = StepController(SETTINGS)
    while (request := c.next_probe()) is not None:
        c.update(
            "breached"
            if request.kind == "confirm"
            else "within"
            if request.rate <= 400
            else "breached"
        )
    assert c.status == "unconfirmed"
    assert c.confirmations == MAX_CONFIRMATIONS
    assert c.knee is not None and c.knee <= 400  # the last rate that held a short probe


def test_a_failed_confirmation_with_nothing_held_under_it_confirms_just_below() -> None:
    """A noisy machine: every rate up to 1,010/s holds a 2 s probe, but the 5 s confirmation
    only at 960/s or less. Nothing that held lies under the first rate confirmed (1,000/s:
    the first probe held, 2,000/s broke, every bisection above broke, the last step, 1,044/s,
    run as long as a confirmation), so the next confirmation is one precision step under it,
    at once: no shrinking by the growth factor and climbing back."""
    c = StepController(SETTINGS, start_rate=1000.0)
    seen = noisy(c, 1010.0, 960.0)
    assert seen[:2] == [(1000, "grow"), (2000, "grow")]
    assert confirmations(seen) == [1044, 1000, 952]
    assert c.status == "found" and c.knee == pytest.approx(1000.0 / 1.05, abs=0.001)
    assert len(seen) <= 8, seen
    # a rate that held far below (500/s, before the first rate confirmed) does not pull the
    # next confirmation halfway down to it
    c = StepController(SETTINGS, start_rate=500.0)
    confirms = confirmations(noisy(c, 1010.0, 960.0))
    assert confirms[-1] == round(confirms[-2] / 1.05) and c.status == "found"
    # no confirmation ever holds: unconfirmed, with no knee (short probes held: not "nothing")
    c = StepController(SETTINGS, start_rate=1000.0)
    noisy(c, 1010.0, 0.0)
    assert (c.status, c.knee, c.confirmations) == ("unconfirmed", None, MAX_CONFIRMATIONS)
    assert c.note == "3 confirmations failed, the last at 864/s"  # 1,000, 952, then 2 steps


def test_confirmations_that_keep_failing_step_further_down() -> None:
    """A long run keeps breaking where 2 s probes held (a run here: 7,960/s held short probes,
    its confirmations broke at 7,960, 7,581 and 7,220/s, the last serving 6,489/s, and the
    search ended unconfirmed at 3,980/s): the second failure steps two precision steps down,
    and a confirmation that served clearly less than offered sends the next under what it
    served."""
    c = StepController(SETTINGS, start_rate=1000.0)
    assert confirmations(noisy(c, 1010.0, 880.0)) == [1044, 1000, 952, 864]
    assert (c.status, round(c.knee or 0)) == ("found", 864)
    c = StepController(SETTINGS, start_rate=1000.0)
    overloaded = noisy(c, 1010.0, 700.0, served=700.0)
    assert confirmations(overloaded) == [1044, 1000, round(700 * 0.975)] and c.status == "found"


def test_a_failed_confirmation_is_not_followed_by_one_at_a_rate_that_held_short() -> None:
    """Short probes held 900 and 981/s; the 5 s confirmation holds at 890/s or less. The
    bisection's last step (1,025/s) and the confirmations at 981 and 935/s broke; the next is
    two precision steps under 935/s (848/s), not at 900/s, the rate between that held a short
    probe: short probes hold too high where the longer run broke, and confirming there broke
    a third time and ended the search unconfirmed."""
    c = StepController(SETTINGS, start_rate=900.0)
    seen = noisy(c, 1010.0, 890.0)
    assert (900, "grow") in seen and (981, "bisect") in seen
    assert confirmations(seen) == [1025, 981, 935, 848]
    assert c.status == "found" and c.knee == pytest.approx(935.0 / 1.05**2, rel=1e-3)


def test_the_bisections_last_step_runs_as_long_as_a_confirmation_and_is_one() -> None:
    """A bracket within two precision steps closes whatever its middle does: that probe runs
    as long as a confirmation. Held, it is the knee, confirmed, with no confirmation after it;
    broken, it is the bracket's top, and the rate under it is confirmed."""
    c = StepController(SETTINGS, start_rate=1000.0)
    seen = [(round(r), kind) for r, kind in against(c, 1050.0)]
    assert seen == [
        (1000, "grow"),
        (2000, "grow"),
        (1414, "bisect"),
        (1189, "bisect"),
        (1091, "bisect"),
        (1044, "confirm"),
    ]
    assert (c.status, round(c.knee or 0), round(c.high or 0)) == ("found", 1044, 1091)
    c = StepController(SETTINGS, start_rate=1000.0)
    assert [round(r) for r, kind in against(c, 1020.0) if kind == "confirm"] == [1044, 1000]
    assert (c.status, c.knee, c.confirmations) == ("found", 1000.0, 0)
    assert c.high is not None and round(c.high) == 1044


def test_a_finished_controller_refuses_more_outcomes() -> None:
    c = StepController(replace(SETTINGS, max_rate=100.0))
    c.update("within")
    with pytest.raises(ValueError, match="the search is over"):
        c.update("within")


def test_repetitions_start_at_staggered_points_of_the_first_growth_step() -> None:
    starts = [start_rate_for(SETTINGS, rep) for rep in range(1, 6)]
    assert starts[0] == 100.0
    assert all(100.0 <= s < 200.0 for s in starts)
    assert len({round(s, 3) for s in starts}) == 5


def test_later_repetitions_start_next_to_the_knees_found() -> None:
    # half the median knee, times growth^frac((k - 1) × 0.618): the first probe holds, the
    # second breaks, and bisection starts from a bracket of a factor 2
    start = start_rate_for(SETTINGS, 2, [5000.0, 4800.0, 0.0])
    assert start == pytest.approx(2450.0 * 2 ** (0.618034 % 1.0), rel=1e-5)
    assert start_rate_for(replace(SETTINGS, max_rate=1000.0), 2, [5000.0]) == 1000.0
    first = search(SETTINGS, SimulatedTarget(workers=50, service_ms=10.0))  # 5,000/s
    later = search(
        SETTINGS,
        SimulatedTarget(workers=50, service_ms=10.0),
        start_rate=start_rate_for(SETTINGS, 2, [first.knee or 0.0]),
    )
    # cold: 100, 400, 1,600, 6,400 (overloaded), just under what it carried, just above, the
    # confirmation; next to the knee: it, twice it (overloaded), under, above, confirmation
    assert (len(first.probes), len(later.probes)) == (7, 5)
    for result in (first, later):
        assert result.status == "found" and abs((result.knee or 0) - 5000) / 5000 <= 0.05


# -- the metrics plugin (through the simulated records) ------------------------------------


def test_latency_counts_from_the_intended_start() -> None:
    # one worker of 10 ms offered 150/s: the queue grows by 50 requests a second; a client
    # that waited for each answer before sending the next would see 10 ms every time
    target = SimulatedTarget(workers=1, service_ms=10.0)
    m = target(ProbeRequest(150.0, "grow", 0.0, 2.0))
    assert m.scheduled == 300 and m.sent == 300 and m.dropped == 0
    assert m.from_send["p50"] > 10.0  # it waited in the server's queue
    assert m.latency["max"] == pytest.approx(300 * 10.0 - 1000.0 * 299 / 150, abs=0.01)
    assert m.latency["p99"] > 600.0
    assert m.lag_p99_ms == 0.0 and m.late_pct == 0.0


def test_the_engine_lag_is_measured_apart_from_the_target() -> None:
    target = SimulatedTarget(workers=100, service_ms=1.0, engine_rate=500.0)
    m = target(ProbeRequest(1000.0, "grow", 0.0, 1.0))
    assert m.lag_p99_ms > 400.0  # the engine hands over half the arrivals, ever later
    assert m.from_send["p99"] == pytest.approx(1.0)
    assert m.late_pct > 90.0
    assert m.engine_cpu_pct == 100.0


def test_warm_up_is_excluded_but_its_queue_carries_over() -> None:
    target = SimulatedTarget(workers=1, service_ms=10.0)
    cold = target(ProbeRequest(120.0, "grow", 0.0, 1.0))
    warmed = target(ProbeRequest(120.0, "grow", 1.0, 1.0))
    assert warmed.scheduled == cold.scheduled == 120
    assert warmed.latency["p50"] > cold.latency["p50"]


# -- the scoring function ------------------------------------------------------------------


def metrics(**overrides: object) -> ProbeMetrics:
    base: dict[str, object] = {
        "offered_rate": 1000.0,
        "duration_s": 2.0,
        "scheduled": 2000,
        "sent": 2000,
        "dropped": 0,
        "refused": 0,
        "requests": 2000,
        "ok": 2000,
        "ko": 0,
        "error_pct": 0.0,
        "achieved_rate": 1000.0,
        "latency": {"p50": 2.0, "p90": 4.0, "p95": 5.0, "p99": 9.0, "mean": 2.5, "max": 30.0},
        "from_send": {"p50": 2.0, "p90": 4.0, "p95": 5.0, "p99": 9.0, "mean": 2.5, "max": 30.0},
        "lag_p50_ms": 0.05,
        "lag_p99_ms": 0.2,
        "lag_max_ms": 1.0,
        "late_pct": 0.0,
        "late_ms": 5.0,
        "engine_cpu_pct": 20.0,
        "connections": 12,
    }
    base.update(overrides)
    return ProbeMetrics(**base)  # type: ignore[arg-type]


SLOW = {"p50": 30.0, "p90": 50.0, "p95": 60.0, "p99": 80.0, "mean": 35.0, "max": 120.0}
OBJECTIVE = Objective()


def test_within_the_objective() -> None:
    assert score_probe(metrics(), OBJECTIVE, Limits()).outcome == "within"


def test_a_breach_says_which_bound() -> None:
    v = score_probe(metrics(latency=SLOW, from_send=SLOW), OBJECTIVE, Limits())
    assert (v.outcome, v.reasons) == ("breached", ("p99 80.0 ms > 50 ms",))
    v = score_probe(metrics(error_pct=0.5), OBJECTIVE, Limits())
    assert (v.outcome, v.reasons) == ("breached", ("errors 0.50 % > 0.1 %",))


def test_wrong_answers_breach_the_objective_and_are_never_the_testers() -> None:
    wrong = {"wrong_answers": 3, "wrong_kinds": (("crossed", 2), ("truncated", 1)), "ok": 1997}
    v = score_probe(metrics(**wrong), OBJECTIVE, Limits())
    assert (v.outcome, v.reasons) == ("breached", ("3 wrong answers (crossed 2, truncated 1)",))
    # late arrivals and a busy engine would explain a slow probe, never a wrong answer
    busy = metrics(**wrong, latency=SLOW, late_pct=50.0, engine_cpu_pct=100.0)
    v = score_probe(busy, OBJECTIVE, Limits())
    assert v.outcome == "breached"
    assert v.reasons[:2] == ("3 wrong answers (crossed 2, truncated 1)", "p99 80.0 ms > 50 ms")
    assert ProbeMetrics.from_dict(metrics(**wrong).to_dict()) == metrics(**wrong)


def test_dropped_arrivals_make_the_probe_tester_bound_whatever_the_latencies() -> None:
    m = metrics(dropped=40, drop_reasons=(("the system refused a socket: no port", 40),))
    v = score_probe(m, OBJECTIVE, Limits())
    assert v.outcome == "tester-bound"
    assert v.reasons == (
        "the engine dropped 40 of 2,000 arrivals (2.0 %): the system refused a socket: no port",
    )


def test_near_the_engine_ceiling_is_tester_bound() -> None:
    v = score_probe(metrics(offered_rate=8000.0), OBJECTIVE, Limits(ceiling=10_000.0))
    assert v == score_probe(metrics(offered_rate=8000.0), OBJECTIVE, Limits(ceiling=10_000.0))
    assert v.outcome == "tester-bound"
    assert v.reasons == ("8,000/s is at least 80% of the engine's ceiling here (10,000/s)",)
    assert (
        score_probe(metrics(offered_rate=7999.0), OBJECTIVE, Limits(ceiling=10_000.0)).outcome
        == "within"
    )


def test_a_late_engine_passes_when_the_objective_holds_anyway() -> None:
    m = metrics(late_pct=20.0, lag_p99_ms=12.0)
    assert score_probe(m, OBJECTIVE, Limits()).outcome == "within"


def test_a_breach_that_the_engines_lateness_explains_is_tester_bound() -> None:
    m = metrics(latency=SLOW, late_pct=20.0, lag_p99_ms=60.0)  # on time, the target was fast
    v = score_probe(m, OBJECTIVE, Limits())
    assert v.outcome == "tester-bound"
    assert v.reasons == (
        "p99 80.0 ms > 50 ms",
        "20.0 % of arrivals left more than 5 ms late (lag p99 60.0 ms), and without that lag "
        "the objective was met",
    )


def test_a_breach_the_lateness_does_not_explain_is_the_targets() -> None:
    m = metrics(latency=SLOW, from_send=SLOW, late_pct=20.0, lag_p99_ms=8.0)
    assert score_probe(m, OBJECTIVE, Limits()).outcome == "breached"


def test_a_saturated_engine_or_machine_makes_a_breach_tester_bound() -> None:
    slow = {"latency": SLOW, "from_send": SLOW}
    v = score_probe(metrics(engine_cpu_pct=95.0, **slow), OBJECTIVE, Limits())
    assert v.outcome == "tester-bound" and v.reasons[-1] == "the engine used 95 % of its cores"
    machine = {"machine_busy_pct": 97.0, "engine_machine_pct": 60.0, "target_machine_pct": 30.0}
    v = score_probe(metrics(others_cpu_pct=7.0, **machine, **slow), OBJECTIVE, Limits())
    assert v.outcome == "tester-bound"
    assert v.reasons[-1] == (
        "the machine was saturated and the engine used more CPU than the target and than "
        "every other process"
    )


def test_a_machine_the_neighbours_saturated_is_not_blamed_on_the_engine() -> None:
    slow = {"latency": SLOW, "from_send": SLOW}
    crowded = {"machine_busy_pct": 100.0, "engine_machine_pct": 3.0, "target_machine_pct": 1.0}
    v = score_probe(metrics(others_cpu_pct=96.0, **crowded, **slow), OBJECTIVE, Limits())
    assert v.outcome == "breached"
    assert v.reasons == ("p99 80.0 ms > 50 ms", "noisy: other processes used 96 % of the machine")
    v = score_probe(metrics(others_cpu_pct=96.0, **crowded), OBJECTIVE, Limits())
    assert v == Verdict("within", ("noisy: other processes used 96 % of the machine",))


def test_a_target_that_shared_the_generators_core_says_so_whatever_the_outcome() -> None:
    why = "the backend shared a core with the load generator (pinned: ...)"
    assert score_probe(metrics(shared_core=why), OBJECTIVE, Limits()) == Verdict(
        "within", (f"shared core: {why}",)
    )
    slow = score_probe(metrics(shared_core=why, latency=SLOW, from_send=SLOW), OBJECTIVE, Limits())
    assert slow.outcome == "breached" and slow.reasons[-1] == f"shared core: {why}"


def test_the_late_threshold_follows_the_tightest_bound() -> None:
    assert late_threshold_ms(Objective()) == 5.0
    assert late_threshold_ms(Objective(latency=(("p99", 200.0), ("p50", 20.0)))) == 2.0
    assert late_threshold_ms(Objective(latency=(("p50", 3.0),))) == 1.0


# -- the loop, on the simulated target -----------------------------------------------------


def test_the_search_finds_the_simulated_capacity_within_its_precision() -> None:
    target = SimulatedTarget(workers=4, service_ms=10.0)  # 400/s
    result = search(SETTINGS, target)
    assert result.status == "found"
    assert result.knee is not None and result.high is not None
    assert target.capacity / (1 + SETTINGS.precision) <= result.knee <= target.capacity
    assert len(result.probes) <= 10
    assert [p.request for p in result.probes] == target.probes
    assert result.confirmation is not None and result.confirmation.request.rate == result.knee


@pytest.mark.parametrize("capacity", [(1, 7.0), (8, 3.0), (20, 4.0), (16, 40.0)])
def test_the_search_lands_within_precision_across_capacities(capacity: tuple[int, float]) -> None:
    workers, service = capacity
    target = SimulatedTarget(workers=workers, service_ms=service, jitter=0.05, seed=workers)
    result = search(replace(SETTINGS, objective=Objective(latency=(("p99", 5 * service),))), target)
    assert result.status == "found" and result.knee is not None
    error = abs(result.knee - target.capacity) / target.capacity
    assert error <= SETTINGS.precision + 0.03, (result.knee, target.capacity)


def test_the_same_search_twice_is_the_same() -> None:
    a = search(SETTINGS, SimulatedTarget(jitter=0.2, seed=7), clock=lambda: 0.0)
    b = search(SETTINGS, SimulatedTarget(jitter=0.2, seed=7), clock=lambda: 0.0)
    assert a.to_dict() == b.to_dict()
    assert SearchResult.from_dict(a.to_dict()).to_dict() == a.to_dict()


def test_a_tester_slower_than_the_target_gives_a_lower_bound() -> None:
    # the target carries 4,000/s; the engine hands over at most 1,000/s
    target = SimulatedTarget(workers=40, service_ms=10.0, engine_rate=1000.0)
    result = search(SETTINGS, target)
    assert result.status == "tester-bound" and result.bounded
    assert result.knee is not None and result.knee < 1000.0
    assert "late" in result.note or "dropped" in result.note


def test_a_saturated_machine_at_the_knee_is_not_the_targets_knee() -> None:
    # at 400/s the machine is saturated but the objective holds: that rate was carried; at
    # 800/s it breaks while the engine took the CPU: not the target's knee
    target = SimulatedTarget(workers=4, service_ms=10.0, machine_saturated_above=300.0)
    result = search(SETTINGS, target)
    assert result.status == "tester-bound"
    assert result.knee == 400.0
    assert result.note.endswith(
        "the machine was saturated and the engine used more CPU than the target and than "
        "every other process"
    )


def test_the_budget_stops_a_search_before_a_probe_that_would_not_fit() -> None:
    now = [0.0]
    target = SimulatedTarget()

    def probe(request: ProbeRequest) -> ProbeMetrics:
        now[0] += request.seconds
        return target(request)

    result = search(SETTINGS, probe, deadline=10.0, clock=lambda: now[0])
    assert result.status == "budget" and result.knee is None and not result.complete
    assert len(result.probes) == 3 and now[0] <= 10.0


# -- repetitions and the summary -----------------------------------------------------------


def run_campaign(
    targets: dict[str, SimulatedTarget], settings: Capacity, seed: int = 5
) -> Campaign:
    campaign = Campaign(tuple(targets), {"bid": settings}, seed, budget_s=3600.0)

    def probe_for(key: SearchKey) -> SimulatedTarget:
        target = targets[key.target]
        target.seed = key.repetition
        return target

    return drive(campaign, probe_for)


def test_the_campaign_stops_early_once_every_pair_is_ordered() -> None:
    targets = {
        "haproxy": SimulatedTarget(workers=8, service_ms=10.0, jitter=0.1),  # 800/s
        "envoy": SimulatedTarget(workers=4, service_ms=10.0, jitter=0.1),  # 400/s
        "baseline": SimulatedTarget(workers=16, service_ms=10.0, jitter=0.1),  # 1600/s
    }
    campaign = run_campaign(targets, replace(SETTINGS, repetitions=10))
    assert campaign.rounds == 3
    assert campaign.stop == "every pair's order was decided after 3 repetitions"
    assert len(campaign.orders) == 3 and {o for _, o in campaign.orders} != {
        ("haproxy", "envoy", "baseline")
    }


def test_targets_that_cannot_be_told_apart_run_every_repetition() -> None:
    targets = {
        "a": SimulatedTarget(workers=4, service_ms=10.0, jitter=0.1),
        "b": SimulatedTarget(workers=4, service_ms=10.0, jitter=0.1),
    }
    campaign = run_campaign(targets, replace(SETTINGS, repetitions=4))
    assert campaign.rounds == 4
    assert campaign.stop == "all 4 repetitions ran; undecided: a–b"
    one = run_campaign(targets, replace(SETTINGS, repetitions=1))
    assert one.stop == "the one repetition ran; undecided: a–b"


def test_a_campaign_within_its_budget_ends_with_the_search_that_ran_out() -> None:
    now = [0.0]
    targets = {"a": SimulatedTarget(workers=4), "b": SimulatedTarget(workers=8)}

    def probe_for(key: SearchKey) -> Probe:
        def probe(request: ProbeRequest) -> ProbeMetrics:
            now[0] += request.seconds
            return targets[key.target](request)

        return probe

    campaign = Campaign(tuple(targets), {"bid": SETTINGS}, 3, budget_s=60.0)
    seen: list[tuple[str, str]] = []
    drive(
        campaign,
        probe_for,
        clock=lambda: now[0],
        on_result=lambda k, r: seen.append((k.target, r.status)),
    )
    assert now[0] <= 60.0
    assert seen[-1][1] == "budget" and all(s == "found" for _, s in seen[:-1])
    assert campaign.stop is not None and campaign.stop.startswith("the time budget (60s) ran out")


def test_a_jit_gateways_first_probe_warms_it_up_until_it_is_steady() -> None:
    """drive's ``first_warmup``: a target's first probe warms up at least that long (a JVM
    gateway has not served before), once; the others keep the settings' warm-up."""
    seen: list[tuple[str, float]] = []
    targets = {"zuul": SimulatedTarget(workers=4), "nginx": SimulatedTarget(workers=8)}

    def probe_for(key: SearchKey) -> Probe:
        def probe(request: ProbeRequest) -> ProbeMetrics:
            seen.append((key.target, request.warmup_s))
            return targets[key.target](request)

        return probe

    campaign = Campaign(tuple(targets), {"bid": replace(SETTINGS, repetitions=2)}, 3, 3600.0)
    drive(campaign, probe_for, first_warmup={"zuul": 30.0})
    zuul = [w for t, w in seen if t == "zuul"]
    assert zuul[0] == 30.0 and set(zuul[1:]) == {SETTINGS.warmup}
    assert {w for t, w in seen if t == "nginx"} == {SETTINGS.warmup}


def test_the_campaign_says_when_the_budget_ran_out() -> None:
    campaign = Campaign(("a", "b"), {"bid": SETTINGS}, 1, budget_s=60.0)
    keys = campaign.next_round()
    budget = SearchResult("budget", None, None, (), "the time budget ran out")
    campaign.record(keys[0], budget)
    campaign.end_round()
    assert campaign.stop == (
        "the time budget (60s) ran out during repetition 1; that repetition's unfinished "
        "searches are left out"
    )
    assert campaign.next_round() == []


def test_the_knee_interval_comparison_and_verdict() -> None:
    settings = replace(SETTINGS, repetitions=5)
    targets = {
        "haproxy": SimulatedTarget(workers=11, service_ms=10.0, jitter=0.1),
        "envoy": SimulatedTarget(workers=8, service_ms=10.0, jitter=0.1),
    }
    campaign = run_campaign(targets, settings)
    haproxy, envoy = campaign.summaries("bid")[0], campaign.summaries("bid")[1]
    assert haproxy.target == "haproxy" and len(haproxy.knees) == campaign.rounds
    low, high = haproxy.interval or (0.0, 0.0)
    assert low < (haproxy.mean or 0) < high and high - low < 0.1 * (haproxy.mean or 0)
    c = compare(haproxy, envoy)
    assert (c.better, c.worse, c.decided) == ("haproxy", "envoy", True)
    assert c.ratio is not None and c.low is not None and c.high is not None
    assert c.low < c.ratio < c.high and 1.2 < c.ratio < 1.5
    text = verdict("bid", [haproxy, envoy], SETTINGS.objective)
    assert text == (
        f"haproxy carries {100 * (c.ratio - 1):.0f} % more bid traffic than envoy at "
        f"p99 ≤ 50 ms, errors ≤ 0.1 %, 95 % CI {100 * (c.low - 1):.0f}–{100 * (c.high - 1):.0f} %"
    )
    assert haproxy.req_per_cpu_s == pytest.approx(20_000.0)  # 0.05 ms of CPU per request


def test_a_bounded_target_is_reported_as_at_least_its_limit() -> None:
    probe = ()
    bounded = [SearchResult("tester-bound", 5000.0, None, probe, "dropped") for _ in range(3)]
    found = [SearchResult("found", k, k * 1.04, probe) for k in (1000.0, 1020.0, 990.0)]
    fast, slow = summarize("nginx", "bid", bounded), summarize("caddy", "bid", found)
    assert fast.bounded and fast.label() == "≥ 5,000/s (the tester's limit)"
    assert fast.interval is None and fast.estimate == 5000.0
    c = compare(slow, fast)
    assert (c.better, c.decided, c.at_least) == ("nginx", True, True)
    assert c.percent() == "at least 398 %"
    both = compare(fast, summarize("envoy", "bid", bounded))
    assert (both.ratio, both.decided) == (None, False)


def test_a_lower_bound_is_never_above_a_knee_the_target_was_found_at() -> None:
    """One repetition tester-bound at 400/s, the other found 258/s: the target is reported as
    at least 258/s (what every repetition held), and against a target whose interval reaches
    above that the verdict says the order is not decided, without calling them the same."""
    bounded = [
        SearchResult("tester-bound", 400.0, None, (), "lag"),
        SearchResult("found", 258.0, 270.0, ()),
    ]
    other = [SearchResult("found", k, k * 1.04, ()) for k in (150.0, 320.0)]
    fast, slow = summarize("haproxy", "bid", bounded), summarize("nginx", "bid", other)
    assert fast.bounded and fast.bound == fast.estimate == 258.0
    assert fast.label() == "≥ 258/s (the tester's limit)"
    text = verdict("bid", [fast, slow], OBJECTIVE)
    assert text.startswith("haproxy may carry more bid traffic than nginx at p99 ≤ 50 ms")
    assert "not decided" in text and "same" not in text


def test_one_search_each_leaves_the_order_undecided_never_the_same_within_the_noise() -> None:
    """One repetition (``--quick``) gives one knee per target and so no interval: the verdict
    gives the difference it saw and says the order is not decided, without calling the targets
    the same "within the noise" it never measured."""
    nginx = summarize("nginx", "list", [SearchResult("found", 7542.0, 7900.0, ())])
    haproxy = summarize("haproxy", "list", [SearchResult("found", 5365.0, 5600.0, ())])
    c = compare(nginx, haproxy)
    assert (c.better, c.low, c.high, c.decided) == ("nginx", None, None, False)
    text = verdict("list", [haproxy, nginx], OBJECTIVE)
    assert text == (
        "nginx carried 41 % more list traffic than haproxy at p99 ≤ 50 ms, errors ≤ 0.1 %, but "
        "with fewer than two searches of each there is no interval: their order is not decided "
        "(search again with more repetitions)"
    )
    # equal knees: the same traffic, not '0 % more'
    twin = summarize("haproxy", "list", [SearchResult("found", 7542.0, 7900.0, ())])
    assert verdict("list", [twin, nginx], OBJECTIVE).startswith(
        "haproxy and nginx carried the same list traffic at p99 ≤ 50 ms, errors ≤ 0.1 %, but "
        "with fewer than two searches"
    )
    knees = {"nginx": (7500.0, 7700.0), "envoy": (7300.0, 7800.0)}  # two each, overlapping
    both = [
        summarize(t, "list", [SearchResult("found", k, k * 1.04, ()) for k in ks])
        for t, ks in knees.items()
    ]
    assert "carry the same list traffic" in verdict("list", both, OBJECTIVE)
    assert "95 % CI" in verdict("list", both, OBJECTIVE)


def _probe(rate: float, outcome: str) -> ProbeOutcome:
    request = ProbeRequest(rate, "grow", 1.0, 2.0)
    return ProbeOutcome(request, SimulatedTarget()(request), Verdict(outcome, ()))  # type: ignore[arg-type]


def test_repetitions_that_disagree_are_noisy_never_a_bound() -> None:
    """Two repetitions broke at 800/s (tester-bound: the engine fell behind), a third held
    9,823/s: the target is noisy with both figures, not "≥ 766/s (the tester's limit)"."""
    late = [
        SearchResult(
            "tester-bound",
            766.0,
            None,
            (_probe(766.0, "within"), _probe(800.0, "tester-bound")),
            "lag",
        )
        for _ in range(2)
    ]
    held = SearchResult(
        "found", 9823.0, 10300.0, (_probe(9823.0, "within"), _probe(10300.0, "breached"))
    )
    s = summarize("nginx", "bid", [*late, held])
    assert s.noisy and not s.bounded
    assert s.label() == "noisy: 800/s to 9,823/s"
    assert s.disagreement_text() == (
        "the repetitions disagree: the objective broke at 800/s in repetition 1, 9,823/s held "
        "in repetition 3"
    )
    assert s.estimate is None and s.interval is None
    other = summarize(
        "haproxy", "bid", [SearchResult("found", k, k * 1.04, ()) for k in (500.0, 510.0)]
    )
    assert (compare(s, other).ratio, compare(s, other).decided) == (None, False)
    text = verdict("bid", [s, other], OBJECTIVE)
    assert text.endswith("nginx: the repetitions disagree (noisy), so no figure is given for them")
    assert KneeSummary.from_dict(s.to_dict()).label() == s.label()
    # repetitions a few per cent apart are the interval's business, not noise
    close = [
        SearchResult("found", k, k * 1.05, (_probe(k, "within"), _probe(k * 1.05, "breached")))
        for k in (900.0, 1000.0, 1100.0)
    ]
    assert not summarize("nginx", "bid", close).noisy


def test_a_bound_says_what_set_it() -> None:
    def bound(note: str) -> str:
        return summarize("a", "bid", [SearchResult("tester-bound", 900.0, None, (), note)]).label()

    assert bound("the engine dropped 2 % of arrivals") == "≥ 900/s (the tester's limit)"
    assert bound("p99 80 ms > 50 ms; the machine was saturated and the engine used more CPU") == (
        "≥ 900/s (the shared machine's limit)"
    )
    assert bound(
        "p99 80 ms > 50 ms; the engine used 95 % of its cores; noisy: other processes"
    ) == ("≥ 900/s (other work on the machine)")
    at_max = summarize("a", "bid", [SearchResult("at-max", 900.0, None, (), "max_rate 900/s held")])
    assert at_max.label() == "≥ 900/s (the plan's max_rate)"


def test_a_search_starts_from_what_the_run_already_knows() -> None:
    settings = replace(SETTINGS, repetitions=3)
    campaign = Campaign(("nginx", "baseline"), {"bid": settings, "list": settings}, 1, 3600.0)
    first = SearchKey(1, "baseline", "bid")
    assert campaign.start(first) == (100.0, True)  # nothing known: cold
    campaign.record(first, SearchResult("found", 4000.0, 4100.0, ()))
    # another target on the endpoint: half the baseline's knee, not cold
    assert campaign.start(SearchKey(1, "nginx", "bid")) == (2000.0, False)
    # the same target on another endpoint: cold (an 8.6 MB upload and a read differ by orders
    # of magnitude)
    assert campaign.start(SearchKey(1, "baseline", "list")) == (2000.0, True)
    # its own earlier repetitions first
    campaign.record(SearchKey(1, "nginx", "bid"), SearchResult("found", 1000.0, 1040.0, ()))
    start, cold = campaign.start(SearchKey(2, "nginx", "bid"))
    assert start == pytest.approx(500.0 * 2 ** (0.618034 % 1.0), rel=1e-5) and not cold
    # a bound is not a knee to start from
    bounded = Campaign(("a", "b"), {"bid": settings}, 1, 3600.0)
    bounded.record(SearchKey(1, "a", "bid"), SearchResult("tester-bound", 9000.0, None, (), "x"))
    assert bounded.start(SearchKey(1, "b", "bid")) == (100.0, True)
    # a confirmed knee before an unconfirmed one (the last rate that held on a noisy machine,
    # often far under the knee), which counts only when nothing was confirmed
    noisy = Campaign(("a", "b"), {"bid": settings, "list": settings}, 1, 3600.0)
    noisy.record(SearchKey(1, "a", "bid"), SearchResult("unconfirmed", 1600.0, None, (), "x"))
    assert noisy.start(SearchKey(1, "b", "bid")) == (800.0, False)
    noisy.record(SearchKey(1, "b", "list"), SearchResult("found", 6000.0, 6200.0, ()))
    assert noisy.start(SearchKey(1, "b", "bid")) == (3000.0, True)


def test_a_campaign_needs_at_most_ten_probes_a_search() -> None:
    """From a cold start: the first search of the run grows fast and reads the overload; the
    others start next to the knees found (the baseline's, the previous target's)."""
    targets = {
        "baseline": SimulatedTarget(workers=200, service_ms=10.0, jitter=0.05),  # 20,000/s
        "nginx": SimulatedTarget(workers=60, service_ms=10.0, jitter=0.05),  # 6,000/s
        "spring": SimulatedTarget(workers=4, service_ms=10.0, jitter=0.05),  # 400/s
    }
    campaign = run_campaign(targets, replace(SETTINGS, repetitions=3))
    for (target, _), results in campaign.results.items():
        for r in results:
            assert r.status == "found" and len(r.probes) <= 10, (target, len(r.probes))
            assert abs((r.knee or 0) - targets[target].capacity) / targets[target].capacity <= 0.06


def test_a_verdict_without_a_knee_says_what_stopped_the_searches() -> None:
    """Uploads the tester cannot send at the lowest rate: no knee, and the verdict says why
    (never that nothing was carried); targets that broke the objective even at the lowest rate
    carried nothing, said once, not compared as 0 % more."""
    why = "the engine dropped 65 of 200 arrivals (32.5 %)"
    bounded = [SearchResult("tester-bound", None, 100.0, (), why)] * 2
    text = verdict("upload", [summarize("nginx", "upload", bounded)] * 2, OBJECTIVE)
    assert text == f"no target could be measured on upload at p99 ≤ 50 ms, errors ≤ 0.1 %: {why}"
    nothing = [SearchResult("nothing", None, 10.0, (), "the objective broke even at 10/s")] * 2
    summaries = [summarize(g, "bid", nothing) for g in ("nginx", "haproxy")]
    assert verdict("bid", summaries, OBJECTIVE) == (
        "no gateway carried bid traffic at p99 ≤ 50 ms, errors ≤ 0.1 %, even at the lowest rate "
        "probed, 10/s: nginx, haproxy carry less"
    )


def test_one_gateway_is_put_against_the_baseline() -> None:
    found = [SearchResult("found", k, k * 1.04, ()) for k in (800.0, 820.0, 810.0)]
    base = [SearchResult("found", k, k * 1.04, ()) for k in (1000.0, 1000.0, 1030.0)]
    text = verdict(
        "bid", [summarize("nginx", "bid", found), summarize("baseline", "bid", base)], OBJECTIVE
    )
    assert text == (
        "nginx carries 810/s (95 % CI 785–835) of bid traffic at p99 ≤ 50 ms, errors ≤ 0.1 %, "
        "80 % of what the backend carries without a gateway"
    )


def test_the_price_of_a_million_requests_at_the_knee() -> None:
    # a machine at 0.0971 USD an hour, busy at 1,000/s, serves 3.6 million requests an hour
    assert price_per_million(1000.0, 0.0971) == pytest.approx(0.0971 / 3.6)
    s = summarize("nginx", "bid", [SearchResult("found", 1000.0, 1040.0, ())])
    assert s.price_per_million(0.0971) == pytest.approx(0.02697, abs=1e-5)
    assert s.price_per_million(None) is None
    assert s.label() == "1,000/s (one repetition: no interval)"


def test_the_result_of_a_campaign_round_trips_and_holds_the_curves() -> None:
    from gatebench.kinds.capacity import CapacityResult, capacity_result

    targets = {
        "haproxy": SimulatedTarget(workers=8, service_ms=10.0, jitter=0.1),
        "baseline": SimulatedTarget(workers=16, service_ms=10.0, jitter=0.1),
    }
    campaign = run_campaign(targets, replace(SETTINGS, repetitions=3))
    result = capacity_result(campaign, machine="n2-standard-2", hourly_usd=0.0971)
    (bid,) = result.endpoints
    assert bid.objective == "p99 ≤ 50 ms, errors ≤ 0.1 %"
    assert [s.target for s in bid.summaries] == ["haproxy", "baseline"]
    assert list(bid.prices) == ["haproxy"]  # the baseline has no gateway to price
    haproxy = bid.summary("haproxy")
    assert haproxy is not None and haproxy.mean is not None
    assert bid.prices["haproxy"] == pytest.approx(0.0971 / (haproxy.mean * 3600) * 1e6)
    probes = sum(len(r.probes) for rs in campaign.results.values() for r in rs)
    assert len(result.curves) == probes
    assert {(c.target, c.repetition) for c in result.curves} == {
        (t, r) for t in targets for r in (1, 2, 3)
    }
    assert result.stop == campaign.stop and result.repetitions == 3
    again = CapacityResult.from_dict(result.to_dict())
    assert again == result


def test_a_probe_document_is_the_workloads_requests_at_the_probes_rate() -> None:
    from gatebench.core.plan import build_plan
    from gatebench.core.workload import phases_from_document
    from gatebench.kinds.capacity._document import measured_index, probe_document, probe_template
    from plans import auction_api, section

    api = auction_api()
    plan = build_plan(section(), api)
    template = probe_template(
        plan, api, "get", "nginx", "http://127.0.0.1:9", reset_url="http://127.0.0.1:8/r"
    )
    doc = probe_document(template, ProbeRequest(250.0, "bisect", 0.5, 2.0), seed=7)
    warm, measured = phases_from_document(doc)
    assert (warm.measured, measured.measured) == (False, True)
    assert warm.injection.rate == measured.injection.rate == 250.0
    assert (warm.injection.duration, measured.injection.duration) == (0.5, 2.0)
    assert [c.url for c in warm.before] == ["http://127.0.0.1:8/r"] and measured.before == ()
    assert doc["phases"][1]["request"]["base_url"] == "http://127.0.0.1:9"
    assert measured_index(doc) == 1
    assert template["phases"][0]["injection"]["rate"] == 1.0  # the template is not changed
    cold = probe_document(template, ProbeRequest(250.0, "grow", 0.0, 2.0), seed=7)
    (only,) = phases_from_document(cold)
    assert only.measured and [c.url for c in only.before] == ["http://127.0.0.1:8/r"]
    assert probe_document(template, ProbeRequest(250.0, "grow", 0.5, 2.0), seed=8) != doc
    # requests time out after 20 × the tightest bound (p99 ≤ 50 ms: 1 s), not the workload's 60 s
    assert {p["request"]["timeout_ms"] for p in doc["phases"]} == {1000}
    # the measured phase checks every answer the backend signs; never those of the ceiling
    # server, a static file server whose answers no backend signed (each would be wrong)
    assert measured.answers_checked and "answers" in doc["phases"][1]
    # the warm-up's requests name themselves too: a gateway caching the operation answers the
    # window from what the warm-up left, which was unsigned, so a wrong answer every time
    assert warm.answers_checked and "answers" in doc["phases"][0]
    from gatebench.core.trust import CEILING_TARGET

    ceiling = probe_template(plan, api, "get", CEILING_TARGET, "http://127.0.0.1:9")
    assert [p.answers_checked for p in phases_from_document(ceiling)] == [False, False]


def test_a_probes_counters_go_on_from_its_warm_up() -> None:
    """The auction example's bids rise (a counter) and the backend refuses one not above the
    highest: the measured phase follows its warm-up on the same auction (one reset, before the
    warm-up), so its counter starts after the warm-up's last value, not at the start again."""
    from gatebench.core.plan import build_plan
    from gatebench.core.spec import read_spec
    from gatebench.kinds.capacity._document import probe_document, probe_template

    read = read_spec(str(Path(__file__).parents[2] / "examples/auction/openapi.yaml"))
    assert read.api is not None
    plan = build_plan(dict(read.benchmark, gateways=["nginx"]), read.api)
    template = probe_template(plan, read.api, "bid", "nginx", "http://127.0.0.1:9")
    doc = probe_document(template, ProbeRequest(250.0, "grow", 0.5, 2.0), seed=7)
    warm, measured = (p["params"]["amount"] for p in doc["phases"])
    assert (warm["kind"], warm["start"], warm["step"]) == ("counter", 1, 1)
    assert measured["start"] == 1 + 125  # 250/s for 0.5 s: values 1..125 in the warm-up
    cold = probe_document(template, ProbeRequest(250.0, "grow", 0.0, 2.0), seed=7)
    assert [p["params"]["amount"]["start"] for p in cold["phases"]] == [1]


def test_a_campaign_round_trips_as_json() -> None:
    import json

    targets = {"a": SimulatedTarget(workers=4), "b": SimulatedTarget(workers=8)}
    campaign = run_campaign(
        targets, replace(SETTINGS, repetitions=3, objective=Objective((("p95", 40.0),), 1.0))
    )
    again = Campaign.from_dict(json.loads(json.dumps(campaign.to_dict())))
    assert again.to_dict() == campaign.to_dict()
    assert again.summaries("bid") == campaign.summaries("bid")
    assert again.settings == campaign.settings


def test_the_engines_ceiling_is_one_coarse_search_against_the_fastest_target() -> None:
    from gatebench.kinds.capacity import ceiling_of, ceiling_settings

    coarse = ceiling_settings(replace(SETTINGS, precision=0.02, confirm=9.0, repetitions=7))
    assert (coarse.precision, coarse.confirm, coarse.repetitions) == (0.10, 0.0, 1)
    assert coarse.objective == SETTINGS.objective and coarse.max_rate == SETTINGS.max_rate
    found = search(coarse, SimulatedTarget(workers=40, service_ms=10.0))  # 4,000/s
    assert found.status == "found" and ceiling_of(found) == found.knee
    assert len(found.probes) <= 10
    engine_bound = search(coarse, SimulatedTarget(workers=400, service_ms=10.0, engine_rate=3000.0))
    assert engine_bound.status == "tester-bound" and ceiling_of(engine_bound) == engine_bound.knee
    # searched as the ceiling: a rate the tester cannot offer is bisected below, not the end
    engine = search(
        coarse, SimulatedTarget(workers=400, service_ms=10.0, engine_rate=3000.0), ceiling=True
    )
    assert engine.status == "found" and engine.knee is not None
    assert 3000 / 1.1 / 1.1 <= engine.knee <= 3000.0 and ceiling_of(engine) == engine.knee
    at_max = search(replace(coarse, max_rate=800.0), SimulatedTarget(workers=400, service_ms=10.0))
    assert at_max.status == "at-max" and ceiling_of(at_max) is None


def test_a_target_that_stops_during_a_search_is_searched_no_more() -> None:
    from gatebench.kinds.capacity import TargetDown

    healthy = {"a": SimulatedTarget(workers=4), "b": SimulatedTarget(workers=8)}
    calls = {"a": 0}

    def probe_for(key: SearchKey) -> Probe:
        def probe(request: ProbeRequest) -> ProbeMetrics:
            if key.target == "a":
                calls["a"] += 1
                if calls["a"] == 3:
                    raise TargetDown("a exited with code 1 during the run")
            return healthy[key.target](request)

        return probe

    campaign = Campaign(("a", "b"), {"bid": replace(SETTINGS, repetitions=3)}, 2, 3600.0)
    drive(campaign, probe_for)
    a, b = campaign.results[("a", "bid")], campaign.results[("b", "bid")]
    assert [r.status for r in a] == ["failed"] and a[0].knee is None
    assert a[0].note == "a exited with code 1 during the run" and len(a[0].probes) == 2
    assert campaign.failed == {"a": "a exited with code 1 during the run"}
    assert len(b) == 3 and all(r.status == "found" for r in b)
    assert campaign.stop == "all 3 repetitions ran"


def test_the_capacity_report_cautions_about_probes_with_wrong_answers() -> None:
    from gatebench.kinds.capacity import CapacityResult, CurvePoint
    from gatebench.kinds.capacity._report import capacity_cautions

    def point(target: str, rate: float, reasons: str) -> CurvePoint:
        return CurvePoint(
            target, "bid", 1, rate, "grow", "breached", 2.0, 9.0, 0.0, rate, 0.1, reasons
        )

    curves = (
        point("nginx", 100.0, ""),
        point("nginx", 200.0, "2 wrong answers (crossed 2); p99 80.0 ms > 50 ms"),
        point("caddy", 100.0, "p99 80.0 ms > 50 ms"),
    )
    cautions = capacity_cautions(CapacityResult((), curves, "done", 1))
    assert cautions == [
        "1 of 3 probes got wrong answers (nginx): answers that were not the backend's answer "
        "to their request, whole; a rate at which a target answers wrongly is not one it "
        'carries (docs/trust.md, "Right answers under load").'
    ]


def test_a_tester_bound_probe_far_under_the_engines_ceiling_runs_once_more() -> None:
    """A stall of the engine at 160/s with a ceiling of 10,000/s (the auction's read once ended
    its search at 97/s so): the same probe runs again, and its second outcome is the one the
    search goes on with; near the ceiling a tester-bound probe is the limit, not run again."""
    target = SimulatedTarget(workers=4, service_ms=10.0)  # 400/s
    stalls = {160.0}

    def probe(request: ProbeRequest) -> ProbeMetrics:
        metrics = target(request)
        if request.rate in stalls:
            stalls.discard(request.rate)  # once
            return replace(metrics, dropped=metrics.scheduled, requests=0)
        return metrics

    start = 10.0
    result = search(SETTINGS, probe, limits=Limits(ceiling=10_000.0), start_rate=start)
    seen = [(p.request.rate, p.verdict.outcome) for p in result.probes]
    assert seen[:6] == [
        (10.0, "within"),
        (20.0, "within"),
        (40.0, "within"),
        (80.0, "within"),
        (160.0, "tester-bound"),
        (160.0, "within"),
    ]
    assert result.status == "found" and result.knee is not None and result.knee > 360.0
    # an engine that used its cores there is at its limit, however far under its ceiling
    stalls.add(160.0)

    def busy(request: ProbeRequest) -> ProbeMetrics:
        found = probe(request)
        return replace(found, engine_cpu_pct=99.0) if found.requests == 0 else found

    result = search(SETTINGS, busy, limits=Limits(ceiling=10_000.0), start_rate=start)
    assert [p.request.rate for p in result.probes][-1:] == [160.0]
    assert (result.status, result.knee) == ("tester-bound", 80.0)
    # near the ceiling (at least 40 % of it), tester-bound is the limit: no second run
    near = SimulatedTarget(workers=400, service_ms=10.0, engine_rate=3_000.0)
    bounded = search(SETTINGS, near, limits=Limits(ceiling=4_000.0))
    rates = [p.request.rate for p in bounded.probes]
    assert bounded.status == "tester-bound" and len(rates) == len(set(rates)), rates


def test_a_gateway_that_carries_more_than_the_baseline_is_a_caution() -> None:
    from gatebench.kinds.capacity import CapacityResult, Comparison, EndpointResult
    from gatebench.kinds.capacity._report import capacity_cautions

    def endpoint(ratio: float, low: float | None, high: float | None) -> EndpointResult:
        decided = low is not None
        found = Comparison("bid", "nginx", "baseline", ratio, low, high, decided=decided)
        return EndpointResult("bid", "p99 ≤ 50 ms", (), (found,), "v", "stop")

    pinned = {
        "cpu_affinity": {"cores": {"gateway": [1], "engine": [0], "backend": [0]}},
        "tls": {"http2": True},
    }
    said = (
        "nginx carried more than the baseline (no gateway) on bid: there the baseline is no "
        "floor (the baseline is the backend itself, which ran on the load engine's cpu 0 "
        "while each gateway had its own; with tls, the backend ends TLS itself at the "
        "baseline), so compare the gateways with one another."
    )
    decided = CapacityResult((endpoint(1.3, 1.2, 1.4),), (), "done", 3)
    assert capacity_cautions(decided, pinned) == [said]
    one_search = CapacityResult((endpoint(1.3, None, None),), (), "done", 1)
    assert said in capacity_cautions(one_search, pinned)
    close = CapacityResult((endpoint(1.05, None, None),), (), "done", 1)
    assert not any("no floor" in c for c in capacity_cautions(close, pinned))
    unpinned = capacity_cautions(decided, {})
    assert unpinned == [
        "nginx carried more than the baseline (no gateway) on bid: there the baseline is no "
        "floor, so compare the gateways with one another."
    ]
