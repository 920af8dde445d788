"""What `gatebench run` says on stderr when a run is interrupted: where what it measured is
kept when it kept something (its record is ``partial``), else only where its files are; and
what the interrupt said (one during teardown, which was finished first)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gatebench.cli._local import run_here
from gatebench.core.model import RunRecord, RunStatus
from gatebench.local.procs import TEARDOWN_FINISHED
from gatebench.run import RunOptions

KEPT = "completed measurements kept in"
OPTIONS = RunOptions(run_id="20260101-000000-0000abcd")


def _run_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_local: Any, raised: type[BaseException]
) -> Path:
    """``gatebench run``'s local edge over ``run_local`` (a mock of the run), which raises
    ``raised``; returns the run's folder."""
    options = replace(OPTIONS, results_dir=tmp_path)
    monkeypatch.setattr("gatebench.local.runner.run_local", run_local)
    args = argparse.Namespace(spec=str(tmp_path / "x.yaml"), quiet=True, store=None)
    args.results = str(tmp_path)
    with pytest.raises(raised):
        run_here(args, "fixed", None, None, "0" * 64, options, kept=KEPT)  # type: ignore[arg-type]
    return tmp_path / str(OPTIONS.run_id)


def _interrupted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    status: RunStatus,
    interrupt: KeyboardInterrupt,
) -> tuple[list[str], Path]:
    """The lines `run_here` prints when the run stops with ``interrupt``, its record
    ``status`` (a mock of the run: the interrupt is placed where the test wants it)."""
    run_dir = tmp_path / str(OPTIONS.run_id)

    def run_local(kind: str, api: Any, request: Any, *, store: Any, **_: Any) -> Any:
        run_dir.mkdir()
        (run_dir / "run.json").write_text("{}\n", encoding="utf-8")  # a run writes its record
        store.create_run(RunRecord(str(OPTIONS.run_id), "file:///x", "0" * 64, status=status))
        raise interrupt

    _run_here(tmp_path, monkeypatch, run_local, KeyboardInterrupt)
    return capsys.readouterr().err.splitlines(), run_dir


def test_a_run_stopped_before_it_wrote_anything_leaves_no_empty_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's folder is made with its id (two runs in one second take two folders): a run
    stopped before it wrote anything there (a full disk, a store it cannot open) leaves no empty
    folder and names none."""
    from gatebench.core.errors import StoreError

    (tmp_path / str(OPTIONS.run_id)).mkdir()

    def run_local(kind: str, api: Any, request: Any, **_: Any) -> Any:
        raise StoreError("no space left")

    run_dir = _run_here(tmp_path, monkeypatch, run_local, StoreError)
    assert capsys.readouterr().err == ""
    assert not run_dir.exists()


def test_an_interrupted_run_that_kept_measurements_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    err, run_dir = _interrupted(
        tmp_path, monkeypatch, capsys, RunStatus.PARTIAL, KeyboardInterrupt()
    )
    assert err == [f"gatebench: completed measurements kept in {run_dir}/"]


def test_an_interrupted_run_that_measured_nothing_says_only_where_its_files_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    err, run_dir = _interrupted(
        tmp_path, monkeypatch, capsys, RunStatus.FAILED, KeyboardInterrupt()
    )
    assert err == [f"gatebench: the run's files are in {run_dir}/"]


def test_an_interrupt_during_teardown_says_teardown_was_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    err, run_dir = _interrupted(
        tmp_path, monkeypatch, capsys, RunStatus.PARTIAL, KeyboardInterrupt(TEARDOWN_FINISHED)
    )
    assert err == [
        "gatebench: interrupted during teardown, which was finished first",
        f"gatebench: completed measurements kept in {run_dir}/",
    ]
