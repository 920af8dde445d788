"""Cloud Build stand-in for the interpreter's ``googleapis.cloudbuild.v1.projects.locations.
builds.create``: the build body the workflow submits (cloudbuild/*.yaml plus substitutions,
service account and timeout) runs here, step by step, with Cloud Build's rules where they
matter: substitutions (``$_X``, ``${_X}``, ``$$``; unknown ones are errors unless
``ALLOW_LOOSE``), steps in order, ``/workspace`` shared between the steps of one build,
each step's ``env``, the build's ``timeout`` (the running step is stopped and the build ends
as TIMEOUT), and a failed step failing the build. The connector raises on a build that does
not succeed (an ``OperationError`` carrying the operation), and a ``TimeoutError`` when
``connector_params.timeout`` passes first.

What a step runs: the runner image's default entrypoint is ``gatebench``, run here as this
checkout's own ``gatebench`` (the same command, same arguments); ``entrypoint: terraform``
is the one thing that cannot run here, and goes to the ``terraform`` callable the test
passes (the local provisioner standing in for the VMs). Any other image is refused by name.
"""

from __future__ import annotations

import re
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.procs import start_process

from .workflows_interpreter import UnsupportedConstruct, WorkflowError, error

BUILD_CREATE = "googleapis.cloudbuild.v1.projects.locations.builds.create"
GATEBENCH = str(Path(sys.executable).parent / "gatebench")
_SUBST = re.compile(r"\$(\$|\{([A-Z_][A-Z0-9_]*)\}|([A-Z_][A-Z0-9_]*))")

Terraform = Callable[[list[str], dict[str, str], Path], None]
"""(arguments after ``terraform``, step environment, the build's workspace folder)."""


class StepFailed(Exception):
    pass


