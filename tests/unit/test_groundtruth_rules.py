"""The ground-truth rules (tests/groundtruth.py) on constructed timelines: a closed model of
kept-alive connections whose every moment is known, so each rule can be shown to hold for a
correct engine on any machine (here: every request delayed by up to 3 ms of transit) and to
break for a real error. The real engines and backend are in
tests/integration/test_ground_truth.py."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

import pytest

from gatebench.core.model import Measurement
from gatebench.core.stats import nearest_rank
from gatebench.local.backends import BackendTimeline, ServedRequest
from groundtruth import HOLD_WITNESS_MS, judge_phase
from groundtruth import nearest_rank as rank_of

HOLD_MS = 20.0
START_WALL_US = 1_800_000_000_000_000


@dataclass(frozen=True)
class Exchange:
    """One request as both sides saw it, in µs on the backend's clock."""

    sent: int
    received: int
    released: int
    read: int


def closed_model(
    connections: int = 4,
    per_connection: int = 40,
    transit_us: int = 3000,
    turnaround_us: int = 200,
    seed: int = 1,
) -> tuple[list[list[Exchange]], list[ServedRequest]]:
    """Each connection sends its next request as soon as it read the answer before (the
    client's turnaround: 5 µs to ``turnaround_us``); each transit (send to receipt, release to
    read) takes 10 µs to ``transit_us``, the machine's doing; the backend holds 20 ms and
    30-300 µs."""
    rng = random.Random(seed)
    exchanges: list[list[Exchange]] = []
    for _ in range(connections):
        at = rng.randint(1000, 2000)
        chain = []
        for _ in range(per_connection):
            received = at + rng.randint(10, transit_us)
            released = received + int(HOLD_MS * 1000) + rng.randint(30, 300)
            read = released + rng.randint(10, transit_us)
            chain.append(Exchange(at, received, released, read))
            at = read + rng.randint(5, turnaround_us)
        exchanges.append(chain)
    served = []
    for conn, chain in enumerate(exchanges, start=1):
        for k, e in enumerate(chain):
            served.append(
                ServedRequest(
                    seq=0,
                    epoch=1,
                    conn=conn,
                    http2=False,
                    control=False,
                    received_us=e.received,
                    released_us=e.released,
                    prev_release_us=chain[k - 1].released if k else None,
                    next_receipt_us=chain[k + 1].received if k + 1 < len(chain) else None,
                    held_from_us=e.received + 5,
                    held_to_us=e.released - 5,
                    worker=None,
                )
            )
    served.sort(key=lambda r: r.received_us)
    return exchanges, [replace(r, seq=i + 1) for i, r in enumerate(served)]


def timeline(served: list[ServedRequest]) -> BackendTimeline:
    return BackendTimeline(START_WALL_US, 1, 0, tuple(served))


def measurement(engine: str, latencies: list[float]) -> Measurement:
    """The engine's report; its window spans every constructed request."""
    values = sorted(latencies)
    return Measurement(
        run_id="r",
        target="baseline",
        workload="read",
        repetition=1,
        requests=len(values),
        ok=len(values),
        ko=0,
        error_pct=0.0,
        throughput=1.0,
        min=values[0],
        mean=sum(values) / len(values),
        max=values[-1],
        stddev=0.0,
        p50=nearest_rank(values, 50),
        p90=nearest_rank(values, 90),
        p95=nearest_rank(values, 95),
        p99=nearest_rank(values, 99),
        started_at=START_WALL_US / 1e6,
        duration_s=100.0,
        engine=engine,
    )


def wrk_latencies(exchanges: list[list[Exchange]], add_ms: float = 0.0) -> list[float]:
    return [(e.read - e.sent) / 1000 + add_ms for chain in exchanges for e in chain]


def gatling_view(
    exchanges: list[list[Exchange]], add_ms: int = 0, reference_ms: float = 0.37
) -> tuple[list[float], list[tuple[float, float]]]:
    """Gatling's stamps of each request, in epoch ms: its clock read the wall clock once, in
    whole ms (``reference_ms`` into a millisecond), then adds whole ms of the monotonic clock;
    and its latencies (read - sent)."""
    reference = START_WALL_US / 1000 + 1000.0 + reference_ms  # an exact moment

    def stamp(us: int) -> float:
        t = (START_WALL_US + us) / 1000
        return float(math.floor(reference) + math.floor(t - reference))

    stamps = [(stamp(e.sent), stamp(e.read) + add_ms) for chain in exchanges for e in chain]
    return [r - s for s, r in stamps], stamps


