"""Backends gatebench proxies to: the Go server in ``backend/`` (echo, mock, auction modes),
or the user's own service (``backend: {url: ...}``).

The server is built by ``scripts/setup.d/30-backend.sh`` in a checkout, else on first use
(``gatebench.local._resources``); set ``GATEBENCH_BACKEND_BIN`` to use another build.
"""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gatebench.core.backend import CONTROL_PREFIX, CONTROL_TIMEOUT_S, mock_config
from gatebench.core.errors import RunError
from gatebench.core.ir import Api
from gatebench.core.plan import Plan
from gatebench.local import _resources
from gatebench.local.procs import ManagedProcess, Supervisor, free_port, wait_ready


def backend_binary() -> Path:
    """The Go backend's binary, built on first use (MissingTool when go is missing)."""
    path = _resources.backend_binary()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise RunError(
            f"the backend server is not built ({path}); run `make setup-all` "
            "(or scripts/setup.sh backend)"
        )
    return path


"""Where the engine calls the backend directly (mock and auction modes), never through a
gateway: ``POST /__gatebench__/reset`` (back to the initial state, 204) and
``GET /__gatebench__/health``. Gateways route only the description's operations, and no API
path starts with a double-underscored segment in practice."""


@dataclass(frozen=True)
class BackendTls:
    """The backend's own TLS listener (the baseline of a TLS plan): the run's TLS folder
    (``gatebench.core.tls``) and what to offer, as the gateways do."""

    folder: Path
    http2: bool = False
    resumption: bool = True

    def args(self, port: int, host: str = "127.0.0.1") -> list[str]:
        from gatebench.core.tls import SERVER_CERT, SERVER_KEY

        return [
            "-tls-listen",
            f"{host}:{port}",
            "-tls-cert",
            str(self.folder / SERVER_CERT),
            "-tls-key",
            str(self.folder / SERVER_KEY),
            f"-tls-h2={'true' if self.http2 else 'false'}",
            f"-tls-tickets={'true' if self.resumption else 'false'}",
        ]


@dataclass(frozen=True)
class StartedBackend:
    """One backend process: its plain port (what gateways forward to), its TLS port (the
    baseline of a TLS plan) and its replica number in a pool (0: not a pool)."""

    process: ManagedProcess
    port: int
    tls_port: int | None = None
    replica: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def tls_url(self) -> str | None:
        return None if self.tls_port is None else f"https://127.0.0.1:{self.tls_port}"


def start_backend(
    supervisor: Supervisor,
    mode: str,
    log_dir: str | os.PathLike[str],
    *,
    port: int | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 10.0,
) -> tuple[ManagedProcess, int]:
    """Start the Go backend in ``mode`` on 127.0.0.1; returns the process and its port."""
    started = start_backend_process(
        supervisor, mode, log_dir, port=port, extra_args=extra_args, timeout=timeout
    )
    return started.process, started.port


def start_backend_process(
    supervisor: Supervisor,
    mode: str,
    log_dir: str | os.PathLike[str],
    *,
    port: int | None = None,
    extra_args: Sequence[str] = (),
    replica: int = 0,
    tls: BackendTls | None = None,
    tls_port: int | None = None,
    timeout: float = 10.0,
    host: str = "127.0.0.1",
) -> StartedBackend:
    """Start one Go backend process in ``mode`` on ``host`` (127.0.0.1; a VM's backend binds
    every interface, 0.0.0.0): replica number ``replica`` of a pool (its answers say so, its
    stats count its own requests), with a TLS listener when ``tls`` is given. Ready once both
    listeners answer on the loopback interface."""
    port = port or free_port()
    argv = [str(backend_binary()), "-listen", f"{host}:{port}", "-mode", mode]
    label = f"backend-{mode}" if not replica else f"backend-{mode}-{replica}"
    if replica:
        argv += ["-replica", str(replica)]
    if tls is not None:
        tls_port = tls_port or free_port()
        argv += tls.args(tls_port, host)
    else:
        tls_port = None
    argv += list(extra_args)
    proc = supervisor.start(label, argv, log_path=Path(log_dir) / f"{label}.log", role="backend")
    wait_ready(proc, port, timeout=timeout)
    if tls is not None and tls_port is not None:
        from gatebench.core.tls import CA_CERT

        wait_ready(proc, tls_port, timeout=timeout, ca_file=str(tls.folder / CA_CERT))
    return StartedBackend(proc, port, tls_port, replica)