@dataclass
class LocalCloudBuild:
    root: Path
    """Where each build gets its ``/workspace`` folder and its logs."""
    runner_image: str
    """The image whose steps run here as ``gatebench`` (the workflow's _RUNNER_IMAGE)."""
    terraform: Terraform
    env: dict[str, str] = field(default_factory=dict)
    """Environment of every step (emulator hosts: what the build account reaches)."""
    project: str = "proj"
    builds: list[dict[str, Any]] = field(default_factory=list)

    def connectors(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {BUILD_CREATE: self.create}

    # -- the connector

    def create(self, args: dict[str, Any]) -> dict[str, Any]:
        extra = set(args) - {"parent", "projectId", "body", "connector_params"}
        if extra:
            raise error("TypeError", f"builds.create: unexpected args {sorted(extra)}")
        body = args["body"]
        build_id = str(uuid.uuid4())
        record: dict[str, Any] = {
            "id": build_id,
            "tags": list(body.get("tags", [])),
            "substitutions": dict(body.get("substitutions", {})),
            "steps": [],
            "status": "WORKING",
        }
        self.builds.append(record)
        timeout = _seconds(body.get("timeout", "600s"))
        connector_timeout = float((args.get("connector_params") or {}).get("timeout", 1800))
        values = {
            "PROJECT_ID": self.project,
            "BUILD_ID": build_id,
            **{k: str(v) for k, v in body.get("substitutions", {}).items()},
        }
        loose = (body.get("options") or {}).get("substitutionOption") == "ALLOW_LOOSE"
        try:  # Cloud Build checks substitutions when the build is created: HTTP 400
            steps = [_substitute(step, values, loose) for step in body["steps"]]
        except KeyError as exc:
            raise error(
                "HttpError",
                "HTTP server responded with error code 400",
                code=400,
                body={
                    "error": {
                        "code": 400,
                        "message": f"invalid build: {exc.args[0]}",
                        "status": "INVALID_ARGUMENT",
                    }
                },
            ) from None
        started = time.monotonic()
        done = threading.Event()
        refused: list[UnsupportedConstruct] = []

        def work() -> None:
            try:
                self._run(steps, record, started + timeout)
            except UnsupportedConstruct as exc:
                refused.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=work, name=f"build-{build_id}", daemon=True)
        worker.start()
        if not done.wait(connector_timeout):
            record["status"] = "CANCELLED"
            raise error(
                "TimeoutError", f"builds.create: still running after {connector_timeout:g}s"
            )
        if refused:
            raise refused[0]
        operation = {"done": True, "metadata": {"build": record}}
        if record["status"] != "SUCCESS":
            raise WorkflowError(
                {
                    "message": f"Build {build_id} finished with status {record['status']}: {record.get('failure', '')}",
                    "tags": ["OperationError"],
                    "operation": operation,
                }
            )
        return record

    # -- running a build

    def _run(self, steps: list[dict[str, Any]], record: dict[str, Any], deadline: float) -> None:
        workspace = self.root / record["id"] / "workspace"
        workspace.mkdir(parents=True)
        for index, step in enumerate(steps):
            step_id = step.get("id", str(index))
            entry = {"id": step_id, "status": "WORKING"}
            record["steps"].append(entry)
            try:
                self._step(step, workspace, deadline, record["id"], index)
            except TimeoutError:
                entry["status"] = record["status"] = "TIMEOUT"
                record["failure"] = f"step {step_id!r} was running when the build's timeout passed"
                return
            except StepFailed as exc:
                entry["status"] = record["status"] = "FAILURE"
                record["failure"] = f"step {step_id!r}: {exc}"
                return
            entry["status"] = "SUCCESS"
        record["status"] = "SUCCESS"

    def _step(
        self, step: dict[str, Any], workspace: Path, deadline: float, build_id: str, index: int
    ) -> None:
        unknown = set(step) - {"id", "name", "args", "entrypoint", "env"}
        if unknown:
            raise UnsupportedConstruct(f"build step keys {sorted(unknown)} are not supported here")
        runner_image = step["name"]
        args = [_local(a, workspace) for a in step.get("args", [])]
        env = dict(self.env)
        for item in step.get("env", []):
            key, _, value = item.partition("=")
            env[key] = _local(value, workspace)
        entrypoint = step.get("entrypoint", "gatebench")
        if runner_image != self.runner_image:
            raise UnsupportedConstruct(f"image {runner_image!r} cannot run here")
        if entrypoint == "terraform":
            self._in_thread(lambda: self.terraform(args, env, workspace), deadline)
            return
        if entrypoint != "gatebench":
            raise UnsupportedConstruct(
                f"entrypoint {entrypoint!r} of {runner_image} cannot run here"
            )
        log = self.root / build_id / f"step-{index}.log"
        proc = start_process(
            f"build-step-{index}", [GATEBENCH, *args], log_path=log, cwd=workspace, env=env
        )
        while proc.alive():
            if time.monotonic() > deadline:
                proc.stop()
                raise TimeoutError
            time.sleep(0.05)
        if proc.returncode != 0:
            raise StepFailed(
                f"gatebench {' '.join(args)} exited {proc.returncode}:\n{proc.log_tail()}"
            )

    @staticmethod
    def _in_thread(fn: Callable[[], None], deadline: float) -> None:
        """A step done in this process (the Terraform stand-in): like a real step, the build
        stops waiting for it at the deadline; what it started meanwhile stays for teardown."""
        failure: list[BaseException] = []

        def target() -> None:
            try:
                fn()
            except BaseException as exc:
                failure.append(exc)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            raise TimeoutError
        if failure:
            raise StepFailed(str(failure[0]))


def _seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(text))
    if not match:
        raise error("ValueError", f"build timeout must be like '600s', got {text!r}")
    return float(match.group(1))


def _substitute(value: Any, values: dict[str, str], loose: bool) -> Any:
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            if match.group(1) == "$":
                return "$"
            name = match.group(2) or match.group(3)
            if name in values:
                return values[name]
            if loose:
                return ""
            raise KeyError(f"the build uses substitution {name}, which is not defined")

        return _SUBST.sub(replace, value)
    if isinstance(value, list):
        return [_substitute(v, values, loose) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, values, loose) for k, v in value.items()}
    return value


def _local(text: str, workspace: Path) -> str:
    """``/workspace`` (every step's working directory in Cloud Build) → this build's folder."""
    return re.sub(r"(?<![\w/])/workspace(?=/|$)", str(workspace), text)


__all__ = ["BUILD_CREATE", "LocalCloudBuild", "StepFailed"]