@pytest.mark.parametrize(("seed", "reference_ms"), [(0, 0.0), (1, 0.37), (2, 0.99), (3, 0.5)])
def test_a_correct_engine_passes_on_any_machine(seed: int, reference_ms: float) -> None:
    exchanges, served = closed_model(seed=seed)
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(exchanges)), timeline(served), hold_ms=HOLD_MS, in_flight=0
    )
    assert verdict.passed, verdict.describe()
    latencies, stamps = gatling_view(exchanges, reference_ms=reference_ms)
    verdict = judge_phase(
        measurement("gatling", latencies),
        timeline(served),
        hold_ms=HOLD_MS,
        in_flight=0,
        stamps_ms=stamps,
    )
    assert verdict.passed, verdict.describe()


def test_the_requests_in_flight_when_the_engine_stopped_do_not_break_a_rule() -> None:
    """wrk stops counting with each connection's last request in flight: the backend served
    them, the engine never reports them."""
    exchanges, served = closed_model()
    reported = [chain[:-1] for chain in exchanges]
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(reported)), timeline(served), hold_ms=HOLD_MS, in_flight=4
    )
    assert verdict.passed, verdict.describe()
    assert (verdict.requests, verdict.served) == (156, 160)
    tight = judge_phase(
        measurement("wrk", wrk_latencies(reported)), timeline(served), hold_ms=HOLD_MS, in_flight=3
    )
    assert tight.breaches == [
        "counts: the engine reports 156 requests, the backend served 160; expected 156 to 159"
    ]


@pytest.mark.parametrize("seed", range(5))
def test_an_engine_that_adds_2_ms_breaks_the_sum_rule_on_a_machine_slow_at_every_hop(
    seed: int,
) -> None:
    """Every transit up to 3 ms (the machine): the chain bound of one request has up to two
    transits of slack, too much to see 2 ms in; the connections' spans have two per
    connection, so the sum of the latencies shows it."""
    exchanges, served = closed_model(transit_us=3000, seed=seed)
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(exchanges, add_ms=2.0)),
        timeline(served),
        hold_ms=HOLD_MS,
        in_flight=0,
    )
    assert not verdict.passed
    assert any(b.startswith("latency, sum: 160 latencies ") for b in verdict.breaches), (
        verdict.describe()
    )
    assert all(b.startswith(("latency, upper", "latency, sum")) for b in verdict.breaches)
    correct = judge_phase(
        measurement("wrk", wrk_latencies(exchanges)),
        timeline(served),
        hold_ms=HOLD_MS,
        in_flight=0,
    )
    assert correct.passed and 0 < correct.margin_ms < 0.5, correct.describe()


@pytest.mark.parametrize("reference_ms", [0.0, 0.5, 0.99])
def test_gatling_reads_stamped_2_ms_late_leave_no_clock_offset(reference_ms: float) -> None:
    """Whatever Gatling's clock reference, reads 2 ms late against the sends: the machine's
    hops (up to 3 ms) leave some requests whose read-to-next-receipt and release-to-send gaps
    are short, and no offset of the clock satisfies both."""
    exchanges, served = closed_model(transit_us=3000)
    latencies, stamps = gatling_view(exchanges, add_ms=2, reference_ms=reference_ms)
    verdict = judge_phase(
        measurement("gatling", latencies),
        timeline(served),
        hold_ms=HOLD_MS,
        in_flight=0,
        stamps_ms=stamps,
    )
    assert any(b.startswith("stamps, no clock offset fits: ") for b in verdict.breaches), (
        verdict.describe()
    )


