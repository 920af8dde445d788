"""Backends gatebench proxies to: the Go server in ``backend/`` (echo, mock, auction modes).

The server is built by ``scripts/setup.d/30-backend.sh`` into ``.cache/bin``; set
``GATEBENCH_BACKEND_BIN`` to use another build.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import RunError
from ..procs import ManagedProcess, Supervisor, free_port, wait_ready

REPO_ROOT = Path(__file__).resolve().parents[3]


def backend_binary() -> Path:
    override = os.environ.get("GATEBENCH_BACKEND_BIN")
    path = Path(override) if override else REPO_ROOT / ".cache" / "bin" / "gatebench-backend"
    if not path.is_file() or not os.access(path, os.X_OK):
        raise RunError(
            f"the backend server is not built ({path}); run `make setup-all` "
            "(or scripts/setup.sh backend)"
        )
    return path


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
    proc = supervisor.start(f"backend-{mode}", argv, log_path=Path(log_dir) / f"backend-{mode}.log")
    wait_ready(proc, port, timeout=timeout)
    return proc, port
