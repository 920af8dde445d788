"""A gateway changed while it runs: boot it, apply a new configuration through its own
mechanism, probe until routes answer correctly, read its memory.

The scale and change-under-load runs (docs/scale.md) use this edge; what to change and what a
correct answer is are decided in the core (``gatebench.core.routescale``). Each gateway declares its
mechanism (``Renderer.live_change``, a :class:`~gatebench.core.renderers.LiveChange`) and the files
it needs for it (``Renderer.render_live``); :meth:`LiveGateway.change` carries it out:

1. the new files are rendered for the same ports (a new upstream when asked), checked by the
   gateway's own checker in a staging folder (bounded by ``check_timeout``; a rejected
   configuration is never applied), then written over the old ones, each by an atomic rename
   (a watcher never reads half a file);
2. the mechanism is triggered: a signal to the process gatebench started, nothing (the gateway
   watches its files), a request to the loopback admin port, a command, or a restart.

A gateway booted as deployed (``tls``: it terminates the run's TLS; ``replicas``: a pool of
backends) keeps that deployment through every change: the new files are rendered for the same
target, TLS and pool included (a change that moves the upstream moves the whole pool).

Times are ``time.monotonic()`` seconds. A :class:`RouteProber` asks every route at a fixed
interval, each probe on a new connection (a kept connection could outlive a reload and hide
what a new client meets; over TLS, a new handshake trusting the run's CA alone), until it
answers correctly; it records when each first did.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from gatebench.core.errors import RunError, UnsupportedHere
from gatebench.core.fairness import CpuPolicy, gateway_target
from gatebench.core.ir import Api
from gatebench.core.renderers import LiveChange, Renderer, RenderTarget, get_renderer
from gatebench.core.renderers._base import DEFAULT_CONCURRENCY
from gatebench.core.tls import CA_CERT, GatewayTls
from gatebench.kinds._live._gateway import ChangeApplied
from gatebench.kinds._live.metrics import files_bytes
from gatebench.local.procs import ManagedProcess, Supervisor, free_port, wait_ready
from gatebench.local.provisioners._boot import check_config, start_gateway, write_files


@dataclass(frozen=True)
class PreparedChange:
    """A new configuration rendered and checked, not yet applied."""

    target: RenderTarget
    files: dict[str, str]
    check_s: float


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and every live process below it (RSS summed: a page shared
    by two processes counts twice, as ``ps`` shows it; docs/scale.md)."""
    try:
        leader = psutil.Process(pid)
        procs = [leader, *leader.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE:
                total += proc.memory_info().rss
    return total


def write_atomically(files: Mapping[str, str], workdir: Path) -> None:
    """Each file written beside its final name, then renamed over it."""
    staged = workdir / ".next"
    shutil.rmtree(staged, ignore_errors=True)
    write_files(files, staged)
    for name in sorted(files):
        final = workdir / name
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".{final.name}.next")
        shutil.copyfile(staged / name, tmp)
        os.replace(tmp, final)
    shutil.rmtree(staged, ignore_errors=True)


