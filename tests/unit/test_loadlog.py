"""Our reader of the open-model engine's records (gatebench.core.loadlog): latencies from the
intended start, the schedule the engine kept, and the merge of several testers."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatebench.core.errors import RunError
from gatebench.core.loadlog import ScheduleSample, merge_schedules, parse_loadlog, read_loadlog
from gatebench.core.stats import phase_stats

LOG = """gatebench-loadgen/1\t1700000000000000\t2
M\t1\tstatus.find.lt(400), found 503
R\t0\t5000\t40\t1200\t200\t0\t1
R\t0\t15000\t60\t1500\t200\t0\t0
M\t2\tthe engine fell 70000 ms behind its schedule (more than the request timeout)
D\t0\t25000\t2
R\t1\t1005000\t30\t9000\t200\t0\t0
R\t1\t1015000\t2500\t12500\t503\t1\t1
M\t3\tnot sent: 10000 requests were in flight (the target held them)
R\t1\t1025000\t10\t60000000\t0\t3
C\t1\tPOST http://127.0.0.1:9/__gatebench__/reset: connection refused
E\t0\t5000\t1005000\t3\t2\t20000\t1
E\t1\t1005000\t2005000\t3\t2\t150000\t1
"""


def test_every_record_kind(tmp_path: Path) -> None:
    path = tmp_path / "loadgen.records"
    path.write_text(LOG, encoding="utf-8")
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
    with pytest.raises(RunError, match="not a gatebench-loadgen/1 file"):
        parse_loadlog(["GATLING\n"], "x.records")
    with pytest.raises(RunError, match=r"x.records:2: unreadable record"):
        parse_loadlog(["gatebench-loadgen/1\t0\t1\n", "R\t0\tnot-a-number\n"], "x.records")
    with pytest.raises(RunError, match=r"unknown record kind 'Z'"):
        parse_loadlog(["gatebench-loadgen/1\t0\t1\n", "Z\t0\n"], "x.records")


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
