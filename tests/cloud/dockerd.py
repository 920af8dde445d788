"""A STAND-IN for a gateway VM's Docker daemon: the Docker Engine API's few calls the live agent
makes (``gatebench.vm._docker``), served on a Unix socket, acting on the local VM's
gateway, which runs as a native process (its official image cannot be pulled here).

Container-Optimized OS's daemon serves ``/var/run/docker.sock``; the gateway VM's startup script
mounts it into the agent's container. Here each local gateway VM gets its own socket, mounted
at the same path into the agent's container of the runner image. It speaks the API versions of
Docker 29 by default (1.44 to 1.52; ``api_versions`` to act as another release): a versioned
call (``/v1.41/...``) outside them answers 400 with Docker's own message, an unversioned one
speaks the newest. What it answers, as Docker's Engine API documents it:

- ``GET /version`` (unversioned): ``Version``, ``ApiVersion``, ``MinAPIVersion``;

- ``GET /containers/NAME/json``: ``State.Running``, ``State.Pid``, ``State.StartedAt`` (RFC 3339,
  nanoseconds, UTC);
- ``POST /containers/NAME/kill?signal=S``: the signal to the container's main process (204; 409
  when it is not running);
- ``POST /containers/NAME/stop?t=T``: SIGTERM, SIGKILL after T s (204; 304 when stopped);
- ``POST /containers/NAME/start`` (204; 304 when running), ``.../restart?t=T`` (204);
- ``POST /containers/NAME/exec`` (201 ``{"Id"}``; 409 when not running), ``POST
  /exec/ID/start`` (200, the output as a raw stream of frames, then the connection closes),
  ``GET /exec/ID/json`` (``ExitCode``, ``Running``);
- 404 ``{"message": "No such container: NAME"}`` for any other container.

What it cannot show: Docker itself (its restart policy, its cgroup per container, the image's own
entrypoint and environment): the "container" is the gateway's process, started again with the
same command line and mount, and an exec runs the program natively in the VM's namespace with the
gateway's folder mounted where the container has it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import signal
import socketserver
import struct
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from gatebench.local.procs import ManagedProcess


@dataclass
class StandInContainer:
    """One "container": how to start its process, and what runs now."""

    name: str
    starter: Callable[[], ManagedProcess]
    """Starts the process with the container's command line and mount (on a lasting thread)."""
    stopper: Callable[[ManagedProcess, float], None]
    executor: Callable[[list[str], float], tuple[int, bytes]]
    """Runs an ``exec``'s argv where the container's files are; (exit code, output)."""
    on_start: Callable[[ManagedProcess], None] = lambda p: None
    proc: ManagedProcess | None = None
    started_at: float | None = None
    calls: list[str] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def start(self) -> None:
        self.proc = self.starter()
        self.started_at = self.proc.started_at
        self.on_start(self.proc)

    def stop(self, grace: float) -> None:
        if self.proc is not None:
            self.stopper(self.proc, grace)


DOCKER_29_API = ("1.44", "1.52")
"""The Engine API versions Docker 29 accepts (its release notes: clients older than 1.44 are
refused)."""


