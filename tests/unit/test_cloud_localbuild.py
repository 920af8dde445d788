"""The Cloud Build stand-in (tests/cloud/localbuild.py) on its own: substitutions, the shared
/workspace, real `gatebench` steps, the Terraform hand-off, failures and both timeouts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cloud.localbuild import LocalCloudBuild
from cloud.workflows_interpreter import UnsupportedConstruct, WorkflowError

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "europe-docker.pkg.dev/proj/gb/runner:0.1.0"


class RecordingTerraform:
    def __init__(self, delay: float = 0.0) -> None:
        self.calls: list[tuple[list[str], dict[str, str], Path]] = []
        self.delay = delay

    def __call__(self, args: list[str], env: dict[str, str], workspace: Path) -> None:
        time.sleep(self.delay)
        self.calls.append((args, env, workspace))


def body(steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "steps": steps,
        "substitutions": {"_RUNNER_IMAGE": IMAGE, "_RUN_ID": "r-0123456789abcdef0123"},
        "timeout": "60s",
        "options": {"substitutionOption": "ALLOW_LOOSE"},
        **extra,
    }


def create(build: LocalCloudBuild, config: dict[str, Any], connector_timeout: float = 600) -> Any:
    return build.create(
        {
            "parent": "projects/proj/locations/europe-west1",
            "projectId": "proj",
            "body": config,
            "connector_params": {"timeout": connector_timeout},
        }
    )


def test_steps_share_the_workspace_and_terraform_gets_the_substituted_args(tmp_path: Path) -> None:
    terraform = RecordingTerraform()
    build = LocalCloudBuild(tmp_path, IMAGE, terraform)
    result = create(
        build,
        body(
            [
                {
                    "id": "bundle",
                    "name": "$_RUNNER_IMAGE",
                    "args": [
                        "cloud",
                        "bundle",
                        "--functions",
                        str(ROOT / "functions"),
                        "--out",
                        "/workspace/out",
                    ],
                },
                {
                    "id": "apply",
                    "name": "${_RUNNER_IMAGE}",
                    "entrypoint": "terraform",
                    "env": ["TF_DATA_DIR=/workspace/terraform"],
                    "args": [
                        "apply",
                        "-var-file=/workspace/out/parse.zip",
                        "-var=run=$_RUN_ID",
                        "-var=cost=$$5",
                    ],
                },
            ]
        ),
    )
    assert result["status"] == "SUCCESS"
    assert [s["status"] for s in result["steps"]] == ["SUCCESS", "SUCCESS"]
    ((args, env, workspace),) = terraform.calls
    assert args == [
        "apply",
        f"-var-file={workspace}/out/parse.zip",
        "-var=run=r-0123456789abcdef0123",
        "-var=cost=$5",
    ]
    assert env["TF_DATA_DIR"] == f"{workspace}/terraform"
    assert (workspace / "out" / "parse.zip").stat().st_size > 10_000


def test_a_failing_step_fails_the_build_with_its_output(tmp_path: Path) -> None:
    build = LocalCloudBuild(tmp_path, IMAGE, RecordingTerraform())
    with pytest.raises(WorkflowError) as caught:
        create(
            build,
            body(
                [
                    {
                        "name": IMAGE,
                        "args": [
                            "cloud",
                            "check",
                            "--result",
                            "/workspace/none.json",
                            "--baseline",
                            "x",
                        ],
                    }
                ]
            ),
        )
    payload = caught.value.payload
    assert payload["tags"] == ["OperationError"]
    assert "finished with status FAILURE" in payload["message"]
    assert "none.json" in payload["message"]
    assert payload["operation"]["metadata"]["build"]["status"] == "FAILURE"


def test_the_build_timeout_stops_the_build(tmp_path: Path) -> None:
    terraform = RecordingTerraform(delay=3)
    build = LocalCloudBuild(tmp_path, IMAGE, terraform)
    started = time.monotonic()
    with pytest.raises(WorkflowError, match="finished with status TIMEOUT"):
        create(
            build,
            body([{"name": IMAGE, "entrypoint": "terraform", "args": ["apply"]}], timeout="1s"),
        )
    assert time.monotonic() - started < 2.5


def test_the_connector_timeout_raises_a_timeout_error(tmp_path: Path) -> None:
    build = LocalCloudBuild(tmp_path, IMAGE, RecordingTerraform(delay=3))
    with pytest.raises(WorkflowError) as caught:
        create(
            build,
            body([{"name": IMAGE, "entrypoint": "terraform", "args": ["apply"]}]),
            connector_timeout=0.5,
        )
    assert caught.value.payload["tags"] == ["TimeoutError"]


def test_unknown_substitutions_and_images_are_refused(tmp_path: Path) -> None:
    build = LocalCloudBuild(tmp_path, IMAGE, RecordingTerraform())
    strict = body([{"name": IMAGE, "args": ["--version", "$_NOPE"]}], options={})
    with pytest.raises(WorkflowError) as caught:
        create(build, strict)
    assert caught.value.payload["code"] == 400
    assert "substitution _NOPE" in caught.value.payload["body"]["error"]["message"]
    with pytest.raises(UnsupportedConstruct, match="cannot run here"):
        create(build, body([{"name": "gcr.io/cloud-builders/docker", "args": ["build"]}]))
