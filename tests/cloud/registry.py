"""A real OCI registry for the pipeline tests: Debian's ``docker-registry`` (CNCF distribution
2.8, scripts/setup.d/apt-packages.txt) on loopback, plain HTTP, no authentication, storage in
the test's folder. The provision build's ``gatebench cloud vm-vars`` asks it for the digest of
every image a run's VMs start (``ARTIFACT_REGISTRY_EMULATOR_HOST``, gatebench.cloud._images),
as it asks Artifact Registry on Google Cloud.

It holds the runner image built from cloudbuild/runner.Dockerfile (pushed by podman under the
deployment's repository path) and, under the Docker Hub remote repository's paths, one
PLACEHOLDER image per gateway image name (their official images cannot be pulled here; the
local VMs run the gateways natively): only their digests are used.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gatebench.local.procs import Supervisor, free_port, wait_ready

from .image import podman

PLACEHOLDER = "localhost/gatebench-standin/gateway-placeholder:latest"


def start_registry(supervisor: Supervisor, root: Path) -> str:
    """The registry's ``host:port``."""
    binary = shutil.which("docker-registry")
    if binary is None:
        raise RuntimeError(
            "docker-registry is missing: run `scripts/setup.sh apt` (`make test` does)"
        )
    port = free_port()
    config = root / "registry.yml"
    config.write_text(
        "version: 0.1\n"
        "log: {level: warn}\n"
        f"storage: {{filesystem: {{rootdirectory: {root / 'data'}}}}}\n"
        f"http: {{addr: '127.0.0.1:{port}'}}\n"
    )
    proc = supervisor.start(
        "registry", [binary, "serve", str(config)], log_path=root / "registry.log"
    )
    wait_ready(proc, port, timeout=30)
    return f"127.0.0.1:{port}"


def push(image: str, registry: str, path: str, workdir: Path) -> str:
    """Push a local image to ``registry/path``; its manifest digest there."""
    digest_file = workdir / f"digest-{path.replace('/', '_').replace(':', '_')}"
    target = f"{registry}/{path}"
    flags = ["--quiet", "--tls-verify=false", "--digestfile", str(digest_file)]
    podman(["push", *flags, image, target], timeout=600)
    return digest_file.read_text().strip()


def placeholder(workdir: Path) -> str:
    """A tiny local image labelled as a placeholder (made once)."""
    if podman(["image", "exists", PLACEHOLDER], check=False).returncode != 0:
        context = workdir / "placeholder"
        context.mkdir(parents=True, exist_ok=True)
        (context / "README").write_text(
            "a placeholder for a gateway image (tests/cloud/registry.py)\n"
        )
        (context / "Containerfile").write_text("FROM scratch\nCOPY README /README\n")
        podman(
            [
                "build",
                "--quiet",
                "--pull=never",
                "--label",
                "gatebench.stand-in=PLACEHOLDER for a gateway image: only its digest is used",
                "--tag",
                PLACEHOLDER,
                str(context),
            ],
            timeout=300,
        )
    return PLACEHOLDER


__all__ = ["PLACEHOLDER", "placeholder", "push", "start_registry"]
