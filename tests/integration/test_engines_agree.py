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
"""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, assert_torn_down, items

from gatebench.ceiling import start_ceiling_server
from gatebench.procs import Supervisor
from gatebench.report import build_report, render_markdown
from gatebench.runner import RunOptions, run_benchmark
from gatebench.trust import ceiling_of, near_ceiling


@pytest.mark.timing_band
def test_gatling_and_wrk_agree_on_the_ground_truth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
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
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="5" * 64,
        options=RunOptions(results_dir=tmp_path, seed=4, cross_check="wrk"),
    )
    env = outcome.record.environment
    ceiling = ceiling_of(env)
    assert ceiling is not None and ceiling.engine == "gatling"
    # the fastest target answers far faster than 8 users waiting 20 ms each can ask
    assert ceiling.throughput("read") is not None and ceiling.throughput("read") > 1000  # type: ignore[operator]
    # so no measurement comes near it (the CPU accounting may still flag a phase
    # tester-bound when other work fills this shared machine: that flag is a caution only)
    assert not any(
        near_ceiling(m.throughput, ceiling.throughput("read")) for m in outcome.measurements
    )
    check = env["cross_check"]
    assert check["name"] == "wrk" and check["repetitions"] == 1
    assert {(m["target"], m["engine"]) for m in check["measurements"]} == {
        ("baseline", "wrk"),
        ("nginx", "wrk"),
    }
    assert (tmp_path / outcome.record.run_id / "cross-check.jsonl").is_file()

    report = build_report(outcome.record, outcome.measurements)
    pairs = {a.target: a for a in report.trust.agreements}
    baseline = pairs["baseline"]
    # 8 users × 1 / 20 ms = 400 req/s at most, for both engines
    assert 300 < baseline.throughput <= 405 and 300 < baseline.other_throughput <= 405
    assert baseline.throughput_gap_pct <= 10.0, baseline
    assert baseline.p50_agrees and abs(baseline.other_p50 - 20.0) <= 1.0, baseline
    assert baseline.agrees
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
