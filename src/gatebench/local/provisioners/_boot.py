"""Booting a rendered gateway as a real local process (the local provisioner and route replay).

It lives with the provisioners, not the renderers: rendering is pure (a configuration out),
starting processes is an edge.

Steps, each with an error people can act on: write the files into the workdir, run the
gateway's own checker (a rejected config raises :class:`ConfigRejected` carrying the
checker's output; one that passes its time limit, :func:`check_limit`, is ended with every
process it started and raises :class:`CheckTimedOut`), start the gateway in the foreground
under a :class:`~gatebench.local.procs.Supervisor`, and wait until a real HTTP request is answered.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from gatebench.core.api_keys import redact
from gatebench.core.errors import MissingTool, RunError, UnsupportedHere
from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers import Renderer, RenderTarget, get_renderer, render_with_policies
from gatebench.core.renderers._base import Companion
from gatebench.core.tls import CA_CERT
from gatebench.local._resources import JVM_GATEWAYS, jvm_gateway_jar
from gatebench.local.procs import ManagedProcess, Supervisor, run_bounded, wait_ready


class ConfigRejected(RunError):
    """The gateway's own checker refused a rendered configuration."""

    def __init__(self, gateway: str, argv: list[str], returncode: int, output: str) -> None:
        self.gateway = gateway
        self.argv = argv
        self.returncode = returncode
        self.output = output
        super().__init__(
            f"{gateway}: the configuration was rejected by `{' '.join(argv)}` "
            f"(exit {returncode}):\n{output.rstrip()}"
        )


class CheckTimedOut(RunError):
    """The gateway's checker did not finish within its limit; it was ended with every
    process it had started (``ended``: their command lines)."""

    def __init__(
        self, gateway: str, argv: list[str], timeout: float, ended: Sequence[str] = ()
    ) -> None:
        self.gateway = gateway
        self.argv = argv
        self.timeout = timeout
        self.ended = tuple(ended)
        started = ""
        if self.ended:
            programs = ", ".join(dict.fromkeys(os.path.basename(c.split()[0]) for c in ended))
            started = f", with the {len(self.ended)} process(es) it had started ({programs})"
        super().__init__(
            f"{gateway}: `{' '.join(argv)}` did not finish within {timeout:g}s; it was "
            f"ended{started}"
        )


CHECK_BASE_S = 60.0
"""The time any check may take, whatever the size of the configuration."""


def check_limit(renderer: Renderer, routes: int) -> float:
    """Seconds the check of ``renderer``'s configuration of ``routes`` routes may take: a
    base (:data:`CHECK_BASE_S`, or the gateway's readiness time when booting it is its
    check) and :attr:`~gatebench.core.renderers.Renderer.check_seconds_per_route` per route.
    Checkers grow with the configuration: Varnish's compiles it with the C compiler."""
    base = CHECK_BASE_S
    if renderer.check_command is None:
        base = max(base, renderer.readiness_timeout)
    return base + routes * renderer.check_seconds_per_route


