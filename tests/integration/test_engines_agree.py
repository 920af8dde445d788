"""Two engines, one target: a Gatling run cross-checked by wrk (the comparison step of
``gatebench run --cross-check wrk``) against the ground-truth backend (a fixed 20 ms), with
the engine's ceiling measured first. For the same target and closed-model concurrency, the
two engines' throughput and p50 must agree within 10 %, and the report must say how they
compared. Real backend, nginx, Gatling and wrk; a few seconds of load on 127.0.0.1.

Timing bands (the first test, marked ``timing_band``), and why they hold on a busy 2-core machine: both
engines load the same target, one after the other, and the target is bound by the backend's
20 ms hold (8 users: at most 400 req/s, a small share of one core), not by CPU; other work on
the box delays requests by scheduling latency, far below the 20 ms that sets the rate, so both
engines land near 400 req/s and 20 ms. The upper bound (405) is physics; the lower bound (300)
leaves 25 % for a busy machine; the 10 % gap and the 1 ms p50 band compare two measurements
of the same hold. The ceiling (> 1000 req/s) is the static-file server with no hold, which
reaches several thousand req/s even with one core taken by other work.

When the machine is busier than that (a load average of 8 on 2 cores has failed it), the bands
are judged against what the machine did meanwhile (``tests/timing.py``: the CPU others used
during every phase of both engines, the backend's own lateness): a miss the load explains is
measured again at a quieter moment, a bounded number of times; any other miss fails at once.
"""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, assert_torn_down, items

from gatebench.core.report import build_report, render_markdown
from gatebench.core.trust import AGREEMENT_PCT, TESTER_BOUND_SHARE, ceiling_of
from gatebench.local.ceiling import start_ceiling_server
from gatebench.local.procs import Supervisor
from gatebench.local.runner import RunOptions, RunOutcome, run_benchmark
from timing import (
    BackendWatch,
    Band,
    Meanwhile,
    Timed,
    fastest_reads_the_delay,
    highest,
    measure_within_bands,
)


def _cross_checked_run(results: Path) -> Timed[RunOutcome]:
    """One run through nginx and the baseline, cross-checked by wrk; the bands of its
    baseline's agreement and its ceiling, with what the machine did meanwhile."""
    api, plan = items(
        gateways=["nginx"],
        baseline=True,
        repetitions=1,
        warmup={"duration": "1s"},
        backend={"mock": {"latency": "20ms"}},
        workloads=[
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "injection": {"concurrent": 8, "duration": "3s"},
            }
        ],
    )
    watch = BackendWatch()
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="5" * 64,
        options=RunOptions(results_dir=results, seed=4, cross_check="wrk"),
        display=watch.display,
        supervisor_factory=watch.supervisor,
    )
    env = outcome.record.environment
    ceiling = ceiling_of(env)
    assert ceiling is not None and ceiling.engine == "gatling"
    ceiling_rate = ceiling.throughput("read")
    assert ceiling_rate is not None
    check = env["cross_check"]
    assert check["name"] == "wrk" and check["repetitions"] == 1
    assert {(m["target"], m["engine"]) for m in check["measurements"]} == {
        ("baseline", "wrk"),
        ("nginx", "wrk"),
    }
    report = build_report(outcome.record, outcome.measurements)
    baseline = {a.target: a for a in report.trust.agreements}["baseline"]
    p50_allowed = max(
        baseline.p50_tolerance_ms, AGREEMENT_PCT / 100 * max(baseline.p50, baseline.other_p50)
    )
    bands = [
        # the fastest target answers far faster than 8 users waiting 20 ms each can ask
        Band("ceiling (req/s)", ceiling_rate, low=1000, busy="down"),
        # so no measurement comes near it (the CPU accounting may still flag a phase
        # tester-bound when other work fills this shared machine: that flag is a caution only)
        Band(
            "highest throughput / ceiling",
            max(m.throughput for m in outcome.measurements) / ceiling_rate,
            high=TESTER_BOUND_SHARE,
        ),
        # 8 users × 1 / 20 ms = 400 req/s at most, for both engines
        Band("gatling baseline (req/s)", baseline.throughput, 300, 405, busy="down"),
        Band("wrk baseline (req/s)", baseline.other_throughput, 300, 405, busy="down"),
        Band("throughput gap (%)", baseline.throughput_gap_pct, high=AGREEMENT_PCT),
        Band("p50 difference (ms)", abs(baseline.p50 - baseline.other_p50), high=p50_allowed),
        Band("wrk baseline p50 (ms)", baseline.other_p50, 19.0, 21.0),
    ]
    others = highest(
        [m.other_cpu_pct for m in outcome.measurements]
        + [m.get("other_cpu_pct") for m in check["measurements"]]
    )
    (gatling,) = [m for m in outcome.measurements if m.target == "baseline"]
    (wrk,) = [m for m in check["measurements"] if m["target"] == "baseline"]
    witnesses = [
        fastest_reads_the_delay("gatling", gatling.min, 20.0),
        fastest_reads_the_delay("wrk", wrk["min"], 20.0),
    ]
    return Timed(outcome, bands, Meanwhile(others, watch.late_ms), witnesses)


@pytest.mark.timing_band
def test_gatling_and_wrk_agree_on_the_ground_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    outcome = measure_within_bands(lambda: _cross_checked_run(tmp_path))
    assert (tmp_path / outcome.record.run_id / "cross-check.jsonl").is_file()
    report = build_report(outcome.record, outcome.measurements)
    assert {a.target: a for a in report.trust.agreements}["baseline"].agrees
    md = render_markdown(report)
    assert "## Trust: the load engine's headroom and a second engine" in md
    assert "wrk and gatling agree within 10 % on throughput and p50 in " in md
    assert_torn_down(outcome.run_dir)


def test_the_ceiling_server_answers_any_method_and_path(tmp_path: Path) -> None:
    with Supervisor() as sup:
        proc, url = start_ceiling_server(sup, tmp_path / "ceiling")
        port = int(url.rsplit(":", 1)[1])
        for method, path, body in (
            ("GET", "/items/7?x=1", None),
            ("POST", "/bid/1", b'{"bid": 1}'),
            ("POST", "/auctions", b"x" * 2_000_000),
            ("PUT", "/a/b", b"1"),
            ("DELETE", "/a", None),
        ):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                conn.request(method, path, body=body)
                response = conn.getresponse()
                content = response.read()
            finally:
                conn.close()
            assert (method, path, response.status) == (method, path, 200)
            assert content.startswith(b'{"ceiling": "static file served by nginx"')
        assert proc.alive()
    assert not proc.alive()
