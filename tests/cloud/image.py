"""The runner image as Cloud Build builds it, built and run here with podman.

Cloud Build runs ``docker build --file cloudbuild/runner.Dockerfile .`` over the source that
``gcloud builds submit`` uploaded (cloudbuild/runner-image.yaml). Here the same Dockerfile, not a
copy or a fork of it, is built by a real OCI builder, Debian's podman (scripts/podman.sh: its
settings and storage in the checkout's .cache/podman), over the same selection of files
(:func:`uploaded_files`: what git does not ignore, minus .gcloudignore, as gcloud selects them).

Two differences, and only these:

- every ``FROM`` image is a STAND-IN built locally under the Dockerfile's exact name
  (scripts/setup.d/80-images.sh, tests/cloud/images/*.Containerfile, each labelled
  ``gatebench.stand-in``), because no image registry is reachable here; the build runs with
  ``--pull=never`` so nothing tries one;
- the build argument ``TERRAFORM_PROVIDERS=skip`` (the real build leaves it at ``mirror``)
  skips exactly the download of the Google provider into the image, which cannot reach the
  Terraform registry here. Everything else of that step runs (``terraform get`` included).

The image is built once per test session (tests/conftest.py, ``runner_image``); podman's
layer cache in .cache/podman makes a later session rebuild only what changed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PODMAN = ROOT / "scripts" / "podman.sh"
DOCKERFILE = ROOT / "cloudbuild" / "runner.Dockerfile"
STAND_IN_BUILD_ARGS = {"TERRAFORM_PROVIDERS": "skip"}
"""The one build argument the local build sets; Cloud Build leaves it at its default."""
LOCAL_TAG = "localhost/gatebench-runner:test"
WORKDIR = "/opt/gatebench"
"""The Dockerfile's WORKDIR: where the image keeps infra/vms and the Gatling build."""


class ImageError(Exception):
    """A podman build or command that failed; the message ends with its output's tail."""


def podman(
    args: Sequence[str], *, timeout: float = 120, check: bool = True, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(PODMAN), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
    if check and done.returncode != 0:
        raise ImageError(
            f"podman {' '.join(args[:3])} exited {done.returncode}: "
            + (done.stderr or done.stdout)[-3000:]
        )
    return done


def podman_works() -> str | None:
    """None when podman can build and run here; else what is missing and how to get it."""
    if shutil.which("podman") is None:
        return "podman is missing: run `scripts/setup.sh apt images` (`make test` does)"
    try:
        podman(["info", "--format", "{{.Host.OCIRuntime.Name}}"], timeout=60)
    except (ImageError, subprocess.TimeoutExpired) as exc:
        return f"podman does not work here: {exc}"
    return None


def uploaded_files(root: Path = ROOT) -> list[str]:
    """The files ``gcloud builds submit`` uploads from ``root``: every file git does not
    ignore (tracked or not), minus what .gcloudignore names (gitignore syntax; its
    ``#!include:.gitignore`` is what git's own exclusion already applied)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    files = [f for f in listed.decode().split("\0") if f and (root / f).is_file()]
    gcloudignore = ["-c", "core.excludesFile=.gcloudignore"]
    checked = subprocess.run(
        ["git", *gcloudignore, "check-ignore", "--no-index", "-z", "--stdin"],
        cwd=root,
        input="\0".join(files).encode(),
        capture_output=True,
        check=False,
    )
    if checked.returncode not in (0, 1):  # 1: nothing ignored
        raise ImageError(f"git check-ignore failed: {checked.stderr.decode()}")
    ignored = set(checked.stdout.decode().split("\0"))
    return sorted(f for f in files if f not in ignored)


def build_context(dest: Path, root: Path = ROOT) -> Path:
    """A copy of what ``gcloud builds submit`` uploads from ``root``, at ``dest``."""
    for name in uploaded_files(root):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return dest


def base_images(dockerfile: Path = DOCKERFILE) -> list[str]:
    """The images the Dockerfile builds FROM (not its own stages), as Docker names them."""
    stages: set[str] = set()
    bases = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if len(words) < 2 or words[0].upper() != "FROM":
            continue
        ref = words[1]
        if ref not in stages and ref != "scratch":
            bases.append(docker_name(ref))
        if len(words) >= 4 and words[2].upper() == "AS":
            stages.add(words[3])
    return bases


def docker_name(ref: str) -> str:
    """A short image name as Docker resolves it (``python:3`` → docker.io/library/python:3)."""
    first = ref.split("/", 1)[0]
    if "/" in ref and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if "/" in ref else f"docker.io/library/{ref}"


def missing_stand_ins(dockerfile: Path = DOCKERFILE) -> list[str]:
    """The Dockerfile's base images that have no local stand-in yet."""
    return [
        name
        for name in base_images(dockerfile)
        if podman(["image", "exists", name], check=False).returncode != 0
    ]


def stand_in_label(name: str) -> str:
    """The ``gatebench.stand-in`` label of a local base image (empty when it has none)."""
    done = podman(["image", "inspect", "--format", '{{index .Labels "gatebench.stand-in"}}', name])
    return done.stdout.strip()


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    id: str
    log: Path


def build_runner_image(
    workdir: Path,
    *,
    tag: str = LOCAL_TAG,
    root: Path = ROOT,
    dockerfile: str = "cloudbuild/runner.Dockerfile",
    build_args: Mapping[str, str] = STAND_IN_BUILD_ARGS,
    timeout: float = 1800,
) -> BuiltImage:
    """``docker build --file DOCKERFILE .`` over the uploaded source of ``root``, as
    cloudbuild/runner-image.yaml runs it, with the stand-in bases and ``build_args``."""
    context = build_context(workdir / "context", root)
    log = workdir / "build.log"
    argv = [str(PODMAN), "build", "--pull=never", "--file", str(context / dockerfile)]
    for key, value in sorted(build_args.items()):
        argv += ["--build-arg", f"{key}={value}"]
    argv += ["--tag", tag, "--iidfile", str(workdir / "image.id"), str(context)]
    with log.open("w") as out:
        done = subprocess.run(
            argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False
        )
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-25:]
        raise ImageError(
            f"building {dockerfile} failed (podman build exited {done.returncode}; log: {log}):\n"
            + "\n".join(tail)
        )
    image_id = (workdir / "image.id").read_text().strip()
    return BuiltImage(tag, image_id, log)