class LiveGateway:
    """One gateway gatebench boots and then changes while it serves (module docstring)."""

    def __init__(
        self,
        gateway: str | Renderer,
        supervisor: Supervisor,
        workdir: Path,
        *,
        cpu: CpuPolicy,
        concurrency: int = DEFAULT_CONCURRENCY,
        check_timeout: float = 120.0,
        boot_timeout: float | None = None,
        tls: GatewayTls | None = None,
    ) -> None:
        self.renderer = get_renderer(gateway) if isinstance(gateway, str) else gateway
        self.tls = tls
        """TLS the gateway terminates, through every change (None: plain HTTP)."""
        self.supervisor = supervisor
        self.workdir = workdir.resolve()
        self.cpu = cpu
        """The cores the gateway is given (the run's policy, ``gatebench.core.fairness``)."""
        self.concurrency = concurrency
        self.check_timeout = check_timeout
        self.boot_timeout = boot_timeout
        self.target: RenderTarget | None = None
        self.proc: ManagedProcess | None = None
        self.files: dict[str, str] = {}
        self.started_at = 0.0
        """Monotonic time the current process was started."""
        self.changes = 0

    @property
    def mechanism(self) -> LiveChange:
        return self.renderer.live_change

    host = "127.0.0.1"
    """Where the load and the probes reach it (gatebench.local.liveruns.Gateway)."""
    lead_s = 0.0
    """It starts and changes when asked: nobody needs telling ahead."""

    def confirm_start(self, started: float) -> float:
        """:meth:`start` returns once the process started: that was the start."""
        return started

    def confirm(self, applied: ChangeApplied) -> ChangeApplied:
        """:meth:`apply` returns once the mechanism returned: those were its times."""
        return applied

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.renderer.name}.log"

    @property
    def port(self) -> int:
        if self.target is None:
            raise RunError(f"{self.renderer.name} is not booted")
        return self.target.listen_port

    @property
    def ca_file(self) -> str | None:
        """The run's CA certificate a client trusts when the gateway terminates TLS."""
        return self.tls.path(CA_CERT) if self.tls is not None else None

    def config_bytes(self) -> int:
        return files_bytes(self.files)

    def boot(self, api: Api, backend_url: str, replicas: Sequence[str] = ()) -> float:
        """:meth:`render`, then :meth:`start`: returns once the gateway answers any request,
        with the monotonic time it was started (probe for correct answers next)."""
        self.render(api, backend_url, replicas)
        return self.start()

    def render(self, api: Api, backend_url: str, replicas: Sequence[str] = ()) -> None:
        """Render ``api`` for free loopback ports and write the files (no process yet);
        ``replicas``: the pool's origins, the first being ``backend_url`` (empty: that
        backend alone)."""
        self.target = gateway_target(
            self.cpu,
            workdir=str(self.workdir),
            listen_port=free_port(),
            backend_url=backend_url,
            admin_port=free_port(),
            tls=self.tls,
            replicas=replicas,
            concurrency=self.concurrency,
        )
        self.files = self.renderer.render_live(api, self.target)
        write_files(self.files, self.workdir)

    def start(self) -> float:
        """Check the written files with the gateway's checker and start it; returns the
        monotonic time it was started, once it answers any request."""
        if self.target is None:
            raise RunError(f"{self.renderer.name} is not rendered")
        reason = self.renderer.available_here()
        if reason is not None:
            raise UnsupportedHere(reason)
        check_config(self.renderer, self.workdir, self.target, timeout=self.check_timeout)
        self._start()
        return self.started_at

    def _start(self) -> None:
        assert self.target is not None
        before_wall, before = time.time(), time.monotonic()
        self.proc = start_gateway(
            self.renderer,
            self.target,
            self.supervisor,
            log_path=self.log_path,
            readiness_timeout=self.boot_timeout,
        )
        if self.mechanism.kind == "admin-api" and self.renderer.ready_path is None:
            # Changes go to the admin port, which may open after the listen port (Spring Boot
            # starts its management server second): a change sent between is refused.
            assert self.target.admin_port is not None  # render_live gives it one
            try:
                wait_ready(
                    self.proc,
                    self.target.admin_port,
                    timeout=self.boot_timeout or self.renderer.readiness_timeout,
                )
            except BaseException:
                self.supervisor.stop(self.proc)
                raise
        self.started_at = before + max(0.0, self.proc.started_at - before_wall)

    @property
    def pids(self) -> tuple[int, ...]:
        return (self.proc.pid,) if self.proc is not None else ()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def rss_bytes(self) -> int:
        return tree_rss_bytes(self.proc.pid) if self.alive() and self.proc else 0

    def change(
        self, api: Api, backend_url: str | None = None, replicas: Sequence[str] = ()
    ) -> ChangeApplied:
        """Apply ``api`` (and a new upstream) through the gateway's own mechanism:
        :meth:`prepare` then :meth:`apply`."""
        return self.apply(self.prepare(api, backend_url, replicas))

    def prepare(
        self, api: Api, backend_url: str | None = None, replicas: Sequence[str] = ()
    ) -> PreparedChange:
        """Render the new configuration and check it in a staging folder, changing nothing
        yet: a run prepares before its load, so the checker's time (Varnish compiles its VCL)
        does not move the moment the change is applied. The target keeps its ports and TLS;
        ``backend_url`` (with ``replicas``, the new pool's origins, the first being it) moves
        the upstream, ``None`` keeps it."""
        if self.target is None:
            raise RunError(f"{self.renderer.name} is not booted")
        target = (
            self.target
            if backend_url is None
            else replace(self.target, backend_url=backend_url, replicas=tuple(replicas))
        )
        files = self.renderer.render_live(api, target)
        return PreparedChange(target, files, self._check_staged(api, target))

    def apply(self, prepared: PreparedChange) -> ChangeApplied:
        """Write the prepared files (each by an atomic rename) and trigger the mechanism."""
        if self.target is None or self.proc is None:
            raise RunError(f"{self.renderer.name} is not booted")
        target, files, check_s = prepared.target, prepared.files, prepared.check_s
        write_atomically(files, self.workdir)
        self.target, self.files = target, files
        self.changes += 1
        written = time.monotonic()
        mech = self.mechanism
        triggered = written
        if mech.kind == "signal":
            os.kill(self.proc.pid, getattr(signal, mech.signal or "SIGHUP"))
        elif mech.kind == "admin-api":
            triggered = time.monotonic()
            self._admin_request(mech)
        elif mech.kind == "command":
            triggered = time.monotonic()
            self._commands(mech)
        elif mech.kind == "restart":
            triggered = time.monotonic()
            self.supervisor.stop(self.proc)
            self._start()
        return ChangeApplied(mech, written, triggered, time.monotonic(), check_s=check_s)

    def _check_staged(self, api: Api, target: RenderTarget) -> float:
        """The gateway's checker on the new configuration rendered into a staging folder (its
        own paths point there): a refused configuration raises before anything changes."""
        staging = self.workdir.parent / f".{self.workdir.name}-check"
        shutil.rmtree(staging, ignore_errors=True)
        staged = replace(target, workdir=str(staging))
        write_files(self.renderer.render_live(api, staged), staging)
        started = time.monotonic()
        try:
            check_config(self.renderer, staging, staged, timeout=self.check_timeout)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return time.monotonic() - started

    def _admin_request(self, mech: LiveChange) -> None:
        assert self.target is not None and self.target.admin_port is not None
        admin_request(self.renderer.name, self.target.admin_port, mech, self.workdir)

    def _commands(self, mech: LiveChange) -> None:
        assert self.target is not None
        values = self.target.placeholders()
        values["label"] = f"gatebench{self.changes}"
        for template in mech.commands:
            argv = [_fill(part, values) for part in template]
            argv[0] = self.renderer.find_program(argv[0])
            try:
                done = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=self.check_timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise RunError(
                    f"{self.renderer.name}: `{' '.join(argv)}` did not finish within "
                    f"{self.check_timeout:g}s"
                ) from None
            if done.returncode != 0:
                output = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
                raise RunError(
                    f"{self.renderer.name}: `{' '.join(argv)}` failed (exit {done.returncode}): "
                    f"{output[:500]}"
                )

    def stop(self) -> None:
        if self.proc is not None:
            self.supervisor.stop(self.proc)
            self.proc = None


def admin_request(name: str, port: int, mech: LiveChange, workdir: Path) -> None:
    """The ``admin-api`` mechanism: ``mech.method mech.path`` on ``127.0.0.1:port`` with the
    file ``mech.body`` of ``workdir`` (a process here, or on a gateway VM its container's
    loopback management port, reached by the live agent beside it)."""
    body = (workdir / mech.body).read_bytes() if mech.body else b""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        headers = {"Content-Type": mech.content_type} if mech.content_type else {}
        conn.request(mech.method, mech.path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as exc:
        raise RunError(f"{name}: {mech.method} {mech.path} failed: {exc}") from None
    finally:
        conn.close()
    if not 200 <= response.status < 300:
        raise RunError(
            f"{name}: {mech.method} {mech.path} answered {response.status}: {text.strip()[:500]}"
        )


def fill_command(template: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """A ``command`` mechanism's argv with its placeholders filled."""
    return [_fill(part, values) for part in template]


def _fill(template: str, values: Mapping[str, str]) -> str:
    out = template
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


__all__ = [
    "ChangeApplied",
    "LiveGateway",
    "PreparedChange",
    "admin_request",
    "files_bytes",
    "fill_command",
    "tree_rss_bytes",
    "write_atomically",
]