def _api(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _docker_time(epoch: float | None) -> str:
    if epoch is None:
        return "0001-01-01T00:00:00Z"
    moment = dt.datetime.fromtimestamp(epoch, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


def _signal(name: str) -> int:
    if name.isdigit():
        return int(name)
    return int(getattr(signal, name if name.startswith("SIG") else f"SIG{name}"))


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    daemon: StandInDocker


class StandInDocker:
    """The daemon of one local gateway VM, listening on ``path`` (module docstring)."""

    def __init__(
        self,
        path: Path,
        *,
        run_id: str = "",
        gateway: str = "",
        api_versions: tuple[str, str] = DOCKER_29_API,
        version: str = "29.0.0",
    ) -> None:
        self.path = path
        self.api_versions = api_versions
        """(oldest, newest) Engine API version it accepts."""
        self.version = version
        self.run_id, self.gateway = run_id, gateway
        """Whose VM it serves (for the tests' record of what its agent asked)."""
        self.containers: dict[str, StandInContainer] = {}
        self.execs: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, int]] = []
        """(method, path, status) of every call."""
        self._lock = threading.Lock()
        path.unlink(missing_ok=True)
        self.server = _Server(str(path), _Handler)
        self.server.daemon = self
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, container: StandInContainer) -> None:
        self.containers[container.name] = container

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.path.unlink(missing_ok=True)

    # -- the calls

    def handle(self, method: str, url: str, body: bytes) -> tuple[int, Any]:
        parts = urlsplit(url)
        path = parts.path
        oldest, newest = self.api_versions
        if path == "/version":
            return 200, {"Version": self.version, "ApiVersion": newest, "MinAPIVersion": oldest}
        if path.startswith("/v1."):
            asked, path = path.split("/", 2)[1][1:], "/" + path.split("/", 2)[2]
            if _api(asked) < _api(oldest):
                return 400, {
                    "message": f"client version {asked} is too old. Minimum supported API "
                    f"version is {oldest}, please upgrade your client to a newer version"
                }
            if _api(asked) > _api(newest):
                return 400, {
                    "message": f"client version {asked} is too new. Maximum supported API "
                    f"version is {newest}"
                }
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        words = path.strip("/").split("/")
        if words[0] == "containers" and len(words) == 3:
            name, action = words[1], words[2]
            container = self.containers.get(name)
            if container is None:
                return 404, {"message": f"No such container: {name}"}
            container.calls.append(action)
            return self._container(container, method, action, query, body)
        if words[0] == "exec" and len(words) == 3:
            record = self.execs.get(words[1])
            if record is None:
                return 404, {"message": f"No such exec instance: {words[1]}"}
            if method == "POST" and words[2] == "start":
                return 200, record
            if method == "GET" and words[2] == "json":
                return 200, {"ExitCode": record.get("code"), "Running": "code" not in record}
        return 404, {"message": f"page not found: {method} {path}"}

    def _container(
        self,
        container: StandInContainer,
        method: str,
        action: str,
        query: dict[str, str],
        body: bytes,
    ) -> tuple[int, Any]:
        with self._lock:
            if method == "GET" and action == "json":
                proc = container.proc
                return 200, {
                    "Id": container.name,
                    "Name": f"/{container.name}",
                    "State": {
                        "Running": container.running,
                        "Pid": proc.pid if container.running and proc else 0,
                        "StartedAt": _docker_time(container.started_at),
                    },
                }
            if method != "POST":
                return 404, {"message": f"page not found: {method} {action}"}
            grace = float(query.get("t") or 10)
            if action == "kill":
                if not container.running or container.proc is None:
                    return 409, {"message": f"Container {container.name} is not running"}
                os.kill(container.proc.pid, _signal(query.get("signal") or "SIGKILL"))
                return 204, None
            if action == "stop":
                if not container.running:
                    return 304, None
                container.stop(grace)
                return 204, None
            if action == "start":
                if container.running:
                    return 304, None
                container.start()
                return 204, None
            if action == "restart":
                container.stop(grace)
                container.start()
                return 204, None
            if action == "exec":
                if not container.running:
                    return 409, {"message": f"Container {container.name} is not running"}
                spec = json.loads(body or b"{}")
                exec_id = secrets.token_hex(16)
                self.execs[exec_id] = {"container": container, "argv": list(spec["Cmd"])}
                return 201, {"Id": exec_id}
        return 404, {"message": f"page not found: {method} {action}"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def address_string(self) -> str:  # a Unix socket has no client address
        return "unix"

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        daemon = self.server.daemon
        status, value = daemon.handle(self.command, self.path, body)
        daemon.requests.append((self.command, urlsplit(self.path).path, status))
        if status == 200 and isinstance(value, dict) and "argv" in value:
            self._stream(value)
            return
        payload = b"" if value is None else json.dumps(value).encode()
        self.send_response(status)
        if payload:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if payload:
            self.wfile.write(payload)

    def _stream(self, record: dict[str, Any]) -> None:
        """An exec's output as Docker sends it without a terminal: frames on a connection it
        then closes (no length, no chunking)."""
        container: StandInContainer = record["container"]
        try:
            code, output = container.executor(record["argv"], 600.0)
        except (OSError, subprocess.SubprocessError) as exc:
            code, output = 126, f"OCI runtime exec failed: {exc}".encode()
        record["code"] = code
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.docker.raw-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(struct.pack(">BxxxI", 1, len(output)) + output)
        self.close_connection = True

    def do_GET(self) -> None:
        self._reply()

    def do_POST(self) -> None:
        self._reply()


__all__ = ["DOCKER_29_API", "StandInContainer", "StandInDocker"]