def image_env(image: str) -> dict[str, str]:
    """The image's own environment (its ENV lines and those of its bases)."""
    done = podman(["image", "inspect", "--format", "{{json .Config.Env}}", image])
    return dict(item.split("=", 1) for item in json.loads(done.stdout))


def run_argv(
    image: str,
    args: Sequence[str],
    *,
    name: str,
    entrypoint: str | None = None,
    env: Mapping[str, str] | None = None,
    network: str = "none",
    mounts: Sequence[tuple[Path | str, str, str]] = (),
    workdir: str | None = None,
    remove: bool = True,
) -> list[str]:
    """The ``podman run`` command of one container of ``image``: its entrypoint unless
    ``entrypoint`` replaces it (as a build step's ``entrypoint:`` does), ``env`` added to the
    image's own, ``mounts`` as (host path, container path, options)."""
    argv = [str(PODMAN), "run", "--name", name, "--pull=never", f"--network={network}"]
    if remove:
        argv.append("--rm")
    if entrypoint is not None:
        argv.append(f"--entrypoint={entrypoint}")
    if workdir is not None:
        argv.append(f"--workdir={workdir}")
    for key, value in sorted((env or {}).items()):
        argv += ["--env", f"{key}={value}"]
    for host, inside, options in mounts:
        argv += ["--volume", f"{host}:{inside}" + (f":{options}" if options else "")]
    return [*argv, image, *args]


def remove_container(name: str) -> None:
    """Kill and remove a container (what stopping its VM or build step does), if it exists."""
    podman(["rm", "--force", "--time", "0", "--ignore", name], check=False, timeout=60)


def containers(prefix: str) -> list[str]:
    """Names of the containers (running or not) whose name starts with ``prefix``."""
    done = podman(["ps", "--all", "--format", "{{.Names}}"], check=False)
    return sorted(n for n in done.stdout.split() if n.startswith(prefix))


def tag(image: str, *names: str) -> None:
    podman(["tag", image, *names])


def final_stage(dockerfile: Path) -> list[str]:
    """The instructions of the Dockerfile's last stage, continuation lines joined, comments
    dropped."""
    instructions: list[str] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        instruction = pending + line
        pending = ""
        if instruction.split(maxsplit=1)[0].upper() == "FROM":
            instructions = []
        instructions.append(instruction)
    return instructions


def run_instruction(dockerfile: Path, containing: str) -> str:
    """The shell command of the last stage's one RUN instruction containing ``containing``."""
    found = [
        i.split(maxsplit=1)[1]
        for i in final_stage(dockerfile)
        if i.split(maxsplit=1)[0].upper() == "RUN" and containing in i
    ]
    if len(found) != 1:
        raise ImageError(f"{dockerfile.name}: {len(found)} RUN instructions contain {containing!r}")
    return found[0]


def copied_before(dockerfile: Path, containing: str) -> list[str]:
    """The build-context paths the last stage copies (COPY without --from) before its RUN
    instruction containing ``containing``: what that RUN sees of the source."""
    sources: list[str] = []
    for instruction in final_stage(dockerfile):
        keyword, _, rest = instruction.partition(" ")
        if keyword.upper() == "RUN" and containing in rest:
            return sources
        if keyword.upper() in ("COPY", "ADD"):
            words = rest.split()
            if any(w.startswith("--from") for w in words):
                continue
            sources += [w.rstrip("/") for w in words[:-1] if not w.startswith("--")]
    raise ImageError(f"{dockerfile.name}: no RUN instruction contains {containing!r}")


__all__ = [
    "DOCKERFILE",
    "LOCAL_TAG",
    "PODMAN",
    "STAND_IN_BUILD_ARGS",
    "WORKDIR",
    "BuiltImage",
    "ImageError",
    "base_images",
    "build_context",
    "build_runner_image",
    "containers",
    "copied_before",
    "docker_name",
    "image_env",
    "missing_stand_ins",
    "podman",
    "podman_works",
    "remove_container",
    "run_argv",
    "run_instruction",
    "stand_in_label",
    "tag",
    "uploaded_files",
]
