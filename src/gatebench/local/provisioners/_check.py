"""Checking rendered configurations with each gateway's own means: bounded, side by side.

A gateway with a checker here (``nginx -t``, ``varnishd -C``, ...) has it run on the files as
written; a gateway without one that runs here (Traefik, the JVM gateways) is booted briefly
instead, with the same routes (``Rendered.api``: without those the render left out) rendered
for a free loopback port in a scratch folder, and its output searched for refused parts of the
configuration. So a check sees exactly what was written. A gateway whose checker passes what
it refuses at start (``Renderer.boot_check``: KrakenD) is booted after its checker passes; a
gateway installed from its vendor that is missing here (KrakenD, Tyk) is "not checked", with
how to install it.

Every check has a time limit (:func:`~gatebench.local.provisioners.check_limit`: it grows with the
number of routes; a caller may set one). A check that passes it fails that gateway's check
only, and the checker is ended with every process it started (Varnish's checker runs the C
compiler, which would otherwise run on). Checks of different gateways run side by side, as
many at once as :func:`run_checks` is given (the render command: the cores it may use); the
results come back in the order of the tasks. Ctrl-C or SIGTERM ends every check under way.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from gatebench.core.errors import GatebenchError, ProblemsError, RunError, UnsupportedHere
from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers import Renderer, RenderTarget
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners._boot import (
    CheckTimedOut,
    ConfigRejected,
    boot_gateway,
    check_config,
    ensure_built,
)

# Time a gateway has after it is ready to report what it refused (Traefik logs a dropped
# router as it applies its configuration).
_SETTLE_S = 0.3
# A jar built on first use is built once, by one check at a time (they share a Maven
# repository).
_BUILD_LOCK = threading.Lock()


@dataclass(frozen=True)
class CheckTask:
    """One gateway's files to check: where they were written, the target they were rendered
    for, and the description as rendered (what a boot check boots)."""

    renderer: Renderer
    folder: Path
    target: RenderTarget
    api: Api
    policies: PolicySet | None = None
    timeout: float | None = None
    """Seconds the check may take; ``None``: :func:`check_limit` for its routes."""


@dataclass(frozen=True)
class Checked:
    """What a check found: the status shown after the gateway's files (`` [checker: ok]``),
    whether the check failed, and the lines that say why (one problem per line, located)."""

    status: str
    failed: bool = False
    messages: tuple[str, ...] = ()
    seconds: float = 0.0


def check_gateway(
    task: CheckTask,
    *,
    cancel: threading.Event | None = None,
    supervisor: Supervisor | None = None,
    source: str = "",
) -> Checked:
    """Check one gateway's files (see the module). ``source`` names the description in the
    problems a boot check may report; ``supervisor`` owns a booted gateway (one of its own
    when None)."""
    from gatebench.local.provisioners._boot import check_limit

    started = time.monotonic()
    renderer = task.renderer
    limit = task.timeout or check_limit(renderer, len(task.api.operations))
    try:
        argv = renderer.check_argv(task.folder, task.target)
    except UnsupportedHere as exc:
        return Checked(f" [not checked: {exc}]")
    if argv is None:
        if not renderer.runs_here:
            return Checked(" [no checker here]")
        checked = _boot_check(task, limit, cancel, supervisor, source)
        return replace(checked, seconds=time.monotonic() - started)
    try:
        check_config(
            renderer, task.folder, task.target, timeout=limit, cancel=cancel, supervisor=supervisor
        )
    except UnsupportedHere as exc:
        return Checked(f" [not checked: {exc}]")
    except ConfigRejected as exc:
        return Checked(" rejected by its checker", True, (str(exc),))
    except CheckTimedOut as exc:
        return Checked(
            " check timed out",
            True,
            (f"{task.folder}: {exc}",),
            time.monotonic() - started,
        )
    except RunError as exc:
        return Checked(" not checked", True, (f"{task.folder}: {exc}",))
    if renderer.boot_check:  # its checker passes what it refuses at start (KrakenD)
        booted = _boot_check(task, limit, cancel, supervisor, source)
        return replace(
            booted, status=" [checker: ok]" + booted.status, seconds=time.monotonic() - started
        )
    return Checked(" [checker: ok]", seconds=time.monotonic() - started)


def _boot_check(
    task: CheckTask,
    limit: float,
    cancel: threading.Event | None,
    supervisor: Supervisor | None,
    source: str,
) -> Checked:
    """Boot the routes written, rendered for a free loopback port in a scratch folder, read
    the gateway's output, stop it: booting is the check of a gateway without a checker."""
    renderer = task.renderer
    reason = renderer.available_here()
    if reason is not None:
        return Checked(f" [not checked: {reason}]")
    try:
        with _BUILD_LOCK:
            ensure_built(renderer)
    except UnsupportedHere as exc:
        return Checked(f" [not checked: {exc}]")
    if cancel is not None and cancel.is_set():
        return Checked(" not checked", True, (f"{renderer.name}: the check was stopped",))
    with tempfile.TemporaryDirectory(prefix="gatebench-check-") as scratch:
        local = replace(
            task.target,
            workdir=str(Path(scratch).resolve()),
            listen_host="127.0.0.1",
            listen_port=free_port(),
            admin_port=free_port(),
            redis_host="127.0.0.1",
            redis_port=free_port(),
        )
        log = Path(local.workdir) / f"{renderer.name}.out.log"
        started = time.monotonic()
        try:
            with _supervising(supervisor) as owner:
                proc = boot_gateway(
                    renderer,
                    task.api,
                    local,
                    owner,
                    log_path=log,
                    policies=task.policies,
                    readiness_timeout=limit,
                )
                time.sleep(_SETTLE_S)
                owner.stop(proc)
        except ProblemsError as exc:
            lines = [p.format(source or None) for p in exc.problems]
            return Checked(" rejected at boot", True, (f"{renderer.name}: {lines[0]}", *lines[1:]))
        except GatebenchError as exc:
            if time.monotonic() - started >= limit:
                # Not ready within its limit (a gateway still loading 20,000 routes): stopped.
                return Checked(" check timed out", True, (f"{task.folder}: {exc}",))
            return Checked(" rejected at boot", True, (f"{renderer.name}: the boot failed: {exc}",))
        problems = renderer.boot_problems(log.read_text(encoding="utf-8", errors="replace"))
    if problems:
        return Checked(
            " rejected at boot",
            True,
            (
                f"{renderer.name}: the configuration was partly refused at boot:\n"
                + "\n".join(problems),
            ),
        )
    return Checked(" [booted: ok]")


@contextlib.contextmanager
def _supervising(supervisor: Supervisor | None) -> Iterator[Supervisor]:
    """``supervisor`` as is (its owner stops what is left), or a Supervisor of our own."""
    if supervisor is not None:
        yield supervisor
        return
    with Supervisor() as own:
        yield own


def run_checks(
    tasks: Sequence[CheckTask], *, jobs: int, source: str = ""
) -> Generator[Checked, None, None]:
    """Check every task, ``jobs`` at a time; yields each result in the order of ``tasks``, as
    soon as it and those before it are done. When the caller stops early (Ctrl-C, SIGTERM
    inside the loop), every check under way is ended before this returns."""
    cancel = threading.Event()
    with Supervisor() as supervisor, ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [
            pool.submit(check_gateway, task, cancel=cancel, supervisor=supervisor, source=source)
            for task in tasks
        ]
        try:
            for future in futures:
                yield future.result()
        finally:
            cancel.set()
            for future in futures:
                future.cancel()
            supervisor.stop_all()


__all__ = ["CheckTask", "Checked", "check_gateway", "run_checks"]
