"""Cloud Build stand-in for the interpreter's ``googleapis.cloudbuild.v1.projects.locations.
builds.create``: the build body the workflow submits (cloudbuild/*.yaml plus substitutions,
service account and timeout) runs here, step by step, with Cloud Build's rules where they
matter: substitutions (``$_X``, ``${_X}``, ``$$``; unknown ones are errors unless
``ALLOW_LOOSE``), steps in order, ``/workspace`` shared between the steps of one build,
each step's ``env``, the build's ``timeout`` (the running step is stopped and the build ends
as TIMEOUT), a failed step failing the build, and, as for a new project, no build outside the
regions Cloud Build restricts such projects to (tests/cloud/standins.py). The connector raises on a build that does
not succeed (an ``OperationError`` carrying the operation), and a ``TimeoutError`` when
``connector_params.timeout`` passes first.

Where a step runs, two ways:

- **in the runner image** (``image`` set: what the pipeline tests do): every step is a fresh
  container of the image built from cloudbuild/runner.Dockerfile (tests/cloud/image.py),
  ``podman run`` with the step's entrypoint (the image's own ``gatebench``, or ``bash``/``sh``/
  ``terraform`` as the step names it), its ``env``, ``/workspace`` mounted as the working
  directory, on the host's network (Cloud Build's workers reach Google's APIs; here the
  emulators on loopback, ``STORAGE_EMULATOR_HOST`` in ``env`` standing in for the endpoints
  and the build account's credentials). Only ``/workspace`` carries over: whatever a step
  writes in the image's files (Terraform's dependency lock file beside the configuration) is
  gone with its container. A build's timeout kills the running step's container.
- **as processes** (``image`` None: the unit tests of this stand-in): the files
  cloudbuild/runner.Dockerfile copies into its final stage (read from the Dockerfile, under
  its WORKDIR ``/opt/gatebench``) are copied again for every step, ``/workspace`` and
  ``/opt`` in arguments point at those copies, and ``gatebench`` is this checkout's own.

Terraform is the one thing that cannot run here (no provider can be installed): ``entrypoint:
terraform``, and ``terraform`` called from a step's script, reach the ``terraform`` callable
the test passes (tests/cloud/localterraform.py in front of the local provisioner standing in
for the VMs) through a shim: in a container, the shim is mounted over the image's
``/usr/local/bin/terraform`` and sends the configuration's files with each call (the stand-in
reads them in a scratch copy, and what it writes beside them, the lock file, is written back
into the container); as processes, the shim is first on the step's PATH. Any other
entrypoint, and any other image, is refused by name.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import posixpath
import re
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.local.procs import start_process

from .image import remove_container, run_argv
from .standins import build_location_refused
from .workflows_interpreter import UnsupportedConstruct, WorkflowError, error

BUILD_CREATE = "googleapis.cloudbuild.v1.projects.locations.builds.create"
GATEBENCH = str(Path(sys.executable).parent / "gatebench")
ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "cloudbuild" / "runner.Dockerfile"
SHELLS = ("sh", "bash")
_SUBST = re.compile(r"\$(\$|\{([A-Z_][A-Z0-9_]*)\}|([A-Z_][A-Z0-9_]*))")

Terraform = Callable[[list[str], dict[str, str], Path], "str | None"]
"""(arguments after ``terraform``, its environment, its working directory) → its output; an
exception is a failed command (exit 1, the exception's text on stderr)."""


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
    context: Path = ROOT
    """The build context the image's files come from (a test may pass a modified copy)."""
    dockerfile: Path = DOCKERFILE
    image: str | None = None
    """The local image the steps run in (tagged ``runner_image``); None: steps as processes."""
    name_prefix: str = "gb-build"
    """Containers are named PREFIX-BUILD-STEP (a test removes what is left by this prefix)."""
    containers: list[str] = field(default_factory=list)
    """Every step container started (names)."""
    mounts: list[tuple[Path, str, str]] = field(default_factory=list)
    """More (host path, container path, options) for every step's container: the build
    account's key standing in for IAM signBlob (tests/cloud/signing.py)."""

    def connectors(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {BUILD_CREATE: self.create}

    # -- the connector

    def create(self, args: dict[str, Any]) -> dict[str, Any]:
        extra = set(args) - {"parent", "projectId", "body", "connector_params"}
        if extra:
            raise error("TypeError", f"builds.create: unexpected args {sorted(extra)}")
        refused = build_location_refused(args["parent"])  # as a new project
        if refused is not None:
            raise refused
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
        image = [] if self.image else runner_image_files(self.dockerfile, self.context)
        for index, step in enumerate(steps):
            step_id = step.get("id", str(index))
            entry = {"id": step_id, "status": "WORKING"}
            record["steps"].append(entry)
            try:
                self._step(step, workspace, deadline, record["id"], index, image)
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
        self,
        step: dict[str, Any],
        workspace: Path,
        deadline: float,
        build_id: str,
        index: int,
        image: list[tuple[str, str]],
    ) -> None:
        unknown = set(step) - {"id", "name", "args", "entrypoint", "env"}
        if unknown:
            raise UnsupportedConstruct(f"build step keys {sorted(unknown)} are not supported here")
        runner_image = step["name"]
        if runner_image != self.runner_image:
            raise UnsupportedConstruct(f"image {runner_image!r} cannot run here")
        entrypoint = step.get("entrypoint", "gatebench")
        if entrypoint not in ("gatebench", "terraform", *SHELLS):
            raise UnsupportedConstruct(
                f"entrypoint {entrypoint!r} of {runner_image} cannot run here"
            )
        if self.image:
            self._container_step(step, entrypoint, workspace, deadline, build_id, index)
            return
        # A fresh copy of the image's files as the Dockerfile put them, and /workspace.
        image_root = self.root / build_id / f"step-{index}-image"
        for source, destination in image:
            _copy_into(self.context / source, image_root, destination)

        def local(text: str) -> str:
            return _local(text, workspace, image_root)

        args = [local(a) for a in step.get("args", [])]
        env = dict(self.env)
        for item in step.get("env", []):
            key, _, value = item.partition("=")
            env[key] = local(value)
        with _TerraformBridge(self.terraform) as bridge:
            if entrypoint == "gatebench":
                argv = [GATEBENCH, *args]
            elif entrypoint == "terraform":
                argv = [str(bridge.shim), *args]
            else:
                argv = [entrypoint, *args]
            # What a script may call: `terraform` (the bridge), this checkout's `gatebench`,
            # and the shell's own tools.
            env["PATH"] = os.pathsep.join(
                [str(bridge.shim.parent), str(Path(GATEBENCH).parent), os.environ["PATH"]]
            )
            env[_BRIDGE_ENV] = str(bridge.socket_path)
            log = self.root / build_id / f"step-{index}.log"
            proc = start_process(f"build-step-{index}", argv, log_path=log, cwd=workspace, env=env)
            try:
                proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.stop()
                raise TimeoutError from None
        if proc.returncode != 0:
            command = " ".join([entrypoint, *step.get("args", [])])
            raise StepFailed(f"{command} exited {proc.returncode}:\n{proc.log_tail()}")

    def _container_step(
        self,
        step: dict[str, Any],
        entrypoint: str,
        workspace: Path,
        deadline: float,
        build_id: str,
        index: int,
    ) -> None:
        """The step as Cloud Build runs it: a fresh container of the image, /workspace
        mounted and current, the step's env, its entrypoint."""
        assert self.image is not None
        env = dict(self.env)
        for item in step.get("env", []):
            key, _, value = item.partition("=")
            env[key] = value
        name = f"{self.name_prefix}-{build_id[:8]}-{index}"
        self.containers.append(name)
        with _TerraformBridge(self.terraform, workspace=workspace) as bridge:
            env[_BRIDGE_ENV] = f"{BRIDGE_MOUNT}/bridge.sock"
            mounts = [
                (workspace, "/workspace", ""),
                (bridge.folder, BRIDGE_MOUNT, ""),
                (bridge.shim, "/usr/local/bin/terraform", "ro"),
                *self.mounts,
            ]
            argv = run_argv(
                self.image,
                step.get("args", []),
                name=name,
                entrypoint=None if entrypoint == "gatebench" else entrypoint,
                env=env,
                network="host",
                mounts=mounts,
                workdir="/workspace",
            )
            log = self.root / build_id / f"step-{index}.log"
            proc = start_process(f"build-step-{index}", argv, log_path=log, cwd=workspace)
            try:
                proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                remove_container(name)  # Cloud Build kills the step's container
                proc.stop()
                raise TimeoutError from None
            finally:
                if proc.popen.poll() is None:
                    remove_container(name)
                    proc.stop()
        if proc.returncode != 0:
            command = " ".join([entrypoint, *step.get("args", [])])
            raise StepFailed(f"{command} exited {proc.returncode}:\n{proc.log_tail()}")


_BRIDGE_ENV = "GATEBENCH_TERRAFORM_BRIDGE"
BRIDGE_MOUNT = "/run/gatebench-terraform"
"""Where a step's container sees the bridge's folder (its socket)."""
CALLER_PID_ENV = "GATEBENCH_TERRAFORM_PID"
"""Set in the environment the stand-in gets: the pid (in this machine's pid namespace) of the
``terraform`` process that called, so the stand-in can tell whether it was killed meanwhile,
as a build's timeout kills it. Read from the socket's peer credentials, so it is right for a
shim in a container too."""
_SHIM = """#!/usr/bin/env python3
# `terraform` inside a local build step: the call goes to the test's Terraform stand-in,
# with the configuration's files (read here, where the step runs); what the stand-in writes
# beside them (the dependency lock file) is written back here.
import base64, json, os, socket, sys
from pathlib import Path
chdir = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("-chdir=")]
config = Path(chdir[-1] if chdir else ".").resolve()
files = {}
for path in sorted(config.rglob("*")):
    rel = path.relative_to(config)
    if path.is_file() and ".terraform" not in rel.parts[:-1] and (
        path.suffix in (".tf", ".hcl", ".tftpl") or path.name == ".terraform.lock.hcl"
    ):
        files[rel.as_posix()] = base64.b64encode(path.read_bytes()).decode()
conn = socket.socket(socket.AF_UNIX)
conn.connect(os.environ["@BRIDGE_ENV@"])
request = {"args": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ),
           "config": str(config), "files": files}
conn.sendall(json.dumps(request).encode() + b"\\n")
reply = json.loads(conn.makefile().readline())
for rel, data in reply.get("write", {}).items():
    (config / rel).write_bytes(base64.b64decode(data))
sys.stdout.write(reply["stdout"])
sys.stderr.write(reply["stderr"])
sys.exit(reply["code"])
"""


class _TerraformBridge:
    """A ``terraform`` executable for one step (a shim) whose calls run the Terraform
    stand-in in this process, over a Unix socket: so a step's script runs in a real shell,
    with ``set -e``, pipes and exit codes, and only Terraform is stood in for. A call still
    running when the step is stopped goes on (what it started stays, as resources do).

    With ``workspace`` (a step in a container), paths are the container's: ``/workspace`` is
    that folder here, and the configuration the call names is a scratch copy of the files the
    shim sent, whose new or changed lock file goes back to the container."""

    def __init__(self, terraform: Terraform, workspace: Path | None = None) -> None:
        self.terraform = terraform
        self.workspace = workspace
        self.folder = Path(tempfile.mkdtemp(prefix="gbtf-"))  # short: a socket path is < 108
        self.folder.chmod(0o755)
        self.socket_path = self.folder / "bridge.sock"
        self.shim = self.folder / "bin" / "terraform"
        self.shim.parent.mkdir()
        self.shim.write_text(_SHIM.replace("@BRIDGE_ENV@", _BRIDGE_ENV))
        self.shim.chmod(0o755)
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(self.socket_path))
        self.server.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> _TerraformBridge:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            request = json.loads(conn.makefile().readline())
            pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
            scratch = Path(tempfile.mkdtemp(prefix="gbtf-config-"))
            try:
                args, env, cwd, before = self._here(request, scratch)
                env[CALLER_PID_ENV] = str(pid)
                out = self.terraform(args, env, cwd)
                reply: dict[str, Any] = {"code": 0, "stdout": out or "", "stderr": ""}
            except Exception as exc:
                text = str(exc).rstrip("\n") + "\n"
                reply = {"code": 1, "stdout": "", "stderr": text}
                before = None
            if self.workspace is not None and before is not None:
                reply["write"] = {
                    p.relative_to(scratch).as_posix(): base64.b64encode(p.read_bytes()).decode()
                    for p in sorted(scratch.rglob("*"))
                    if p.is_file()
                    and before.get(p.relative_to(scratch).as_posix()) != p.read_bytes()
                }
            shutil.rmtree(scratch, ignore_errors=True)
            with contextlib.suppress(OSError):  # the step may have been stopped meanwhile
                conn.sendall(json.dumps(reply).encode() + b"\n")

    def _here(
        self, request: dict[str, Any], scratch: Path
    ) -> tuple[list[str], dict[str, str], Path, dict[str, bytes]]:
        """The call's arguments, environment and directory as the stand-in sees them, and the
        configuration's files as sent (to tell what the call wrote)."""
        args, env, cwd = list(request["args"]), dict(request["env"]), Path(request["cwd"])
        if self.workspace is None:
            return args, env, cwd, {}
        sent = {rel: base64.b64decode(data) for rel, data in request["files"].items()}
        for rel, data in sent.items():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            (scratch / rel).write_bytes(data)
        workspace = str(self.workspace)

        def here(text: str) -> str:
            return re.sub(r"(?<![\w/])/workspace(?=/|$)", workspace, text)

        args = [f"-chdir={scratch}" if a.startswith("-chdir=") else here(a) for a in args]
        env = {k: here(v) for k, v in env.items()}
        if Path(request["config"]) == cwd:
            cwd = scratch
        elif str(cwd).startswith("/workspace"):
            cwd = Path(here(str(cwd)))
        return args, env, cwd, sent


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


