"""The `gatebench cloud` commands the builds run, as processes against the Cloud Storage
emulator (the same commands a Cloud Build step runs): the load step asks the tester through
the bucket and waits for its answer; wait-ready waits for the tester's readiness."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.servers import gcs_env, start_gcs_emulator, storage_client
from gatebench.cloud import Storage
from gatebench.cloud._tester import wait_for_marker
from gatebench.local.procs import Supervisor

GATEBENCH = str(Path(sys.executable).parent / "gatebench")
RUNS = "gb-runs"
RUN = "r-0123456789abcdef0123"


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with Supervisor() as supervisor:
        endpoint = start_gcs_emulator(supervisor, tmp_path_factory.mktemp("steps"))
        client: Any = storage_client(endpoint)
        yield {"env": gcs_env(endpoint), "bucket": client.create_bucket(RUNS)}


def command(gcs: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, **gcs["env"]}
    return subprocess.run(
        [GATEBENCH, "cloud", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_load_asks_the_tester_and_waits_for_its_answer(gcs: dict[str, Any]) -> None:
    bucket = gcs["bucket"]
    run = "r-" + "1" * 20

    def tester() -> None:  # what the tester VM does, reduced to its bucket protocol
        # The tester's own wait (gatebench.cloud): returns once the load step has asked.
        wait_for_marker(Storage("gatebench-test"), RUNS, run, "load-request", 60)
        done = {"ok": True, "raw": [f"raw/{run}/gatling/simulation.log"]}
        bucket.blob(f"runs/{run}/tester/load-done.json").upload_from_string(json.dumps(done))

    thread = threading.Thread(target=tester, daemon=True)
    thread.start()
    result = command(gcs, "load", "--run-id", run, "--runs-bucket", RUNS, "--timeout", "60")
    thread.join()
    assert result.returncode == 0, result.stderr
    assert '"ok": true' in result.stdout
    request = json.loads(bucket.blob(f"runs/{run}/tester/load-request.json").download_as_text())
    assert request["requested_at"] > 0


def test_a_failed_load_and_a_silent_tester_fail_the_step(gcs: dict[str, Any]) -> None:
    bucket = gcs["bucket"]
    run = "r-" + "2" * 20
    done = {"ok": False, "reason": "gatling exited 1"}
    bucket.blob(f"runs/{run}/tester/load-done.json").upload_from_string(json.dumps(done))
    result = command(gcs, "load", "--run-id", run, "--runs-bucket", RUNS, "--timeout", "10")
    assert result.returncode == 3
    assert "the load failed on the tester: gatling exited 1" in result.stderr
    silent = "r-" + "3" * 20
    result = command(gcs, "wait-ready", "--run-id", silent, "--runs-bucket", RUNS, "--timeout", "1")
    assert result.returncode == 3
    assert f"gs://{RUNS}/runs/{silent}/tester/ready.json did not appear within 1s" in result.stderr


def test_wait_ready_reports_unreachable_targets(gcs: dict[str, Any]) -> None:
    bucket = gcs["bucket"]
    ready = {"reachable": ["nginx", "baseline"], "unreachable": {"kong": "connection refused"}}
    bucket.blob(f"runs/{RUN}/tester/ready.json").upload_from_string(json.dumps(ready))
    result = command(gcs, "wait-ready", "--run-id", RUN, "--runs-bucket", RUNS, "--timeout", "5")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "reachable: nginx, baseline",
        "unreachable: kong: connection refused",
    ]
