"""The run's guardian (gatebench.local._guardian) and the owner of a run (procs.this_process): what a
killed gatebench leaves is found from the ledger and ended, and only that."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gatebench.local._guardian import end_groups, recorded_groups
from gatebench.local.procs import Supervisor, process_gone, this_process

# A group leader that forks a child into its group, then exits on SIGTERM: what an nginx
# master and its worker do once the master is killed.
FORKING = (
    "import os, signal, sys, time\n"
    "if os.fork() == 0:\n"
    "    signal.signal(signal.SIGTERM, signal.SIG_DFL)\n"
    "    time.sleep(60)\n"
    "    sys.exit(0)\n"
    "time.sleep(60)\n"
)


def _wait(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)


def test_the_ledger_lists_the_groups_started_and_not_stopped(tmp_path: Path) -> None:
    ledger = tmp_path / "processes.jsonl"
    ledger.write_text(
        '{"pgid": 10, "created": 1.5, "name": "a"}\n'
        '{"pgid": 11, "created": 2.5, "name": "b"}\n'
        '{"stopped": 10}\n'
        '{"pgid": 12, "crea',  # cut short by the kill
        encoding="utf-8",
    )
    assert recorded_groups(ledger) == {11: 2.5}
    assert recorded_groups(tmp_path / "none.jsonl") == {}


def test_the_groups_a_dead_supervisor_left_are_ended_and_no_other(tmp_path: Path) -> None:
    ledger = tmp_path / "processes.jsonl"
    stranger = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        with Supervisor() as supervisor:
            supervisor.guard(ledger)
            leader = supervisor.start(
                "forking", [sys.executable, "-c", FORKING], log_path=tmp_path / "f.log"
            )
            _wait(lambda: len(psutil.Process(leader.pid).children()) == 1)
            (child,) = psutil.Process(leader.pid).children()
            os.kill(leader.pid, signal.SIGKILL)  # the master dies; its worker stays, in its group
            leader.wait()
            assert child.is_running()
            ended = end_groups(ledger, grace=2.0)  # what the guardian does once we are gone
            assert [line.split(": ", 1)[0] for line in ended] == [str(child.pid)]
            _wait(lambda: not child.is_running())
            assert not child.is_running()
            assert stranger.poll() is None  # not in the ledger: never signalled
            assert json.loads(ledger.read_text().splitlines()[-1]) == {"ended": ended}
            assert end_groups(ledger) == []  # nothing left
    finally:
        stranger.kill()
        stranger.wait()


def test_a_stopped_group_is_struck_from_the_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "processes.jsonl"
    with Supervisor() as supervisor:
        supervisor.guard(ledger)
        proc = supervisor.start("sleeper", ["sleep", "30"], log_path=tmp_path / "s.log")
        assert recorded_groups(ledger) == {
            proc.pid: pytest.approx(psutil.Process(proc.pid).create_time())
        }
        supervisor.stop(proc)
        assert recorded_groups(ledger) == {}


def test_the_owner_of_a_run_is_gone_once_its_process_is(tmp_path: Path) -> None:
    me = this_process()
    assert not process_gone(me)
    assert not process_gone({**me, "host": "elsewhere"})  # cannot tell: not gone
    assert process_gone({**me, "started": me["started"] - 100})  # the PID is another's now
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert process_gone({**me, "pid": proc.pid})
