"""Several real Gatling testers, each in a network namespace of its own, against the real
auction backend (gatebench.local._fanout): the same request totals with 1 and 3 testers, merged
percentiles equal to those of the concatenated raw logs, a tester killed mid-phase makes its
phase ``partial``, and nothing of the namespaces is left behind."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import ROOT

from gatebench.core.plan import Injection, build_plan
from gatebench.core.simlog import RequestRecord, read_simlog
from gatebench.core.spec import read_spec
from gatebench.core.stats import PhaseSample, phase_stats
from gatebench.core.testers import MergedPhase
from gatebench.core.workload import Control, Phase, Schedule, render_workload
from gatebench.local._fanout import FanOut, fanout_problem, run_testers
from gatebench.local._netns import leftovers, namespaces_problem
from gatebench.local.backends import start_backend
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(namespaces_problem() is not None, reason=str(namespaces_problem())),
]


class Hooks:
    def __init__(self) -> None:
        self.merged: dict[int, MergedPhase] = {}

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        raise AssertionError("a split phase arrives through on_merged")

    def on_merged(self, merged: MergedPhase) -> None:
        self.merged[merged.result.phase] = merged

    def tick(self) -> None:
        pass


def _served(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/__gatebench__/stats", timeout=5) as r:
        count: int = json.load(r)["requests"]
        return count


def _document(port: int, injections: list[Injection]) -> dict[str, Any]:
    result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
    assert result.api is not None
    section = dict(result.benchmark)
    section["workloads"] = [
        {
            "name": f"w{i}",
            "operation": "getAuction",
            "params": {"auctionId": {"range": [1, 9]}},
            "injection": {"at_once": 1},
        }
        for i in range(len(injections))
    ]
    plan = build_plan(section, result.api)
    base = f"http://127.0.0.1:{port}"
    reset = Control(f"{base}/__gatebench__/reset")
    phases = [
        Phase(i, "baseline", f"w{i}", 1, True, base, inj, (reset,))
        for i, inj in enumerate(injections)
    ]
    return render_workload(plan, result.api, Schedule(tuple(phases), seed=3))


FIXED = [
    Injection("at_once", users=61),
    Injection("concurrent", users=4, requests=301),
    Injection("constant_rate", rate=50.0, duration=2.0),
    Injection("sequential", requests=40),
]


def _run(testers: int, work: Path, injections: list[Injection]) -> tuple[Hooks, FanOut, int]:
    os.environ.setdefault("AUCTION_TOKEN", "testers-test-token")  # the JVMs inherit it
    with Supervisor() as sup:
        _, port = start_backend(sup, "auction", work)
        hooks = Hooks()
        out = run_testers(_document(port, injections), testers, work, hooks, supervisor=sup)
        served = _served(port)
    return hooks, out, served


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> tuple[Hooks, FanOut, int, Path]:
    work = tmp_path_factory.mktemp("three")
    hooks, out, served = _run(3, work, FIXED)
    return hooks, out, served, work


def test_one_and_three_testers_send_the_same_requests(
    three: tuple[Hooks, FanOut, int, Path], tmp_path: Path
) -> None:
    hooks3, out3, served3, _ = three
    hooks1, out1, served1 = _run(1, tmp_path, FIXED)
    totals1 = {p: m.result.sample.requests for p, m in hooks1.merged.items()}
    totals3 = {p: m.result.sample.requests for p, m in hooks3.merged.items()}
    assert totals1 == totals3 == {0: 61, 1: 301, 2: 100, 3: 40}
    # the backend's count restarts at every reset (tester 0's, before each phase): after the
    # last one it saw exactly the sequential phase's requests
    assert served1 == served3 == 40
    assert [s.requests for s in hooks3.merged[0].shares] == [21, 20, 20]
    assert [s.tester for s in hooks3.merged[3].shares] == [0]  # one user: not split
    assert all("partial" not in m.flags for m in hooks3.merged.values())
    assert out1.notes == out3.notes == []


def test_merged_percentiles_equal_those_of_the_concatenated_logs(
    three: tuple[Hooks, FanOut, int, Path],
) -> None:
    hooks, out, _, work = three
    logs = sorted(work.glob("gatling-t*-results/*/simulation.log"))
    assert len(logs) == 3
    samples: dict[int, PhaseSample] = {}
    for log in logs:
        for record in read_simlog(log):
            if isinstance(record, RequestRecord) and record.name.startswith("p0"):
                samples.setdefault(int(record.name[1:]), PhaseSample()).add(
                    record.start, record.end, record.ok, record.message
                )
    for index, merged in hooks.merged.items():
        got, want = phase_stats(merged.result.sample), phase_stats(samples[index])
        assert (got.requests, got.p50, got.p90, got.p95, got.p99, got.max) == (
            want.requests,
            want.p50,
            want.p90,
            want.p95,
            want.p99,
            want.max,
        )
        assert 0 <= merged.start_skew_ms < 1000  # the testers meet before every phase
    assert len(out.runs) == 3


def test_a_tester_killed_mid_phase_makes_it_partial(tmp_path: Path) -> None:
    long = [Injection("concurrent", users=2, duration=8.0)]
    killed: list[int] = []

    def kill_tester_1(sup: Supervisor) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            logs = list(tmp_path.glob("gatling-t1-results/*/simulation.log"))
            procs = [p for p in sup.processes if p.name == "gatling-t1"]
            if logs and procs and logs[0].stat().st_size > 2000:
                os.kill(procs[0].pid, signal.SIGKILL)  # our own JVM, by its pid
                killed.append(procs[0].pid)
                return
            time.sleep(0.1)

    os.environ.setdefault("AUCTION_TOKEN", "testers-test-token")
    with Supervisor() as sup:
        _, port = start_backend(sup, "auction", tmp_path)
        hooks = Hooks()
        killer = threading.Thread(target=kill_tester_1, args=(sup,), daemon=True)
        killer.start()
        out = run_testers(_document(port, long), 2, tmp_path, hooks, supervisor=sup)
        killer.join()
    assert killed
    merged = hooks.merged[0]
    assert merged.flags[-1] == "partial"
    assert merged.reasons[0].startswith("tester 1 failed: Gatling exited with code ")
    assert [(s.tester, s.failure is None) for s in merged.shares] == [(0, True), (1, False)]
    assert merged.shares[0].requests > 0
    assert out.notes[0].startswith("tester 1 failed: Gatling exited with code ")


def test_no_namespace_is_left_behind(three: tuple[Hooks, FanOut, int, Path]) -> None:
    assert leftovers("gb") == []


def test_refusals_are_clear() -> None:
    assert fanout_problem(17, "gatling") == "--testers: expected 1 to 16, got 17"
    assert fanout_problem(2, "wrk") == (
        "--testers 2: only the gatling engine runs as several testers, not wrk"
    )
    assert fanout_problem(1, "wrk") is None


def test_a_whole_run_with_two_testers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from _engine_helpers import ITEMS, TOKEN_ENV, items

    from gatebench.core.model import RunStatus
    from gatebench.local.runner import RunOptions, run_benchmark

    monkeypatch.setenv(TOKEN_ENV, "tok-testers")
    api, plan = items(repetitions=1)
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="0" * 64,
        options=RunOptions(results_dir=tmp_path, seed=5, testers=2),
    )
    assert outcome.record.status == RunStatus.DONE, (
        outcome.record.error,
        outcome.record.target_errors,
        outcome.notes,
        [(m.target, m.workload, m.flags) for m in outcome.measurements],
    )
    assert outcome.record.environment["testers"] == 2
    assert sorted((m.target, m.workload, m.requests) for m in outcome.measurements) == [
        ("baseline", "read", 60),
        ("baseline", "write", 20),
        ("nginx", "read", 60),
        ("nginx", "write", 20),
    ]
    lines = (outcome.run_dir / "testers.jsonl").read_text(encoding="utf-8").splitlines()
    shares = [json.loads(line)["testers"] for line in lines]
    # the sequential "read" (one user) is tester 0's alone; "write" (at_once 20) is split 10/10
    assert {len(s) for s in shares} == {1, 2}
    split = [[t["requests"] for t in s] for s in shares if len(s) == 2]
    assert [10, 10] in split
    assert len(list(outcome.run_dir.glob("gatling-t1-results/*/simulation.log"))) == 1
    assert leftovers("gb") == []
