"""Checks that must finish: a checker past its limit is ended with its whole process tree, a
grandchild holding its output pipe cannot keep gatebench waiting, and the render command
checks gateways side by side, one failing check failing only that gateway.

The commands here are real processes (sh, python, sleep) standing in for a gateway's
checker: the real ones (``varnishd -C`` and its C compiler) are in
tests/integration/test_checked_render.py.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import ClassVar

import psutil
import pytest

from gatebench.core.ir import Api, Operation
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers.nginx import NginxRenderer
from gatebench.local.procs import run_bounded
from gatebench.local.provisioners import (
    CheckTask,
    CheckTimedOut,
    check_config,
    check_gateway,
    check_limit,
    run_checks,
    write_files,
)

# A checker that starts two helpers, one of which leaves the checker's process group (its own
# session), writes a line, then waits: its tree must be ended, the helper that left included.
WAIT = "import sys, time; time.sleep(float(sys.argv[2]))"
TREE = textwrap.dedent(
    f"""
    import subprocess, sys, time
    marker = sys.argv[1]
    subprocess.Popen([sys.executable, "-c", {WAIT!r}, marker, "300"])
    subprocess.Popen([sys.executable, "-c", {WAIT!r}, marker, "301"], start_new_session=True)
    print("checking", flush=True)
    time.sleep(300)
    """
)


def alive_with(marker: str) -> list[str]:
    """Command lines of live processes whose arguments hold ``marker``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in cmdline:
            found.append(" ".join(cmdline))
    return found


