"""A run's live progress as a person sees it: a display fed the progress of a small schedule,
its stderr recorded from a pseudo-terminal 60 columns wide (the real one, `gatebench run` under
a pty, is tests/integration/test_engine_run.py); plain lines into a pipe; nothing with --quiet;
and the estimate of the time left from the schedule's known durations."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import textwrap

from rich.cells import cell_len

from gatebench.core.plan import Injection
from gatebench.core.workload import Phase, TimeLeft

CHILD = textwrap.dedent(
    """
    import sys, time
    from gatebench.cli._common import ProgressLine
    from gatebench.core.plan import Injection
    from gatebench.run import Progress
    from gatebench.core.workload import Phase

    def phase(i, target, workload):
        inj = Injection("constant_rate", rate=50.0, duration=30.0)
        return Phase(i, target, workload, 1, True, "http://127.0.0.1:1", inj)

    name = "a-workload-with-a-very-long-name-that-cannot-fit-" + "名前" * 6
    display = ProgressLine(sys.stderr, quiet=sys.argv[1] == "quiet")
    display(Progress(step="provisioning", message="nginx", elapsed=2.0))
    for i, (target, workload) in enumerate([("nginx", "list"), ("baseline", name)], 1):
        for done in (0, 1234, 2468):
            display(Progress(step="loading", phase=phase(i, target, workload), phase_number=i,
                             phases=2, done=done, rate=617.0, elapsed=60.0 * i + done / 617,
                             left=125.0 - 60 * i))
            time.sleep(0.3)
    display(Progress(step="done", elapsed=185.0))
    display.finish()
    print("finished")
    """
)
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _record(mode: str, columns: int = 60) -> tuple[str, str]:
    """The child's stderr on a pty of ``columns`` (and its stdout)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**env, "TERM": "xterm-256color"},
    )
    os.close(slave)
    recorded = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        recorded += chunk
    os.close(master)
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0, recorded
    return recorded.decode("utf-8"), out.decode()


def test_the_line_on_a_terminal_is_rewritten_in_place_and_fits_its_width() -> None:
    raw, out = _record("terminal")
    assert out == "finished\n"
    assert "\x1b[2K" in raw or "\r" in raw  # rewritten in place, not scrolled
    screens = [s for s in re.split(r"[\r\n]", CSI.sub("", raw)) if s.strip()]
    assert max(cell_len(s) for s in screens) <= 60, [s for s in screens if cell_len(s) > 60]
    # each step stays on the screen above the line
    assert "[provisioning] 0:02 · nginx" in screens
    assert any(s.startswith("[done] 3:05") for s in screens)
    # the line: the step, the time so far, the phase's number, the time left, the requests
    # so far and the current rate, the phase (what does not fit is cut with an ellipsis)
    line = next(s for s in screens if "1,234 req" in s and "1/2" in s)
    assert line == "loading 1:02 · 1/2 · ~1:05 left 1,234 req · 617 req/s · rep…", line
    long = [s for s in screens if "2,468 req" in s and "2/2" in s]
    assert long and all(s.rstrip().endswith("…") for s in long), long
    # wide enough, the phases done as a bar and the whole phase
    raw, _ = _record("terminal", columns=120)
    screens = [s for s in re.split(r"[\r\n]", CSI.sub("", raw)) if s.strip()]
    assert max(cell_len(s) for s in screens) <= 120
    line = next(s for s in screens if "1,234 req" in s and "1/2" in s)
    assert line.startswith("loading 1:02 · 1/2 · ~1:05 left ━"), line
    assert line.rstrip().endswith("1,234 req · 617 req/s · rep 1 · nginx · list"), line


def test_plain_lines_into_a_pipe_and_nothing_when_quiet() -> None:
    for mode, expected in (("plain", True), ("quiet", False)):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "finished\n"
        if not expected:
            assert done.stderr == ""
            continue
        lines = done.stderr.splitlines()
        assert "\x1b" not in done.stderr
        assert lines[0] == "[provisioning] 0:02 · nginx"
        assert lines[1] == "[loading] 1:00 · 1/2 · ~1:05 left · rep 1 · nginx · list"
        assert lines[-1] == "[done] 3:05"
        # a phase's progress at most every 5 s: its start only, here
        assert len(lines) == 4, lines


def _phase(index: int, workload: str, injection: Injection) -> Phase:
    return Phase(index, "nginx", workload, 1, True, "http://127.0.0.1:1", injection)


def test_the_time_left_comes_from_the_schedules_durations_and_what_ran() -> None:
    timed = Injection("constant_rate", rate=10.0, duration=30.0)
    counted = Injection("sequential", users=1, requests=600)
    phases = [_phase(0, "a", timed), _phase(1, "b", counted), _phase(2, "a", timed)]
    clock = TimeLeft(phases)
    # a workload that ends after a number of requests has not run yet: unknown
    assert clock.left(0.0) is None
    clock.started(0, 10.0)
    clock.ended(0, 41.0)  # 30 s planned, 1 s beyond it
    clock.ran("a", 300, 30.0)
    assert clock.left(41.0) is None
    clock.started(1, 42.0)
    clock.ran("b", 600, 20.0)  # 30 req/s: the counted phase takes 20 s
    # the running phase: 20 s + 1 s beyond, 5 s of it gone; then 30 s + 1 s
    assert clock.left(47.0) == 16.0 + 31.0
    clock.ended(1, 63.0)  # 20 s, and 1 s since the last phase ended: 2 s beyond
    assert clock.left(63.0) == 30.0 + 1.5
    clock.started(2, 63.5)
    assert clock.left(93.5) == 1.5
    assert clock.left(200.0) == 0.0
    clock.ended(2, 95.0)
    assert clock.left(95.0) == 0.0


def test_a_log_shows_the_engines_own_warm_up_but_not_each_targets() -> None:
    """In a log the 20 s of the engine's warm-up are not a silent gap; a target's own warm-up
    phases stay out of it, as before."""
    import io

    from gatebench.cli._common import ProgressLine
    from gatebench.run import Progress

    stream = io.StringIO()
    display = ProgressLine(stream)
    inj = Injection("concurrent", users=10, duration=10.0)
    engine = Phase(3, "baseline", "list", 0, False, "http://127.0.0.1:1", inj)
    target = Phase(4, "nginx", "list", 1, False, "http://127.0.0.1:2", inj)
    for number, phase in ((4, engine), (5, target)):
        display(Progress(step="loading", phase=phase, phase_number=number, phases=9, elapsed=1.0))
    assert stream.getvalue().splitlines() == ["[loading] 0:01 · 4/9 · engine warm-up · list"]
