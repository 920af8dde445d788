"""``gatebench serve`` running real benchmarks: uploads run one at a time through the same
runner as ``gatebench run``; Ctrl-C or SIGTERM stops the server, tears down the benchmark
it was running and leaves no process; a worker that dies leaves its run recorded."""

from __future__ import annotations

import itertools
import json
import os
import signal
from pathlib import Path

import pytest
from _engine_helpers import assert_torn_down
from _frontend_helpers import (
    PETSTORE,
    alive,
    descendants,
    start_serve,
    unreachable_petstore,
    wait_for,
)

from gatebench.store import SqliteStore

INTERRUPTED = "interrupted (Ctrl-C or SIGTERM); completed measurements kept"


def test_uploads_run_one_at_a_time_through_the_runner(tmp_path: Path) -> None:
    serve = start_serve(tmp_path)
    try:
        ids = []
        for _ in range(3):
            status, answer = serve.upload(unreachable_petstore(), "name=petstore.yaml&quick=1")
            assert status == 202, answer
            ids.append(answer["run_id"])
        assert len(set(ids)) == 3

        def all_finished() -> list[dict[str, object]] | None:
            runs = [serve.run(i) for i in ids]
            return runs if all(r["finished"] for r in runs) else None

        runs = wait_for("three finished runs", all_finished, timeout=90)
    finally:
        code, err = serve.stop()
    assert code == 0, err
    for run in runs:
        assert run["status"] == "failed"
        assert run["failed_step"] == "provisioning"
        assert run["error"].startswith("backend http://127.0.0.1:9 is unreachable")
        assert run["repetitions"] == 1  # the quick plan (the plan says 3)
    # Each run was recorded by its worker only after the previous one had finished.
    for before, after in itertools.pairwise(runs):
        assert after["created_at"] >= before["updated_at"]
    for run_id in ids:
        saved = json.loads((serve.results / run_id / "run.json").read_text())
        assert saved["status"] == "failed"
        assert (serve.results / "uploads" / run_id / "petstore.yaml").is_file()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_the_server_tears_down_its_running_benchmark(tmp_path: Path, sig: int) -> None:
    serve = start_serve(tmp_path)
    try:
        status, answer = serve.upload(PETSTORE.read_bytes(), "name=petstore.yaml&gateways=nginx")
        assert status == 202, answer
        run_id = answer["run_id"]
        run_dir = serve.results / run_id
        wait_for(
            "a measured phase",
            lambda: (
                (run_dir / "measurements.jsonl").is_file()
                and (run_dir / "measurements.jsonl").read_text().count("\n") >= 1
            ),
            timeout=120,
        )
        started = descendants(serve.proc.pid)
        assert any("gatebench.local.worker" in cmd for cmd in started.values()), started
        assert any("nginx" in cmd for cmd in started.values()), started
        code, err = serve.stop(sig)
    finally:
        if serve.proc.poll() is None:
            serve.stop(signal.SIGKILL)
    assert code == 0, err
    assert f"gatebench serve: run {run_id} was stopped and torn down" in err
    assert err.rstrip().endswith("gatebench serve: stopped")
    assert alive(started) == []
    assert_torn_down(run_dir)
    with SqliteStore(serve.store) as store:
        run = store.get_run(run_id)
        assert run is not None
        assert str(run.status) == "partial"
        assert run.error == INTERRUPTED
        kept = store.measurements(run_id)
    assert 1 <= len(kept) < 12
    assert all(m.ko == 0 for m in kept)


def test_a_worker_that_dies_leaves_its_run_recorded_and_the_queue_going(tmp_path: Path) -> None:
    serve = start_serve(tmp_path)
    try:
        status, answer = serve.upload(PETSTORE.read_bytes(), "name=petstore.yaml&gateways=nginx")
        assert status == 202
        run_id = answer["run_id"]
        run_dir = serve.results / run_id
        wait_for("loading", lambda: serve.run(run_id)["status"] == "loading", timeout=120)
        workers = {
            pid: cmd
            for pid, cmd in descendants(serve.proc.pid).items()
            if "gatebench.local.worker" in cmd
        }
        (worker,) = workers
        started = descendants(worker)
        os.kill(worker, signal.SIGKILL)
        run = wait_for(
            "the run to be settled", lambda: (r := serve.run(run_id))["finished"] and r, 60
        )
        assert run["status"] in ("failed", "partial")
        assert run["error"].startswith("the worker stopped without finishing the run: ")
        assert run["failed_step"] == "loading"
        # The kernel kills the worker's children with it (PR_SET_PDEATHSIG); what they leave
        # (nginx's worker processes outlive their master) is re-parented to the server, which
        # stops it by PID after the run.
        wait_for("the worker's processes to exit", lambda: not alive(started), 30)
        assert_torn_down(run_dir)
        # The queue goes on with the next upload.
        status, answer = serve.upload(unreachable_petstore(), "name=next.yaml&quick=1")
        assert status == 202
        nxt = wait_for(
            "the next run", lambda: (r := serve.run(answer["run_id"]))["finished"] and r, 60
        )
        assert nxt["status"] == "failed"
        assert nxt["failed_step"] == "provisioning"
    finally:
        code, err = serve.stop()
    assert code == 0, err