def wait_for(marker: str, count: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(alive_with(marker)) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_command_past_its_limit_is_ended_with_its_whole_tree(tmp_path: Path) -> None:
    marker = f"gatebench-test-{tmp_path.name}"
    started = time.monotonic()
    done = run_bounded([sys.executable, "-c", TREE, marker], timeout=4, grace=0.5)
    assert time.monotonic() - started < 15
    assert done.returncode is None and not done.finished
    assert done.output == "checking\n"
    assert [c.split()[:2] for c in done.ended] == [[sys.executable, "-c"]] * 2
    assert alive_with(marker) == []


def test_a_grandchild_holding_the_output_cannot_keep_us_waiting(tmp_path: Path) -> None:
    """The command exits; a helper it left in its group still holds its standard output."""
    marker = f"gatebench-test-{tmp_path.name}"
    started = time.monotonic()
    helper = f"{sys.executable} -c '{WAIT}' {marker} 300"
    done = run_bounded(["sh", "-c", f"{helper} & echo ok"], timeout=60)
    assert time.monotonic() - started < 10
    assert (done.returncode, done.output, done.ended) == (0, "ok\n", ())
    assert alive_with(marker) == []


def test_cancel_ends_the_tree_at_once(tmp_path: Path) -> None:
    marker = f"gatebench-test-{tmp_path.name}"
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    done = run_bounded([sys.executable, "-c", TREE, marker], timeout=120, cancel=cancel)
    assert done.returncode is None and done.elapsed < 10
    assert alive_with(marker) == []


def test_the_output_kept_is_bounded() -> None:
    done = run_bounded([sys.executable, "-c", "print('x' * 1_000_000)"], timeout=60)
    assert done.returncode == 0
    assert done.output.startswith("…(737,857 bytes of output before)…\n")


def test_the_limit_grows_with_the_routes_and_with_what_the_checker_does() -> None:
    nginx, varnish, traefik = (get_renderer(n) for n in ("nginx", "varnish", "traefik"))
    assert check_limit(nginx, 0) == 60
    assert check_limit(nginx, 20_000) == 260
    assert check_limit(varnish, 20_000) == 1060  # it compiles the VCL with the C compiler
    assert check_limit(traefik, 1000) == 70  # booted: its start time, at least the base
    assert check_limit(get_renderer("zuul"), 1000) == 130


class SlowChecker(NginxRenderer):
    """nginx whose "checker" starts helpers and never finishes: a stand-in for
    ``varnishd -C`` compiling a very large configuration."""

    marker: ClassVar[str] = ""

    def check_argv(self, workdir: object, target: RenderTarget | None = None) -> list[str]:
        return [sys.executable, "-c", TREE, self.marker]


def _api(routes: int) -> Api:
    return Api(
        "t",
        "1",
        "openapi-3.0.3",
        tuple(Operation(f"op{i}", "GET", f"/r{i}", "", pointer=f"/p/{i}") for i in range(routes)),
    )


def test_a_checker_past_its_limit_fails_that_gateway_with_a_located_message(
    tmp_path: Path,
) -> None:
    SlowChecker.marker = f"gatebench-test-{tmp_path.name}"
    target = RenderTarget(workdir=str(tmp_path))
    with pytest.raises(CheckTimedOut) as info:
        check_config(SlowChecker(), tmp_path, target, timeout=4)
    assert str(info.value).startswith(f"nginx: `{sys.executable} -c ")
    assert str(info.value).endswith(
        f"` did not finish within 4s; it was ended, with the 2 process(es) it had started "
        f"({Path(sys.executable).name})"
    )
    assert alive_with(SlowChecker.marker) == []
    checked = check_gateway(CheckTask(SlowChecker(), tmp_path, target, _api(2), timeout=1))
    assert (checked.status, checked.failed) == (" check timed out", True)
    (message,) = checked.messages
    assert message.startswith(f"{tmp_path}: nginx: `")
    assert alive_with(SlowChecker.marker) == []


def test_checks_run_side_by_side_and_come_back_in_order(tmp_path: Path) -> None:
    """Three slow checks of 1.5 s each on 4 jobs overlap (the whole takes well under the sum
    of their times, however busy the machine); a real one (nginx -t) in between is
    unaffected."""
    SlowChecker.marker = f"gatebench-test-{tmp_path.name}"
    nginx = get_renderer("nginx")
    reason = nginx.available_here()
    if reason is not None:
        pytest.fail(reason)
    tasks = []
    for i, renderer in enumerate([SlowChecker(), nginx, SlowChecker(), SlowChecker()]):
        folder = tmp_path / str(i)
        target = RenderTarget(workdir=str(folder))
        write_files(NginxRenderer().render(_api(3), target), folder)
        limit = 60 if renderer is nginx else 1.5
        tasks.append(CheckTask(renderer, folder, target, _api(3), timeout=limit))
    started = time.monotonic()
    results = list(run_checks(tasks, jobs=4))
    elapsed = time.monotonic() - started
    assert [r.status for r in results] == [
        " check timed out",
        " [checker: ok]",
        " check timed out",
        " check timed out",
    ]
    slow = sum(r.seconds for r in results if r.status == " check timed out")
    assert slow >= 4.5
    assert elapsed < 0.75 * slow, (elapsed, slow)  # one after another: elapsed >= slow
    assert alive_with(SlowChecker.marker) == []


def test_stopping_the_checks_early_ends_every_check_under_way(tmp_path: Path) -> None:
    SlowChecker.marker = f"gatebench-test-{tmp_path.name}"
    target = RenderTarget(workdir=str(tmp_path))
    tasks = [CheckTask(SlowChecker(), tmp_path, target, _api(1), timeout=120)] * 2
    checks = run_checks(tasks, jobs=2)
    started = time.monotonic()

    def interrupt() -> None:  # Ctrl-C once both checks and their helpers run
        wait_for(SlowChecker.marker, 6, timeout=60)
        os.kill(os.getpid(), signal.SIGINT)

    # A pytest started in the background by a script (`&`, as `make test` runs the unit tier)
    # inherits SIGINT ignored; Ctrl-C is what is simulated here, so Python's own handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt).start()
        with pytest.raises(KeyboardInterrupt):
            next(checks)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 30
    assert alive_with(SlowChecker.marker) == []


class NeverReady(NginxRenderer):
    """A gateway without a checker (booting is its check) that never answers: a stand-in for
    a JVM gateway still loading 20,000 routes."""

    check_command = None
    marker: ClassVar[str] = ""

    def run_argv(self, workdir: object, target: RenderTarget | None = None) -> list[str]:
        return [sys.executable, "-c", WAIT, self.marker, "300"]


def test_a_boot_check_past_its_limit_times_out_and_stops_the_gateway(tmp_path: Path) -> None:
    NeverReady.marker = f"gatebench-test-{tmp_path.name}"
    target = RenderTarget(workdir=str(tmp_path))
    checked = check_gateway(CheckTask(NeverReady(), tmp_path, target, _api(2), timeout=2))
    assert (checked.status, checked.failed) == (" check timed out", True)
    (message,) = checked.messages
    assert message.startswith(f"{tmp_path}: nginx did not answer on 127.0.0.1:")
    assert " within 2s; last log lines:" in message
    assert alive_with(NeverReady.marker) == []


def test_a_checker_run_by_a_run_is_in_its_ledger_while_it_runs(tmp_path: Path) -> None:
    """A run's checker is a process the run started: its group is listed in the run's ledger
    (which the guardian reads if gatebench is killed) while it runs, and struck when it ends."""
    from gatebench.local.procs import Supervisor

    ledger = tmp_path / "processes.jsonl"
    seen: list[str] = []
    with Supervisor() as supervisor:
        supervisor.guard(ledger)
        script = f"import time; time.sleep(0.5); print(open({str(ledger)!r}).read())"
        done = run_bounded([sys.executable, "-c", script], timeout=60, supervisor=supervisor)
        seen = ledger.read_text().splitlines()
    listed = done.output.strip().splitlines()
    assert len(listed) == 1 and '"pgid"' in listed[0]  # listed while it ran
    pgid = int(listed[0].split('"pgid": ')[1].split(",")[0])
    assert seen[-1] == f'{{"stopped": {pgid}}}'  # struck when it ended
