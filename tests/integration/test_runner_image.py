"""The runner image, built from cloudbuild/runner.Dockerfile with podman as Cloud Build builds it
(tests/cloud/image.py: the same Dockerfile over the same uploaded source; STAND-IN base images
under the Dockerfile's exact names; only the Google provider's download skipped, by the build
argument TERRAFORM_PROVIDERS=skip that Cloud Build leaves at `mirror`), and run.

What the image must hold for the cloud path to work: the `gatebench` entrypoint, the wheel with
its data trees (gatebench/_data), a Gatling build it uses without Maven or a network, the
backend binary, Terraform with infra/vms and its local module installable. Beside it, the
same checks on the Dockerfile as it was at commit acaf8d9 (tests/data/cloud-image/) show the
two defects it had: `providers mirror` before the local module was installed ("Module not
installed"), and a wheel built without setup.py and the data trees (no gatebench/_data)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cloud.image import (
    DOCKERFILE,
    STAND_IN_BUILD_ARGS,
    WORKDIR,
    BuiltImage,
    base_images,
    build_context,
    copied_before,
    podman,
    run_argv,
    run_instruction,
    stand_in_label,
)
from paths import DATA, ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BEFORE = DATA / "cloud-image" / "runner-acaf8d9.Dockerfile"
PIP_INSTALL = 'pip install --no-cache-dir --constraint requirements/dev.lock ".[cloud]"'


def in_image(image: BuiltImage, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``bash -c SCRIPT`` in a fresh container of the image, in its WORKDIR, with no network."""
    argv = run_argv(
        image.tag,
        ["-c", script],
        name=f"gb-image-test-{abs(hash(script)) % 10**8}",
        entrypoint="bash",
        env=env,
        workdir=WORKDIR,
    )
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def test_every_base_image_is_a_labelled_stand_in() -> None:
    assert base_images() == [
        "docker.io/library/golang:1.23.4-bookworm",
        "docker.io/hashicorp/terraform:1.9.8",
        "docker.io/library/python:3.12.8-slim-bookworm",
    ]
    for name in base_images():
        written = name.removeprefix("docker.io/").removeprefix("library/")  # as FROM names it
        assert stand_in_label(name).startswith(f"STAND-IN for {written}: "), name


def test_the_local_build_differs_from_cloud_builds_only_by_the_provider_download(
    runner_image: BuiltImage,
) -> None:
    """The Dockerfile's default downloads the provider (what Cloud Build runs); the local build
    sets the one argument that skips exactly that download, and the rest of that step ran:
    infra/vms's module installed, the CLI configuration pointing at the (here empty) mirror,
    no Terraform working folder left in the image."""
    assert "ARG TERRAFORM_PROVIDERS=mirror\n" in DOCKERFILE.read_text()
    assert STAND_IN_BUILD_ARGS == {"TERRAFORM_PROVIDERS": "skip"}
    assert "TERRAFORM_PROVIDERS" not in (ROOT / "cloudbuild" / "runner-image.yaml").read_text()
    done = in_image(
        runner_image,
        "cat $TF_CLI_CONFIG_FILE; ls -A terraform-providers | wc -l; ls -A infra/vms",
    )
    assert done.returncode == 0, done.stderr
    assert 'path = "/opt/gatebench/terraform-providers"' in done.stdout
    assert done.stdout.splitlines()[5:] == [
        "0",
        "backend.tf",
        "main.tf",
        "modules",
        "outputs.tf",
        "templates",
        "terraform-step.sh",
        "variables.tf",
        "versions.tf",
    ]


def provider_step(dockerfile: Path, providers: str) -> str:
    """The Dockerfile's RUN that mirrors the providers, run against a copy of the image's
    infra/vms, as the build ran it (before TF_CLI_CONFIG_FILE was set)."""
    command = run_instruction(dockerfile, "providers mirror")
    return (
        "set -e; mkdir /tmp/step; cp -r infra /tmp/step/; cd /tmp/step; "
        f"export TERRAFORM_PROVIDERS={providers}; unset TF_CLI_CONFIG_FILE; {command}"
    )


