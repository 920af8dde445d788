"""Faults with real processes: a rejected config, a gateway that dies mid-run, an unreachable
backend, a load-engine crash (retried once, then failed)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, RecordingSupervisor, assert_torn_down, items

from gatebench.core.errors import RunError
from gatebench.core.model import RunStatus
from gatebench.local.procs import free_port
from gatebench.local.runner import Progress, RunOptions, run_benchmark


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")


def _run(
    tmp_path: Path,
    supervisor: RecordingSupervisor | None = None,
    display: Any = None,
    **overrides: Any,
) -> Any:
    api, plan = items(**overrides)
    return run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="2" * 64,
        options=RunOptions(results_dir=tmp_path, seed=5, engine_warmup=False),
        display=display or (lambda p: None),
        supervisor_factory=(lambda: supervisor) if supervisor else RecordingSupervisor,
    )


def test_rejected_config_fails_that_gateway_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gatebench.core.renderers import get_renderer

    renderer_cls = type(get_renderer("nginx"))
    original = renderer_cls.render

    def broken(self: Any, api: Any, target: Any) -> dict[str, str]:
        files = original(self, api, target)
        # a real nginx -t rejects this: the checker, not gatebench, decides
        return {name: text + "\nnot_a_directive on;\n" for name, text in files.items()}

    monkeypatch.setattr(renderer_cls, "render", broken)
    outcome = _run(tmp_path)
    assert outcome.record.status == RunStatus.PARTIAL
    reason = outcome.record.target_errors["nginx"]
    assert "nginx: the configuration was rejected by" in reason
    assert "not_a_directive" in reason
    assert {m.target for m in outcome.measurements} == {"baseline"}
    assert len(outcome.measurements) == 4
    assert_torn_down(outcome.run_dir)


def test_gateway_dying_mid_run_is_marked_failed_and_the_baseline_goes_on(tmp_path: Path) -> None:
    supervisor = RecordingSupervisor()
    killed: list[int] = []

    def display(p: Progress) -> None:
        if p.phase is not None and p.phase.target == "nginx" and p.phase.measured and not killed:
            proc = supervisor.named("nginx")
            killed.append(proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)

    outcome = _run(tmp_path, supervisor, display)
    assert killed
    assert outcome.record.status == RunStatus.PARTIAL
    reason = outcome.record.target_errors["nginx"]
    assert reason.startswith("nginx exited with code -9 during the run; last log lines:")
    baseline = [m for m in outcome.measurements if m.target == "baseline"]
    assert len(baseline) == 4
    assert all(m.ko == 0 for m in baseline)
    saved = json.loads((outcome.run_dir / "run.json").read_text())
    assert "nginx" in saved["target_errors"]
    assert (outcome.run_dir / "skip-targets.txt").read_text() == "nginx\n"
    assert_torn_down(outcome.run_dir)


def test_unreachable_backend_fails_before_any_load(tmp_path: Path) -> None:
    port = free_port()
    with pytest.raises(RunError) as info:
        _run(tmp_path, backend={"url": f"http://127.0.0.1:{port}"})
    assert str(info.value).startswith(f"backend http://127.0.0.1:{port} is unreachable (")
    assert str(info.value).endswith(
        "start your service or fix backend.url in the plan — no load was sent"
    )
    (run_dir,) = tmp_path.iterdir()
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "failed"
    assert saved["failed_step"] == "provisioning"
    assert not (run_dir / "gatling.log").exists()
    assert_torn_down(run_dir)


def _kill_jvm_when(supervisor: RecordingSupervisor, times: int) -> Any:
    """A display hook that kills the Gatling JVM at the first measured phase of repetition 2,
    ``times`` times (the retry's JVM too when 2)."""
    kills: list[int] = []

    def display(p: Progress) -> None:
        if (
            p.phase is None
            or p.phase.repetition != 2
            or not p.phase.measured
            or len(kills) >= times
        ):
            return
        proc = next(q for q in reversed(supervisor.started) if q.name.startswith("gatling"))
        if proc.pid in kills or not proc.alive():
            return
        kills.append(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)

    return display, kills


def test_engine_crash_is_retried_once(tmp_path: Path) -> None:
    supervisor = RecordingSupervisor()
    display, kills = _kill_jvm_when(supervisor, 1)
    outcome = _run(tmp_path, supervisor, display)
    assert len(kills) == 1
    assert len(outcome.engine_runs) == 2
    assert outcome.engine_runs[0].crashed
    assert not outcome.engine_runs[1].crashed
    assert outcome.record.status == RunStatus.DONE
    assert len(outcome.measurements) == 8
    assert all(
        m.ko == 0 and m.requests == (60 if m.workload == "read" else 20)
        for m in outcome.measurements
    )
    assert any(n.startswith("the load engine crashed; retrying ") for n in outcome.notes)
    assert (outcome.run_dir / "gatling-retry.log").is_file()
    assert_torn_down(outcome.run_dir)


class KillRetrySupervisor(RecordingSupervisor):
    """Kills the retry JVM as soon as it starts: the second crash, without racing the
    retry's (short) phases."""

    def __init__(self, kills: list[int]) -> None:
        super().__init__()
        self.kills = kills

    def start(self, name: str, argv: Any, **kwargs: Any) -> Any:
        proc = super().start(name, argv, **kwargs)
        if name.startswith("gatling-retry"):
            self.kills.append(proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)
        return proc


def test_engine_crashing_twice_fails_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    retry_kills: list[int] = []
    supervisor = KillRetrySupervisor(retry_kills)
    display, first_kills = _kill_jvm_when(supervisor, 1)
    with pytest.raises(
        RunError, match=r"^the load engine failed twice: Gatling exited with code -9 after"
    ):
        _run(tmp_path, supervisor, display)
    assert len(first_kills) == 1  # the first JVM, at repetition 2
    assert len(retry_kills) == 1  # the retry JVM, as it started
    (run_dir,) = tmp_path.iterdir()
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "partial"
    assert saved["failed_step"] == "loading"
    kept = (run_dir / "measurements.jsonl").read_text().splitlines()
    assert 4 <= len(kept) < 8  # repetition 1 (4 phases) was complete before the first crash
    assert_torn_down(run_dir)


def test_cloud_only_gateway_is_reported_not_fatal(tmp_path: Path) -> None:
    outcome = _run(tmp_path, gateways=["kong", "nginx"], repetitions=1)
    reason = outcome.record.target_errors["kong"]
    assert reason == "not run here: kong only runs on the cloud path"
    assert "kong: not measured here: kong only runs on the cloud path" in outcome.notes
    assert {m.target for m in outcome.measurements} == {"nginx", "baseline"}
    assert (outcome.run_dir / "gateways/kong").is_dir()  # rendered all the same
    assert outcome.record.status == RunStatus.PARTIAL
    assert_torn_down(outcome.run_dir)


def _kill_master_spec(tmp_path: Path) -> Path:
    """items.yaml with two gateways, three repetitions and a read phase long enough (2 s) for
    the kill to land inside it."""
    text = ITEMS.read_text(encoding="utf-8")
    for old, new in (
        ("gateways: [nginx]", "gateways: [nginx, haproxy]"),
        ("repetitions: 2", "repetitions: 3"),
        ("injection: {sequential: 60}", "injection: {concurrent: 2, duration: 2s}"),
    ):
        assert old in text
        text = text.replace(old, new)
    spec = tmp_path / "items.yaml"
    spec.write_text(text, encoding="utf-8")
    return spec


def _nginx_master(run_root: Path) -> psutil.Process:
    """The run's nginx gateway: a child of this process (the run started it) whose command
    line names its folder (the ceiling server is an nginx too, in another folder)."""
    for child in psutil.Process().children():
        cmd = " ".join(child.cmdline())
        if child.name() == "nginx" and str(run_root) in cmd and "/gateways/nginx" in cmd:
            return child
    raise AssertionError("the run's nginx gateway is not a child of this process")


def _still_running(procs: list[psutil.Process], timeout: float = 10.0) -> list[int]:
    """PIDs of ``procs`` still running after ``timeout`` (a killed orphan waits for init to
    reap it: a zombie has stopped running)."""
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    left = []
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc.pid)
    return left


