"""The live agent's Docker client (gatebench.vm._docker) against the stand-in daemon
the local gateway VMs serve (tests/cloud/dockerd.py), over a real Unix socket, with a real
process as the container: the calls ``docker kill -s``, ``stop``, ``start``, ``restart``,
``exec`` and ``inspect`` make, and Docker's answers when they cannot be done."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cloud.dockerd import StandInContainer, StandInDocker
from gatebench.core.errors import RunError
from gatebench.local.procs import ManagedProcess, Supervisor
from gatebench.vm._docker import DockerEngine, demultiplex, docker_time

# A "gateway" that writes a line for every SIGHUP it gets and otherwise waits; it says it is
# ready (its handler installed) on its standard output, which goes to its log.
PROGRAM = """
import signal, sys, time
path = sys.argv[1]
def hup(*_):
    with open(path, "a") as out:
        out.write("reload\\n")
signal.signal(signal.SIGHUP, hup)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[DockerEngine, StandInContainer, Path]]:
    log = tmp_path / "reloads.txt"
    # Processes die with the thread that started them (gatebench.local.procs): the daemon's handler
    # threads are short-lived, so the "container" is started from a lasting one, as the local
    # VMs do.
    lasting = ThreadPoolExecutor(1)
    with Supervisor() as supervisor, tempfile.TemporaryDirectory(prefix="gbd-") as short:

        def start() -> ManagedProcess:
            argv = [sys.executable, "-c", PROGRAM, str(log)]
            log_path = tmp_path / "gateway.log"
            return lasting.submit(supervisor.start, "gateway", argv, log_path=log_path).result()

        def stop(proc: ManagedProcess, grace: float) -> None:
            supervisor.stop(proc, timeout=grace)

        def execute(argv: list[str], timeout: float) -> tuple[int, bytes]:
            done = subprocess.run(argv, capture_output=True, timeout=timeout)
            return done.returncode, done.stdout + done.stderr

        container = StandInContainer("gateway", start, stop, execute)
        container.start()
        server = StandInDocker(Path(short) / "docker.sock")
        server.add(container)
        try:
            yield DockerEngine(str(server.path), timeout=10), container, log
        finally:
            server.close()
    lasting.shutdown()


def test_a_signal_reaches_the_containers_main_process(daemon: tuple) -> None:
    docker, container, log = daemon
    state = docker.inspect("gateway")
    assert state.running and state.pid == container.proc.pid  # type: ignore[union-attr]
    assert state.started_at == pytest.approx(container.started_at, abs=1e-5)
    ready = log.parent / "gateway.log"  # the program's output: "ready" once its handler is set
    deadline = time.monotonic() + 60  # a bound, not a timing: a busy machine only waits longer
    while "ready" not in (ready.read_text() if ready.exists() else "") and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    docker.kill("gateway", "SIGHUP")
    deadline = time.monotonic() + 60
    # the handler opens the file, then writes: wait for the whole line, not the file
    while not (log.read_text() if log.exists() else "").endswith("\n") and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)
    assert log.read_text() == "reload\n"
    assert docker.inspect("gateway").pid == state.pid  # a reload keeps the process


def test_stop_start_and_restart_give_a_new_process_and_a_new_start_time(daemon: tuple) -> None:
    docker, _, _ = daemon
    first = docker.inspect("gateway")
    docker.stop("gateway", 2)
    stopped = docker.inspect("gateway")
    assert (stopped.running, stopped.pid) == (False, 0)
    docker.stop("gateway", 2)  # Docker answers 304: already stopped, not an error
    with pytest.raises(RunError, match=r"answered 409 .*Container gateway is not running"):
        docker.kill("gateway", "SIGHUP")
    docker.start("gateway")
    second = docker.inspect("gateway")
    assert second.running and second.pid != first.pid
    assert second.started_at is not None and first.started_at is not None
    assert second.started_at > first.started_at
    docker.start("gateway")  # 304: already running
    docker.restart("gateway", 2)
    third = docker.inspect("gateway")
    assert third.running and third.pid not in (first.pid, second.pid)


