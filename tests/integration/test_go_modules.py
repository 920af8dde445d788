"""The Go programs' own tests (``loadgen/*_test.go``, ``backend/*_test.go``), run by ``make test``
as a library's would be: ``go vet`` and ``go test`` in each folder.

What the load generator's cover (each file's tests say it in their names): the schedule's exactness on a fake
clock (every due time, phases continuing one another, the count's rounding), arrivals the
engine fell too far behind on and sockets the system refused (dropped, never sent), the in-flight
limit (refused, the target's KO), the open model under a stalled target (fake and real), both
connection modes against a real server, every response framing the client reads, the retry of a
kept-alive connection the server had closed, the records format byte for byte, and the value
generators (SplitMix64's reference outputs, each generator's value of request g, values written
as the Gatling simulation writes them). Some run real servers on 127.0.0.1 with bounds in real
time, each at least ten times what a quiet machine shows: this file runs in ``make test``'s
second stage, alone. The backend's cover its signed answers (what it received and sent, counted
per identity) and its reset: a reset answers only once the earlier load's held requests are
released, and a request whose client left while it waited for a worker is dropped, not held.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from paths import ROOT

pytestmark = pytest.mark.integration

# each module and the fewest tests it has: a file that stopped compiling or a test that was
# skipped would hide behind a green exit
MODULES = {"loadgen": 20, "backend": 6}


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not installed (scripts/setup.sh installs it; loadgen/ is built with it)")
    return go


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod")
    return subprocess.run(
        [_go(), *args],
        cwd=ROOT / module,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_go_vet_finds_nothing(module: str) -> None:
    done = _run(module, "vet", "./...")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_go_tests_pass(module: str) -> None:
    done = _run(module, "test", "-count=1", "-v", "./...")
    passed = [line for line in done.stdout.splitlines() if line.startswith("--- PASS")]
    failed = [line for line in done.stdout.splitlines() if line.startswith("--- FAIL")]
    assert done.returncode == 0 and not failed, done.stdout[-6000:] + done.stderr[-2000:]
    assert len(passed) >= MODULES[module], done.stdout[-3000:]
    assert "SKIP" not in done.stdout
