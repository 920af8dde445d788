"""The ground truth judged against the same machine (a test helper: nothing in the product
imports it). One definition of the rules every ground-truth test applies to an engine's figures
and the backend's own timeline of the same requests (``gatebench.local.backends.backend_requests``,
the Go server's ``record.go``).

Why: a fixed band ("p50 within 1 ms of the 20 ms hold") holds only on a machine that is
quiet in ways no test can see: a quiet virtual machine of this kind has read 23 ms at p50 for
a 20 ms hold with every other process idle (docs/development.md, "Timing on a shared
machine"). The engine and the backend see the same machine at the same moment, so rules that
follow from how a request travels hold between them whatever the machine does; a real error of
an engine or of the backend breaks them. Absolute bands are benchmarks
(benchmarks/bench_ground_truth.py).

The rules, for one measured phase through no gateway (the engine's connections are the
backend's), with n requests the engine reports and N the backend served in the phase's epoch:

- **hold, never early**: the backend held every request at least the configured latency;
- **hold, a wrong one moves every request**: its fastest hold is within
  :data:`HOLD_WITNESS_MS` of the configured latency (the machine delays some releases, a wrong
  hold every one);
- **counts**: ``n <= N <= n + in_flight`` (the engine reports no request the backend did not
  serve; the backend may have served the ones in flight when the engine stopped counting);
- **latency, lower**: a request takes at least its hold (received to released), so the r-th
  smallest latency is at least the r-th smallest hold;
- **latency, upper**: a closed-model client on a kept-alive connection sends request k only
  after reading answer k-1 and reads answer k before sending k+1, so its latency of k is at
  most the backend's time from releasing k-1 to receiving k+1 on that connection (the
  *chain bound*; none for a connection's first and last request); so the r-th smallest latency
  is at most the (r + N - n)-th smallest chain bound;
- **latency, sum**: along one connection the same holds for a run of requests: their latencies
  add up to at most the time from the release before the first to the receipt after the last,
  less the client's turnarounds between them. Summed over the connections, this bounds the
  reported mean (less the few requests no run covers, counted at the reported max). Its slack
  is the client's turnarounds and two transits per connection, not two per request, so an
  error added to every latency is caught even on a machine whose every hop is slow;
- **timestamps** (engines that stamp each request, Gatling): a request is sent no later than
  the backend received it and no earlier than it released the one before on its connection;
  it is read no earlier than its release and no later than the next receipt on its
  connection. Gatling's clock is the wall clock read once in whole ms plus whole ms of the
  monotonic clock, so its stamps are off by one unknown offset (at most 1 ms behind) and
  their own truncation: the rule is that one offset satisfies the four at once
  (:func:`judge_stamps`).

Rank by rank: without a request id shared by the engine and the backend, a rule ``u_k <= v_k``
for every request k implies ``sorted(u)[r] <= sorted(v)[r]`` for every rank r (and with N - n
requests of the backend that the engine did not report, ``<= sorted(v)[r + N - n]``). The
reported percentiles (min, p50, p90, p95, p99, max: nearest rank) are judged at their ranks,
every stamped request at its own.

Tolerances are the engine's resolution (Gatling's whole milliseconds: a latency read from two
ms stamps is off by less than 1 ms either way; a stamp is the millisecond it fell in) and
:data:`CLOCK_MS` (both processes read the same clock, rounded to the µs). Nothing else: the
machine cannot move a physical bound, so no test judges how busy it was.

What the upper rules can catch depends on the machine only through the client's turnarounds:
an engine that adds e ms to every latency breaks the sum rule when e exceeds the phase's
margin a request (:attr:`Verdict.margin_ms`, the turnarounds and the connections' end
transits spread over the phase's requests, plus the tolerance), and
``test_ground_truth.py`` shows a real +2 ms error of each engine caught.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gatebench.core.model import Measurement
from gatebench.core.simlog import RequestRecord, RunHeader, read_simlog
from gatebench.core.trust import ENGINE_RESOLUTION_MS
from gatebench.local.backends import BackendTimeline, ServedRequest, backend_requests
from gatebench.local.procs import Supervisor

CLOCK_MS = 0.01
"""Two readings of the same clock by two processes, each rounded to the µs."""
HOLD_WITNESS_MS = 1.0
"""The fastest hold's largest lateness: the backend's timer releases within tens of µs on an idle
machine (docs/trust.md); a busy one delays some releases, never all of them by a millisecond."""
PERCENTILES = (("min", 0.0), ("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))


def nearest_rank(pct: float, n: int) -> int:
    """The 1-based rank of the nearest-rank percentile (gatebench.core.stats); 1 for the minimum."""
    return max(1, min(n, math.ceil(pct / 100.0 * n)))


@dataclass
class Verdict:
    """What the rules found for one phase: every broken rule, and the figures behind them."""

    engine: str
    requests: int
    served: int
    breaches: list[str] = field(default_factory=list)
    margin_ms: float = math.inf
    """The sum rule's slack a request: the largest error added to every latency that this
    phase could not have caught."""
    holds_ms: tuple[float, float] = (math.nan, math.nan)
    """The backend's fastest and median hold."""
    stamp_slack_ms: float = math.nan
    """The stamp rules' margin (judge_stamps): the largest shift of every read stamp later
    against its send that some offset of the engine's clock would still fit."""

    @property
    def passed(self) -> bool:
        return not self.breaches

    def describe(self) -> str:
        head = (
            f"{self.engine}: {self.requests} requests reported, {self.served} served; "
            f"backend holds fastest {self.holds_ms[0]:.3f} ms, median {self.holds_ms[1]:.3f} ms; "
            f"margin {self.margin_ms:.3f} ms a request"
            + ("" if math.isnan(self.stamp_slack_ms) else f", stamps {self.stamp_slack_ms:.3f} ms")
        )
        return "\n  ".join([head, *self.breaches])


