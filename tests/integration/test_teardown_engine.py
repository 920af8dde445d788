"""Teardown is guaranteed: after an exception, Ctrl-C (SIGINT) and SIGTERM no process of the
run is left and every port it used is free; Ctrl-C keeps the completed measurements."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, ROOT, TOKEN_ENV, assert_torn_down, items

from gatebench.runner import Progress, RunOptions, run_benchmark


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
            options=RunOptions(results_dir=tmp_path),
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
            "--results",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
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
