"""The run's guardian (gatebench.local._guardian) and the owner of a run (procs.this_process): what a
killed gatebench leaves is found from the ledger and ended, and only that."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gatebench.local._guardian import end_groups, recorded_groups
from gatebench.local.procs import Supervisor, Terminated, process_gone, this_process

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


def _script(tmp_path: Path, text: str) -> subprocess.Popen[str]:
    """``text`` run by this Python in a process of its own (its stdout a pipe)."""
    return subprocess.Popen(
        [sys.executable, "-c", text, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )


def test_no_python_runs_in_a_started_process_before_its_program(tmp_path: Path) -> None:
    """The child execs right after fork: a hook Python runs in a forked child (what
    subprocess's ``preexec_fn`` made it run, and where a child of a process with threads can
    hang for good on a lock another thread held) never runs, and the program does."""
    script = _script(
        tmp_path,
        "import os, sys\n"
        "from pathlib import Path\n"
        "from gatebench.local.procs import start_process\n"
        "folder = Path(sys.argv[1])\n"
        "os.register_at_fork(after_in_child=lambda: (folder / 'python-ran').touch())\n"
        "proc = start_process('true', ['true'], log_path=folder / 'true.log')\n"
        "print(proc.wait())\n",
    )
    out, _ = script.communicate(timeout=60)
    assert out.strip() == "0"
    assert not (tmp_path / "python-ran").exists()


def test_a_started_process_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """``kill -9`` of gatebench runs no cleanup; the kernel still kills what it started
    (the parent-death signal, armed before the program runs)."""
    script = _script(
        tmp_path,
        "import sys, time\n"
        "from pathlib import Path\n"
        "from gatebench.local.procs import start_process\n"
        "proc = start_process('sleep', ['sleep', '60'], log_path=Path(sys.argv[1]) / 's.log')\n"
        "print(proc.pid, flush=True)\n"
        "time.sleep(60)\n",
    )
    assert script.stdout is not None
    pid = int(script.stdout.readline())
    _wait(lambda: psutil.Process(pid).cmdline() == ["sleep", "60"])  # setpriv has exec'd it
    assert psutil.Process(pid).cmdline() == ["sleep", "60"]
    script.kill()
    script.communicate(timeout=10)

    def gone() -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    _wait(gone)
    assert gone()


def test_a_program_that_cannot_start_is_a_run_error_naming_it(tmp_path: Path) -> None:
    from gatebench.core.errors import RunError
    from gatebench.local.procs import start_process

    with pytest.raises(RunError, match=r"^gw: cannot start no-such-gb: No such file or directory$"):
        start_process("gw", ["no-such-gb"], log_path=tmp_path / "a.log")
    (tmp_path / "plain").write_text("")
    with pytest.raises(RunError, match=r"cannot start \./plain: Permission denied$"):
        start_process("gw", ["./plain"], log_path=tmp_path / "b.log", cwd=tmp_path)


def test_a_pinned_process_without_taskset_is_a_run_error_saying_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every process a run starts goes through setpriv, and taskset when it is pinned: a
    missing one is said before anything starts, with the install command doctor gives."""
    import shutil

    from gatebench.core.errors import RunError
    from gatebench.local.procs import run_program, start_process

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("setpriv", "sleep"):
        found = shutil.which(program)
        assert found is not None
        (bin_dir / program).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    run_program.cache_clear()
    try:
        with pytest.raises(RunError) as caught:
            start_process("gw", ["sleep", "5"], log_path=tmp_path / "a.log", cpus=frozenset({0}))
    finally:
        run_program.cache_clear()
    assert str(caught.value) == "taskset is not installed here; Debian: apt-get install util-linux"


@pytest.fixture
def ctrl_c_reaches_python() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as a terminal's Ctrl-C does in gatebench. Python sets
    that handler only when its process did not start with SIGINT ignored, and a background job
    of a script (as CI starts the tests beside the cloud tier) starts with it ignored."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


class InterruptedTeardown(Supervisor):
    """A supervisor whose teardown receives ``signum`` (a Ctrl-C pressed while it stops its
    processes), then goes on."""

    def __init__(self, signum: int) -> None:
        super().__init__()
        self.signum = signum
        self.stopped: list[str] = []

    def stop_all(self, timeout: float = 5.0) -> None:
        os.kill(os.getpid(), self.signum)
        time.sleep(0.05)
        self.stopped.append("every process")


@pytest.mark.parametrize(
    ("signum", "raised"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)]
)
@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_a_ctrl_c_during_teardown_ends_the_run_once_teardown_is_finished(
    signum: int, raised: type[KeyboardInterrupt]
) -> None:
    supervisor = InterruptedTeardown(signum)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(raised) as caught, supervisor:
        pass
    assert type(caught.value) is raised
    assert str(caught.value) == "interrupted during teardown, which was finished first"
    assert supervisor.stopped == ["every process"]
    assert signal.getsignal(signal.SIGTERM) == before


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_a_ctrl_c_during_a_failures_teardown_leaves_the_failure() -> None:
    supervisor = InterruptedTeardown(signal.SIGINT)
    with pytest.raises(RuntimeError, match=r"^the backend did not start$"), supervisor:
        raise RuntimeError("the backend did not start")
    assert supervisor.stopped == ["every process"]


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_a_run_interrupted_during_teardown_is_recorded_interrupted_and_not_scored(
    tmp_path: Path,
) -> None:
    from gatebench.core.model import RunRecord, RunStatus
    from gatebench.core.plan import load_plan
    from gatebench.core.spec import read_spec
    from gatebench.local.machine import LocalMachine
    from gatebench.run import RunContext, RunJournal, RunOptions, Stage, execute
    from gatebench.run.stages.teardown import Teardown
    from gatebench.store import SqliteStore
    from paths import EXAMPLES

    scored: list[bool] = []

    class Score(Stage):
        name = "score"
        step = RunStatus.SCORING
        moves = "start"

        def run(self, ctx: RunContext) -> None:
            scored.append(True)

    result = read_spec(EXAMPLES / "petstore" / "openapi.yaml")
    assert result.api is not None
    journal = RunJournal(
        RunRecord("r", "file:///petstore", "0" * 64),
        tmp_path / "r",
        SqliteStore(tmp_path / "gatebench.sqlite"),
        lambda progress: None,
    )
    machine = LocalMachine(InterruptedTeardown(signal.SIGINT))
    ctx = RunContext(result.api, load_plan(result), RunOptions(), journal, machine)
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted during teardown, which was"):
        execute([Teardown(), Score()], ctx)
    assert scored == []
    saved = json.loads((tmp_path / "r" / "run.json").read_text())
    assert (saved["status"], saved["failed_step"]) == ("failed", "loading")
