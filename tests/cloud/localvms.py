"""The local provisioner standing in for Terraform and the VMs of infra/vms.

The build steps run ``terraform init|apply|destroy`` (tests/cloud/localterraform.py models the
CLI) with the variables ``gatebench cloud vm-vars`` wrote; here the same variables start the
same programs as local processes (the loopback layout gives every "VM" its own port on
127.0.0.1):

- backend VM → ``gatebench cloud backend ...`` (the runner image's command);
- gateway VM → the rendered files fetched from the bucket into the gateway's folder (what
  its startup script does), then the container's command run natively (the renderer finds
  the program; a gateway that cannot run here fails like a crash-looping container);
- tester VM → ``gatebench cloud tester ...`` with its own scratch folder.

``destroy`` stops every process ``apply`` started under that state, even an ``apply`` the
build's timeout cut short: what it started stays for teardown, as resources do.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.cloud import Storage
from gatebench.errors import GatebenchError
from gatebench.procs import ManagedProcess, Supervisor
from gatebench.renderers import get_renderer

from .localterraform import LocalTerraform

GATEBENCH = str(Path(sys.executable).parent / "gatebench")


@dataclass
class LocalVms:
    supervisor: Supervisor
    storage: Storage
    root: Path
    env: dict[str, str]
    machines: dict[str, list[ManagedProcess]] = field(default_factory=dict)
    failures: dict[str, dict[str, str]] = field(default_factory=dict)
    calls: list[list[str]] = field(default_factory=list)
    destroyed: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Processes die with the thread that started them (PR_SET_PDEATHSIG, gatebench.procs),
    # and build steps run in short-lived threads: VMs are started from this lasting one.
    _host: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "local-vms"))

    def __post_init__(self) -> None:
        self.terraform = LocalTerraform(self, self.storage)

    def __call__(self, args: list[str], env: dict[str, str], cwd: Path) -> str:
        """``terraform ARGS`` in a build step (tests/cloud/localbuild.py's bridge)."""
        self.calls.append(list(args))
        return self.terraform(args, env, cwd)

    def apply(self, key: str, values: dict[str, Any]) -> list[str]:
        self._apply(key, values)
        with self._lock:
            return [p.name for p in self.machines.get(key, [])]

    def destroy(self, key: str) -> list[str]:
        self._destroy(key)
        return []

    def running(self) -> list[ManagedProcess]:
        with self._lock:
            return [p for procs in self.machines.values() for p in procs if p.alive()]

    def _start(
        self,
        key: str,
        name: str,
        argv: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        proc = self._host.submit(
            self.supervisor.start,
            name,
            argv,
            log_path=self.root / "vms" / f"{name}.log",
            cwd=cwd,
            env={**self.env, **(env or {})},
        ).result()
        with self._lock:
            late = key in self.destroyed  # an apply cut short keeps going after destroy
            self.machines.setdefault(key, []).append(proc)
        if late:
            self._destroy(key)

    def _apply(self, key: str, values: dict[str, Any]) -> None:
        run_id, bucket = values["run_id"], values["runs_bucket"]
        failures = self.failures.setdefault(key, {})
        if values.get("backend"):
            self._start(key, f"{run_id}-backend", [GATEBENCH, *values["backend"]["args"]])
        for name, gateway in sorted(values["gateways"].items()):
            folder = Path(gateway["mount"])
            for sub in gateway["dirs"]:
                (folder / sub).mkdir(parents=True, exist_ok=True)
            for item in gateway["files"]:
                data = self.storage.read_optional(bucket, item["object"])
                assert data is not None, f"gs://{bucket}/{item['object']} is missing"
                target = folder / item["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            renderer = get_renderer(name)
            try:
                argv = list(gateway["args"])
                argv[0] = renderer.find_program(argv[0])
            except GatebenchError as exc:
                failures[name] = str(exc)  # the container would crash-loop: it never answers
                continue
            self._start(key, f"{run_id}-gw-{name}", argv, cwd=folder, env=renderer.env(folder))
        if values.get("tester"):
            scratch = self.root / "vms" / f"{run_id}-tester"
            argv = [
                GATEBENCH,
                *values["tester"]["args"],
                "--workdir",
                str(scratch),
                "--ready-timeout",
                "60",
            ]
            self._start(key, f"{run_id}-tester", argv)

    def close(self) -> None:
        """Stop every process still running, then the starter thread."""
        for key in list(self.machines):
            self._destroy(key)
        self._host.shutdown()

    def _destroy(self, key: str) -> None:
        with self._lock:
            self.destroyed.add(key)
            procs = self.machines.pop(key, [])
        for proc in procs:
            self.supervisor.stop(proc)
