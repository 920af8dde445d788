"""`gatebench cloud check`: the CI gate on a workflow result's scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gatebench.cli import main


def write(tmp_path: Path, name: str, document: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def check(tmp_path: Path, result: Any, baseline: Any, *extra: str) -> int:
    return main(
        [
            "cloud",
            "check",
            "--result",
            write(tmp_path, "result.json", result),
            "--baseline",
            write(tmp_path, "baseline.json", baseline),
            *extra,
        ]
    )


BASELINE = {"status": "done", "scores": {"nginx": 91.0, "haproxy": 88.5, "baseline": 100.0}}


def test_scores_within_tolerance_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = {
        "run_id": "r-1",
        "status": "done",
        "scores": {"nginx": 89.5, "haproxy": 90.0, "baseline": 100.0},
    }
    assert check(tmp_path, result, BASELINE) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "baseline: 100.0 vs 100.0 (+0.0) ok",
        "haproxy: 90.0 vs 88.5 (+1.5) ok",
        "nginx: 89.5 vs 91.0 (-1.5) ok",
    ]


def test_a_drop_beyond_tolerance_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = {"status": "done", "scores": {"nginx": {"score": 80.0}, "haproxy": 88.5}}
    assert check(tmp_path, result, BASELINE, "--tolerance", "5") == 1
    captured = capsys.readouterr()
    assert "nginx: 80.0 vs 91.0 (-11.0) REGRESSED" in captured.out
    assert "baseline: missing from the run (baseline 100.0)" in captured.out
    assert captured.err.strip() == "2 targets regressed by more than 5 points"


def test_a_run_that_is_not_done_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(tmp_path, {**BASELINE, "status": "partial"}, BASELINE) == 1
    assert "finished as 'partial'" in capsys.readouterr().err


def test_a_malformed_result_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check(tmp_path, {"scores": {"nginx": "high"}}, BASELINE) == 1
    err = capsys.readouterr().err
    assert "result.json: error: /scores/nginx: expected a score in points, got 'high'" in err