def write_files(files: Mapping[str, str], workdir: str | os.PathLike[str]) -> list[Path]:
    """Write rendered files below ``workdir`` (created); names must stay inside it."""
    root = Path(workdir)
    written = []
    for name, text in sorted(files.items()):
        rel = PurePosixPath(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise RunError(f"refusing to write {name!r}: not a relative path inside the workdir")
        path = root.joinpath(*rel.parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    return written


def redact_file(path: Path, keys: tuple[str, ...]) -> None:
    """``path`` without the API ``keys`` (``gatebench.core.api_keys.redact``): a text file is
    rewritten with each key replaced, a binary one holding a key is removed. The new file
    replaces the old one (``os.replace``), so a process that still maps the old one keeps it."""
    if not keys or path.is_symlink() or not path.is_file():
        return
    data = path.read_bytes()
    if not any(k.encode() in data for k in keys):
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        path.unlink()
        return
    tmp = path.with_name(path.name + ".redacted")
    tmp.write_text(redact(text, keys), encoding="utf-8", newline="")
    tmp.chmod(path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def check_config(
    renderer: Renderer,
    workdir: str | os.PathLike[str],
    target: RenderTarget | None = None,
    *,
    timeout: float = 120.0,
    cancel: threading.Event | None = None,
    supervisor: Supervisor | None = None,
) -> str | None:
    """Run the gateway's checker on the files in ``workdir``, for at most ``timeout``
    seconds (or until ``cancel`` is set).

    Returns its output, or ``None`` when the gateway has no checker here. Raises
    :class:`ConfigRejected` when the checker fails, :class:`CheckTimedOut` when it did not
    finish (it and every process it started are ended: ``procs.run_bounded``),
    :class:`UnsupportedHere` when the program is missing.
    """
    argv = renderer.check_argv(workdir, target)
    if argv is None:
        return None
    renderer.prepare(Path(workdir))
    done = run_bounded(
        argv,
        timeout=timeout,
        cwd=workdir,
        env=renderer.env(workdir, target),
        cancel=cancel,
        supervisor=supervisor,
    )
    if not done.finished:
        raise CheckTimedOut(renderer.name, argv, timeout, done.ended)
    if done.returncode != 0:
        raise ConfigRejected(renderer.name, argv, done.returncode or 0, done.output)
    return done.output


def ensure_built(renderer: Renderer) -> None:
    """Build what a gateway runs from on first use (the JVM gateways' jars), so that its
    renderer only has to name the file; a missing java or mvn makes it UnsupportedHere."""
    if renderer.name not in JVM_GATEWAYS:
        return
    try:
        jvm_gateway_jar(renderer.name)
    except MissingTool as exc:
        raise UnsupportedHere(f"{renderer.name}: {exc}") from None


def start_companions(
    renderer: Renderer, target: RenderTarget, supervisor: Supervisor, *, timeout: float = 15.0
) -> list[ManagedProcess]:
    """Start the processes the gateway needs beside it (``Renderer.companions``: Tyk's
    Redis), each logging to ``<workdir>/<name>.log``; return once each one answers."""
    workdir = Path(target.workdir)
    started: list[ManagedProcess] = []
    try:
        for companion in renderer.companions(target):
            program = renderer.find_program(companion.argv[0], companion.install_hint)
            proc = supervisor.start(
                f"{renderer.name}'s {companion.name}",
                [program, *companion.argv[1:]],
                log_path=workdir / f"{companion.name}.log",
                cwd=workdir,
                role="gateway",
            )
            started.append(proc)
            _wait_answering(proc, companion, timeout)
    except BaseException:
        for proc in reversed(started):
            supervisor.stop(proc)
        raise
    return started


def _wait_answering(proc: ManagedProcess, companion: Companion, timeout: float) -> None:
    """Until ``companion`` accepts a connection on 127.0.0.1 and answers its probe."""
    deadline = time.monotonic() + timeout
    while True:
        if not proc.alive():
            raise RunError(
                f"{proc.name} exited with code {proc.returncode} before it was ready; "
                f"last log lines:\n{proc.log_tail()}"
            )
        try:
            with socket.create_connection(("127.0.0.1", companion.port), timeout=1.0) as sock:
                if not companion.probe:
                    return
                sock.sendall(companion.probe)
                if sock.recv(64).startswith(companion.answer):
                    return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise RunError(
                f"{proc.name} did not answer on 127.0.0.1:{companion.port} within {timeout:g}s; "
                f"last log lines:\n{proc.log_tail()}"
            )
        time.sleep(0.05)


def start_gateway(
    renderer: Renderer,
    target: RenderTarget,
    supervisor: Supervisor,
    *,
    log_path: str | os.PathLike[str] | None = None,
    readiness_timeout: float | None = None,
) -> ManagedProcess:
    """Start the gateway on files already in ``target.workdir`` (after its companions);
    return once it answers (within ``readiness_timeout`` seconds, by default the gateway's
    own). Stopping it stops its companions."""
    workdir = Path(target.workdir)
    ensure_built(renderer)
    argv = renderer.run_argv(workdir, target)
    if argv is None:
        raise UnsupportedHere(f"{renderer.name} cannot run here; it only runs on the cloud path")
    renderer.prepare(workdir)
    log = Path(log_path) if log_path is not None else workdir / f"{renderer.name}.out.log"
    companions = start_companions(renderer, target, supervisor)
    try:
        proc = supervisor.start(
            renderer.name,
            argv,
            log_path=log,
            cwd=workdir,
            env=renderer.env(workdir, target),
            role="gateway",
        )
    except BaseException:
        for companion in reversed(companions):
            supervisor.stop(companion)
        raise
    proc.companions.extend(companions)
    host = "127.0.0.1" if target.listen_host == "0.0.0.0" else target.listen_host
    port, path, ready = target.listen_port, "/", lambda status: True
    # A gateway terminating TLS is ready once it answers over TLS with the run's certificate.
    ca_file = target.tls.path(CA_CERT) if target.tls is not None else None
    if renderer.ready_path is not None and target.admin_port is not None:
        host, port, path, ready = "127.0.0.1", target.admin_port, renderer.ready_path, _ok
        if not renderer.admin_port_shares_tls:
            ca_file = None
    try:
        wait_ready(
            proc,
            port,
            host=host,
            path=path,
            timeout=readiness_timeout or renderer.readiness_timeout,
            ready=ready,
            ca_file=ca_file,
        )
    except BaseException:
        supervisor.stop(proc)
        raise
    return proc


def _ok(status: int) -> bool:
    return status == 200


def boot_gateway(
    renderer: Renderer | str,
    api: Api,
    target: RenderTarget,
    supervisor: Supervisor,
    *,
    log_path: str | os.PathLike[str] | None = None,
    policies: PolicySet | None = None,
    allow_missing_policies: bool = False,
    readiness_timeout: float | None = None,
) -> ManagedProcess:
    """Render, write, check, start and wait: a ready gateway process proxying ``api``.

    With ``policies``, the gateway enforces them (``render_with_policies``: UnsupportedFeature
    when it cannot, unless ``allow_missing_policies`` boots it bare).

    ``target.workdir`` must be a local folder (created when missing). The process belongs to
    ``supervisor``, which stops it when its block ends; stop it earlier with
    ``supervisor.stop(proc)``.
    """
    gateway = get_renderer(renderer) if isinstance(renderer, str) else renderer
    reason = gateway.available_here()
    if reason is not None:
        raise UnsupportedHere(reason)
    if policies is None or policies.empty:
        files = gateway.render(api, target)
    else:
        files = render_with_policies(
            gateway, api, target, policies, allow_missing=allow_missing_policies
        )
    write_files(files, target.workdir)
    check_config(gateway, target.workdir, target)
    return start_gateway(
        gateway, target, supervisor, log_path=log_path, readiness_timeout=readiness_timeout
    )
