"""Several testers per phase: the split rule, the exact merge, ingest of N logs (gatebench.core.testers)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from cloud.simlog import SimLogWriter
from gatebench.core.errors import RunError
from gatebench.core.measure import CpuUsage, PhaseResult, measurement_from
from gatebench.core.plan import Injection
from gatebench.core.stats import PhaseSample, phase_stats
from gatebench.core.testers import (
    PhasePart,
    ingest_tester_logs,
    merge_phase,
    split_counts,
    split_document,
    split_injection,
    union_ms,
)
from gatebench.core.workload import (
    FORMAT,
    injection_from_json,
    injection_json,
    phases_from_document,
)


def test_split_counts_gives_the_remainder_to_the_first_testers() -> None:
    assert split_counts(10, 3) == (4, 3, 3)
    assert split_counts(11, 3) == (4, 4, 3)
    assert split_counts(2, 3) == (1, 1, 0)
    assert sum(split_counts(1_000_003, 7)) == 1_000_003


@pytest.mark.parametrize(
    "inj",
    [
        Injection("at_once", users=101),
        Injection("ramp", users=50, duration=2.0),
        Injection("constant_rate", rate=333.0, duration=3.0),
        Injection("constant_rate", rate=10.0, duration=3.3),
        Injection("concurrent", users=10, requests=1000),
        Injection("concurrent", users=2, requests=100),
        Injection("sequential", requests=77),
    ],
)
@pytest.mark.parametrize("testers", [1, 2, 3, 5])
def test_split_keeps_the_request_total(inj: Injection, testers: int) -> None:
    shares = split_injection(inj, testers)
    assert len(shares) == testers
    assert shares[0] is not None  # tester 0 always runs the phase
    total = sum(s.expected_requests or 0 for s in shares if s is not None)
    assert total == inj.expected_requests
    # and through the document's JSON form, as the JVM reads it
    assert sum(
        injection_from_json(injection_json(s)).expected_requests or 0
        for s in shares
        if s is not None
    ) == (inj.expected_requests)


def test_split_of_users_and_sequential() -> None:
    assert split_injection(Injection("concurrent", users=2, requests=100), 3) == (
        Injection("concurrent", users=1, requests=50),
        Injection("concurrent", users=1, requests=50),
        None,
    )
    assert split_injection(Injection("concurrent", users=5, duration=10.0), 2) == (
        Injection("concurrent", users=3, duration=10.0),
        Injection("concurrent", users=2, duration=10.0),
    )
    assert split_injection(Injection("sequential", requests=9), 3) == (
        Injection("sequential", requests=9),
        None,
        None,
    )


def _document(*injections: Injection, counter: bool = False) -> dict[str, Any]:
    phases = []
    for i, inj in enumerate(injections):
        phases.append(
            {
                "id": f"p{i:04d}",
                "index": i,
                "target": "nginx",
                "workload": "w",
                "repetition": 0,
                "measured": i > 0,
                "seed": 100 + i,
                "injection": injection_json(inj),
                "before": [{"method": "POST", "url": "http://127.0.0.1:1/reset", "status": 200}],
                "params": {"id": {"kind": "counter", "start": 1, "step": 1}} if counter else {},
                "request": {"base_url": "http://127.0.0.1:2"},
            }
        )
    return {"format": FORMAT, "seed": 1, "secret_env": [], "skip_file": "", "phases": phases}


def test_split_document() -> None:
    doc = _document(
        Injection("concurrent", users=1, requests=3),
        Injection("at_once", users=5),
        Injection("sequential", requests=4),
        counter=True,
    )
    assert split_document(doc, 1) == [doc]
    one, two = split_document(doc, 2)
    assert [p["index"] for p in one["phases"]] == [0, 1, 2]
    assert [p["index"] for p in two["phases"]] == [1]
    assert one["phases"][1]["injection"] == {"kind": "at_once", "users": 3}
    assert two["phases"][0]["injection"] == {"kind": "at_once", "users": 2}
    # only tester 0 resets the backend; counters stay disjoint; tester 0 keeps its seeds
    assert one["phases"][1]["before"] == doc["phases"][1]["before"]
    assert two["phases"][0]["before"] == []
    assert one["phases"][1]["params"]["id"] == {"kind": "counter", "start": 1, "step": 2}
    assert two["phases"][0]["params"]["id"] == {"kind": "counter", "start": 2, "step": 2}
    assert one["phases"][1]["seed"] == 101
    with pytest.raises(RunError, match=r"^testers: expected 1 to 16, got 17$"):
        split_document(doc, 17)


def test_union_counts_overlaps_once() -> None:
    assert union_ms([(0, 10), (5, 20), (30, 40)]) == 30
    assert union_ms([]) == 0


def _result(
    phase: int, records: list[tuple[int, int, bool]], start_ms: float, cpu: Any = None
) -> PhaseResult:
    sample = PhaseSample()
    for start, end, ok in records:
        sample.add(start, end, ok, "" if ok else "boom")
    assert sample.first_start is not None and sample.last_end is not None
    return PhaseResult(
        phase, sample, start_ms + sample.first_start, start_ms + sample.last_end, cpu
    )


def test_merged_percentiles_equal_those_of_the_concatenated_records() -> None:
    rng = random.Random(7)
    per_tester = [
        [
            (s, s + rng.choice([0, 1, 1, 2, 3, 9, 40, 250]), rng.random() > 0.05)
            for s in range(0, 3000, 3)
        ]
        for _ in range(3)
    ]
    parts = [
        PhasePart(t, _result(4, records, 1_000_000.0 + 17 * t))
        for t, records in enumerate(per_tester)
    ]
    merged = merge_phase(4, parts)
    everything = PhaseSample()
    for records in per_tester:
        for start, end, ok in records:
            everything.add(start, end, ok, "" if ok else "boom")
    got, want = phase_stats(merged.result.sample), phase_stats(everything)
    assert (got.requests, got.ok, got.ko, got.errors) == (
        want.requests,
        want.ok,
        want.ko,
        want.errors,
    )
    assert (got.p50, got.p90, got.p95, got.p99, got.min, got.max) == (
        want.p50,
        want.p90,
        want.p95,
        want.p99,
        want.min,
        want.max,
    )
    assert got.mean == pytest.approx(want.mean)
    # throughput over the union of the windows: tester 2 started 34 ms after tester 0
    last_end = max(e for records in per_tester for _, e, _ in records)
    assert merged.result.sample.duration_ms == last_end + 34
    assert merged.start_skew_ms == 34.0
    assert [s.requests for s in merged.shares] == [1000, 1000, 1000]
    assert merged.flags == ()


def test_a_failed_tester_makes_the_phase_partial_and_any_bound_tester_flags_it() -> None:
    busy = CpuUsage(busy_pct=95, tester_pct=60, target_pct=30, others_pct=62, window_s=1)
    calm = CpuUsage(busy_pct=95, tester_pct=2, target_pct=30, others_pct=60, window_s=1)
    merged = merge_phase(
        1,
        [
            PhasePart(0, _result(1, [(0, 1, True)] * 5, 0.0, busy)),
            PhasePart(1, _result(1, [(0, 1, True)] * 2, 0.0, calm)),
            PhasePart(2, None, "Gatling exited with code 137"),
        ],
    )
    assert merged.flags == ("tester-bound", PARTIAL_FLAG := "partial")
    assert merged.reasons == ("tester 2 failed: Gatling exited with code 137",)
    assert [(s.tester, s.requests, s.failure) for s in merged.shares] == [
        (0, 5, None),
        (1, 2, None),
        (2, 0, "Gatling exited with code 137"),
    ]
    # each tester counted the other as "others": the merge takes them back out
    assert merged.result.cpu is not None
    assert (merged.result.cpu.tester_pct, merged.result.cpu.others_pct) == (62, 0)
    assert PARTIAL_FLAG == "partial"


def _log(path: Path, start_ms: int, records: list[tuple[str, int, int]]) -> Path:
    writer = SimLogWriter(start_ms)
    for name, start, end in records:
        writer.request(name, start, end)
    path.write_bytes(writer.bytes())
    return path


def test_ingest_merges_every_log_and_flags_a_dead_tester(tmp_path: Path) -> None:
    doc = _document(
        Injection("at_once", users=2), Injection("at_once", users=4), Injection("at_once", users=3)
    )
    a = _log(
        tmp_path / "a.log",
        1_000,
        [
            ("p0000", 0, 1),
            ("p0001", 10, 12),
            ("p0001", 10, 15),
            ("p0002", 20, 21),
            ("p0002", 20, 22),
        ],
    )
    b = _log(
        tmp_path / "b.log",
        1_005,
        [("p0000", 0, 1), ("p0001", 10, 30), ("p0001", 11, 12), ("p0002", 19, 20)],
    )
    measurements, merged = ingest_tester_logs([a, b], doc, "r1")
    assert [(m.workload, m.requests, m.p99, m.max) for m in measurements] == [
        ("w", 4, 20.0, 20.0),
        ("w", 3, 2.0, 2.0),
    ]
    # millisecond bursts: too short for their throughput to mean anything (gatebench.core.trust)
    assert [m.flags for m in measurements] == [("too-short",), ("too-short",)]
    assert merged[0].start_skew_ms == 5.0
    # tester 1 died during phase 1 (1 of its 2 requests in), before its share of phase 2
    b2 = _log(tmp_path / "b2.log", 1_005, [("p0000", 0, 1), ("p0001", 10, 30)])
    measurements, merged = ingest_tester_logs([a, b2], doc, "r1", [None, "VM preempted"])
    assert [(m.requests, m.flags) for m in measurements] == [
        (3, ("incomplete", "too-short", "partial")),
        (2, ("incomplete", "too-short", "partial")),
    ]
    assert merged[0].reasons == ("tester 1 failed: VM preempted",)
    # a tester that left no log at all
    measurements, merged = ingest_tester_logs([a, None], doc, "r1")
    assert [(m.requests, m.flags) for m in measurements] == [
        (2, ("incomplete", "too-short", "partial")),
        (2, ("incomplete", "too-short", "partial")),
    ]
    assert merged[1].reasons == ("tester 1 failed: no simulation.log",)
    # one tester is the single-log path
    single = measurement_from(
        "r1", phases_from_document(doc)[1], _result(1, [(10, 12, True), (10, 15, True)], 1_000.0)
    )
    one, _ = ingest_tester_logs([a], doc, "r1")
    assert one[0] == single


def test_requests_without_a_time_are_merged_as_failed_requests_without_a_latency() -> None:
    """A tester's dropped connections (wrk's socket errors, Gatling's resends) count as
    requests and errors of the merged phase, never in its latency figures."""
    parts = []
    for t in range(2):
        result = _result(4, [(0, 5, True)] * 10, 1_000_000.0)
        result.sample.add_unanswered("connection closed without a response", 3)
        parts.append(PhasePart(t, result))
    merged = phase_stats(merge_phase(4, parts).result.sample)
    assert (merged.requests, merged.ok, merged.ko) == (26, 20, 6)
    assert merged.min == 5.0
    assert merged.error_pct == pytest.approx(100.0 * 6 / 26)
