"""The backend VM (the runner image's ``gatebench cloud backend``): the plan's backend as
``runs/RUN/backend.json`` describes it (gatebench.cloud._render).

- ``backend.replicas`` processes of the Go backend, each on its own port of the VM (replica 1
  on the single backend's port); the gateways' pools list them;
- with ``tls``, replica 1 also serves TLS for the baseline, with this VM's own key and a
  certificate for its host name signed by the run's CA, which the provision build put in this
  VM's metadata (gatebench.cloud._tls); the key stays in a private folder of the container;
- with a ``fault``, a control port the tester calls (infra/modules/network lets the tester
  alone reach it): ``POST /replicas/N/kill`` kills replica N's process (SIGKILL: its port
  refuses connections, as after a crash) and starts counting the connection attempts to its
  port from the packets arriving (gatebench.local._wire; the container needs NET_RAW);
  ``POST /replicas/N/start`` starts it again on the same port and answers those attempts
  (the gateways' retries and health checks), from which the score step says how long each
  gateway kept sending to the dead replica.

When the backend cannot start (no certificate in its metadata, a replica that does not come
up) it writes
why to ``runs/RUN/backend/error.json`` (the tester reports it for the baseline) and exits
non-zero. Processes are started from one lasting thread: a process dies with the thread that
started it (gatebench.local.procs), and each control request runs in a thread of its own.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.cloud import Storage
from gatebench.cloud._metadata import instance_attribute
from gatebench.cloud._render import backend_error_object
from gatebench.cloud._tester import read_required_json
from gatebench.cloud._tls import TLS_METADATA_KEY, certificates_from_metadata
from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.tls import write_tls_folder
from gatebench.local._wire import LoopbackObserver, WireUnavailable, open_observer
from gatebench.local.backends import BackendTls, StartedBackend, start_backend_process
from gatebench.local.procs import Supervisor

READY_TIMEOUT_S = 60.0
WATCH_S = 1.0
MAX_ATTEMPTS = 100_000
"""The most connection attempts one kill reports (a gateway retrying in a tight loop)."""
_ROUTE = re.compile(r"^/replicas/(\d+)/(kill|start)$")


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


@dataclass
class Replicas:
    """The backend's processes, started and killed from one lasting thread."""

    supervisor: Supervisor
    mode: str
    log_dir: Path
    addresses: list[str]
    extra: list[str]
    tls: BackendTls | None = None
    tls_address: str | None = None
    started: list[StartedBackend] = field(default_factory=list)
    killed: dict[int, float] = field(default_factory=dict)
    """Replica → when the control killed it (it is not a failure)."""
    observers: dict[int, LoopbackObserver] = field(default_factory=dict)
    notes: dict[int, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _starter: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, "backend-replicas")
    )

    def _start(self, replica: int) -> StartedBackend:
        host, port = _split(self.addresses[replica - 1])
        tls_port = _split(self.tls_address)[1] if self.tls_address else None
        with_tls = self.tls is not None and replica == 1
        return self._starter.submit(
            start_backend_process,
            self.supervisor,
            self.mode,
            self.log_dir,
            port=port,
            host=host,
            extra_args=self.extra,
            replica=replica if len(self.addresses) > 1 else 0,
            tls=self.tls if with_tls else None,
            tls_port=tls_port if with_tls else None,
            timeout=READY_TIMEOUT_S,
        ).result()

    def start_all(self) -> None:
        for n in range(1, len(self.addresses) + 1):
            self.started.append(self._start(n))

    def kill(self, replica: int) -> dict[str, Any]:
        with self._lock:
            if replica in self.killed:
                return {"at": self.killed[replica], "already": True}
            target = self.started[replica - 1]
            try:  # watching before the kill: every attempt after it is seen
                self.observers[replica] = open_observer((), (target.port,), interface=None)
            except WireUnavailable as exc:
                self.notes[replica] = f"connection attempts to the dead replica not observed: {exc}"
            target.process.kill()
            at = time.time()
            self.killed[replica] = at
        return {"at": at}

    def restart(self, replica: int) -> dict[str, Any]:
        with self._lock:
            at = self.killed.get(replica)
            if at is None:
                return {"error": f"replica {replica} was not killed"}
            old = self.started[replica - 1]
            self.supervisor.stop(old.process)
            try:
                self.started[replica - 1] = self._start(replica)
            except GatebenchError as exc:
                return {"error": f"replica {replica} did not start again: {exc}"}
            del self.killed[replica]
            observer = self.observers.pop(replica, None)
            attempts: list[float] | None = None
            if observer is not None:
                attempts = observer.attempts_to(old.port, at)[:MAX_ATTEMPTS]
                observer.close()
            note = self.notes.pop(replica, "")
        return {"restarted_at": time.time(), "attempts": attempts, "note": note}

    def failed(self) -> tuple[StartedBackend, int | None] | None:
        """A replica that ended without the control killing it (and its exit code)."""
        with self._lock:
            for n, replica in enumerate(self.started, start=1):
                if n not in self.killed and not replica.process.alive():
                    return replica, replica.process.returncode
        return None

    def close(self) -> None:
        for observer in self.observers.values():
            observer.close()
        self._starter.shutdown()