def tolerance_ms(engine: str) -> float:
    return ENGINE_RESOLUTION_MS[engine] + CLOCK_MS


def judge_holds(verdict: Verdict, served: Sequence[ServedRequest], hold_ms: float) -> None:
    """The backend's own rules: never early, and a wrong hold moves every request."""
    held = sorted(r.held_us / 1000.0 for r in served if r.held_us is not None)
    if len(held) != len(served):
        verdict.breaches.append(
            f"hold: {len(served) - len(held)} of {len(served)} requests have no recorded hold"
        )
    if not held:
        return
    verdict.holds_ms = (held[0], held[(len(held) - 1) // 2])
    if held[0] < hold_ms:
        verdict.breaches.append(
            f"hold, never early: the fastest hold is {held[0]:.3f} ms, under the configured "
            f"{hold_ms:g} ms"
        )
    if held[0] > hold_ms + HOLD_WITNESS_MS:
        verdict.breaches.append(
            f"hold, a wrong one moves every request: the fastest of {len(held)} holds is "
            f"{held[0]:.3f} ms, more than {HOLD_WITNESS_MS:g} ms over the configured "
            f"{hold_ms:g} ms"
        )


def judge_latencies(
    verdict: Verdict,
    figures: Mapping[str, float],
    served: Sequence[ServedRequest],
) -> None:
    """The reported percentiles against the holds (lower) and the chain bounds (upper), and
    their sum against the connections' timelines."""
    n, big_n = verdict.requests, len(served)
    if n == 0 or big_n < n:
        return  # the count rule says why
    tol = tolerance_ms(verdict.engine)
    extra = big_n - n
    # a request still held when the timeline was read (one the engine stopped counting) has
    # held at least 0 ms: a smaller value only loosens the lower bound
    holds = sorted(
        0.0 if r.released_us is None else (r.released_us - r.received_us) / 1000.0 for r in served
    )
    chains = sorted(
        (r.next_receipt_us - r.prev_release_us) / 1000.0
        if r.next_receipt_us is not None and r.prev_release_us is not None and not r.http2
        else math.inf
        for r in served
    )
    ranked = [(name, nearest_rank(pct, n)) for name, pct in PERCENTILES] + [("max", n)]
    for name, rank in ranked:
        x = figures[name]
        if rank <= len(holds) and x < holds[rank - 1] - tol:
            verdict.breaches.append(
                f"latency, lower: {name} = {x:.3f} ms (rank {rank} of {n}) is under the "
                f"backend's hold at that rank, {holds[rank - 1]:.3f} ms (tolerance {tol:g} ms)"
            )
        upper = chains[rank - 1 + extra] if rank - 1 + extra < big_n else math.inf
        if x > upper + tol:
            verdict.breaches.append(
                f"latency, upper: {name} = {x:.3f} ms (rank {rank} of {n}) is over the "
                f"backend's chain bound at rank {rank + extra} of {big_n}, {upper:.3f} ms "
                f"(release of the request before to receipt of the one after on its "
                f"connection; tolerance {tol:g} ms)"
            )
    judge_latency_sum(verdict, figures, served)


def connection_spans(served: Sequence[ServedRequest]) -> tuple[float, int]:
    """The time the backend's connections give the requests on them, and how many requests it
    does not cover. On one HTTP/1.1 connection a closed-model client's requests follow each
    other: the latencies of a run of them add up to at most the time from the release before
    the first to the receipt after the last (the client's turnarounds between them only take
    from it). Per connection, the run is its requests with both neighbours known; the others
    (a connection's first, sent with the connection, and its last) are not covered."""
    by_conn: dict[int, list[ServedRequest]] = {}
    uncovered = 0
    for r in served:
        if r.http2:
            uncovered += 1
        else:
            by_conn.setdefault(r.conn, []).append(r)
    total_ms = 0.0
    for chain in by_conn.values():
        chain.sort(key=lambda r: r.received_us)
        covered = [
            r for r in chain if r.prev_release_us is not None and r.next_receipt_us is not None
        ]
        uncovered += len(chain) - len(covered)
        if covered:
            first, last = covered[0], covered[-1]
            assert first.prev_release_us is not None and last.next_receipt_us is not None
            total_ms += (last.next_receipt_us - first.prev_release_us) / 1000.0
    return total_ms, uncovered


def judge_latency_sum(
    verdict: Verdict, figures: Mapping[str, float], served: Sequence[ServedRequest]
) -> None:
    """The sum rule: the reported latencies (mean × count), less the ``u`` largest (at most
    ``max`` each; ``u`` the requests no span covers), add up to at most the connections'
    spans. An error added to every latency adds ``n - u`` times itself to the left side, while
    the spans hold only the client's turnarounds and two transits per connection beyond the
    latencies, so it is caught whenever it exceeds the per-request margin reported."""
    n = verdict.requests
    spans_ms, uncovered = connection_spans(served)
    covered = n - uncovered
    if covered <= 0:
        return
    tol = tolerance_ms(verdict.engine)
    reported_ms = figures["mean"] * n - uncovered * figures["max"]
    allowed_ms = spans_ms + covered * tol
    verdict.margin_ms = (allowed_ms - reported_ms) / covered
    if reported_ms > allowed_ms:
        verdict.breaches.append(
            f"latency, sum: {n} latencies averaging {figures['mean']:.3f} ms, less the "
            f"{uncovered} largest (at most {figures['max']:.3f} ms each), add up to "
            f"{reported_ms:.1f} ms, more than the {spans_ms:.1f} ms the backend's connections "
            f"span around them (tolerance {tol:g} ms a request)"
        )


def judge_stamps(
    verdict: Verdict,
    stamps_ms: Sequence[tuple[float, float]],
    served: Sequence[ServedRequest],
    start_wall_us: int,
) -> None:
    """Per-request send and read stamps (epoch ms, whole ms) against the backend's moments.

    Gatling's clock (``io.gatling.commons.util.DefaultClock``) reads the wall clock once, in
    whole ms, and adds the whole ms of the monotonic clock since: a stamp ``G`` of a moment
    ``T`` is ``T + c - f``, with ``c`` in (-1, 0] ms the same for the whole run (the truncated
    reference) and ``f`` in [0, 1) ms its own truncation. So for each request, ``c`` is at
    least ``G_send - received`` and ``G_read - next_receipt`` (the moments after them), and
    below ``G_send - prev_release + 1`` and ``G_read - released + 1`` (the moments before);
    rank by rank, as every rule here. The stamps are right when one offset ``c`` in (-1, 0]
    satisfies all four: an error that moves the reads against the sends (2 ms added to each
    latency) leaves none whenever the tightest read-to-next-receipt and release-to-send gaps
    add up to under about 2 ms."""
    n, big_n = len(stamps_ms), len(served)
    if n == 0 or big_n < n:
        return
    res = ENGINE_RESOLUTION_MS[verdict.engine]
    extra = big_n - n

    def wall(us: int | None, unknown: float) -> list[float]:
        return [unknown if us is None else (start_wall_us + us) / 1000.0]

    def moments(field_name: str, unknown: float) -> list[float]:
        return sorted(v for r in served for v in wall(getattr(r, field_name), unknown))

    sends = sorted(s for s, _ in stamps_ms)
    reads = sorted(e for _, e in stamps_ms)
    received, next_receipt = moments("received_us", math.inf), moments("next_receipt_us", math.inf)
    prev_release, released = (
        moments("prev_release_us", -math.inf),
        moments("released_us", -math.inf),
    )
    lower = [
        ("its wall-clock reference is truncated, at most 1 ms behind", -res),
        ("sent no later than received", max(x - received[i + extra] for i, x in enumerate(sends))),
        ("read no later than the next receipt", max(x - next_receipt[i + extra] for i, x in enumerate(reads))),
    ]  # fmt: skip
    upper = [
        ("its clock is never ahead of the wall clock", 0.0),
        ("sent no earlier than the release before it", min(x - prev_release[i] for i, x in enumerate(sends)) + res),
        ("read no earlier than released", min(x - released[i] for i, x in enumerate(reads)) + res),
    ]  # fmt: skip
    low_why, low = max(lower, key=lambda b: b[1])
    high_why, high = min(upper, key=lambda b: b[1])
    # how much later every read could have been stamped before no offset fits
    verdict.stamp_slack_ms = min(upper[0][1], upper[1][1]) - lower[2][1]
    if low > high + 2 * CLOCK_MS:
        verdict.breaches.append(
            f"stamps, no clock offset fits: '{low_why}' needs Gatling's clock at least "
            f"{low:+.3f} ms off the wall clock, '{high_why}' at most {high:+.3f} ms"
        )


def judge_phase(
    measurement: Measurement,
    timeline: BackendTimeline,
    *,
    hold_ms: float,
    in_flight: int,
    stamps_ms: Sequence[tuple[float, float]] = (),
) -> Verdict:
    """Every rule of the module docstring for one measured phase through no gateway:
    ``measurement`` as the product reports it, against the backend's timeline of its requests
    (:func:`phase_requests`); ``in_flight`` the most requests the engine may stop counting
    while the backend still serves them, ``stamps_ms`` each request's (send, read) epoch ms
    where the engine stamps them."""
    served = phase_requests(measurement, timeline, hold_ms)
    verdict = Verdict(measurement.engine, measurement.requests, len(served))
    if not verdict.requests <= verdict.served <= verdict.requests + in_flight:
        verdict.breaches.append(
            f"counts: the engine reports {verdict.requests} requests, the backend served "
            f"{verdict.served}; expected {verdict.requests} to {verdict.requests + in_flight}"
        )
    # the ones the engine stopped counting may still be held when the timeline is read
    unreleased = sum(1 for r in served if r.released_us is None)
    if unreleased > in_flight:
        verdict.breaches.append(
            f"counts: {unreleased} requests not yet released, more than the {in_flight} the "
            "engine may have left in flight"
        )
    judge_holds(verdict, [r for r in served if r.released_us is not None], hold_ms)
    figures = {
        "min": measurement.min,
        "p50": measurement.p50,
        "p90": measurement.p90,
        "p95": measurement.p95,
        "p99": measurement.p99,
        "max": measurement.max,
        "mean": measurement.mean,
    }
    judge_latencies(verdict, figures, served)
    if stamps_ms:
        judge_stamps(verdict, stamps_ms, served, timeline.start_wall_us)
    return verdict


def phase_requests(
    measurement: Measurement, timeline: BackendTimeline, hold_ms: float
) -> list[ServedRequest]:
    """The backend's requests of ``measurement``'s phase: in the epoch that served the most
    requests within its window (:func:`epoch_of`), the requests on the connections that
    carried one received early enough to be the phase's own. Each measured phase resets the
    backend; a warm-up after it does not, and reaches the backend on other connections (a
    gateway's, a new engine process's), after the phase's last answer was read. A phase's
    requests are received from its first send on, and at least one hold before its last read;
    the window allows Gatling's clock its 2 ms (judge_stamps)."""
    epoch = epoch_of(measurement, timeline)
    start_us = measurement.started_at * 1e6 - timeline.start_wall_us - 2000
    end_us = start_us + (measurement.duration_s * 1000 - hold_ms + 4) * 1000
    ours = timeline.phase(epoch)
    conns = {r.conn for r in ours if start_us <= r.received_us <= end_us}
    return [r for r in ours if r.conn in conns]


@dataclass(frozen=True)
class WorkerCapacity:
    """What a mock with workers really delivered, from its own timeline: each worker's cycle
    (one hold's start to its next) while requests were waiting for it."""

    workers: int
    cycles: int
    """Cycles with a request waiting at the hold's end (the worker saturated)."""
    mean_cycle_ms: float
    fastest_hold_ms: float

    @property
    def rate(self) -> float:
        """Requests per second the workers served while saturated: workers / mean cycle."""
        return self.workers * 1000.0 / self.mean_cycle_ms if self.cycles else math.nan


def worker_capacity(served: Sequence[ServedRequest], workers: int) -> WorkerCapacity:
    """The capacity a mock with ``workers`` delivered over ``served``: a worker freed while a
    request waits passes to it at once (hold.go's channel), so its cycle is its hold plus the
    hand-over, both the machine's; workers / their mean is the rate the backend could carry on
    this machine at that moment. Its configured capacity (workers / latency) is the most it
    can carry on any machine: holds are never early."""
    by_worker: dict[int, list[ServedRequest]] = {}
    for r in served:
        if r.worker is not None and r.held_from_us is not None and r.held_to_us is not None:
            by_worker.setdefault(r.worker, []).append(r)
    cycles = []
    fastest = math.inf
    for holds in by_worker.values():
        holds.sort(key=lambda r: r.held_from_us or 0)
        for this, after in itertools.pairwise(holds):
            assert this.held_to_us is not None and this.held_from_us is not None
            assert after.held_from_us is not None
            fastest = min(fastest, (this.held_to_us - this.held_from_us) / 1000.0)
            if after.received_us <= this.held_to_us and after.epoch == this.epoch:
                cycles.append((after.held_from_us - this.held_from_us) / 1000.0)
    mean = sum(cycles) / len(cycles) if cycles else math.nan
    return WorkerCapacity(workers, len(cycles), mean, fastest)


@dataclass
class TimelineWatch:
    """Reads the run's backend timeline at the run's teardown step, while the run still holds
    the backend: pass ``supervisor_factory=watch.supervisor`` and ``display=watch.display`` to
    ``run_benchmark``. The timeline keeps every epoch (each phase's reset starts one)."""

    timeline: BackendTimeline | None = None
    _supervisor: Supervisor | None = field(default=None, repr=False)

    def supervisor(self) -> Supervisor:
        self._supervisor = Supervisor()
        return self._supervisor

    def display(self, progress: object) -> None:
        if getattr(progress, "step", None) != "teardown" or self._supervisor is None:
            return
        for proc in list(self._supervisor.processes):
            if proc.name == "backend-mock" and proc.alive() and "-listen" in proc.argv:
                listen = proc.argv[proc.argv.index("-listen") + 1]
                self.timeline = backend_requests(int(listen.rsplit(":", 1)[1]))


def epoch_of(measurement: Measurement, timeline: BackendTimeline) -> int:
    """The epoch of the backend's timeline that served ``measurement``'s phase: the one with
    the most requests received within the phase's window (each phase resets the backend, so
    phases and epochs follow each other)."""
    start_us = measurement.started_at * 1e6 - timeline.start_wall_us
    end_us = start_us + measurement.duration_s * 1e6
    counts: dict[int, int] = {}
    for r in timeline.requests:
        if not r.control and start_us <= r.received_us <= end_us:
            counts[r.epoch] = counts.get(r.epoch, 0) + 1
    if not counts:
        raise AssertionError(f"no request of the backend's timeline in {measurement.key}'s window")
    return max(counts, key=lambda e: counts[e])


def measured_phase_ids(run_dir: Path) -> dict[str, str]:
    """The run's measured phases (its workload.json): measurement key → phase id."""
    document = json.loads((run_dir / "workload.json").read_text(encoding="utf-8"))
    return {
        f"{p['target']}:{p['workload']}:{p['repetition']}": p["id"]
        for p in document["phases"]
        if p.get("measured", True)
    }


def gatling_stamps(run_dir: Path, phase_id: str) -> list[tuple[float, float]]:
    """Each request of a phase as Gatling stamped it: (start, end) in epoch ms, read with the
    product's reader of its simulation.log."""
    (log,) = run_dir.glob("gatling-results/*/simulation.log")
    start_ms = 0
    out = []
    for record in read_simlog(log):
        if isinstance(record, RunHeader):
            start_ms = record.start_ms
        elif isinstance(record, RequestRecord) and record.name == phase_id:
            out.append((float(start_ms + record.start), float(start_ms + record.end)))
    return out


__all__ = [
    "CLOCK_MS",
    "HOLD_WITNESS_MS",
    "PERCENTILES",
    "TimelineWatch",
    "Verdict",
    "WorkerCapacity",
    "connection_spans",
    "epoch_of",
    "gatling_stamps",
    "judge_holds",
    "judge_latencies",
    "judge_latency_sum",
    "judge_phase",
    "judge_stamps",
    "measured_phase_ids",
    "nearest_rank",
    "phase_requests",
    "tolerance_ms",
    "worker_capacity",
]
