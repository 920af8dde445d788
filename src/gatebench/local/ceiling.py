"""The fastest target this machine can serve: nginx answering every request with a small
static file. The load engine's throughput against it is the engine's ceiling here.

A gateway's throughput can never be known to be higher than the load generator's own ceiling,
and near it the number measures the generator rather than the gateway. The runner measures
the ceiling at the start of every run (docs/trust.md) and flags measurements that come within
20 % of it; ``benchmarks/bench_headroom.py`` compares the ceilings of the two engines.

The server answers any method and path with 200 and the same file (a POST or an upload is read
and discarded: nginx's ``error_page 405 =200`` turns the static module's refusal of a POST into
the file), keeps connections open for as many requests as a run sends, and writes nothing
outside its workdir.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from gatebench.core.errors import UnsupportedHere
from gatebench.local.procs import ManagedProcess, Supervisor, free_port, wait_ready

STATIC_BODY = '{"ceiling": "static file served by nginx", "padding": "' + "x" * 40 + '"}\n'
"""About 100 bytes: the size of a small JSON answer."""
STATIC_NAME = "ceiling.json"
SERVER_LABEL = "nginx static file (1 worker)"


def render_ceiling_config(
    workdir: str | os.PathLike[str], port: int, *, as_root: bool = False
) -> str:
    """The nginx configuration of the ceiling server (one worker: the load generator needs the
    other core more than nginx does). It accepts 16,000 connections: an open-model generator
    opens one per arrival it holds, and a short stall of the shared machine at tens of thousands
    of arrivals a second must show as latency, not as connections refused by a configuration
    constant (the fastest target is the point). ``as_root``: gatebench runs as root, and nginx would
    hand its worker to ``nobody``, who cannot read a file below a private run folder; the
    worker stays root instead (it only serves one file, on 127.0.0.1)."""
    w = Path(workdir).resolve()
    user = "user root root;\n" if as_root else ""
    return f"""\
# The load engine's ceiling target, rendered by gatebench (gatebench.local.ceiling).
daemon off;
master_process on;
{user}worker_processes 1;
pid {w / "nginx.pid"};
error_log {w / "logs" / "error.log"} warn;

events {{
    worker_connections 16000;
}}

http {{
    access_log off;
    server_tokens off;
    default_type application/json;
    client_body_temp_path {w / "tmp" / "client_body"};
    proxy_temp_path {w / "tmp" / "proxy"};
    fastcgi_temp_path {w / "tmp" / "fastcgi"};
    uwsgi_temp_path {w / "tmp" / "uwsgi"};
    scgi_temp_path {w / "tmp" / "scgi"};
    client_max_body_size 0;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    etag off;
    open_file_cache max=16 inactive=600s;

    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {w / "static"};
        location / {{
            try_files /{STATIC_NAME} =404;
            error_page 405 =200 /{STATIC_NAME};
        }}
    }}
}}
"""


def nginx_program() -> str:
    found = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").is_file() else None
    )
    if found is None:
        raise UnsupportedHere(
            "nginx is not installed, so the load engine's ceiling cannot be measured "
            "(scripts/setup.sh apt installs it)"
        )
    return found


def start_ceiling_server(
    supervisor: Supervisor, workdir: str | os.PathLike[str], *, port: int | None = None
) -> tuple[ManagedProcess, str]:
    """Write the configuration and the file under ``workdir``, start nginx, wait until it
    answers; returns the process and its base URL (``http://127.0.0.1:PORT``)."""
    program = nginx_program()
    w = Path(workdir).resolve()
    for sub in ("logs", "tmp", "static"):
        (w / sub).mkdir(parents=True, exist_ok=True)
    (w / "static" / STATIC_NAME).write_text(STATIC_BODY, encoding="utf-8")
    port = port or free_port()
    conf = w / "nginx.conf"
    conf.write_text(render_ceiling_config(w, port, as_root=os.geteuid() == 0), encoding="utf-8")
    argv = [program, "-p", f"{w}/", "-e", str(w / "logs" / "error.log"), "-c", str(conf)]
    # the ceiling server stands where a gateway stands: on the gateway's cores
    proc = supervisor.start(
        "ceiling-nginx", argv, log_path=w / "nginx.out.log", cwd=w, role="gateway"
    )
    try:
        wait_ready(proc, port, timeout=10.0)
    except BaseException:
        supervisor.stop(proc)
        raise
    return proc, f"http://127.0.0.1:{port}"


__all__ = [
    "SERVER_LABEL",
    "STATIC_BODY",
    "nginx_program",
    "render_ceiling_config",
    "start_ceiling_server",
]
