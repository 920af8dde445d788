"""Our reader of the open-model engine's records (gatebench.core.loadlog): latencies from the
intended start, the schedule the engine kept, and the merge of several testers."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from gatebench.core.errors import RunError
from gatebench.core.loadlog import (
    ScheduleSample,
    SentRequest,
    merge_schedules,
    parse_loadlog,
    read_loadlog,
    sent_requests,
)
from gatebench.core.stats import phase_stats


def _frame(kind: str, payload: bytes) -> bytes:
    return kind.encode() + struct.pack("<I", len(payload)) + payload


def _requests(rows: list[tuple[int, int, int, int, int, int, int]]) -> bytes:
    """An R frame: (phase, intended µs, lag µs, latency µs, status, message, flags) per row,
    written column by column as loadgen/records.go writes them."""
    columns = list(zip(*rows, strict=True))
    payload = struct.pack("<I", len(rows))
    for code, values in zip("iqIIHHB", columns, strict=True):
        payload += struct.pack(f"<{len(values)}{code}", *values)
    return _frame("R", payload)


def _text(kind: str, number: int, text: str, code: str = "H") -> bytes:
    return _frame(kind, struct.pack(f"<{code}", number) + text.encode())


def _end(phase: int, *values: int) -> bytes:
    return _frame("E", struct.pack("<i6q", phase, *values))


LOG = (
    b"gatebench-loadgen/2\n"
    + _frame("H", struct.pack("<qI", 1_700_000_000_000_000, 2))
    + _text("M", 1, "status.find.lt(400), found 503")
    + _requests([(0, 5000, 40, 1200, 200, 0, 1), (0, 15000, 60, 1500, 200, 0, 0)])
    + _text("M", 2, "the engine fell 70000 ms behind its schedule (more than the request timeout)")
    + _text("M", 3, "not sent: 10000 requests were in flight (the target held them)")
    # one batch across two phases, with a dropped arrival of the first
    + _requests(
        [
            (0, 25000, 70_000_000, 0, 0, 2, 2),
            (1, 1005000, 30, 9000, 200, 0, 0),
            (1, 1015000, 2500, 12500, 503, 1, 1),
            (1, 1025000, 10, 60_000_000, 0, 3, 0),
        ]
    )
    + _text("C", 1, "POST http://127.0.0.1:9/__gatebench__/reset: connection refused", "i")
    + _end(0, 5000, 1005000, 3, 2, 20000, 1)
    + _end(1, 1005000, 2005000, 3, 2, 150000, 1)
)


def test_each_request_read_one_by_one_as_the_phases_count_them() -> None:
    """What a route-scale or change-under-load run reads (gatebench.local.engines.constant_rate):
    every request the engine sent or refused, due time in epoch ms, latency from it; a dropped
    arrival (never sent) is no request."""
    start = 1_700_000_000_000.0
    found = sent_requests(LOG)
    assert found == [
        SentRequest(0, start + 5.0, 1.2, 200, ""),
        SentRequest(0, start + 15.0, 1.5, 200, ""),
        SentRequest(1, start + 1005.0, 9.0, 200, ""),
        SentRequest(1, start + 1015.0, 12.5, 503, "status.find.lt(400), found 503"),
        SentRequest(
            1,
            start + 1025.0,
            60_000.0,
            0,
            "not sent: 10000 requests were in flight (the target held them)",
        ),
    ]
    counted = parse_loadlog(LOG).phases
    for phase, got in counted.items():
        mine = [r for r in found if r.phase == phase]
        assert len(mine) == got.result.sample.requests
        assert sum(1 for r in mine if not r.message) == got.result.sample.ok
    with pytest.raises(RunError, match="not a gatebench-loadgen/2 file"):
        sent_requests(b"GATLING\n")


def test_every_frame_kind(tmp_path: Path) -> None:
    path = tmp_path / "loadgen.records"
    path.write_bytes(LOG)
    log = read_loadlog(path)
    assert (log.start_epoch_ms, log.cores) == (1_700_000_000_000.0, 2)
    warm, measured = log.phases[0], log.phases[1]
    s = phase_stats(warm.result.sample)
    assert (s.requests, s.ok, s.ko, s.min, s.max) == (2, 2, 0, 1.2, 1.5)
    assert warm.schedule.scheduled == 3 and warm.schedule.sent == 2
    assert warm.schedule.dropped == 1 and warm.schedule.refused == 0
    assert warm.schedule.drop_reasons == {
        "the engine fell 70000 ms behind its schedule (more than the request timeout)": 1
    }
    assert warm.schedule.lags_ms == [0.04, 0.06]
    assert warm.schedule.from_send_ms == pytest.approx([1.16, 1.44])
    assert warm.schedule.connections == 1 and warm.schedule.window_s == 1.0
    assert warm.schedule.engine_cpu_pct == pytest.approx(1.0)  # 20 ms of 2 cores × 1 s
    m = phase_stats(measured.result.sample)
    assert (m.requests, m.ok, m.ko) == (3, 1, 2)
    assert dict(m.errors) == {
        "status.find.lt(400), found 503": 1,
        "not sent: 10000 requests were in flight (the target held them)": 1,
    }
    assert sorted(measured.result.sample.latencies) == [9.0, 12.5, 60_000.0]
    assert measured.schedule.refused == 1  # 3 due, 2 sent, none dropped
    assert measured.control_failure == (
        "POST http://127.0.0.1:9/__gatebench__/reset: connection refused"
    )
    assert measured.result.start_ms == 1_700_000_000_000.0 + 1005.0
    # the window ends with the last response (the timeout), not the schedule
    assert measured.result.end_ms == pytest.approx(1_700_000_000_000.0 + 1025.0 + 60_000.0)


def test_a_file_that_is_not_a_records_file_is_refused() -> None:
    with pytest.raises(RunError, match="not a gatebench-loadgen/2 file"):
        parse_loadlog(b"gatebench-loadgen/1\t0\t1\n", "x.records")
    header = b"gatebench-loadgen/2\n" + _frame("H", struct.pack("<qI", 0, 1))
    with pytest.raises(RunError, match=r"x.records: a 'R' frame cut short at byte 37"):
        parse_loadlog(header + _requests([(0, 1, 2, 3, 200, 0, 0)])[:-3], "x.records")
    with pytest.raises(RunError, match=r"x.records: byte 37: unreadable 'Z' frame \(unknown frame"):
        parse_loadlog(header + _frame("Z", b""), "x.records")
    with pytest.raises(RunError, match=r"unreadable 'R' frame \(13 bytes for 2 records\)"):
        parse_loadlog(header + _frame("R", struct.pack("<I", 2) + b"x" * 9), "x.records")
    with pytest.raises(RunError, match="no header frame"):
        parse_loadlog(b"gatebench-loadgen/2\n", "x.records")


def test_several_testers_merge_into_one_schedule() -> None:
    a = ScheduleSample(
        100, 100, 0, [0.1] * 100, engine_cpu_s=0.2, window_s=2.0, cores=1, connections=3
    )
    b = ScheduleSample(
        101, 99, 2, [0.3] * 99, engine_cpu_s=1.9, window_s=2.0, cores=1, connections=4
    )
    merged = merge_schedules([a, b])
    assert (merged.scheduled, merged.sent, merged.dropped, merged.testers) == (201, 199, 2, 2)
    assert len(merged.lags_ms) == 199 and merged.connections == 7
    assert merged.engine_cpu_s == pytest.approx(2.1)
    # the busiest tester's share, not the sum: tester 1 ran out
    assert merged.engine_cpu_pct == pytest.approx(95.0)