def test_an_engine_that_reads_faster_than_the_hold_breaks_the_lower_rule() -> None:
    """Under-reporting by more than the fastest request's transit (a few µs to 0.3 ms here)."""
    exchanges, served = closed_model(transit_us=300)
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(exchanges, add_ms=-0.5)),
        timeline(served),
        hold_ms=HOLD_MS,
        in_flight=0,
    )
    lower = [b for b in verdict.breaches if b.startswith("latency, lower")]
    assert lower and lower[0].startswith("latency, lower: min = "), verdict.describe()


def test_a_stamp_before_the_backends_release_breaks_the_stamp_rule() -> None:
    """Gatling's end stamps 3 ms early (its latencies short by as much): the answer cannot be
    read before the backend released it."""
    exchanges, served = closed_model(transit_us=500)
    latencies, stamps = gatling_view(exchanges, add_ms=-3)
    verdict = judge_phase(
        measurement("gatling", latencies),
        timeline(served),
        hold_ms=HOLD_MS,
        in_flight=0,
        stamps_ms=stamps,
    )
    assert any(
        b.startswith("stamps, no clock offset fits: ") and "'read no earlier than released'" in b
        for b in verdict.breaches
    ), verdict.describe()
    assert any(b.startswith("latency, lower") for b in verdict.breaches)


def test_a_hold_that_is_wrong_for_every_request_is_caught_by_the_fastest() -> None:
    exchanges, served = closed_model()
    too_long = [replace(r, held_to_us=(r.held_to_us or 0) + 2000) for r in served]
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(exchanges)),
        timeline(too_long),
        hold_ms=HOLD_MS,
        in_flight=0,
    )
    (breach,) = verdict.breaches
    assert breach.startswith("hold, a wrong one moves every request: the fastest of 160 holds is ")
    assert breach.endswith(f"more than {HOLD_WITNESS_MS:g} ms over the configured 20 ms")
    early = [replace(r, held_to_us=(r.held_to_us or 0) - 500) for r in served]
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(exchanges)), timeline(early), hold_ms=HOLD_MS, in_flight=0
    )
    (breach,) = verdict.breaches
    assert breach.startswith("hold, never early: the fastest hold is 19.")


def test_a_machine_that_delays_most_releases_does_not_move_the_witness() -> None:
    """The backend released 490 of 500 requests 2.5 ms late (a busy machine), 10 on time."""
    exchanges, served = closed_model(connections=5, per_connection=100)
    late = [
        replace(r, held_to_us=(r.held_to_us or 0) + (0 if i % 50 == 0 else 2500))
        for i, r in enumerate(served)
    ]
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(exchanges)), timeline(late), hold_ms=HOLD_MS, in_flight=0
    )
    assert verdict.passed, verdict.describe()


def test_control_calls_and_other_epochs_are_not_the_phase() -> None:
    exchanges, served = closed_model()
    extra = [
        replace(served[0], seq=1000, control=True),
        replace(served[1], seq=1001, epoch=0),
    ]
    verdict = judge_phase(
        measurement("wrk", wrk_latencies(exchanges)),
        timeline([*served, *extra]),
        hold_ms=HOLD_MS,
        in_flight=0,
    )
    assert verdict.passed and verdict.served == 160


def test_the_percentile_ranks_are_the_stats_nearest_ranks() -> None:
    values = list(range(1, 202))
    for pct in (0, 50, 90, 95, 99, 100):
        assert values[rank_of(pct, len(values)) - 1] == (
            nearest_rank(values, pct) if pct else values[0]
        )


def test_the_phase_is_the_connections_that_served_inside_its_window() -> None:
    """A warm-up after the measured phase does not reset the backend: its requests share the
    epoch but come on other connections (a gateway's, a new engine process's), after the
    window."""
    exchanges, served = closed_model()
    last = max(r.released_us or 0 for r in served)
    after = [
        replace(served[0], seq=2000 + i, conn=99, received_us=last + 200 + i * 100)
        for i in range(30)
    ]
    first = min(r.received_us for r in served)
    m = replace(
        measurement("wrk", wrk_latencies(exchanges)),
        started_at=(START_WALL_US + first) / 1e6,
        duration_s=(last - first) / 1e6,
    )
    verdict = judge_phase(m, timeline([*served, *after]), hold_ms=HOLD_MS, in_flight=0)
    assert verdict.passed and verdict.served == 160, verdict.describe()