def _local(text: str, workspace: Path, image_root: Path) -> str:
    """``/workspace`` (every step's working directory in Cloud Build) → this build's folder;
    ``/opt/...`` (the image's files) → this step's fresh copy of them."""
    text = re.sub(r"(?<![\w/])/workspace(?=/|$)", str(workspace), text)
    return re.sub(r"(?<![\w/])(/opt(?=/|$))", lambda m: f"{image_root}{m.group(1)}", text)


def runner_image_files(dockerfile: Path, context: Path = ROOT) -> list[tuple[str, str]]:
    """(path in the build context, absolute path in the image) for every ``COPY`` of the
    Dockerfile's final stage that copies from the build context (not ``--from`` a stage),
    destinations resolved against the stage's ``WORKDIR``. As with Docker, a directory's
    contents go to the destination; a file goes into it when it names a directory."""
    lines = dockerfile.read_text().replace("\\\n", " ").splitlines()
    copies: list[tuple[str, str]] = []
    workdir = "/"
    for line in lines:
        words = shlex.split(line, comments=True)
        if not words:
            continue
        keyword = words[0].upper()
        if keyword == "FROM":
            copies, workdir = [], "/"
        elif keyword == "WORKDIR":
            workdir = posixpath.join(workdir, words[1])
        elif keyword in ("COPY", "ADD"):
            if any(w.startswith("--from") for w in words[1:]):
                continue
            *sources, target = [w for w in words[1:] if not w.startswith("--")]
            base = posixpath.normpath(posixpath.join(workdir, target))
            into = target.endswith("/") or target == "." or len(sources) > 1
            for source in sources:
                name = source.rstrip("/")
                is_file = (context / name).is_file()
                copies.append(
                    (name, posixpath.join(base, Path(name).name) if is_file and into else base)
                )
    return copies


def _copy_into(source: Path, image_root: Path, destination: str) -> None:
    target = image_root / destination.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(
            source,
            target,
            symlinks=True,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".terraform"),
        )
    else:
        shutil.copy2(source, target)


__all__ = ["BUILD_CREATE", "CALLER_PID_ENV", "LocalCloudBuild", "StepFailed", "runner_image_files"]
