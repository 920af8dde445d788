"""A full disk is one line, a recorded end and nothing lost: the results folder (and the result
store in it) on a small tmpfs the test mounts, filled while the load runs, before a run starts,
and under a store that exists (docs/engine.md, "Faults")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, ROOT, TOKEN_ENV, assert_torn_down

from gatebench.core.errors import NoSpaceLeft
from gatebench.core.model import RunRecord
from gatebench.core.trust import ENGINE_BUSY_FLAG, ENGINE_COLD_FLAG
from gatebench.store import open_store
from smallfs import fill, mount_problem, small_filesystem

pytestmark = pytest.mark.skipif(mount_problem() is not None, reason=str(mount_problem()))


def _gatebench(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gatebench.cli", *args],
        cwd=ROOT,
        env={**os.environ, TOKEN_ENV: "t"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _errors(stderr: str) -> list[str]:
    """The CLI's own lines (the live display's are ``[step] ...``)."""
    return [line for line in stderr.splitlines() if line.startswith("gatebench: ")]


def test_a_disk_that_fills_during_the_load_ends_the_run_with_one_line_and_keeps_what_was_measured(
    tmp_path: Path,
) -> None:
    with small_filesystem(tmp_path / "small", "16m") as small:
        results = small / "results"
        proc = _gatebench(
            "run", str(ITEMS), "--repetitions", "6", "--no-engine-warmup", "--results", str(results)
        )
        try:
            deadline = time.monotonic() + 120
            run_dir = None
            while time.monotonic() < deadline and proc.poll() is None:
                found = [p for p in results.glob("*") if (p / "measurements.jsonl").is_file()]
                if found and len(_lines(found[0] / "measurements.jsonl")) >= 2:
                    run_dir = found[0]
                    break
                time.sleep(0.05)
            assert run_dir is not None, proc.communicate()[1]
            before = _lines(run_dir / "measurements.jsonl")
            fill(small)
            _, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 3, err
        assert "Traceback" not in err
        errors = _errors(err)
        assert errors[-1].startswith(f"gatebench: no space left on {small} while writing "), err
        assert errors == [f"gatebench: the run's files are in {run_dir}/", errors[-1]]
        reason = errors[-1].removeprefix("gatebench: ")
        saved = json.loads((run_dir / "run.json").read_text())
        assert (saved["status"], saved["failed_step"], saved["error"]) == (
            "partial",
            "loading",
            reason,
        )
        kept = _lines(run_dir / "measurements.jsonl")
        # What was measured before is kept, whole. The one change allowed: a run that ends
        # rewrites its measurements once with the flags that compare a phase with the run's
        # others added (run._journal.flag_whole_run: the ceiling's "tester-bound",
        # "engine-cold", "engine-busy"), so flags may grow and nothing else may differ.
        assert len(kept) >= len(before)
        for was, now in zip(before, kept[: len(before)], strict=True):
            was_m, now_m = json.loads(was), json.loads(now)
            was_flags, now_flags = set(was_m.pop("flags")), set(now_m.pop("flags"))
            whole_run = {"tester-bound", ENGINE_COLD_FLAG, ENGINE_BUSY_FLAG}
            assert was_flags <= now_flags and now_flags - was_flags <= whole_run, (was, now)
            assert now_m == was_m
        assert all(json.loads(line)["run_id"] == run_dir.name for line in kept)
        with open_store(results / "gatebench.sqlite") as store:
            stored = store.get_run(run_dir.name)
            assert stored is not None
            assert (stored.status, stored.failed_step, stored.error) == (
                "partial",
                "loading",
                reason,
            )
            in_store = [json.dumps(m.to_dict()) for m in store.measurements(run_dir.name)]
        assert sorted(in_store) == sorted(kept)  # the same phases in both places
        assert_torn_down(run_dir)
        assert not (run_dir / ".reserve").exists()


def test_a_run_on_a_full_disk_stops_at_once_with_one_line(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small", "1m") as small:
        fill(small)
        proc = _gatebench(
            "run", str(ITEMS), "--no-engine-warmup", "--results", str(small / "results")
        )
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 3, err
        assert "Traceback" not in err
        store = small / "results" / "gatebench.sqlite"
        assert _errors(err) == [
            f"gatebench: no space left on {small} while writing the result store {store}"
        ]


def test_a_store_on_a_full_disk_is_not_taken_for_something_else(tmp_path: Path) -> None:
    """Opening an existing store needs a little space (SQLite's write-ahead log)."""
    with small_filesystem(tmp_path / "small", "1m") as small:
        path = small / "gatebench.sqlite"
        with open_store(path) as store:
            store.create_run(RunRecord("r1", "file:///x", "0" * 64))
        fill(small)
        with pytest.raises(NoSpaceLeft) as info, open_store(path) as store:
            store.list_runs()
        assert str(info.value) == f"no space left on {small} while writing the result store {path}"
        proc = _gatebench("runs", "--store", str(path))
        _, err = proc.communicate(timeout=60)
        assert (proc.returncode, _errors(err)) == (3, [f"gatebench: {info.value}"])