def test_a_gateway_killed_mid_run_is_flagged_and_not_ranked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 of the nginx gateway's master (its worker keeps serving) while nginx's measured
    read phase of repetition 2 runs: the run ends partial (exit 3), every phase that ends
    after the kill is flagged target-failed and left out, nginx is not ranked and the
    verdict, the score table and the CLI's score lines say so; nothing is left running."""
    from gatebench.cli import _local as run_cli
    from gatebench.cli import main
    from gatebench.core.model import Measurement, RunRecord
    from gatebench.core.report import build_report
    from gatebench.core.report._tables import score_table

    results = (tmp_path / "results").resolve()
    kill: dict[str, float] = {}
    workers: list[psutil.Process] = []

    class KillingDisplay(run_cli.ProgressLine):
        def __call__(self, p: Progress) -> None:
            phase = p.phase
            if (
                not kill
                and phase is not None
                and phase.measured
                and phase.target == "nginx"
                and phase.workload == "read"
                and phase.repetition == 2
            ):
                master = _nginx_master(results)
                workers.extend(master.children())
                kill["pid"] = master.pid
                kill["at_ms"] = time.time() * 1000.0
                os.kill(master.pid, signal.SIGKILL)  # the master only: the worker serves on
            super().__call__(p)

    monkeypatch.setattr(run_cli, "ProgressLine", KillingDisplay)
    code = main(
        [
            "run",
            str(_kill_master_spec(tmp_path)),
            "--no-engine-warmup",
            "--results",
            str(results),
            "--seed",
            "5",
            "--store",
            str(tmp_path / "store.sqlite"),
        ]
    )
    out = capsys.readouterr().out
    assert kill, "the display never showed nginx's read phase of repetition 2"
    assert code == 3
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "partial"
    assert saved["target_errors"]["nginx"].startswith("nginx exited with code -9 during the run")
    failure = saved["environment"]["failures"]["nginx"]
    assert failure["repetition"] == 2
    assert failure["last_alive_ms"] <= kill["at_ms"] <= failure["first_dead_ms"]

    measurements = [
        Measurement.from_dict(json.loads(line))
        for line in (run_dir / "measurements.jsonl").read_text().splitlines()
    ]
    nginx = [m for m in measurements if m.target == "nginx"]
    flagged = [m for m in nginx if "target-failed" in m.flags]
    # the read phase the kill landed in is there (the orphaned worker served it), flagged
    assert ("read", 2) in {(m.workload, m.repetition) for m in flagged}
    for m in nginx:
        end_ms = (m.started_at + m.duration_s) * 1000.0
        if end_ms >= kill["at_ms"]:
            assert "target-failed" in m.flags, m.key
        if "target-failed" in m.flags:
            assert end_ms > failure["last_alive_ms"], m.key
    assert not any(m.repetition == 1 and "target-failed" in m.flags for m in nginx)
    assert not any("target-failed" in m.flags for m in measurements if m.target != "nginx")

    scores = json.loads((run_dir / "scores.json").read_text())
    assert set(scores) == {"haproxy"}
    report = build_report(RunRecord.from_dict(saved), measurements)
    assert [g.target for g in report.summary.scores.gateways] == ["haproxy"]
    assert report.summary.unranked == {"nginx": "failed during repetition 2"}
    assert set(report.summary.failed_measurements) == {m.key for m in flagged}
    assert all(
        (w, "nginx") not in report.summary.cells or report.summary.cells[(w, "nginx")].n <= 2
        for w in ("read", "write")
    )
    verdict = " ".join(report.verdict)
    assert (
        "nginx failed during repetition 2: not ranked (the phases that overlap a failure are "
        "left out of every figure)." in verdict
    )
    rows = {row.header: [c.text for c in row.cells] for row in score_table(report).rows}
    assert rows["nginx"] == ["–", "–", "–", "–", "not scored: failed during repetition 2"]
    assert rows["haproxy"][0] == "1"
    assert "  –  nginx not scored: failed during repetition 2" in out.splitlines()
    assert "nginx failed during repetition 2: not ranked" in out
    assert "Only haproxy was ranked" in verdict
    assert workers  # the orphaned worker that went on serving...
    assert _still_running(workers) == []  # ...is gone too
    assert_torn_down(run_dir)
