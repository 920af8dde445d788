"""The Cloud Build stand-in (tests/cloud/localbuild.py) on its own: substitutions, the shared
/workspace, a fresh copy of the image's files for every step, real `gatebench` and shell
steps, the Terraform hand-off (tests/cloud/localterraform.py's rules), failures and both
timeouts. Steps that must outlast a timeout block on an event the test releases: no sleeps."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cloud.localbuild import LocalCloudBuild, runner_image_files
from cloud.localterraform import LocalTerraform, TerraformFailed
from cloud.workflows_interpreter import UnsupportedConstruct, WorkflowError

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "europe-docker.pkg.dev/proj/gb/runner:0.1.0"
RUN_ID = "r-0123456789abcdef0123"


class RecordingTerraform:
    """Records each call; ``hold`` keeps a call running until the test sets it."""

    def __init__(self, hold: threading.Event | None = None) -> None:
        self.calls: list[tuple[list[str], dict[str, str], Path]] = []
        self.hold = hold
        self.entered = threading.Event()

    def __call__(self, args: list[str], env: dict[str, str], cwd: Path) -> str:
        self.calls.append((args, env, cwd))
        self.entered.set()
        if self.hold is not None:
            self.hold.wait()
        return ""


@pytest.fixture
def hold() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # releases a stand-in still waiting once the test is over


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
                        "-chdir=/opt/gatebench/infra/vms",
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
    ((args, env, cwd),) = terraform.calls
    workspace = cwd
    image = tmp_path / result["id"] / "step-1-image"
    assert args == [
        f"-chdir={image}/opt/gatebench/infra/vms",
        "apply",
        f"-var-file={workspace}/out/parse.zip",
        "-var=run=r-0123456789abcdef0123",
        "-var=cost=$5",
    ]
    assert env["TF_DATA_DIR"] == f"{workspace}/terraform"
    assert (workspace / "out" / "parse.zip").stat().st_size > 10_000
    assert (image / "opt" / "gatebench" / "infra" / "vms" / "main.tf").is_file()


def test_the_image_files_are_what_the_dockerfile_copies() -> None:
    assert runner_image_files(ROOT / "cloudbuild" / "runner.Dockerfile") == [
        ("gatling", "/opt/gatebench/gatling"),
        ("infra/vms", "/opt/gatebench/infra/vms"),
        ("pyproject.toml", "/opt/gatebench/pyproject.toml"),
        ("README.md", "/opt/gatebench/README.md"),
        ("requirements", "/opt/gatebench/requirements"),
        ("setup.py", "/opt/gatebench/setup.py"),
        ("MANIFEST.in", "/opt/gatebench/MANIFEST.in"),
        ("backend", "/opt/gatebench/backend"),
        ("loadgen", "/opt/gatebench/loadgen"),
        ("frontend", "/opt/gatebench/frontend"),
        ("gateways", "/opt/gatebench/gateways"),
        ("src", "/opt/gatebench/src"),
    ]


def shell(script: str, **extra: Any) -> dict[str, Any]:
    return {"name": IMAGE, "entrypoint": "bash", "args": ["-c", script], **extra}


def test_only_the_workspace_survives_from_one_step_to_the_next(tmp_path: Path) -> None:
    build = LocalCloudBuild(tmp_path, IMAGE, RecordingTerraform())
    steps = [
        shell(
            "set -eu\n"
            "echo kept > /workspace/note\n"
            "echo lost > /opt/gatebench/infra/vms/note\n"
            "test -f /opt/gatebench/infra/vms/note"
        ),
        shell("set -eu\ncat /workspace/note\ntest ! -e /opt/gatebench/infra/vms/note"),
        shell("cat /opt/gatebench/infra/vms/note"),
    ]
    with pytest.raises(WorkflowError) as caught:
        create(build, body(steps))
    record = caught.value.payload["operation"]["metadata"]["build"]
    assert [s["status"] for s in record["steps"]] == ["SUCCESS", "SUCCESS", "FAILURE"]
    assert "infra/vms/note: No such file or directory" in record["failure"]


@pytest.fixture
def terraform_world(tmp_path: Path) -> tuple[LocalTerraform, Any]:
    """The Terraform stand-in over a fake fleet, with state in a dict-backed storage."""

    class Fleet:
        def __init__(self) -> None:
            self.applied: list[str] = []

        def apply(self, key: str, values: dict[str, Any]) -> list[str]:
            self.applied.append(key)
            return ["vm"]

        def destroy(self, key: str) -> list[str]:
            return []

    class Objects:
        def __init__(self) -> None:
            self.objects: dict[tuple[str, str], bytes] = {}

        def read_optional(self, bucket: str, name: str) -> bytes | None:
            return self.objects.get((bucket, name))

        def write(self, bucket: str, name: str, data: Any, content_type: str = "") -> None:
            self.objects[(bucket, name)] = data.encode() if isinstance(data, str) else data

        def delete(self, bucket: str, name: str) -> None:
            del self.objects[(bucket, name)]

    fleet, objects = Fleet(), Objects()
    terraform = LocalTerraform(fleet, objects)  # type: ignore[arg-type]
    return terraform, fleet


INIT = [
    "-chdir=/opt/gatebench/infra/vms",
    "init",
    "-input=false",
    "-backend-config=bucket=gb-runs",
    "-backend-config=prefix=runs/$_RUN_ID",
]
APPLY = [
    "-chdir=/opt/gatebench/infra/vms",
    "apply",
    "-input=false",
    "-auto-approve",
    "-var-file=/workspace/vars.json",
]


def terraform_step(args: list[str]) -> dict[str, Any]:
    return {
        "name": IMAGE,
        "entrypoint": "terraform",
        "env": ["TF_DATA_DIR=/workspace/terraform"],
        "args": args,
    }


def test_init_and_apply_in_separate_steps_fail_as_terraform_does(
    tmp_path: Path, terraform_world: tuple[LocalTerraform, Any]
) -> None:
    # cloudbuild/provision.yaml before the fix: init's lock file is written beside the
    # configuration, in the image, and the apply step's fresh container does not have it.
    terraform, fleet = terraform_world
    build = LocalCloudBuild(tmp_path, IMAGE, terraform)
    vars_step = shell("echo '{}' > /workspace/vars.json")
    with pytest.raises(WorkflowError) as caught:
        create(build, body([vars_step, terraform_step(INIT), terraform_step(APPLY)]))
    record = caught.value.payload["operation"]["metadata"]["build"]
    assert [s["status"] for s in record["steps"]] == ["SUCCESS", "SUCCESS", "FAILURE"]
    assert "Error: Inconsistent dependency lock file" in record["failure"]
    assert (
        "  - provider registry.terraform.io/hashicorp/google: required by this configuration "
        "but no version is selected" in record["failure"]
    )
    assert fleet.applied == []
    # The same two commands in one step (one container) apply.
    both = "set -e\nterraform " + " ".join(INIT) + "\nterraform " + " ".join(APPLY)
    step = shell(both, env=["TF_DATA_DIR=/workspace/terraform"])
    result = create(build, body([vars_step, step]))
    assert result["status"] == "SUCCESS"
    assert fleet.applied == ["gs://gb-runs/runs/r-0123456789abcdef0123"]


def test_apply_without_init_and_a_held_state_lock_fail_with_terraforms_words(
    tmp_path: Path, terraform_world: tuple[LocalTerraform, Any]
) -> None:
    import datetime

    terraform, fleet = terraform_world
    config = tmp_path / "config"
    config.mkdir()
    (config / "versions.tf").write_text((ROOT / "infra" / "vms" / "versions.tf").read_text())
    (tmp_path / "vars.json").write_text("{}")
    env = {"TF_DATA_DIR": str(tmp_path / "data")}
    apply = ["apply", "-auto-approve", f"-var-file={tmp_path}/vars.json", "-lock-timeout=0s"]
    with pytest.raises(
        TerraformFailed, match=r'Backend initialization required, please run "terraform init"'
    ):
        terraform(apply, env, config)
    terraform(["init", "-backend-config=bucket=b", "-backend-config=prefix=p"], env, config)
    assert (config / ".terraform.lock.hcl").is_file()
    assert not (tmp_path / "data" / ".terraform.lock.hcl").exists()
    created = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    lock_id = terraform.hold_state_lock("b", "p", created)
    with pytest.raises(TerraformFailed) as caught:
        terraform(apply, env, config)
    text = str(caught.value)
    assert text.startswith("Error: Error acquiring the state lock\n")
    assert f"  ID:        {lock_id}\n" in text
    assert "  Created:   2026-01-02 03:04:05.000000000 +0000 UTC\n" in text
    assert fleet.applied == []
    with pytest.raises(TerraformFailed, match="Failed to unlock state"):
        terraform(["force-unlock", "-force", "not-the-id"], env, config)
    terraform(["force-unlock", "-force", lock_id], env, config)
    assert terraform(apply, env, config) == "Apply complete! Resources: 1.\n"
    assert fleet.applied == ["gs://b/p"]


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


def test_the_build_timeout_stops_the_build(tmp_path: Path, hold: threading.Event) -> None:
    terraform = RecordingTerraform(hold)
    build = LocalCloudBuild(tmp_path, IMAGE, terraform)
    with pytest.raises(WorkflowError, match="finished with status TIMEOUT") as caught:
        create(
            build,
            body([{"name": IMAGE, "entrypoint": "terraform", "args": ["apply"]}], timeout="5s"),
        )
    # The build ended while Terraform was still running (held): the timeout stopped it.
    assert terraform.entered.is_set() and not hold.is_set()
    record = caught.value.payload["operation"]["metadata"]["build"]
    assert record["steps"] == [{"id": "0", "status": "TIMEOUT"}]


def test_the_connector_timeout_raises_a_timeout_error(
    tmp_path: Path, hold: threading.Event
) -> None:
    terraform = RecordingTerraform(hold)
    build = LocalCloudBuild(tmp_path, IMAGE, terraform)
    with pytest.raises(WorkflowError) as caught:
        create(
            build,
            body([{"name": IMAGE, "entrypoint": "terraform", "args": ["apply"]}]),
            connector_timeout=0.5,
        )
    assert caught.value.payload["tags"] == ["TimeoutError"]
    assert not hold.is_set()
    assert build.builds[-1]["status"] == "CANCELLED"


def test_unknown_substitutions_images_and_entrypoints_are_refused(tmp_path: Path) -> None:
    build = LocalCloudBuild(tmp_path, IMAGE, RecordingTerraform())
    strict = body([{"name": IMAGE, "args": ["--version", "$_NOPE"]}], options={})
    with pytest.raises(WorkflowError) as caught:
        create(build, strict)
    assert caught.value.payload["code"] == 400
    assert "substitution _NOPE" in caught.value.payload["body"]["error"]["message"]
    with pytest.raises(UnsupportedConstruct, match="cannot run here"):
        create(build, body([{"name": "gcr.io/cloud-builders/docker", "args": ["build"]}]))
    with pytest.raises(UnsupportedConstruct, match=r"entrypoint 'python' .* cannot run here"):
        create(build, body([{"name": IMAGE, "entrypoint": "python", "args": ["-V"]}]))


class VirtualClock:
    """Lock-timeout waits pass at once (the lock they wait for is never released)."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def build_step(config: str, step_id: str) -> dict[str, Any]:
    steps = yaml.safe_load((ROOT / "cloudbuild" / f"{config}.yaml").read_text())["steps"]
    return next(s for s in steps if s["id"] == step_id)


