"""Teardown is guaranteed: after an exception, Ctrl-C (SIGINT) and SIGTERM no process of the
run is left and every port it used is free; Ctrl-C keeps the completed measurements. After
``kill -9`` of gatebench, which runs no teardown, the run's guardian ends what it started, or
the next run in the same store does when the guardian died too; the run shows as abandoned
and is then recorded so."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from _engine_helpers import (
    ITEMS,
    ROOT,
    TOKEN_ENV,
    assert_torn_down,
    interruptible,
    items,
    processes_mentioning,
)

from gatebench.local.runner import Progress, RunOptions, run_benchmark


def test_exception_in_the_middle_tears_everything_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    api, plan = items()

    def display(p: Progress) -> None:
        if p.phase is not None and p.phase.measured:
            raise RuntimeError("boom in the middle of loading")

    with pytest.raises(RuntimeError, match="boom in the middle of loading"):
        run_benchmark(
            api,
            plan,
            spec_uri=str(ITEMS),
            spec_sha256="3" * 64,
            options=RunOptions(results_dir=tmp_path, engine_warmup=False),
            display=display,
        )
    (run_dir,) = tmp_path.iterdir()
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] in ("failed", "partial")
    assert saved["failed_step"] == "loading"
    assert saved["error"] == "boom in the middle of loading"
    assert_torn_down(run_dir)


def _start_cli(tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, TOKEN_ENV: "t"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gatebench.cli",
            "run",
            str(ITEMS),
            "--repetitions",
            "6",
            "--no-engine-warmup",
            "--results",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=interruptible,
    )


def _wait_for_measurements(tmp_path: Path, proc: subprocess.Popen[bytes], count: int) -> Path:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        for run_dir in (p for p in tmp_path.iterdir() if p.is_dir()):
            jsonl = run_dir / "measurements.jsonl"
            if jsonl.exists() and len(jsonl.read_text().splitlines()) >= count:
                return run_dir
        time.sleep(0.1)
    raise AssertionError("no measurement was written in 90 s")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_signal_tears_down_and_keeps_completed_measurements(
    tmp_path: Path, sig: int, code: int
) -> None:
    proc = _start_cli(tmp_path)
    try:
        run_dir = _wait_for_measurements(tmp_path, proc, 2)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err.decode()
    assert "gatebench: interrupted" in err.decode()
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "partial"
    assert saved["error"] == "interrupted (Ctrl-C or SIGTERM); completed measurements kept"
    kept = [json.loads(line) for line in (run_dir / "measurements.jsonl").read_text().splitlines()]
    assert 2 <= len(kept) < 24
    assert all(m["ko"] == 0 for m in kept)
    assert_torn_down(run_dir)


def _wait_for_status(tmp_path: Path, proc: subprocess.Popen[bytes], wanted: set[str]) -> Path:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        for run_dir in (p for p in tmp_path.iterdir() if p.is_dir()):
            with contextlib.suppress(OSError, ValueError):
                if json.loads((run_dir / "run.json").read_text())["status"] in wanted:
                    return run_dir
        time.sleep(0.01)
    raise AssertionError(f"the run did not reach {sorted(wanted)} in 90 s")


def _processes_below(pid: int) -> dict[int, float]:
    """Every process below ``pid`` (the guardian included), with its start time."""
    return {p.pid: p.create_time() for p in psutil.Process(pid).children(recursive=True)}


def _still_running(procs: dict[int, float]) -> list[str]:
    left = []
    for pid, started in procs.items():
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            if abs(p.create_time() - started) < 0.05 and p.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{pid}: {' '.join(p.cmdline())[:120]}")
    return left


def _wait_gone(procs: dict[int, float], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := _still_running(procs)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _gatebench(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "gatebench.cli", *args],
        cwd=ROOT,
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.stdout + out.stderr


def _listed(tmp_path: Path, run_id: str) -> dict[str, object]:
    """The run as `gatebench runs` lists it (JSON), and the status its table shows."""
    store = str(tmp_path / "gatebench.sqlite")
    (run,) = [
        r
        for r in json.loads(_gatebench(tmp_path, "runs", "--store", store, "--json"))
        if r["run_id"] == run_id
    ]
    table = _gatebench(tmp_path, "runs", "--store", store).splitlines()
    (row,) = [line.split() for line in table if line.startswith(run_id)]
    return {**run, "shown": row[1]}


def _start_again(tmp_path: Path) -> str:
    """The next start in the same store (it stops at once: the plan's token is not set)."""
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    return _gatebench(tmp_path, "run", str(ITEMS), "--results", str(tmp_path), env=env)


@pytest.mark.parametrize("moment", ["provisioning", "loading"])
def test_kill_9_leaves_no_process_of_the_run_and_the_run_shows_abandoned(
    tmp_path: Path, moment: str
) -> None:
    proc = _start_cli(tmp_path)
    try:
        wanted = {"provisioning", "loading"} if moment == "provisioning" else {"loading"}
        run_dir = _wait_for_status(tmp_path, proc, wanted)
        if moment == "loading":
            run_dir = _wait_for_measurements(tmp_path, proc, 1)
        started = _processes_below(proc.pid)
        proc.kill()
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert _wait_gone(started, timeout=20) == []
    assert processes_mentioning(str(run_dir.resolve())) == []
    listed = _listed(tmp_path, run_dir.name)
    assert (listed["shown"], listed["abandoned"]) == ("abandoned", True)
    assert listed["status"] in ("provisioning", "loading")
    ended = [json.loads(line) for line in (run_dir / "processes.jsonl").read_text().splitlines()]
    assert any("ended" in entry for entry in ended)  # the guardian did it
    assert (run_dir / ".reserve").exists()  # held back for an end that was never recorded
    _start_again(tmp_path)
    settled = _listed(tmp_path, run_dir.name)
    assert settled["shown"] in ("failed", "partial") and settled["abandoned"] is False
    assert settled["failed_step"] == listed["status"]
    assert str(settled["error"]).startswith(
        f"abandoned: the gatebench process that ran it (pid {proc.pid}) ended without finishing it"
    )
    assert json.loads((run_dir / "run.json").read_text())["error"] == settled["error"]
    assert not (run_dir / ".reserve").exists()


def test_the_next_start_ends_what_a_killed_run_left_when_its_guardian_died_too(
    tmp_path: Path,
) -> None:
    proc = _start_cli(tmp_path)
    try:
        run_dir = _wait_for_measurements(tmp_path, proc, 1)
        started = _processes_below(proc.pid)
        (guardian,) = [
            p
            for p in psutil.Process(proc.pid).children()
            if "_guardian.py" in " ".join(p.cmdline())
        ]
        guardian.kill()
        proc.kill()
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    time.sleep(2)
    left = _still_running(started)
    assert any("nginx: worker" in line for line in left), left  # nobody ended them yet
    _start_again(tmp_path)
    assert _still_running(started) == []
    assert processes_mentioning(str(run_dir.resolve())) == []
    settled = _listed(tmp_path, run_dir.name)
    assert settled["shown"] in ("failed", "partial")
    assert str(settled["error"]).endswith("of its processes still ran and were stopped")
