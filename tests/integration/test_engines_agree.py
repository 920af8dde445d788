"""Two engines, one target: a Gatling run cross-checked by wrk (the comparison step of
``gatebench run --cross-check wrk``) against the ground-truth backend (a fixed 20 ms), with
the engine's ceiling measured first. Real backend, nginx, Gatling and wrk; a few seconds of load
on 127.0.0.1.

What it asserts holds whatever the machine does:

- each engine's baseline figures obey the ground-truth rules against the backend's own timeline
  of the same phase (tests/groundtruth.py): the two engines, run one after the other, are each
  judged against what the backend saw at their own moment;
- the report's comparison says what its figures say, by the product's rule (10 % on
  throughput and p50): whether two engines run seconds apart agree is the machine's to decide,
  and is a benchmark (``python -m benchmarks ground-truth``), not a test;
- physics: 8 users waiting 20 ms each carry at most 400 req/s (plus the phase's edges), and the
  ceiling (the same engine against a static file, no hold) carries more than that.
"""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, assert_torn_down, items

from gatebench.core.model import Measurement
from gatebench.core.report import build_report, render_markdown
from gatebench.core.trust import AGREEMENT_PCT, agreement_summary, ceiling_of
from gatebench.local.ceiling import start_ceiling_server
from gatebench.local.procs import Supervisor
from gatebench.local.runner import RunOptions, run_benchmark
from groundtruth import TimelineWatch, epoch_of, gatling_stamps, judge_phase, measured_phase_ids

USERS, HOLD_MS = 8, 20.0
MOST_REQ_S = USERS * 1000.0 / HOLD_MS * 1.02
"""8 users × 1 / 20 ms, and what a phase's first and last requests add to a 3-s window."""


def test_gatling_and_wrk_each_report_what_the_backend_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    api, plan = items(
        gateways=["nginx"],
        baseline=True,
        repetitions=1,
        warmup={"duration": "1s"},
        backend={"mock": {"latency": f"{HOLD_MS:g}ms"}},
        workloads=[
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "injection": {"concurrent": USERS, "duration": "3s"},
            }
        ],
    )
    watch = TimelineWatch()
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="5" * 64,
        options=RunOptions(results_dir=tmp_path, seed=4, cross_check="wrk"),
        display=watch.display,
        supervisor_factory=watch.supervisor,
    )
    env = outcome.record.environment
    check = env["cross_check"]
    assert check["name"] == "wrk" and check["repetitions"] == 1
    others = [Measurement.from_dict(m) for m in check["measurements"]]
    assert {(m.target, m.engine) for m in others} == {("baseline", "wrk"), ("nginx", "wrk")}
    assert (tmp_path / outcome.record.run_id / "cross-check.jsonl").is_file()

    # each engine's baseline against the backend's timeline of its own phase
    timeline = watch.timeline
    assert timeline is not None, "the backend's timeline was not read before teardown"
    (gatling,) = [m for m in outcome.measurements if m.target == "baseline"]
    (wrk,) = [m for m in others if m.target == "baseline"]
    stamps = gatling_stamps(outcome.run_dir, measured_phase_ids(outcome.run_dir)[gatling.key])
    verdicts = [
        judge_phase(gatling, timeline, hold_ms=HOLD_MS, in_flight=0, stamps_ms=stamps),
        judge_phase(wrk, timeline, hold_ms=HOLD_MS, in_flight=USERS),
    ]
    for verdict in verdicts:
        print(verdict.describe())
        assert verdict.passed, verdict.describe()
    assert epoch_of(gatling, timeline) != epoch_of(wrk, timeline)

    # physics: no measured phase carries more than its users can ask; the ceiling, more
    ceiling = ceiling_of(env)
    assert ceiling is not None and ceiling.engine == "gatling"
    ceiling_rate = ceiling.throughput("read")
    assert ceiling_rate is not None
    for m in [*outcome.measurements, *others]:
        assert 0 < m.throughput <= MOST_REQ_S, (m.key, m.engine, m.throughput)
    assert ceiling_rate > MOST_REQ_S, ceiling_rate

    # the report says what its figures say
    report = build_report(outcome.record, outcome.measurements)
    agreements = {a.target: a for a in report.trust.agreements}
    assert set(agreements) == {"baseline", "nginx"}
    base = agreements["baseline"]
    assert (base.throughput, base.p50, base.other_throughput, base.other_p50) == (
        gatling.throughput,
        gatling.p50,
        wrk.throughput,
        wrk.p50,
    )
    assert base.agrees == (
        abs(base.throughput - base.other_throughput)
        <= AGREEMENT_PCT / 100 * max(base.throughput, base.other_throughput)
        and (
            abs(base.p50 - base.other_p50)
            <= max(base.p50_tolerance_ms, AGREEMENT_PCT / 100 * max(base.p50, base.other_p50))
        )
    )
    md = render_markdown(report)
    assert "## Trust: the load engine's headroom and a second engine" in md
    assert agreement_summary(report.trust.agreements) in md
    agreed = sum(a.agrees for a in report.trust.agreements)
    assert f"wrk and gatling agree within 10 % on throughput and p50 in {agreed} of 2 " in md
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