def start_replicas(
    supervisor: Supervisor,
    mode: str,
    log_dir: str | os.PathLike[str],
    count: int,
    *,
    extra_args: Sequence[str] = (),
    tls: BackendTls | None = None,
    timeout: float = 10.0,
) -> list[StartedBackend]:
    """``count`` backend processes, replicas 1..count, each on its own port; the first also
    serves TLS when ``tls`` is given (the baseline reaches it directly)."""
    return [
        start_backend_process(
            supervisor,
            mode,
            log_dir,
            extra_args=extra_args,
            replica=n if count > 1 else 0,
            tls=tls if n == 1 else None,
            timeout=timeout,
        )
        for n in range(1, count + 1)
    ]


def backend_stats(port: int, timeout: float = 5.0) -> dict[str, Any]:
    """``GET /__gatebench__/stats`` of one backend process, directly: ``{"requests": N, ...}``
    (N counts what it served outside the control prefix since its start or last reset)."""
    what = f"backend stats on port {port}"
    data: dict[str, Any] = json.loads(
        _control("GET", "127.0.0.1", port, f"{CONTROL_PREFIX}stats", what, 200, timeout)
    )
    return data


@dataclass(frozen=True)
class ServedRequest:
    """One request in the backend's own timeline (``GET /__gatebench__/requests``; the Go
    server's ``record.go`` says how each moment is taken). Times are µs on the backend's
    monotonic clock since it started; None where not known."""

    seq: int
    epoch: int
    """Resets before its receipt: each measured phase begins with one."""
    conn: int
    """The connection's number, in accept order."""
    http2: bool
    control: bool
    """A call under ``/__gatebench__/`` (reset, stats), not a request of the load."""
    received_us: int
    """The handler's start: the request line and headers read (never before the client sent)."""
    released_us: int | None
    """The handler's return: the answer handed to the connection (never after the client read
    it)."""
    prev_release_us: int | None
    """The previous answer's release on the same HTTP/1.1 connection: a closed-model client
    sends this request only after it (None: the first on its connection)."""
    next_receipt_us: int | None
    """The next request's receipt on the same HTTP/1.1 connection: the client read this answer
    before it (None: the last on its connection)."""
    held_from_us: int | None
    held_to_us: int | None
    """The mock's fixed latency: the hold itself (None without one)."""
    worker: int | None
    """The mock worker that held it (None without workers)."""

    @property
    def held_us(self) -> int | None:
        if self.held_from_us is None or self.held_to_us is None:
            return None
        return self.held_to_us - self.held_from_us


@dataclass(frozen=True)
class BackendTimeline:
    """The backend's record of the requests it served (the last 16,384), oldest first."""

    start_wall_us: int
    """The backend's clock's zero, in epoch µs: ``start_wall_us + t`` is a time's wall clock."""
    epoch: int
    """The current epoch (resets so far)."""
    overwritten: int
    requests: tuple[ServedRequest, ...]

    def phase(self, epoch: int | None = None) -> tuple[ServedRequest, ...]:
        """The load's requests (no control calls) of ``epoch`` (default: the current one)."""
        wanted = self.epoch if epoch is None else epoch
        return tuple(r for r in self.requests if r.epoch == wanted and not r.control)


_TIMELINE_FIELDS = tuple(f.name for f in ServedRequest.__dataclass_fields__.values())


def backend_requests(port: int, timeout: float = 10.0) -> BackendTimeline:
    """``GET /__gatebench__/requests`` of one backend process, directly: its own timeline of
    every request it served (docs/trust.md, "The backend's timeline")."""
    what = f"backend timeline on port {port}"
    data = json.loads(
        _control("GET", "127.0.0.1", port, f"{CONTROL_PREFIX}requests", what, 200, timeout)
    )
    fields = data.get("fields")
    if (
        data.get("format") != "gatebench-backend-requests/1"
        or tuple(fields or ()) != _TIMELINE_FIELDS
    ):
        raise RunError(
            f"backend timeline on port {port}: expected gatebench-backend-requests/1 with "
            f"fields {list(_TIMELINE_FIELDS)}, got {data.get('format')!r} with {fields}"
        )
    return BackendTimeline(
        start_wall_us=int(data["start_wall_us"]),
        epoch=int(data["epoch"]),
        overwritten=int(data["overwritten"]),
        requests=tuple(ServedRequest(*row) for row in data["rows"]),
    )


