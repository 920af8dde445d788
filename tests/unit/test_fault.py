"""What a killed replica did to a phase (gatebench.core.fault), on simulated requests and
connection attempts whose answer is known."""

from __future__ import annotations

import pytest

from gatebench.core.fault import Request, fault_impact

KILL = 1000.0


def _steady(start: float, end: float, every: float, latency: float) -> list[Request]:
    out, t = [], start
    while t < end:
        out.append(Request(t, t + latency, True))
        t += every
    return out


def test_a_gateway_that_retries_elsewhere_shows_no_error_but_keeps_trying() -> None:
    requests = _steady(KILL - 5, KILL + 5, 0.01, 0.001)
    # a connection attempt to the dead replica every 30 ms for 1.2 s, then a probe a second
    attempts = [KILL + 0.03 * i for i in range(40)] + [KILL + 2.0 + i for i in range(3)]
    impact = fault_impact(requests, KILL, KILL + 5, attempts)
    assert impact.errors == 0
    assert impact.spike_ms == 0.0
    assert impact.disturbed_s == 0.0
    assert impact.stopped_after_s == pytest.approx(1.25)
    assert impact.attempts == 43
    assert impact.probe_rate == pytest.approx(1 / 1.5)  # one probe in the last third


def test_errors_and_a_spike_until_the_health_check_takes_it_out() -> None:
    requests = _steady(KILL - 5, KILL + 5, 0.01, 0.002)
    # every third request after the kill fails until 2 s, one waits 300 ms
    hit = []
    for i, r in enumerate(requests):
        if KILL <= r.start < KILL + 2 and i % 3 == 0:
            hit.append(Request(r.start, r.start + 0.001, False))
        else:
            hit.append(r)
    hit.append(Request(KILL + 0.5, KILL + 0.8, True))
    impact = fault_impact(hit, KILL, KILL + 5, None)
    assert impact.errors == sum(1 for r in hit if not r.ok) > 60
    assert impact.error_pct == pytest.approx(100 * impact.errors / impact.requests_after)
    assert impact.p99_before_ms == pytest.approx(2.0)
    assert impact.spike_ms == pytest.approx(298.0)
    assert 1.98 < impact.disturbed_s < 2.0
    assert impact.stopped_after_s == pytest.approx(impact.disturbed_s)
    assert impact.attempts is None and impact.probe_rate is None


def test_nothing_observed_says_so() -> None:
    requests = _steady(KILL - 1, KILL + 1, 0.1, 0.001)
    impact = fault_impact(requests, KILL, KILL + 1, None)
    assert impact.stopped_after_s is None
    assert impact.errors == 0
    assert impact.to_dict()["requests_after"] == 10


def test_one_retry_at_the_kill_then_only_probes() -> None:
    requests = _steady(KILL - 1, KILL + 4, 0.01, 0.001)
    impact = fault_impact(requests, KILL, KILL + 4, [KILL + 0.004, KILL + 1.0, KILL + 2.0])
    assert impact.stopped_after_s == pytest.approx(0.004)
    assert impact.attempts == 3


def test_other_gateways_probes_are_the_background_not_traffic() -> None:
    """Six gateways each probe the dead replica once a second (at their own offsets): the
    gateway under test retried twice at the kill and stopped; their probes are no traffic."""
    requests = _steady(KILL - 1, KILL + 6, 0.01, 0.001)
    probes = [KILL + 0.02 + g * 0.04 + s for g in range(6) for s in range(6)]
    attempts = [KILL + 0.001, KILL + 0.002, *probes]
    impact = fault_impact(requests, KILL, KILL + 6, attempts, probers=6)
    assert impact.stopped_after_s is not None and impact.stopped_after_s <= 0.25
    assert impact.probe_rate == pytest.approx(6.0, rel=0.2)


def test_a_gateway_still_sending_at_the_phases_end_is_not_the_background() -> None:
    """Envoy once its passive ejection ran out: hundreds of attempts a second to the dead
    replica until the phase ended, hidden by its retries. The last third of the window is no
    background when it is busier than every gateway's health checks together can be: it kept
    sending to the end (it read 0.1 s)."""
    requests = _steady(KILL - 1, KILL + 6, 0.01, 0.001)
    probes = [KILL + 0.02 + g * 0.04 + s for g in range(6) for s in range(6)]
    flood = [KILL + 2.5 + i / 250 for i in range(int(3.5 * 250))]  # 250 a second to the end
    impact = fault_impact(requests, KILL, KILL + 6, [KILL + 0.001, *probes, *flood], probers=6)
    assert impact.stopped_after_s == pytest.approx(6.0, abs=0.25)


def test_requests_in_flight_at_the_kill_are_the_ones_it_breaks() -> None:
    """As haproxy did in a real run: the requests on connections to the replica when it was
    killed started 1-4 ms before the kill and failed some 3 s later; those started after it
    went elsewhere. They are the errors, the spike and the disturbance."""
    requests = _steady(KILL - 5, KILL + 5, 0.01, 0.002)
    in_flight = [
        Request(KILL - 0.001 * (1 + i % 4), KILL + 3.03 + 0.001 * i, False) for i in range(13)
    ]
    impact = fault_impact(requests + in_flight, KILL, KILL + 5, None)
    assert impact.errors == 13
    assert impact.requests_after == 13 + sum(1 for r in requests if r.end >= KILL - 0.005)
    assert impact.p99_before_ms == pytest.approx(2.0)
    assert impact.spike_ms == pytest.approx(3030 + 12 + 4 - 2, abs=1)
    assert impact.disturbed_s == pytest.approx(3.042)
    assert impact.stopped_after_s == pytest.approx(3.042)


def test_a_failure_the_engine_ends_a_millisecond_before_the_recorded_kill_counts() -> None:
    """The engine's clock (whole milliseconds) and the killer's disagree by a little: a request
    that failed at once, recorded as ending just before the kill, was still the kill's; one
    that ended well before it was not."""
    requests = _steady(KILL - 2, KILL + 2, 0.01, 0.001)
    fast = [Request(KILL - 0.004, KILL - 0.001, False), Request(KILL - 0.003, KILL + 0.002, False)]
    earlier = Request(KILL - 0.5, KILL - 0.45, False)  # a failure over before the kill
    impact = fault_impact([*requests, *fast, earlier], KILL, KILL + 2, None)
    assert impact.errors == 2
    assert impact.disturbed_s == pytest.approx(0.002)
    assert impact.stopped_after_s == pytest.approx(0.002)


def test_only_the_gateways_measured_phases_of_the_workload_carry_the_fault() -> None:
    """Never the baseline's (it has no pool) nor the load engine's ceiling's (it measures the
    engine: a kill there took the replica out of every gateway's pool just before their
    phases, and Envoy's passive ejection then ran out inside its own)."""
    from types import SimpleNamespace

    from gatebench.core.fault import fault_offsets
    from gatebench.core.model import BASELINE
    from gatebench.core.trust import CEILING_TARGET

    fault = SimpleNamespace(workload="get", offset=lambda duration: duration / 2)
    phases = [
        SimpleNamespace(
            index=i,
            target=target,
            workload=workload,
            measured=measured,
            injection=SimpleNamespace(duration=8.0),
        )
        for i, (target, workload, measured) in enumerate(
            [
                (CEILING_TARGET, "get", True),
                ("envoy", "get", False),  # its warm-up
                ("envoy", "get", True),
                ("envoy", "post", True),
                (BASELINE, "get", True),
            ]
        )
    ]
    assert fault_offsets(fault, phases) == {2: 4.0}  # type: ignore[arg-type]
