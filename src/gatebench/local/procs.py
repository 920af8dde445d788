"""Processes gatebench starts itself: gateways, backends, load engines, emulators.

Each one runs in its own session (process group), logs to its own file, is probed for
readiness with a real request, and is stopped by its PID (the group it leads): gatebench
never signals a process it did not start. A :class:`Supervisor` stops everything it started
on every way out: normal exit, exception, Ctrl-C (SIGINT) and SIGTERM, by signalling the
whole process group, so a gateway's own worker processes go too.

``kill -9`` of gatebench itself runs no cleanup. The kernel still sends SIGKILL to each
process gatebench started directly (``PR_SET_PDEATHSIG``, armed by ``setpriv`` in the child:
:func:`_child_setup`), so
single-process gateways (HAProxy, Envoy, Caddy, the JVM gateways) and the engines die with
it; the worker processes of gateways that fork (nginx, Apache, Varnish) are not its children
and would outlive it. A supervisor that guards a run (:meth:`Supervisor.guard`) writes each
process group it starts to the run's ledger and keeps a guardian process that ends them when
gatebench dies first (gatebench.local._guardian); ``gatebench serve`` also sweeps leftovers by PID
after each run.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import FrameType
from typing import IO, Any

import psutil

from gatebench.core.errors import RunError
from gatebench.local._guardian import term_then_kill

_PR_SET_CHILD_SUBREAPER = 36


def _child_setup(
    argv: Sequence[str], cpus: frozenset[int] | None, env: Mapping[str, str], cwd: Any, failed: str
) -> list[str]:
    """``argv`` behind what the child sets before the program runs: SIGKILL when gatebench
    dies (util-linux's ``setpriv --pdeathsig``) and, given ``cpus``, those cores (``taskset``),
    so every thread and worker process the program starts inherits them. Both are programs
    the child execs on its way to ``argv``, never Python run between fork and exec: gatebench
    has threads (the display, its pools, Google's clients), and a child forked from a process
    with threads that runs code before exec can hang for good on a lock another thread held
    (subprocess's ``preexec_fn`` did: a gateway of the cloud tests never started, its log
    holding one line of gRPC's poller, restarted in the child). ``argv[0]`` is looked up here
    first, so a missing program is a RunError (after ``failed``), as it was from ``exec``."""
    program = argv[0]
    if os.sep in program:
        found: str | None = os.path.join(cwd or "", program)
    else:
        found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None or not os.path.isfile(found):
        raise RunError(f"{failed}cannot start {program}: No such file or directory")
    if not os.access(found, os.X_OK):
        raise RunError(f"{failed}cannot start {program}: Permission denied")
    cores = [run_program("taskset"), "-c", ",".join(map(str, sorted(cpus)))] if cpus else []
    return [run_program("setpriv"), "--pdeathsig", "KILL", "--", *cores, *argv]


RUN_PROGRAMS = {
    "setpriv": "every process a run starts goes through it (killed when gatebench dies)",
    "taskset": "holds every process a run starts to its cores",
}
"""The programs a local run needs (:func:`_child_setup`) and what each does: a run fails at
once without either (taskset is needed whenever the run is pinned, the default on 2 cores or
more). ``gatebench doctor`` checks them."""
RUN_PROGRAMS_INSTALL = "Debian: apt-get install util-linux"
"""How to install :data:`RUN_PROGRAMS` (util-linux carries both)."""


@cache
def run_program(name: str) -> str:
    """The absolute path of ``name`` (one of :data:`RUN_PROGRAMS`), or a RunError saying how to
    install it."""
    found = shutil.which(name)
    if found is None:
        raise RunError(f"{name} is not installed here; {RUN_PROGRAMS_INSTALL}")
    return found


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered as an exception so that ``finally`` blocks (teardown) run."""


TEARDOWN_FINISHED = "interrupted during teardown, which was finished first"
"""A :class:`KeyboardInterrupt` (or :class:`Terminated`) that came while a supervisor stopped
its processes: raised once every one of them has stopped."""


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    popen: subprocess.Popen[bytes]
    log_path: Path
    started_at: float = field(default_factory=time.time)
    companions: list[ManagedProcess] = field(default_factory=list)
    """Processes started for this one and stopped right after it (Tyk's Redis)."""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def stdout(self) -> IO[bytes]:
        """The process's standard output, when it was started with ``stdout_pipe=True``."""
        if self.popen.stdout is None:
            raise RunError(f"{self.name}: its output goes to {self.log_path}, not to a pipe")
        return self.popen.stdout

    def wait(self) -> int:
        return self.popen.wait()

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM to the process group, then SIGKILL after ``timeout``; then the same for each
        companion. Returns the exit code."""
        code = self._stop(timeout)
        for companion in self.companions:
            companion.stop(timeout)
        return code

    def _stop(self, timeout: float) -> int | None:
        if self.popen.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(timeout=timeout)
        # Descendants that outlived the leader (a forking server) share its group.
        self._signal(signal.SIGKILL)
        return self.popen.poll()

    def kill(self, timeout: float = 5.0) -> int | None:
        """SIGKILL to the process group at once, as a crash would end it (no shutdown)."""
        self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=timeout)
        return self.popen.poll()

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def log_tail(self, lines: int = 20) -> str:
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - 16384))
                text = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def start_process(
    name: str,
    argv: Sequence[str],
    *,
    log_path: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdout_pipe: bool = False,
    cpus: frozenset[int] | None = None,
) -> ManagedProcess:
    """Start ``argv`` (never through a shell) in a new session, output to ``log_path``.
    ``stdout_pipe``: standard output is a pipe the caller reads (:attr:`ManagedProcess.stdout`)
    and only standard error goes to the log. ``cpus``: the cores it (and everything it
    starts) may run on (``sched_setaffinity``)."""
    log = Path(log_path)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        popen = _spawn(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE if stdout_pipe else out,
            stderr=out if stdout_pipe else subprocess.STDOUT,
            cpus=cpus,
            failed=f"{name}: ",
        )
    return ManagedProcess(name, list(argv), popen, log)


def _spawn(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    stdout: int | IO[bytes],
    stderr: int | IO[bytes],
    cpus: frozenset[int] | None = None,
    failed: str = "",
) -> subprocess.Popen[bytes]:
    """``argv`` (never through a shell) in a new session of its own, without standard input,
    with ``env`` over this process's environment (:func:`_child_setup`: on ``cpus``, killed if
    gatebench dies); a RunError (after ``failed``) when it cannot start."""
    environment = {**os.environ, **(env or {})}
    try:
        return subprocess.Popen(
            _child_setup(argv, cpus, environment, cwd, failed),
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    except OSError as exc:
        raise RunError(f"{failed}cannot start {argv[0]}: {exc.strerror or exc}") from None


class Supervisor:
    """Stops every process it started when its ``with`` block ends, however it ends.

    Inside the block SIGTERM raises :class:`Terminated` (a KeyboardInterrupt), so the caller's
    teardown runs for Ctrl-C and ``kill`` alike. Handlers are only installed from the main
    thread; the previous handlers are restored on exit.
    """

    def __init__(self) -> None:
        self.processes: list[ManagedProcess] = []
        self._lock = threading.Lock()
        self._previous: dict[int, Any] = {}
        self.affinity: dict[str, frozenset[int]] = {}
        """Cores per role (gatebench.core.pinning): a process started with that ``role`` runs
        there; an empty map pins nothing."""
        self._ledger: Path | None = None
        self._guardian: subprocess.Popen[bytes] | None = None

    def guard(self, ledger: Path) -> None:
        """From now on, write every process group this supervisor starts (and stops) to
        ``ledger``, and keep a guardian process that ends them if this process dies before the
        ``with`` block ends (gatebench.local._guardian)."""
        self._ledger = Path(ledger)

    def pin(self, cores: Mapping[str, Sequence[int]]) -> None:
        """Start the processes of each role on its cores from now on."""
        self.affinity = {role: frozenset(c) for role, c in cores.items() if c}

    def start(
        self, name: str, argv: Sequence[str], *, role: str | None = None, **kwargs: Any
    ) -> ManagedProcess:
        """Start a process; ``role`` (``gateway``, ``engine``, ``backend``) places it on the
        cores :meth:`pin` gave that role."""
        cpus = self.affinity.get(role) if role is not None else None
        if self._ledger is not None:
            self._start_guardian(self._ledger)
        proc = start_process(name, argv, cpus=cpus, **kwargs)
        with self._lock:
            self.processes.append(proc)
            self._note({"pgid": proc.pid, "created": _started_at(proc.pid), "name": name})
        return proc

    def stop(self, proc: ManagedProcess, timeout: float = 5.0) -> int | None:
        """Stop ``proc`` and its companions."""
        code = proc.stop(timeout)
        with self._lock:
            for stopped in (proc, *proc.companions):
                if stopped in self.processes:
                    self.processes.remove(stopped)
                self._struck(stopped)
        return code

    def stop_all(self, timeout: float = 5.0) -> None:
        with self._lock:
            procs = list(reversed(self.processes))
            self.processes.clear()
        for proc in procs:
            proc.stop(timeout)
            with self._lock:
                self._struck(proc)

    def listed(self, pgid: int, name: str) -> None:
        """A process group started outside :meth:`start` (a checker run by
        :func:`run_bounded`) goes to the ledger too, so the guardian ends it if gatebench dies
        while it runs; :meth:`unlisted` strikes it."""
        if self._ledger is not None:
            self._start_guardian(self._ledger)
        with self._lock:
            self._note({"pgid": pgid, "created": _started_at(pgid), "name": name})

    def unlisted(self, pgid: int) -> None:
        with self._lock, contextlib.suppress(OSError):
            self._note({"stopped": pgid})

    def _note(self, entry: dict[str, Any]) -> None:
        """One line of the ledger (under the lock)."""
        if self._ledger is not None:
            with self._ledger.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    def _struck(self, proc: ManagedProcess) -> None:
        """``proc`` has stopped: the ledger says so, or (a full disk) still lists a group that
        no longer exists, which the guardian then finds empty."""
        with contextlib.suppress(OSError):
            self._note({"stopped": proc.pid})

    def _start_guardian(self, ledger: Path) -> None:
        with self._lock:
            if self._guardian is not None:
                return
            ledger.parent.mkdir(parents=True, exist_ok=True)
            ledger.touch()
            self._guardian = subprocess.Popen(
                [sys.executable, "-I", str(Path(__file__).with_name("_guardian.py")), str(ledger)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _release_guardian(self) -> None:
        """Everything has stopped: tell the guardian, which then exits."""
        guardian, self._guardian = self._guardian, None
        if guardian is None or guardian.stdin is None:
            return
        with contextlib.suppress(OSError):
            guardian.stdin.write(b"done\n")
            guardian.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            guardian.wait(timeout=5)

    def __enter__(self) -> Supervisor:
        if threading.current_thread() is threading.main_thread():
            self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _raise_terminated)
        return self

    def __exit__(self, *exc: object) -> None:
        # here, not at the top: importing gatebench.run loads its machinery, and every
        # process that starts one of ours (a VM's tester, a function) would pay for it
        from gatebench.run._signals import signals_held

        try:
            # Teardown is never cut short by a Ctrl-C (or SIGTERM): one that came during it
            # is delivered once it is done, unless the way out is already an exception (a
            # second Ctrl-C, or one during a failure's teardown: the failure is what happened).
            with signals_held(deliver=exc[0] is None):
                self.stop_all()
                self._release_guardian()
        except KeyboardInterrupt as interrupt:
            raise type(interrupt)(TEARDOWN_FINISHED) from None
        finally:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            self._previous.clear()


def _started_at(pid: int) -> float:
    """When process ``pid`` started (0.0 when it is already gone)."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return 0.0


def this_process() -> dict[str, Any]:
    """This process as a run records its owner: host, PID and start time (no later process has
    both the PID and the start time)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": _started_at(os.getpid())}


def process_gone(owner: Mapping[str, Any]) -> bool:
    """True when the process ``owner`` describes (:func:`this_process`) ran on this host and is
    no longer running; False while it runs, or when it ran on another host (nothing to tell)."""
    if owner.get("host") != socket.gethostname() or not isinstance(owner.get("pid"), int):
        return False
    try:
        started = psutil.Process(owner["pid"]).create_time()
    except psutil.Error:
        return True
    return abs(started - float(owner.get("started") or 0.0)) > 0.05


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def become_subreaper() -> bool:
    """Make this process the one orphans below it are re-parented to (Linux), so that
    processes a dead child leaves behind (an nginx worker whose master was killed) stay
    findable and can be stopped by PID (:func:`stop_processes_below`). Only for a process
    that runs nothing else (``gatebench serve``)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except OSError:
        return False


def _below(pid: int) -> list[psutil.Process]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for child in children:
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE:
                out.append(child)
    return out


def processes_below(pid: int) -> dict[int, str]:
    """Live processes whose parent chain leads to ``pid``, with their command lines (at most
    120 characters; zombies are not live)."""
    found: dict[int, str] = {}
    for proc in _below(pid):
        with contextlib.suppress(psutil.Error):
            found[proc.pid] = " ".join(proc.cmdline()).strip()[:120]
    return found


def stop_processes_below(pid: int, grace: float = 3.0) -> list[str]:
    """Stop every live process below ``pid`` by its PID: SIGTERM, then SIGKILL to those
    still there after ``grace`` seconds; those that are our children are reaped. Returns
    the command lines found (empty: nothing was left)."""
    left = processes_below(pid)
    term_then_kill(lambda: _below(pid), grace)
    return list(left.values())


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
"""Where Linux says which ports it gives outgoing connections (32768-60999 by default)."""
SERVICE_LOW = 20_000
"""The lowest port :func:`free_port` picks when the ephemeral range starts above it."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now, below the kernel's ephemeral range when it can:
    a port chosen now and listened on later (every gateway's ports are chosen when it is
    rendered, before the load) cannot meanwhile become the local port of an outgoing
    connection, which the kernel picks from that range (the load engine opens thousands;
    Varnish once failed to listen on its management port so). Chosen at random, bound once to
    check; the kernel's own choice when no such range is known or no port in it is free."""
    found = _below_ephemeral()
    if found is not None:
        chooser = random.Random()
        for _ in range(100):
            port = chooser.randrange(*found)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        chosen: int = sock.getsockname()[1]
        return chosen


def _below_ephemeral() -> tuple[int, int] | None:
    """[low, high) of the ports below the ephemeral range, from :data:`SERVICE_LOW` (None when
    the range is unknown or starts too low to leave room)."""
    try:
        first = int(EPHEMERAL_RANGE.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return (SERVICE_LOW, first) if first - SERVICE_LOW >= 1000 else None


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def wait_port_free(port: int, timeout: float = 10.0, host: str = "127.0.0.1") -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_is_free(port, host):
            return True
        time.sleep(0.05)
    return port_is_free(port, host)


def http_probe(
    host: str, port: int, path: str = "/", timeout: float = 1.0, *, ca_file: str | None = None
) -> int | None:
    """The status of one real HTTP GET, or None when nothing answers. With ``ca_file``, over
    TLS trusting that CA alone (host name checked)."""
    conn: http.client.HTTPConnection
    if ca_file is not None:
        import ssl

        context = ssl.create_default_context(cafile=ca_file)
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers={"User-Agent": "gatebench-readiness"})
        status: int = conn.getresponse().status
        return status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def wait_ready(
    proc: ManagedProcess,
    port: int,
    *,
    host: str = "127.0.0.1",
    path: str = "/",
    timeout: float = 30.0,
    ready: Callable[[int], bool] = lambda status: True,
    ca_file: str | None = None,
) -> float:
    """Wait until an HTTP request to the process answers (any status by default); with
    ``ca_file``, an HTTPS request trusting that CA alone.

    Returns the seconds it took. Raises :class:`RunError` with the log tail when the process
    exits first or the time runs out.
    """
    start = time.monotonic()
    deadline = start + timeout
    delay = 0.02
    while True:
        if not proc.alive():
            raise RunError(
                f"{proc.name} exited with code {proc.returncode} before it was ready; "
                f"last log lines:\n{proc.log_tail()}"
            )
        status = http_probe(
            host,
            port,
            path,
            timeout=min(1.0, max(0.1, deadline - time.monotonic())),
            ca_file=ca_file,
        )
        if status is not None and ready(status):
            return time.monotonic() - start
        if time.monotonic() >= deadline:
            raise RunError(
                f"{proc.name} did not answer on {host}:{port} within {timeout:g}s; "
                f"last log lines:\n{proc.log_tail()}"
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


# -- commands that must finish: bounded, their whole tree ended at the limit ----------------

_OUTPUT_KEPT = 256 * 1024
"""The last bytes of a bounded command's output that are kept (a checker may print a line
per route)."""


@dataclass(frozen=True)
class Bounded:
    """What :func:`run_bounded` saw: the exit code (``None``: ended at its limit or on
    cancel), the output (standard output and error, interleaved), the seconds it took, and
    the command lines of the processes it had started that were ended with it."""

    returncode: int | None
    output: str
    elapsed: float
    ended: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.returncode is not None


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    grace: float = 2.0,
    supervisor: Supervisor | None = None,
) -> Bounded:
    """Run ``argv`` (never through a shell) until it exits, ``timeout`` seconds pass or
    ``cancel`` is set; then end its whole process tree and return what it did.

    A checker may start programs of its own (``varnishd -C`` runs the C compiler on the
    generated VCL): ending only the command would leave them running, and reading its output
    through a pipe would wait for them, since they hold the pipe. So the command runs in its
    own session with its output in a file, and at the limit every process below it (found
    while it still runs, so even one that left its group is known by PID) and its process
    group get SIGTERM, then SIGKILL after ``grace`` seconds. Like every process gatebench
    starts, it is killed if gatebench dies (``PR_SET_PDEATHSIG``); with a ``supervisor``
    its group is in the run's ledger while it runs, so what it started is ended too."""
    started = time.monotonic()
    deadline = started + timeout
    with tempfile.TemporaryFile() as out:
        popen = _spawn(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        ended: tuple[str, ...] = ()
        stopped = False
        try:
            if supervisor is not None:
                supervisor.listed(popen.pid, os.path.basename(argv[0]))
            while True:
                try:
                    popen.wait(timeout=max(0.0, min(0.1, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
                        stopped = True
                        ended = tuple(_end_tree(popen, grace))
                        break
        except BaseException:
            _end_tree(popen, grace)
            raise
        finally:
            # Whatever outlived the command in its group (a forked helper) goes too, and is
            # gone before we return.
            left = _group_members(popen.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(popen.pid, signal.SIGKILL)
            _gone(left, 5.0)
            if supervisor is not None:
                supervisor.unlisted(popen.pid)
        elapsed = time.monotonic() - started
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - _OUTPUT_KEPT))
        output = out.read().decode("utf-8", errors="replace")
    if size > _OUTPUT_KEPT:
        output = f"…({size - _OUTPUT_KEPT:,} bytes of output before)…\n" + output
    if stopped:
        return Bounded(None, output, elapsed, ended)
    return Bounded(popen.returncode, output, elapsed)


def _end_tree(popen: subprocess.Popen[bytes], grace: float) -> list[str]:
    """SIGTERM, then SIGKILL after ``grace`` seconds, to ``popen``'s process group and to
    every process below it; returns the command lines of those below (the leader's own is
    known to the caller). Returns once none of them is alive."""
    below = _below(popen.pid)
    names = []
    for proc in below:
        with contextlib.suppress(psutil.Error):
            names.append(" ".join(proc.cmdline()).strip()[:120] or proc.name())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, sig)
        for proc in below:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=grace)
        if _gone(below, grace if sig == signal.SIGTERM else 5.0) and popen.poll() is not None:
            break
    popen.wait()
    return names


def _group_members(pgid: int) -> list[psutil.Process]:
    """The live processes of process group ``pgid``."""
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
            if os.getpgid(proc.pid) == pgid:
                members.append(proc)
    return members


def _gone(procs: Sequence[psutil.Process], timeout: float) -> bool:
    """Whether every one of ``procs`` is gone (or a zombie: dead, waiting for its parent to
    read its exit code) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc)
        if not alive or time.monotonic() >= deadline:
            return not alive
        time.sleep(0.05)
