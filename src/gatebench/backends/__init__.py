"""Backends gatebench proxies to: the Go server in ``backend/`` (echo, mock, auction modes),
or the user's own service (``backend: {url: ...}``).

The server is built by ``scripts/setup.d/30-backend.sh`` in a checkout, else on first use
(``gatebench._resources``); set ``GATEBENCH_BACKEND_BIN`` to use another build.
"""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from .. import _resources
from ..errors import RunError
from ..ir import Api
from ..plan import Plan
from ..procs import ManagedProcess, Supervisor, free_port, wait_ready
from .mock import mock_config


def backend_binary() -> Path:
    """The Go backend's binary, built on first use (MissingTool when go is missing)."""
    path = _resources.backend_binary()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise RunError(
            f"the backend server is not built ({path}); run `make setup-all` "
            "(or scripts/setup.sh backend)"
        )
    return path


CONTROL_PREFIX = "/__gatebench__/"
"""Where the engine calls the backend directly (mock and auction modes), never through a
gateway: ``POST /__gatebench__/reset`` (back to the initial state, 204) and
``GET /__gatebench__/health``. Gateways route only the description's operations, and no API
path starts with a double-underscored segment in practice."""


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
    port = port or free_port()
    argv = [str(backend_binary()), "-listen", f"127.0.0.1:{port}", "-mode", mode, *extra_args]
    proc = supervisor.start(
        f"backend-{mode}", argv, log_path=Path(log_dir) / f"backend-{mode}.log", role="backend"
    )
    wait_ready(proc, port, timeout=timeout)
    return proc, port


def start_plan_backend(
    supervisor: Supervisor, plan: Plan, api: Api, run_dir: str | os.PathLike[str]
) -> tuple[ManagedProcess | None, str, str | None]:
    """The plan's backend: (process or None for the user's own, base URL, reset URL or None).

    ``url``: nothing is started; the URL must answer (any HTTP status) or the run fails
    before any load. ``mock``: the routes file is rendered into the run folder first.
    """
    if plan.backend.kind == "url":
        url = (plan.backend.url or "").rstrip("/")
        _check_reachable(url)
        return None, url, None
    if plan.backend.kind == "builtin":
        mode = plan.backend.builtin or "auction"
        proc, port = start_backend(supervisor, mode, run_dir)
    else:
        config = Path(run_dir) / "mock-backend.json"
        config.write_text(
            json.dumps(mock_config(api, plan.backend), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        mode = "mock"
        proc, port = start_backend(supervisor, "mock", run_dir, extra_args=["-config", str(config)])
    base = f"http://127.0.0.1:{port}"
    reset = f"{base}{CONTROL_PREFIX}reset" if mode in ("mock", "auction") else None
    return proc, base, reset


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


def reset_backend(reset_url: str, timeout: float = 5.0) -> None:
    """Call the backend's reset directly (never through a gateway)."""
    parts = urlsplit(reset_url)
    conn = http.client.HTTPConnection(
        parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout
    )
    try:
        conn.request("POST", parts.path)
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        raise RunError(f"backend reset {reset_url} failed: {exc}") from None
    finally:
        conn.close()
    if status != 204:
        raise RunError(f"backend reset {reset_url} answered {status}, expected 204")