def _control_server(address: str, replicas: Replicas) -> http.server.ThreadingHTTPServer:
    """The fault's control (the tester's kill and start requests), serving in a thread."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            match = _ROUTE.match(self.path)
            replica = int(match.group(1)) if match else 0
            if match is None or not 1 <= replica <= len(replicas.addresses):
                self._answer(404, {"error": f"no {self.path}"})
                return
            act: Callable[[int], dict[str, Any]] = (
                replicas.kill if match.group(2) == "kill" else replicas.restart
            )
            self._answer(200, act(replica))

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(f"gatebench: backend control: {format % args}\n")

    host, port = _split(address)
    server = http.server.ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="backend-control", daemon=True).start()
    return server


def serve_backend(storage: Storage, bucket: str, run_id: str) -> int:
    """Run the plan's backend in the foreground (the backend VM's container) until a replica
    the control did not kill ends; its exit code."""
    spec = read_required_json(storage, bucket, f"runs/{run_id}/backend.json")
    if spec.get("instances"):  # a scale or change-under-load run's echo backends
        from gatebench.vm._live_agent import serve_echo_backends

        return serve_echo_backends(dict(spec["instances"]))
    with (
        tempfile.TemporaryDirectory() as scratch,
        Supervisor() as supervisor,
        contextlib.ExitStack() as held,
    ):
        try:
            replicas = _replicas(storage, bucket, spec, supervisor, Path(scratch))
            held.callback(replicas.close)
            replicas.start_all()
            if spec.get("control"):
                server = _control_server(str(spec["control"]), replicas)
                held.callback(server.server_close)
                held.callback(server.shutdown)
        except (GatebenchError, OSError) as exc:
            reason = f"the backend VM could not start the backend: {exc}"
            body = json.dumps({"reason": reason}, indent=1, sort_keys=True) + "\n"
            with contextlib.suppress(Exception):
                storage.write(bucket, backend_error_object(run_id), body, "application/json")
            sys.stderr.write(f"gatebench: {reason}\n")
            return 3
        while True:
            ended = replicas.failed()
            if ended is not None:
                replica, code = ended
                sys.stderr.write(replica.process.log_tail())
                return code if code is not None else 1
            time.sleep(WATCH_S)


def _replicas(
    storage: Storage, bucket: str, spec: dict[str, Any], supervisor: Supervisor, scratch: Path
) -> Replicas:
    extra: list[str] = []
    if spec.get("config_object"):
        config = scratch / "mock-backend.json"
        config.write_bytes(
            json.dumps(read_required_json(storage, bucket, spec["config_object"])).encode()
        )
        extra = ["-config", str(config)]
    tls: BackendTls | None = None
    tls_spec = spec.get("tls")
    if isinstance(tls_spec, dict):
        certs = certificates_from_metadata(instance_attribute(TLS_METADATA_KEY))
        folder = write_tls_folder(certs, scratch)  # private (0700), gone with the container
        tls = BackendTls(
            folder,
            http2=bool(tls_spec.get("http2")),
            resumption=bool(tls_spec.get("resumption", True)),
        )
    addresses = [str(a) for a in spec.get("replicas") or [spec["listen"]]]
    if not addresses:
        raise RunError("backend.json lists no address to listen on")
    return Replicas(
        supervisor,
        str(spec["mode"]),
        scratch,
        addresses,
        extra,
        tls,
        str(tls_spec["listen"]) if isinstance(tls_spec, dict) else None,
    )


__all__ = ["Replicas", "serve_backend"]