def test_exec_returns_the_exit_code_and_the_output(daemon: tuple) -> None:
    docker, _, _ = daemon
    code, output = docker.exec("gateway", ["sh", "-c", "echo checked; echo warn >&2"], 10)
    assert (code, output) == (0, "checked\nwarn\n")
    code, output = docker.exec("gateway", ["sh", "-c", "echo refused >&2; exit 3"], 10)
    assert (code, output) == (3, "refused\n")
    docker.stop("gateway", 2)
    with pytest.raises(RunError, match=r"409 .*not running"):
        docker.exec("gateway", ["true"], 10)


def test_an_unknown_container_and_a_missing_daemon_are_errors_that_say_so(daemon: tuple) -> None:
    docker, _, _ = daemon
    with pytest.raises(RunError, match="answered 404 to GET /containers/gatewy/json: No such"):
        docker.inspect("gatewy")
    with pytest.raises(RunError, match=r"the Docker daemon \(/nowhere.sock\)"):
        DockerEngine("/nowhere.sock").inspect("gateway")


def test_dockers_times_and_streams_are_read_as_docker_writes_them() -> None:
    assert docker_time("2026-11-27T10:00:01.123456789Z") == pytest.approx(1795773601.123456)
    assert docker_time("2026-11-27T12:00:01.5+02:00") == pytest.approx(1795773601.5)
    assert docker_time("0001-01-01T00:00:00Z") is None
    with pytest.raises(RunError, match="a time gatebench cannot read"):
        docker_time("yesterday")
    frames = b"\x01\x00\x00\x00\x00\x00\x00\x03ok\n\x02\x00\x00\x00\x00\x00\x00\x04bad\n"
    assert demultiplex(frames) == "ok\nbad\n"


@pytest.mark.parametrize(
    ("versions", "chosen"),
    [
        (("1.44", "1.52"), "1.47"),  # Docker 29 (Container-Optimized OS 133): refuses 1.41
        (("1.12", "1.43"), "1.43"),  # Docker 24 (Container-Optimized OS 117)
        (("1.24", "1.47"), "1.47"),  # Docker 27 (Container-Optimized OS 121 to 129)
    ],
)
def test_the_api_version_is_negotiated_with_the_daemon(
    versions: tuple[str, str], chosen: str, tmp_path: Path
) -> None:
    """As the docker CLI does: the daemon's unversioned GET /version, then every call in the
    lower of its newest version and gatebench's; a fixed /v1.41 fails on Docker 29."""
    with tempfile.TemporaryDirectory(prefix="gbd-") as short:
        server = StandInDocker(Path(short) / "docker.sock", api_versions=versions)
        try:
            docker = DockerEngine(str(server.path), timeout=10)
            with pytest.raises(RunError, match="No such container"):
                docker.inspect("gateway")
            assert docker.daemon["ApiVersion"] == versions[1]
            assert [p for _, p, _ in server.requests] == [
                "/version",
                f"/v{chosen}/containers/gateway/json",
            ]
            fixed = server.handle("GET", "/v1.41/containers/gateway/json", b"")
            if versions[0] == "1.44":
                assert fixed == (
                    400,
                    {
                        "message": "client version 1.41 is too old. Minimum supported API "
                        "version is 1.44, please upgrade your client to a newer version"
                    },
                )
        finally:
            server.close()


def test_a_daemon_that_accepts_no_version_gatebench_speaks_is_named(tmp_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="gbd-") as short:
        server = StandInDocker(Path(short) / "docker.sock", api_versions=("1.50", "1.60"))
        try:
            with pytest.raises(RunError) as info:
                DockerEngine(str(server.path), timeout=10).inspect("gateway")
            assert str(info.value) == (
                f"the Docker daemon ({server.path}) accepts Engine API 1.50 to 1.60; gatebench "
                "speaks 1.47 at most"
            )
        finally:
            server.close()