def test_a_provision_stopped_in_apply_leaves_the_lock_and_teardown_still_destroys(
    tmp_path: Path, hold: threading.Event
) -> None:
    # The real steps of cloudbuild/provision.yaml and teardown.yaml (infra/vms/terraform-step.sh
    # in bash), the Terraform stand-in's rules, and a fleet whose apply outlasts the build.
    class SlowFleet:
        def __init__(self) -> None:
            self.entered = threading.Event()
            self.finished = threading.Event()
            self.destroyed: list[str] = []

        def apply(self, key: str, values: dict[str, Any]) -> list[str]:
            self.entered.set()
            hold.wait()
            self.finished.set()
            return ["vm"]

        def destroy(self, key: str) -> list[str]:
            self.destroyed.append(key)
            return []

    class Objects:
        def __init__(self) -> None:
            self.objects: dict[tuple[str, str], bytes] = {}

        def read_optional(self, bucket: str, name: str) -> bytes | None:
            return self.objects.get((bucket, name))

        def write(self, bucket: str, name: str, data: Any, content_type: str = "") -> None:
            self.objects[(bucket, name)] = data.encode() if isinstance(data, str) else data

        def delete(self, bucket: str, name: str) -> None:
            del self.objects[(bucket, name)]

    fleet, objects, clock = SlowFleet(), Objects(), VirtualClock()
    terraform = LocalTerraform(fleet, objects, now=clock.now, sleep=clock.sleep)  # type: ignore[arg-type]
    build = LocalCloudBuild(tmp_path, IMAGE, terraform)
    substitutions = {
        "_RUNNER_IMAGE": IMAGE,
        "_RUN_ID": RUN_ID,
        "_RUNS_BUCKET": "gb-runs",
        "_STATE_BUCKET": "gb-tfstate",
    }
    vars_step = shell("echo '{}' > /workspace/run.tfvars.json")

    def config(step: dict[str, Any], timeout: str) -> dict[str, Any]:
        return body([vars_step, step], substitutions=substitutions, timeout=timeout)

    # 10 s: room for the first step and init on a busy machine; apply then outlasts it.
    with pytest.raises(WorkflowError, match="finished with status TIMEOUT"):
        create(build, config(build_step("provision", "apply"), "10s"))
    assert fleet.entered.is_set()  # the timeout stopped the step inside apply
    hold.set()  # the instances come up after the build was stopped
    assert fleet.finished.wait(30)
    lock = ("gb-tfstate", f"runs/{RUN_ID}/default.tflock")
    assert lock in objects.objects  # the killed apply left its lock
    result = create(build, config(build_step("teardown", "destroy"), "60s"))
    assert result["status"] == "SUCCESS"
    assert fleet.destroyed == [f"gs://gb-tfstate/runs/{RUN_ID}"]
    assert lock not in objects.objects
    log = (tmp_path / result["id"] / "step-1.log").read_text()
    assert "removing the state lock" in log
    assert "Error: Error acquiring the state lock" in log
