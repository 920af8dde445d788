"""Faults with real processes: a rejected config, a gateway that dies mid-run, an unreachable
backend, a load-engine crash (retried once, then failed)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, RecordingSupervisor, assert_torn_down, items

from gatebench.errors import RunError
from gatebench.model import RunStatus
from gatebench.procs import free_port
from gatebench.runner import Progress, RunOptions, run_benchmark


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
        options=RunOptions(results_dir=tmp_path, seed=5),
        display=display or (lambda p: None),
        supervisor_factory=(lambda: supervisor) if supervisor else RecordingSupervisor,
    )


def test_rejected_config_fails_that_gateway_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gatebench.renderers import get_renderer

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
    assert reason.startswith("unsupported here (cloud path only): ")
    assert "kong: runs only on the cloud path; not measured here" in outcome.notes
    assert {m.target for m in outcome.measurements} == {"nginx", "baseline"}
    assert (outcome.run_dir / "gateways/kong").is_dir()  # rendered all the same
    assert outcome.record.status == RunStatus.PARTIAL
    assert_torn_down(outcome.run_dir)