def test_the_provider_step_installs_the_module_before_mirroring(runner_image: BuiltImage) -> None:
    """Today's step reaches the download (which fails here only because the registry is
    unreachable); the step as it was at acaf8d9 stopped before it: the module infra/vms calls
    was not installed, so the image build failed on Cloud Build too."""
    fixed = in_image(runner_image, provider_step(DOCKERFILE, "mirror"))
    assert fixed.returncode != 0
    assert "- images in modules/images" in fixed.stdout
    assert "Mirroring hashicorp/google..." in fixed.stdout + fixed.stderr
    assert "registry.terraform.io" in fixed.stderr
    assert "Module not installed" not in fixed.stderr
    skipped = in_image(runner_image, provider_step(DOCKERFILE, "skip"))
    assert skipped.returncode == 0, skipped.stderr
    before = in_image(runner_image, provider_step(BEFORE, "mirror"))
    assert before.returncode != 0
    assert "Module not installed" in before.stderr


def test_the_installed_package_carries_its_data_and_gatling_runs_without_maven(
    runner_image: BuiltImage,
) -> None:
    """The wheel installed in the image has gatebench/_data; Gatling is the image's own build,
    found through GATEBENCH_GATLING_* before any source or cache (no Maven, no network: a
    first use on a tester VM builds nothing); the backend and the capacity search's load
    generator are the image's binaries."""
    script = (
        "from gatebench.core import _locations\n"
        "from gatebench.local import _resources\n"
        "data = _locations.packaged_data_dir()\n"
        "print(sorted(p.name for p in data.iterdir()))\n"
        "print(*_resources.gatling_files())\n"
        "print(_resources.backend_binary())\n"
        "print(_resources.loadgen_binary())\n"
        "print(_locations.user_cache_dir().exists())\n"
    )
    argv = run_argv(
        runner_image.tag, ["-c", script], name="gb-image-test-data", entrypoint="python"
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['backend', 'frontend', 'gateways', 'gatling', 'loadgen']",
        "/opt/gatebench/gatling/target/test-classes /opt/gatebench/gatling/classpath.txt",
        "/usr/local/bin/gatebench-backend",
        "/usr/local/bin/gatebench-loadgen",
        "False",
    ]
    version = podman(["run", "--rm", "--network=none", runner_image.tag, "--version"])
    assert version.stdout.strip() == "gatebench 0.1.0"


def wheel_from(dockerfile: Path, tmp_path: Path) -> list[str]:
    """The names in the wheel pip builds from the files ``dockerfile`` copies before its
    `pip install ".[cloud]"`, taken from the uploaded source."""
    source = build_context(tmp_path / "source")
    context = tmp_path / "context"
    for path in copied_before(dockerfile, PIP_INSTALL):
        target = context / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if (source / path).is_dir():
            subprocess.run(["cp", "-r", str(source / path), str(target)], check=True)
        else:
            subprocess.run(["cp", str(source / path), str(target)], check=True)
    out = tmp_path / "wheel"
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run(
        [*pip, "-w", str(out), str(context)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("gatebench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_the_image_installs_has_its_data_trees(tmp_path: Path) -> None:
    now = wheel_from(DOCKERFILE, tmp_path / "now")
    for tree in (
        "backend/go.mod",
        "frontend/index.html",
        "gatling/pom.xml",
        "gateways/zuul/pom.xml",
    ):
        assert f"gatebench/_data/{tree}" in now, tree
    assert not [n for n in now if "/_data/gatling/target/" in n]
    before = wheel_from(BEFORE, tmp_path / "before")
    assert "gatebench/cli/__init__.py" in before
    assert not [n for n in before if n.startswith("gatebench/_data/")]
