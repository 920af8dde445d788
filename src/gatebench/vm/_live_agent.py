"""Route scale and changes under load on the run's VMs (docs/cloud.md, "Route scale and
changes under load"): the backend VM's echo backends and each gateway VM's live agent (the
tester's side is ``gatebench.vm._live_tester``).

**The gateway VM's live agent** (``gatebench cloud live-gateway``, :func:`run_live_agent`) runs
in a container of the runner image beside the gateway's, on the host network, with the gateway's
folder mounted where the gateway's container has it and the VM's Docker socket: it carries out
what the tester asks through the runs bucket (``cloud._live.request_object``), one request at a
time, and answers (``answer_object``) with when it really acted:

- ``boot`` a step: fetch the step's files, stop the gateway's container (``docker stop``),
  write them, and at the moment asked for start it again (``docker start``): the answer
  carries Docker's own ``StartedAt``;
- ``prepare`` the change: fetch the new files and check them with the gateway's own checker
  inside its container (``docker exec``, on a copy rendered for ``.check/``); a refused
  configuration is never applied;
- ``apply`` the change at the moment asked for: each file replaced by an atomic rename (a
  watcher never reads half a file), then the gateway's mechanism through its container: a
  signal (``docker kill -s``), nothing more (a watched file), its management API on the VM's
  loopback, its own commands (``docker exec``), or a restart (``docker restart``).

The tester asks through the runs bucket, :data:`~gatebench.cloud._live.LEAD_S` ahead, and
measures (``gatebench.vm._live_tester``).

Times between the two VMs are wall-clock times (Compute Engine synchronises every VM's clock
with the metadata server's NTP service; their offset adds to each figure that spans both).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.cloud._live import (
    CHECK_DIR,
    POLL_S,
    Bucket,
    answer_object,
    manifest_object,
    read_json,
    request_object,
    write_json,
)
from gatebench.cloud._tester import Clock, read_marker, read_required_json
from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.renderers import LiveChange, Renderer, get_renderer
from gatebench.local.backends import backend_binary
from gatebench.local.procs import Supervisor
from gatebench.local.provisioners._live import admin_request, fill_command, write_atomically
from gatebench.vm._docker import DockerEngine

AGENT_MAX_S = 24 * 3600.0
"""The agent stops after this long even if the tester never writes ``load-done``."""
STOP_GRACE_S = 10


# -- the backend VM ---------------------------------------------------------------------------


def serve_echo_backends(instances: dict[str, str]) -> int:
    """The backend VM of a scale or change-under-load run: one echo backend per instance
    (name → listen address), each naming itself in its answers; until one stops."""
    with tempfile.TemporaryDirectory() as scratch, Supervisor() as supervisor:
        procs = []
        for name, listen in sorted(instances.items()):
            argv = [str(backend_binary()), "-listen", listen, "-mode", "echo", "-instance", name]
            log = Path(scratch) / f"backend-{name}.log"
            procs.append(supervisor.start(f"backend-{name}", argv, log_path=log))
        while all(p.alive() for p in procs):
            time.sleep(1.0)
        for proc in procs:
            sys.stderr.write(proc.log_tail())
        return 3


# -- the gateway VM's live agent --------------------------------------------------------------


@dataclass
class LiveAgent:
    """One gateway VM's agent (module docstring)."""

    storage: Bucket
    bucket: str
    run_id: str
    gateway: str
    folder: Path
    """The gateway's folder, mounted here where the gateway's container has it."""
    docker: DockerEngine
    clock: Clock = field(default_factory=Clock)
    check_timeout_s: float = 600.0
    manifest: dict[str, Any] = field(default_factory=dict)
    prepared: dict[str, dict[str, str]] = field(default_factory=dict)
    changes: int = 0

    def __post_init__(self) -> None:
        self.manifest = read_required_json(
            self.storage, self.bucket, manifest_object(self.run_id, self.gateway)
        )
        self.renderer: Renderer = get_renderer(self.gateway)
        self.container = str(self.manifest.get("container") or "gateway")

    def run(self, poll_s: float = POLL_S) -> int:
        """Answer every request until the tester has finished (its ``load-done``)."""
        answered = read_json(self.storage, self.bucket, answer_object(self.run_id, self.gateway))
        last = int((answered or {}).get("seq") or 0)  # a restarted agent answers nothing twice
        started = self.clock.now()
        while self.clock.now() - started < AGENT_MAX_S:
            request = read_json(
                self.storage, self.bucket, request_object(self.run_id, self.gateway)
            )
            if request is not None and int(request.get("seq") or 0) > last:
                last = int(request["seq"])
                answer = self.handle(request)
                write_json(
                    self.storage, self.bucket, answer_object(self.run_id, self.gateway), answer
                )
                continue
            if read_marker(self.storage, self.bucket, self.run_id, "load-done") is not None:
                return 0
            self.clock.sleep(poll_s)
        return 0

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request carried out; the answer (``ok`` false with the reason on failure)."""
        op, step = str(request.get("op")), str(request.get("step"))
        answer: dict[str, Any] = {"seq": request.get("seq"), "op": op, "step": step, "ok": True}
        try:
            if step not in self.manifest["steps"]:
                raise RunError(f"{self.gateway} has no step {step!r}")
            if op == "boot":
                answer.update(self.boot(step, float(request["at"])))
            elif op == "prepare":
                answer.update(self.prepare(step))
            elif op == "apply":
                answer.update(self.apply(step, float(request["at"])))
            else:
                raise RunError(f"unknown request {op!r}")
        except (GatebenchError, OSError, KeyError, ValueError) as exc:
            answer.update(ok=False, reason=f"{self.gateway}: {op} {step}: {exc}")
        return answer

    def _fetch(self, listed: Sequence[dict[str, str]]) -> dict[str, str]:
        files = {}
        for item in listed:
            data = self.storage.read_optional(self.bucket, item["object"])
            if data is None:
                raise RunError(f"gs://{self.bucket}/{item['object']} is missing")
            files[item["path"]] = data.decode("utf-8")
        return files

    def _wait_until(self, at: float) -> None:
        self.clock.sleep(max(0.0, at - self.clock.now()))

    def boot(self, step: str, at: float) -> dict[str, Any]:
        files = self._fetch(self.manifest["steps"][step]["files"])
        self.docker.stop(self.container, STOP_GRACE_S)
        for sub in self.manifest.get("dirs") or []:
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        write_atomically(files, self.folder)
        self._wait_until(at)
        asked = self.clock.now()
        self.docker.start(self.container)
        state = self.docker.inspect(self.container)
        started = state.started_at if state.started_at is not None else asked
        return {"asked_at": asked, "started_at": started, "late_s": round(started - at, 4)}

    def prepare(self, step: str) -> dict[str, Any]:
        entry = self.manifest["steps"][step]
        self.prepared[step] = self._fetch(entry["files"])
        check = entry.get("check")
        if not check:
            return {"check_s": 0.0}
        staging = self.folder / str(check.get("dir") or CHECK_DIR)
        shutil.rmtree(staging, ignore_errors=True)
        try:
            for sub in self.manifest.get("dirs") or []:
                (staging / sub).mkdir(parents=True, exist_ok=True)
            write_atomically(self._fetch(check["files"]), staging)
            began = self.clock.now()
            code, output = self.docker.exec(
                self.container, list(check["argv"]), self.check_timeout_s
            )
            took = self.clock.now() - began
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if code != 0:
            self.prepared.pop(step, None)
            raise RunError(
                f"the gateway's checker refused the new configuration (exit {code}): "
                f"{output.strip()[:1000]}"
            )
        return {"check_s": round(took, 4)}

    def apply(self, step: str, at: float) -> dict[str, Any]:
        files = self.prepared.get(step)
        if files is None:
            raise RunError(f"step {step!r} was not prepared")
        mech: LiveChange = self.renderer.live_change
        self._wait_until(at)
        write_atomically(files, self.folder)
        self.changes += 1
        written = triggered = self.clock.now()
        if mech.kind == "signal":
            self.docker.kill(self.container, mech.signal or "SIGHUP")
        elif mech.kind == "admin-api":
            triggered = self.clock.now()
            port = int(self.manifest["placeholders"]["admin_port"])
            admin_request(self.gateway, port, mech, self.folder)
        elif mech.kind == "command":
            triggered = self.clock.now()
            values = {**self.manifest["placeholders"], "label": f"gatebench{self.changes}"}
            for template in mech.commands:
                argv = fill_command(template, values)
                code, output = self.docker.exec(self.container, argv, self.check_timeout_s)
                if code != 0:
                    raise RunError(f"`{' '.join(argv)}` failed (exit {code}): {output[:500]}")
        elif mech.kind == "restart":
            triggered = self.clock.now()
            self.docker.restart(self.container, STOP_GRACE_S)
        returned = self.clock.now()
        return {
            "written_at": written,
            "triggered_at": triggered,
            "returned_at": returned,
            "late_s": round(triggered - at, 4),
        }


def run_live_agent(
    storage: Bucket,
    bucket: str,
    run_id: str,
    gateway: str,
    folder: Path,
    docker: DockerEngine | None = None,
) -> int:
    """``gatebench cloud live-gateway``: the agent beside a gateway on its VM (module
    docstring)."""
    agent = LiveAgent(storage, bucket, run_id, gateway, folder, docker or DockerEngine())
    return agent.run()


__all__ = ["LiveAgent", "run_live_agent", "serve_echo_backends"]