def start_plan_backend(
    supervisor: Supervisor, plan: Plan, api: Api, run_dir: str | os.PathLike[str]
) -> tuple[ManagedProcess | None, str, str | None]:
    """The plan's backend: (process or None for the user's own, base URL, reset URL or None).

    ``url``: nothing is started; the URL must answer (any HTTP status) or the run fails
    before any load. ``mock``: the routes file is rendered into the run folder first.
    One process: :func:`start_plan_backends` starts the plan's replicas and TLS.
    """
    started = start_plan_backends(
        supervisor, replace(plan, backend=replace(plan.backend, replicas=1)), api, run_dir
    )
    first = started.replicas[0] if started.replicas else None
    return (
        first.process if first is not None else None,
        started.url,
        started.reset_urls[0] if started.reset_urls else None,
    )


@dataclass(frozen=True)
class PlanBackend:
    """What :func:`start_plan_backends` started: the replicas (none for the user's own
    service), the baseline's URL (the first replica's TLS listener in a TLS plan), what the
    gateways forward to, and the resets the engine calls before each measured phase."""

    replicas: tuple[StartedBackend, ...]
    url: str
    """The baseline's base URL."""
    origins: tuple[str, ...]
    """What the gateways forward to: one origin, or every replica's."""
    reset_urls: tuple[str, ...]
    mode: str | None
    """The Go backend's mode (None: the user's own service)."""
    argv_extra: tuple[str, ...] = ()
    """The mode's own arguments (the mock's routes file): what a replica restarts with."""
    tls: BackendTls | None = None


def start_plan_backends(
    supervisor: Supervisor,
    plan: Plan,
    api: Api,
    run_dir: str | os.PathLike[str],
    *,
    tls: BackendTls | None = None,
) -> PlanBackend:
    """The plan's backend: ``backend.replicas`` processes of the Go backend (mock or builtin),
    each counting what it served, the first also serving TLS for the baseline when ``tls``
    is given; or the user's own service (``url``), which must answer."""
    if plan.backend.kind == "url":
        url = (plan.backend.url or "").rstrip("/")
        _check_reachable(url)
        return PlanBackend((), url, (url,), (), None)
    extra: list[str] = []
    if plan.backend.kind == "builtin":
        mode = plan.backend.builtin or "auction"
    else:
        config = Path(run_dir) / "mock-backend.json"
        config.write_text(
            json.dumps(mock_config(api, plan.backend), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        mode = "mock"
        extra = ["-config", str(config)]
    replicas = tuple(
        start_replicas(supervisor, mode, run_dir, plan.backend.replicas, extra_args=extra, tls=tls)
    )
    first = replicas[0]
    resets = (
        tuple(f"{r.url}{CONTROL_PREFIX}reset" for r in replicas)
        if mode in ("mock", "auction")
        else ()
    )
    return PlanBackend(
        replicas,
        first.tls_url or first.url,
        tuple(r.url for r in replicas),
        resets,
        mode,
        tuple(extra),
        tls,
    )


def restart_replica(
    supervisor: Supervisor,
    backend: PlanBackend,
    replica: StartedBackend,
    log_dir: str | os.PathLike[str],
) -> StartedBackend:
    """Start a replica again on its own port (after a fault killed it)."""
    assert backend.mode is not None
    return start_backend_process(
        supervisor,
        backend.mode,
        log_dir,
        port=replica.port,
        extra_args=backend.argv_extra,
        replica=replica.replica,
        tls=backend.tls if replica.tls_port is not None else None,
        tls_port=replica.tls_port,
    )


def _check_reachable(url: str, timeout: float = 5.0) -> None:
    """RunError unless an HTTP request to ``url`` gets any answer."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    conn_cls = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    conn = conn_cls(host, port, timeout=timeout)
    try:
        conn.request("GET", parts.path or "/", headers={"User-Agent": "gatebench-check"})
        conn.getresponse().read(0)
    except (OSError, http.client.HTTPException) as exc:
        raise RunError(
            f"backend {url} is unreachable ({exc}); start your service or fix backend.url "
            "in the plan — no load was sent"
        ) from None
    finally:
        conn.close()


def reset_backend(reset_url: str, timeout: float = CONTROL_TIMEOUT_S) -> None:
    """Call the backend's reset directly (never through a gateway); it answers once the
    requests of the earlier load are served (up to 30 s: backend/control.go)."""
    parts = urlsplit(reset_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    _control("POST", host, port, parts.path, f"backend reset {reset_url}", 204, timeout)


def _control(
    method: str, host: str, port: int, path: str, what: str, expected: int, timeout: float
) -> bytes:
    """One call to a backend's control endpoint, directly: its body; RunError naming ``what``
    when it fails or answers other than ``expected``."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        body = resp.read()
    except (OSError, http.client.HTTPException) as exc:
        raise RunError(f"{what} failed: {exc}") from None
    finally:
        conn.close()
    if resp.status != expected:
        raise RunError(f"{what} answered {resp.status}, expected {expected}")
    return body
