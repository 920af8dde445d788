"""What a first real deploy and a real run need from infra/ and cloudbuild/, checked offline:
each build step that runs Terraform does init and apply/destroy in one container (the lock
file is written beside the configuration, inside the image), teardown removes a lock left by a
provision build stopped at its timeout (and only such a lock), each VM role gets exactly the
objects it reads or writes, the Storage triggers wait for the Storage agent's grant and for
IAM to propagate, every API the pipeline calls is enabled, and the build account's grants
are scoped to the run's VMs and repositories.

The build steps run the real ``infra/vms/terraform-step.sh`` with a stand-in ``terraform``
(no provider can be installed here) that keeps Terraform's rules that matter: ``init`` writes
``.terraform.lock.hcl`` in the configuration's folder and apply/destroy refuse to run without
it ("Inconsistent dependency lock file"); a held state lock fails with Terraform's own
``Lock Info:`` block; ``force-unlock -force ID`` removes only the lock with that id. Each
step gets a fresh copy of the image's files, only the workspace is carried over, as in
Cloud Build."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml

from cloud.computeiam import cel

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
RUN_ID = "r-0123456789abcdef0123"

FAKE_TERRAFORM = r"""
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
state = Path(os.environ["FAKE_STATE"])
with (state / "calls.log").open("a") as log:
    log.write(" ".join(args) + "\n")
cwd = Path.cwd()
if args and args[0].startswith("-chdir="):
    cwd = Path(args.pop(0).split("=", 1)[1])
command = args[0]
if command == "init":
    assert any(a.startswith("-backend-config=bucket=") for a in args), args
    (cwd / ".terraform.lock.hcl").write_text("# providers\n")
    sys.exit(0)
if command in ("apply", "destroy"):
    if not (cwd / ".terraform.lock.hcl").exists():
        print("Error: Inconsistent dependency lock file", file=sys.stderr)
        sys.exit(1)
    lock = state / "default.tflock"
    if lock.exists():
        info = json.loads(lock.read_text())
        print("Error: Error acquiring the state lock\n", file=sys.stderr)
        print("Error message: writing \"gs://b/tfstate/default.tflock\" failed: googleapi: "
              "Error 412: At least one of the pre-conditions you specified did not hold., "
              "conditionNotMet\nLock Info:\n"
              f"  ID:        {info['ID']}\n  Path:      gs://b/tfstate/default.tflock\n"
              "  Operation: OperationTypeApply\n  Who:       root@build\n"
              f"  Version:   1.9.8\n  Created:   {info['Created']}\n  Info:      \n",
              file=sys.stderr)
        sys.exit(1)
    if (state / "fail").exists():
        print("Error: googleapi: Error 403: permission denied", file=sys.stderr)
        sys.exit(1)
    (state / command).write_text("done")
    sys.exit(0)
if command == "force-unlock":
    assert args[1] == "-force", args
    lock = state / "default.tflock"
    if not lock.exists() or json.loads(lock.read_text())["ID"] != args[2]:
        print(f"Error: lock {args[2]} is not held", file=sys.stderr)
        sys.exit(1)
    lock.unlink()
    sys.exit(0)
print(f"unexpected terraform command {args}", file=sys.stderr)
sys.exit(2)
"""


def plain(value: Any) -> Any:
    """python-hcl2's output with its quotes removed (keys and string values)."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def load_hcl(path: Path) -> Any:
    with path.open() as fh:
        return plain(hcl2.load(fh))


def fake_terraform(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "terraform").write_text(f"#!{sys.executable}\n{FAKE_TERRAFORM}")
    (bin_dir / "terraform").chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_STATE": str(state)}


def run_build(
    name: str, tmp_path: Path, env: dict[str, str]
) -> list[subprocess.CompletedProcess[str]]:
    """The steps of cloudbuild/NAME.yaml that run Terraform, each against a fresh copy of the
    image's /opt/gatebench/infra/vms, with only the workspace shared (the `gatebench` steps
    write the variables file, standing in for `gatebench cloud vm-vars`)."""
    config = yaml.safe_load((ROOT / "cloudbuild" / f"{name}.yaml").read_text())
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    values = {
        "_RUN_ID": RUN_ID,
        "_RUNS_BUCKET": "gb-runs",
        "_STATE_BUCKET": "gb-tfstate",
        "_RUNNER_IMAGE": "img",
    }
    results = []
    for index, step in enumerate(config["steps"]):
        entrypoint = step.get("entrypoint", "gatebench")
        args = [_substitute(a, values, workspace, tmp_path, index) for a in step.get("args", [])]
        step_env = dict(
            item.split("=", 1)
            for item in (
                _substitute(e, values, workspace, tmp_path, index) for e in step.get("env", [])
            )
        )
        image = tmp_path / f"image-{index}"
        shutil.copytree(INFRA / "vms", image / "opt/gatebench/infra/vms")
        if entrypoint == "gatebench":
            if "vm-vars" in args:
                (workspace / "run.tfvars.json").write_text("{}")
            continue
        result = subprocess.run(
            [entrypoint, *args],
            env={**os.environ, **env, **step_env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        results.append(result)
        if result.returncode != 0:
            break
    return results


def _substitute(
    text: str, values: dict[str, str], workspace: Path, tmp_path: Path, index: int
) -> str:
    for key, value in values.items():
        text = text.replace(f"${{{key}}}", value).replace(f"${key}", value)
    text = text.replace("/workspace", str(workspace))
    return text.replace("/opt/gatebench", str(tmp_path / f"image-{index}" / "opt/gatebench"))


def calls(env: dict[str, str]) -> list[str]:
    return (Path(env["FAKE_STATE"]) / "calls.log").read_text().splitlines()


def lock(env: dict[str, str], lock_id: str, created: datetime) -> None:
    text = created.strftime("%Y-%m-%d %H:%M:%S.123456789 +0000 UTC")
    (Path(env["FAKE_STATE"]) / "default.tflock").write_text(
        json.dumps({"ID": lock_id, "Created": text})
    )


# -- defect 1: the lock file never crosses a step


@pytest.mark.parametrize(("name", "action"), [("provision", "apply"), ("teardown", "destroy")])
def test_terraform_runs_init_and_its_action_in_one_step(
    name: str, action: str, tmp_path: Path
) -> None:
    env = fake_terraform(tmp_path)
    results = run_build(name, tmp_path, env)
    assert [r.returncode for r in results] == [0], [r.stderr for r in results]
    assert (Path(env["FAKE_STATE"]) / action).read_text() == "done"
    made = calls(env)
    assert [c.split()[0] for c in made] == ["init", action]
    assert "-backend-config=bucket=gb-tfstate" in made[0].split()
    assert f"-backend-config=prefix=runs/{RUN_ID}" in made[0].split()
    assert "-var-file=" + str(tmp_path / "workspace" / "run.tfvars.json") in made[1].split()


# -- defect 6: a lock left by a provision build stopped at its timeout


def test_teardown_removes_a_lock_taken_before_it_started_and_destroys(tmp_path: Path) -> None:
    env = fake_terraform(tmp_path)
    lock(env, "1732400000123456", datetime.fromtimestamp(time.time() - 1800, UTC))
    results = run_build("teardown", tmp_path, env)
    assert results[-1].returncode == 0, results[-1].stderr
    assert [c.split()[0] for c in calls(env)] == ["init", "destroy", "force-unlock", "destroy"]
    assert calls(env)[2] == "force-unlock -force 1732400000123456"
    assert "removing the state lock 1732400000123456 taken at " in results[-1].stdout
    assert (Path(env["FAKE_STATE"]) / "destroy").exists()


def test_teardown_leaves_a_lock_taken_after_it_started_alone(tmp_path: Path) -> None:
    env = fake_terraform(tmp_path)
    lock(env, "99", datetime.fromtimestamp(time.time() + 3600, UTC))
    results = run_build("teardown", tmp_path, env)
    assert results[-1].returncode == 1
    assert [c.split()[0] for c in calls(env)] == ["init", "destroy"]
    assert re.search(
        r"terraform-step\.sh: the state lock 99 was taken at \S+ \S+ \+0000, after this step "
        r"started: another Terraform run holds it; not removing it",
        results[-1].stderr,
    ), results[-1].stderr
    assert (Path(env["FAKE_STATE"]) / "default.tflock").exists()


def test_teardown_fails_on_any_other_error_without_unlocking(tmp_path: Path) -> None:
    env = fake_terraform(tmp_path)
    (Path(env["FAKE_STATE"]) / "fail").write_text("")
    results = run_build("teardown", tmp_path, env)
    assert results[-1].returncode == 1
    assert [c.split()[0] for c in calls(env)] == ["init", "destroy"]
    assert "Error 403: permission denied" in results[-1].stdout


def test_the_step_script_refuses_an_unknown_action(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(INFRA / "vms" / "terraform-step.sh"), "plan", "x.json"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr == "usage: terraform-step.sh apply|destroy VAR_FILE (got: plan x.json)\n"


# -- defect 3: each VM role reaches exactly the objects it reads or writes

# What each Storage role allows on an object (Cloud Storage's IAM roles page).
PERMITS = {
    "roles/storage.objectViewer": {"get"},
    "roles/storage.objectCreator": {"create"},
    "roles/storage.objectUser": {"get", "create", "overwrite"},
}


def vm_object_access() -> dict[str, list[dict[str, str]]]:
    doc = load_hcl(INFRA / "vm_access.tf")
    (table,) = [block["vm_object_access"] for block in doc["locals"] if "vm_object_access" in block]
    return {
        role: [{k: str(v) for k, v in g.items()} for g in grants] for role, grants in table.items()
    }


def needs() -> dict[str, set[tuple[str, str]]]:
    """(access, object) each role's code performs in one run (src/gatebench/cloud)."""
    from gatebench.cloud._capacity import CAMPAIGN_OBJECT
    from gatebench.cloud._ingest import raw_object
    from gatebench.cloud._live import (
        LIVE_PLAN,
        answer_object,
        manifest_object,
        request_object,
        result_object,
        step_object,
    )
    from gatebench.cloud._render import (
        CAPACITY_INPUT,
        RENDER_INPUT,
        backend_error_object,
        config_error_object,
        config_object,
        run_object,
    )
    from gatebench.cloud._tester import marker, marker_of_tester
    from gatebench.vm._capacity import share_object
    from gatebench.vm._roles import CGROUP_OBJECT

    return {
        # serve_backend: backend.json, then the mock configuration it names; why it did not
        # start the backend when it could not (the CA key refused).
        "backend": {
            ("get", run_object(RUN_ID, "backend.json")),
            ("get", run_object(RUN_ID, "mock-backend.json")),
            ("create", backend_error_object(RUN_ID)),
        },
        # gateway.sh.tftpl: each rendered file of its gateway; its meter (meter_gateway)
        # reads how many testers there are, watches for every tester's load-done and uploads
        # its samples, again and again, the last time ending with meter_done.
        "gateway": {
            ("get", config_object(RUN_ID, "nginx", "nginx.conf")),
            ("get", config_object(RUN_ID, "kong", "kong.yml")),
            ("get", run_object(RUN_ID, "fleet.json")),
            ("get", marker(RUN_ID, "load-done")),
            ("get", marker(RUN_ID, marker_of_tester("load-done", 1))),
            ("create", CGROUP_OBJECT.format(run_id=RUN_ID, target="nginx")),
            ("overwrite", CGROUP_OBJECT.format(run_id=RUN_ID, target="nginx")),
            # gatebench cloud gateway-config (auth.api_key): what it renders again from, and
            # why it did not write the keys when it could not.
            ("get", run_object(RUN_ID, RENDER_INPUT)),
            ("create", config_error_object(RUN_ID, "nginx")),
            # gatebench cloud live-gateway (a scale or change-under-load run): its manifest and
            # each step's files, the tester's requests; one answer, replaced at every request,
            # and read back when the agent starts (a restarted agent answers no request twice).
            ("get", manifest_object(RUN_ID, "nginx")),
            ("get", step_object(RUN_ID, "nginx", "size-100", "nginx.conf")),
            ("get", request_object(RUN_ID, "nginx")),
            ("get", answer_object(RUN_ID, "nginx")),
            ("create", answer_object(RUN_ID, "nginx")),
            ("overwrite", answer_object(RUN_ID, "nginx")),
        },
        # run_tester: the workload, backend.json, the load build's request; writes its two
        # markers (again after a restart) and creates the raw log; tester 0 keeps its barrier
        # up until the other testers' load-done markers exist.
        "tester": {
            ("get", run_object(RUN_ID, "workload.json")),
            ("get", marker(RUN_ID, marker_of_tester("load-done", 1))),
            ("get", run_object(RUN_ID, "backend.json")),
            ("get", marker(RUN_ID, "load-request")),
            ("get", marker(RUN_ID, "load-done")),
            ("get", config_error_object(RUN_ID, "nginx")),  # reported for a silent target
            ("get", backend_error_object(RUN_ID)),  # reported for a silent baseline
            ("create", marker(RUN_ID, "ready")),
            ("overwrite", marker(RUN_ID, "ready")),
            ("create", marker(RUN_ID, "load-done")),
            ("overwrite", marker(RUN_ID, "load-done")),
            ("create", raw_object(RUN_ID, "gatling")),
            # a capacity run (provisioners._vm_capacity): its input; tester 0 creates the
            # others' shares of each probe and the campaign; tester T creates its records
            ("get", run_object(RUN_ID, CAPACITY_INPUT)),
            ("get", share_object(RUN_ID, 1, 1, "share.json")),
            ("create", share_object(RUN_ID, 1, 1, "share.json")),
            ("get", share_object(RUN_ID, 1, 1, "loadgen.records")),
            ("create", share_object(RUN_ID, 1, 1, "loadgen.records")),
            ("get", CAMPAIGN_OBJECT.format(run_id=RUN_ID)),
            ("create", CAMPAIGN_OBJECT.format(run_id=RUN_ID)),
            # a scale or change-under-load run (gatebench.vm._live_tester): its program, each
            # gateway agent's answers; its requests (one, replaced) and results (replaced by
            # a restarted tester)
            ("get", run_object(RUN_ID, LIVE_PLAN)),
            ("get", answer_object(RUN_ID, "nginx")),
            ("create", request_object(RUN_ID, "nginx")),
            ("overwrite", request_object(RUN_ID, "nginx")),
            ("create", result_object(RUN_ID, "nginx", "size-100")),
            ("overwrite", result_object(RUN_ID, "nginx", "change")),
        },
    }


def in_folder(grant: dict[str, str], name: str) -> bool:
    """``folder``: the name continues ``RUN/FOLDER/`` after the prefix (RUN one name)."""
    folder = grant.get("folder", "")
    run, _, rest = name.removeprefix(grant["prefix"]).partition("/")
    return not folder or (run != "" and rest.startswith(f"{folder}/"))


def allowed(grants: list[dict[str, str]], access: str, name: str) -> list[dict[str, str]]:
    return [
        g
        for g in grants
        if access in PERMITS[g["role"]]
        and name.startswith(g["prefix"])
        and name.endswith(g["suffix"])
        and in_folder(g, name)
    ]


def fleet_values(testers: int = 1) -> dict[str, Any]:
    """run.tfvars.json's values of a run with a backend, the gateways nginx and kong, and
    ``testers`` testers: what the write policies are made for."""
    return {
        "run_id": RUN_ID,
        "runs_bucket": "gb-runs",
        "max_run_duration_s": 3600,
        "backend": {"port": 8080},
        "gateways": {"nginx": {}, "kong": {}},
        "tester": {"count": testers},
    }


def may_write(machine: str, name: str) -> bool:
    from gatebench.cloud._writes import vm_write_rules

    return any(rule.allows(name) for rule in vm_write_rules(fleet_values())[machine])


MACHINE = {"backend": "backend", "gateway": "gw-nginx", "tester": "tester"}


def test_each_vm_role_reaches_the_objects_it_uses_and_nothing_else_it_could_harm() -> None:
    """A VM reads with its account's grants (objectViewer, by object condition: infra/
    vm_access.tf) and writes with its run's write policies (gatebench.cloud._writes), never
    with its account: every read and write its code makes is covered, and no grant or policy
    serves nothing."""
    from gatebench.cloud._writes import vm_write_rules

    table = vm_object_access()
    assert set(table) == {"backend", "gateway", "tester"}
    assert {g["role"] for grants in table.values() for g in grants} == {
        "roles/storage.objectViewer"
    }
    rules = vm_write_rules(fleet_values())
    for role, wanted in needs().items():
        grants = table[role]
        for access, name in sorted(wanted):
            if access == "get":
                assert allowed(grants, access, name), f"{role} cannot read {name}"
            else:
                assert may_write(MACHINE[role], name), f"{role} cannot {access} {name}"
        for grant in grants:  # no grant serves nothing
            assert any(grant in allowed(grants, a, n) for a, n in wanted), (
                f"{role}: {grant} is unused"
            )
        for rule in rules[MACHINE[role]]:  # no policy serves nothing
            assert any(rule.allows(n) for a, n in wanted if a != "get"), (role, rule)
    # Nothing outside runs/ is read: the deployment settings, function sources, state.
    for role, grants in table.items():
        for name in (
            "pipeline/settings.json",
            f"tfstate/runs/{RUN_ID}/default.tfstate",
            "pipeline/functions/score-1.zip",
        ):
            assert not allowed(grants, "get", name), (role, name)
    # The backend reads its two objects only, and a VM writes its own objects only.
    assert not allowed(table["backend"], "get", run_object_name("workload.json"))
    for name in (
        run_object_name("workload.json"),
        run_object_name("cgroup/kong.jsonl"),  # another gateway's samples
        run_object_name("configs/nginx/nginx.conf"),
        run_object_name("t1/tester/ready.json"),  # another tester's marker
        f"raw/{RUN_ID}/gatling-t1/simulation.log",  # another tester's raw log
        "pipeline/settings.json",
    ):
        assert not may_write("gw-nginx", name), name
        assert not may_write("tester", name) or name.startswith(f"runs/{RUN_ID}/live/"), name


def test_a_vm_writes_only_its_own_runs_objects() -> None:
    """Every write policy of every VM names an object of its run, or a folder inside its run's
    own: the same object of any other run is refused (the grants that were on every run's
    runs/*/cgroup/*.jsonl and runs/*/live/*/answer.json let one run's VM forge another's)."""
    from gatebench.cloud._writes import vm_write_rules

    other = "r-" + "f" * 20
    rules = vm_write_rules(fleet_values(testers=2))
    assert set(rules) == {"backend", "gw-nginx", "gw-kong", "tester", "tester-1"}
    for machine, machine_rules in rules.items():
        for rule in machine_rules:
            run_part = rule.value.split("/", 2)[1]
            assert run_part == RUN_ID, (machine, rule)
            assert rule.value.startswith((f"runs/{RUN_ID}/", f"raw/{RUN_ID}/")), rule
            if rule.match == "starts-with":
                assert rule.value.endswith("/") and rule.value.count("/") >= 3, rule
            elsewhere = rule.value.replace(RUN_ID, other)
            assert not any(r.allows(elsewhere) for r in machine_rules), (machine, elsewhere)
    assert may_write("gw-nginx", run_object_name("cgroup/nginx.jsonl"))
    assert not may_write("gw-nginx", f"runs/{other}/cgroup/nginx.jsonl")
    assert not may_write("gw-nginx", f"runs/{other}/live/nginx/answer.json")


def terraform_cli() -> str:
    path = shutil.which("terraform")
    if path is None:
        pytest.fail("the terraform CLI is not on PATH: install Terraform from HashiCorp")
    return path


def grant_conditions(tmp_path: Path) -> list[dict[str, str]]:
    """Each grant of infra/vm_access.tf with its IAM condition, as Terraform itself renders
    it (`terraform console` over the table and the condition's expression; no provider)."""
    text = (INFRA / "vm_access.tf").read_text()
    table = text[text.index("locals {") : text.index('resource "google_storage_bucket_iam_member"')]
    start = text.index("expression = join(") + len("expression = ")
    expression = text[start : text.index("]))", start) + 3]
    expression = expression.replace("each.value.", "g.").replace("module.runs.name", "local.b")
    (tmp_path / "main.tf").write_text(table + '\nlocals {\n  b = "gb-runs"\n}\n')
    query = f"jsonencode([for g in local.vm_object_grants : merge(g, {{ cel = {expression} }})])"
    result = subprocess.run(
        [terraform_cli(), "console", "-no-color"],
        input=" ".join(query.split()) + "\n",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "TF_IN_AUTOMATION": "1"},
        timeout=120,
    )
    assert "Error" not in result.stderr, result.stderr
    return list(json.loads(json.loads(result.stdout.strip().splitlines()[-1])))


def test_the_gateways_reads_are_conditions_iam_evaluates_as_meant(tmp_path: Path) -> None:
    """The gateway reads its run's configurations and, in a scale run, its agent's requests and
    its own last answer (runs/RUN/configs/..., runs/RUN/live/*/request.json and answer.json,
    RUN one folder name), as the rendered IAM condition decides; no VM grant writes."""
    grants = grant_conditions(tmp_path)
    assert {g["role"] for g in grants} == {"roles/storage.objectViewer"}
    gateway = [g for g in grants if g["vm"] == "gateway"]
    kind = "storage.googleapis.com/Object"
    objects = "projects/_/buckets/gb-runs/objects/"
    configs = gateway[0]["cel"]
    assert configs == (
        f'resource.name.startsWith("{objects}runs/") && '
        'resource.name.extract("/objects/runs/{run}/configs/") != "" && '
        'resource.name.extract("/objects/runs/{run}/configs/") == '
        'resource.name.extract("/objects/runs/{run}/")'
    )
    assert cel(configs, kind, f"{objects}runs/{RUN_ID}/configs/nginx/nginx.conf")
    for name in (
        f"runs/{RUN_ID}/x/configs/nginx.conf",
        f"runs/{RUN_ID}/workload.json",
        "runs/configs/nginx.conf",
    ):
        assert not cel(configs, kind, f"{objects}{name}"), name
    requests = gateway[4]["cel"]
    assert cel(requests, kind, f"{objects}runs/{RUN_ID}/live/nginx/request.json")
    for name in (
        f"runs/{RUN_ID}/live/nginx/answer.json",
        f"runs/{RUN_ID}/configs/live/request.json",
    ):
        assert not cel(requests, kind, f"{objects}{name}"), name
    answers = gateway[5]["cel"]
    assert cel(answers, kind, f"{objects}runs/{RUN_ID}/live/nginx/answer.json")
    for name in (
        f"runs/{RUN_ID}/live/nginx/request.json",
        f"runs/{RUN_ID}/configs/live/answer.json",
        f"runs/{RUN_ID}/answer.json",
    ):
        assert not cel(answers, kind, f"{objects}{name}"), name


def run_object_name(name: str) -> str:
    return f"runs/{RUN_ID}/{name}"


def test_vm_grants_are_object_conditions_and_the_only_vm_access_to_the_bucket() -> None:
    doc = load_hcl(INFRA / "vm_access.tf")
    (resource,) = [b["google_storage_bucket_iam_member"] for b in doc["resource"]]
    body = resource["vm_objects"]
    assert body["member"] == "${module.runner.vm_members[each.value.vm]}"
    assert body["bucket"] == "${module.runs.name}"
    (condition,) = body["condition"]
    expression = condition["expression"]
    assert (
        'resource.name.startsWith(\\"projects/_/buckets/${module.runs.name}/objects/${each.value.prefix}\\")'
        in expression
    )
    assert 'resource.name.endsWith(\\"${each.value.suffix}\\")' in expression
    assert (
        'resource.name.extract(\\"/objects/${each.value.prefix}{run}/${each.value.folder}/\\")'
        in expression
    )
    # No VM account in the bucket's unconditional grants.
    main = (INFRA / "main.tf").read_text()
    runs = main[main.index('module "runs"') : main.index('module "network"')]
    assert "module.runner.tester_member" not in runs and "module.runner.gateway_member" not in runs
    assert "vm_members" not in runs


# -- defect 4: one apply on an empty project


def root() -> dict[str, Any]:
    merged: dict[str, Any] = {"module": {}, "resource": {}}
    for tf in sorted(INFRA.glob("*.tf")):
        doc = load_hcl(tf)
        for block in doc.get("module", []):
            merged["module"].update(block)
        for block in doc.get("resource", []):
            for rtype, named in block.items():
                for name, body in named.items():
                    merged["resource"][f"{rtype}.{name}"] = body
        for block in doc.get("terraform", []):
            merged["terraform"] = block
    return merged


def test_storage_triggers_wait_for_the_agent_grant_and_iam_propagation() -> None:
    config = root()
    grant = "google_project_iam_member.gcs_agent_publishes_events"
    sleep = "time_sleep.event_permissions"
    assert config["resource"][grant]["role"] == "roles/pubsub.publisher"
    waited = config["resource"][sleep]
    assert waited["depends_on"] == ["${google_project_service.enabled}", f"${{{grant}}}"]
    assert int(waited["create_duration"].removesuffix("s")) >= 120  # IAM: "typically 2 minutes"
    # Every Storage event trigger lives in a module whose call waits for both.
    triggered = []
    for path in sorted((INFRA / "modules").iterdir()):
        text = "\n".join(tf.read_text() for tf in path.glob("*.tf"))
        if re.search(
            r'resource "google_eventarc_trigger"|dynamic "event_trigger"|event_trigger \{', text
        ):
            triggered.append(path.name)
    assert triggered == ["functions", "workflow"]
    for name in triggered:
        depends = config["module"][name]["depends_on"]
        assert f"${{{grant}}}" in depends and f"${{{sleep}}}" in depends, (name, depends)
    # hashicorp/time is declared and pinned to one version.
    (required,) = config["terraform"]["required_providers"]
    assert required["time"] == {"source": "hashicorp/time", "version": "0.13.1"}


# -- defect 7: every API the deployment calls is enabled


def enabled_services() -> set[str]:
    return set(load_hcl(INFRA / "apis.tf")["locals"][0]["services"])


def test_every_api_the_pipeline_calls_is_enabled() -> None:
    services = enabled_services()
    workflow = (ROOT / "workflows" / "benchmark.yaml").read_text()
    connectors = set(re.findall(r"call: googleapis\.([a-z]+)\.", workflow))
    assert connectors == {"bigquery", "cloudbuild", "firestore"}
    assert {f"{c}.googleapis.com" for c in connectors} <= services
    # The upload function signs URLs through IAM (no key): IAM Service Account Credentials.
    signer = (ROOT / "src" / "gatebench" / "cloud" / "_signing.py").read_text()
    assert "service_account_email" in signer
    assert "iamcredentials.googleapis.com" in services
    assert sorted(services) == list(enabled_services_sorted())


def enabled_services_sorted() -> list[str]:
    return list(load_hcl(INFRA / "apis.tf")["locals"][0]["services"])


# -- defects 8 and 9: images pushed by the build account; grants scoped to the run's VMs


def test_the_build_account_administers_only_the_runs_instances_and_disks() -> None:
    """The build account's Compute Engine role holds exactly the permissions the builds'
    Terraform uses (tests/cloud/computeiam.py says which call needs which, from Google's
    pages), and its condition keeps instances and disks to a run's VMs: nothing it holds acts
    on another instance or disk, or on any other resource type (instance templates, instance
    groups, images and snapshots came with the predefined role it had)."""
    from cloud.computeiam import CREATE, DELETE, READ, USED, build_grant, refusal
    from gatebench.cloud._layout import layout_for

    grant = build_grant("gb")
    assert grant.role == "${google_project_iam_custom_role.run_vms.id}"
    assert grant.permissions == USED
    layout = layout_for({"prefix": "gb", "zone": "z", "project": "p"}, RUN_ID, ["nginx"])
    subnet = "projects/p/regions/europe-central2/subnetworks/gb-bench"
    calls = CREATE + READ + DELETE
    for vm in (
        layout.vm_name("backend"),
        layout.vm_name("tester"),
        layout.vm_name("gateway", "nginx"),
    ):
        assert refusal(grant, calls, "europe-central2-a", "p", vm, subnet) is None, vm
    for other in ("prod-db", "gb-dashboard", "gbx-r-1", "r-0123"):
        found = refusal(grant, CREATE, "europe-central2-a", "p", other, subnet)
        assert found == (
            "googleapi: Error 403: Required 'compute.instances.create' permission for "
            f"'projects/p/zones/europe-central2-a/instances/{other}', forbidden"
        )
        assert refusal(grant, DELETE, "europe-central2-a", "p", other, subnet) is not None
    unrestricted = {
        p for p in grant.permissions if not p.startswith(("compute.instances.", "compute.disks."))
    }
    assert unrestricted == {"compute.subnetworks.use", "compute.zoneOperations.get"}


def test_the_predefined_instance_admin_role_would_reach_beyond_the_runs_vms() -> None:
    """What the custom role replaced: roles/compute.instanceAdmin.v1 under the same condition
    left every resource type but instances and disks open, templates and groups among them."""
    from cloud.computeiam import PREDEFINED, BuildGrant, build_grant

    condition = build_grant("gb").condition
    old = BuildGrant(
        "roles/compute.instanceAdmin.v1", PREDEFINED["roles/compute.instanceAdmin.v1"], condition
    )
    template = "projects/p/global/instanceTemplates/anything"
    assert old.allows(
        "compute.instanceTemplates.create", "compute.googleapis.com/InstanceTemplate", template
    )
    assert not build_grant("gb").allows(
        "compute.instanceTemplates.create", "compute.googleapis.com/InstanceTemplate", template
    )


def test_images_are_pushed_by_the_build_account_and_functions_built_without_a_project_role() -> (
    None
):
    config = yaml.safe_load((ROOT / "cloudbuild" / "runner-image.yaml").read_text())
    assert (
        config["options"]["logging"] == "CLOUD_LOGGING_ONLY"
    )  # required with a user-specified account
    outputs = (INFRA / "outputs.tf").read_text()
    command = outputs[outputs.index('output "runner_image_build_command"') :]
    assert "--service-account ${module.runner.build_service_account.id}" in command
    assert "--gcs-source-staging-dir gs://${module.runs.name}/pipeline/source" in command
    assert "--config cloudbuild/runner-image.yaml" in command
    runner = (INFRA / "modules" / "runner" / "main.tf").read_text()
    push = runner[runner.index('"build_pushes_runner"') :]
    assert 'role       = "roles/artifactregistry.writer"' in push.split("}")[0]
    assert "repository = google_artifact_registry_repository.this.name" in push.split("}")[0]
    assert "publishers" not in runner
    # The functions' builder: logs, its sources, and one image repository; no project role
    # beyond logging.
    functions = (INFRA / "modules" / "functions" / "main.tf").read_text()
    assert 'toset(["roles/logging.logWriter"])' in functions
    assert "roles/cloudbuild.builds.builder" not in "".join(
        p.read_text() for p in INFRA.rglob("*.tf")
    )
    assert "docker_repository = google_artifact_registry_repository.images.id" in functions
    dashboard = (INFRA / "modules" / "dashboard" / "main.tf").read_text()
    assert "docker_repository = var.builder_repository" in dashboard


def test_the_gateway_vms_read_the_runner_repository_for_their_meter() -> None:
    """The meter is the runner image: the gateway account reads that repository (and the
    Docker Hub cache for the gateway's own image), and no other Artifact Registry grant."""
    doc = load_hcl(INFRA / "modules" / "runner" / "main.tf")
    grants = {
        name: body
        for block in doc["resource"]
        for name, body in block.get("google_artifact_registry_repository_iam_member", {}).items()
    }
    readers = grants["readers"]
    assert readers["repository"] == "${google_artifact_registry_repository.this.name}"
    assert readers["role"] == "roles/artifactregistry.reader"
    assert readers["for_each"]["gateway"] == '${google_service_account.vm["gateway"].member}'
    gateway = {
        name
        for name, body in grants.items()
        if "gateway" in json.dumps(body.get("member", "")) or "gateway" in body.get("for_each", {})
    }
    assert gateway == {"readers", "gateways_pull_docker_hub"}
    assert grants["gateways_pull_docker_hub"]["repository"] == (
        "${google_artifact_registry_repository.dockerhub.name}"
    )


# -- the functions' builder reads the bucket Cloud Functions copies each source into


def test_the_functions_builder_reads_cloud_functions_source_buckets_before_any_build() -> None:
    """Cloud Functions copies every function's archive into gcf-v2-sources-NUMBER-REGION and
    the build (as the builder account) fetches it from there: a project-level grant limited to
    buckets of that name (the bucket exists only after the first deploy), waited for before
    any function (the parse ... ingest functions and the dashboard's) is built."""
    doc = load_hcl(INFRA / "modules" / "functions" / "main.tf")
    resources = {
        f"{kind}.{name}": body
        for block in doc["resource"]
        for kind, named in block.items()
        for name, body in named.items()
    }
    grant = resources["google_project_iam_member.builder_reads_function_sources"]
    assert grant["role"] == "roles/storage.objectViewer"
    assert grant["member"] == "${google_service_account.builder.member}"
    (condition,) = grant["condition"]
    expression = condition["expression"].replace(
        '\\"', '"'
    )  # HCL's escapes, as Terraform reads them
    assert expression == 'resource.name.startsWith("projects/_/buckets/gcf-v2-sources-")'
    kind = "storage.googleapis.com/Object"
    for bucket in ("gcf-v2-sources-123456789012-europe-central2", "gcf-v2-sources-1-us-east1"):
        assert cel(expression, kind, f"projects/_/buckets/{bucket}/objects/parse/source.zip")
        assert cel(expression, "storage.googleapis.com/Bucket", f"projects/_/buckets/{bucket}")
    for other in ("gb-runs-proj", "gcf-sources-1-us-east1", "x-gcf-v2-sources-1", "gcf-v2-source"):
        assert not cel(expression, kind, f"projects/_/buckets/{other}/objects/o"), other
    wait = resources["time_sleep.builder_grants"]
    assert int(wait["create_duration"].removesuffix("s")) >= 120
    assert "${google_project_iam_member.builder_reads_function_sources}" in wait["depends_on"]
    assert resources["google_cloudfunctions2_function.this"]["depends_on"] == [
        "${time_sleep.builder_grants}"
    ]
    # The dashboard's functions are built with the account the module hands out only after
    # that wait.
    outputs = load_hcl(INFRA / "modules" / "functions" / "outputs.tf")
    (builder,) = [
        o["builder_service_account"] for o in outputs["output"] if "builder_service_account" in o
    ]
    assert builder["depends_on"] == ["${time_sleep.builder_grants}"]
    dashboard = (INFRA / "modules" / "dashboard" / "main.tf").read_text()
    assert "service_account   = var.builder_service_account" in dashboard
    assert root()["module"]["dashboard"]["builder_service_account"] == (
        "${module.functions.builder_service_account}"
    )


# -- Terraform state in a versioned bucket; writes outside runs/ by the deploy alone

WRITE_ROLES = {
    "roles/storage.objectAdmin",
    "roles/storage.objectCreator",
    "roles/storage.objectUser",
    "roles/storage.admin",
}


def bucket_condition(prefix: str, bucket: str) -> str:
    """The modules/bucket conditional grant's expression for ``prefix``, as Terraform renders
    it for ``bucket``."""
    text = (INFRA / "modules" / "bucket" / "main.tf").read_text()
    (template,) = re.findall(r'expression  = "(resource\.name\.startsWith[^\n]*)"\n', text)
    expression = template.replace('\\"', '"')
    return expression.replace("${var.name}", bucket).replace("${each.value.prefix}", prefix)


def test_terraform_state_lives_in_a_versioned_bucket_the_builds_write_under_runs_only() -> None:
    config = root()
    state = config["module"]["state"]
    assert state["source"] == "./modules/bucket"
    assert state["versioning"] is True
    assert state["keep_noncurrent_days"] == "${var.state_versions_days}"
    assert state["iam"] == {"roles/storage.objectViewer": ["${module.runner.build_member}"]}
    assert state["conditional_iam"] == [
        {
            "role": "roles/storage.objectAdmin",
            "member": "${module.runner.build_member}",
            "prefix": "runs/",
        }
    ]
    bucket = (INFRA / "modules" / "bucket" / "main.tf").read_text()
    assert "versioning {\n    enabled = var.versioning\n  }" in bucket
    assert "days_since_noncurrent_time = lifecycle_rule.value" in bucket
    # The builds' Terraform finds it: workflow env → substitution → step env → backend.
    assert config["module"]["workflow"]["env"]["GATEBENCH_STATE_BUCKET"] == "${module.state.name}"
    workflow = (ROOT / "workflows" / "benchmark.yaml").read_text()
    assert '_STATE_BUCKET: ${sys.get_env("GATEBENCH_STATE_BUCKET")}' in workflow
    for name in ("provision", "teardown"):
        steps = yaml.safe_load((ROOT / "cloudbuild" / f"{name}.yaml").read_text())["steps"]
        (terraform,) = [s for s in steps if s.get("entrypoint") == "bash"]
        assert "STATE_BUCKET=$_STATE_BUCKET" in terraform["env"]
    step = (INFRA / "vms" / "terraform-step.sh").read_text()
    assert '-backend-config="bucket=${STATE_BUCKET:?}"' in step
    assert '-backend-config="prefix=runs/${RUN_ID:?}"' in step
    assert "RUNS_BUCKET" not in step
    # The deployment's own state goes there too, under deployment/ (the build cannot write it).
    outputs = (INFRA / "outputs.tf").read_text()
    assert 'prefix = \\"deployment\\"' in outputs
    expression = bucket_condition("runs/", "gb-tfstate-proj")
    kind = "storage.googleapis.com/Object"
    objects = "projects/_/buckets/gb-tfstate-proj/objects/"
    assert cel(expression, kind, f"{objects}runs/{RUN_ID}/default.tfstate")
    assert cel(expression, kind, f"{objects}runs/{RUN_ID}/default.tflock")
    assert not cel(expression, kind, f"{objects}deployment/default.tfstate")


def test_only_the_deploy_writes_the_settings_the_vms_trust() -> None:
    """The functions and the builds write run objects (runs/) only; pipeline/settings.json
    (which names the runner image and the VMs' accounts) and the functions' sources are
    written by Terraform, as whoever deploys."""
    runs = root()["module"]["runs"]
    unconditional = {role for role in runs["iam"] if role in WRITE_ROLES}
    assert unconditional == set()
    writes = [g for g in runs["conditional_iam"] if g["role"] in WRITE_ROLES]
    assert {(g["member"], g["prefix"]) for g in writes} == {
        ("${module.functions.service_account_member}", "runs/"),
        ("${module.runner.build_member}", "runs/"),
        # the testers' raw logs, with the policies the build signs: created, never replaced
        ("${module.runner.build_member}", "raw/"),
    }
    raw = [g for g in writes if g["prefix"] == "raw/"]
    assert [g["role"] for g in raw] == ["roles/storage.objectCreator"]
    expression = bucket_condition("runs/", "gb-runs-proj")
    kind = "storage.googleapis.com/Object"
    objects = "projects/_/buckets/gb-runs-proj/objects/"
    for allowed_name in (f"runs/{RUN_ID}/configs/nginx/nginx.conf", f"runs/{RUN_ID}/rows.jsonl"):
        assert cel(expression, kind, f"{objects}{allowed_name}"), allowed_name
    for denied in ("pipeline/settings.json", "pipeline/functions/score-1.zip", "site/index.html"):
        assert not cel(expression, kind, f"{objects}{denied}"), denied
    # The functions' builder reads their sources only.
    builder = [g for g in runs["conditional_iam"] if "builder_member" in g["member"]]
    assert builder == [
        {
            "role": "roles/storage.objectViewer",
            "member": "${module.functions.builder_member}",
            "prefix": "pipeline/functions/",
        }
    ]


# -- terraform destroy of the deployment


SAFEGUARDS = (
    "deletion_protection",
    "delete_protection_state",
    "deletion_policy",
    "delete_contents_on_destroy",
    "force_destroy",
)
DELETED_BY_DEFAULT = {("google_storage_bucket_object", "deletion_policy")}
"""Safeguards whose default deletes (an object's only other value, ABANDON, keeps it)."""


def test_every_deletion_safeguard_is_set_explicitly() -> None:
    """Every argument of the provider's schema that decides whether `terraform destroy` may
    delete a resource is written out (a default such as google_workflows_workflow's
    deletion_protection = true makes the runbook's destroy fail); the results follow
    protect_results, the workflow and the VMs never block a destroy."""
    from terraform_schema import provider_schema

    schemas = provider_schema()["resource_schemas"]
    seen = []
    for path in sorted(INFRA.rglob("*.tf")):
        if ".terraform" in path.parts:
            continue
        for block in load_hcl(path).get("resource", []):
            for kind, named in block.items():
                attributes = schemas.get(kind, {}).get("block", {}).get("attributes", {})
                for name, body in named.items():
                    for argument in SAFEGUARDS:
                        spec = attributes.get(argument)
                        if spec is None or not (spec.get("optional") or spec.get("required")):
                            continue
                        if (kind, argument) in DELETED_BY_DEFAULT:
                            continue
                        where = f"{path.relative_to(ROOT)}: {kind}.{name}"
                        assert argument in body, f"{where} leaves {argument} to its default"
                        seen.append((f"{kind}.{name}", argument, body[argument]))
    assert ("google_workflows_workflow.this", "deletion_protection", False) in seen
    results = {(k, a): v for k, a, v in seen if "bigquery" in k or "firestore" in k}
    assert results == {
        ("google_bigquery_dataset.this", "delete_contents_on_destroy"): "${!var.protect_results}",
        ("google_bigquery_table.measurements", "deletion_protection"): "${var.protect_results}",
        ("google_bigquery_table.summary", "deletion_protection"): False,  # a view: no data
        ("google_firestore_database.this", "delete_protection_state"): (
            '${var.protect_results ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"}'
        ),
        ("google_firestore_database.this", "deletion_policy"): (
            '${var.protect_results ? "ABANDON" : "DELETE"}'
        ),
    }
    instances = [v for k, a, v in seen if k.startswith("google_compute_instance.")]
    assert instances == [False, False, False]
    assert root()["module"]["results"]["protect_results"] == "${var.protect_results}"


# -- what a deployment keeps, and for how long


def test_images_and_run_objects_do_not_pile_up() -> None:
    """Every Artifact Registry repository has cleanup policies that really run (no dry run):
    the runner's and the functions' delete versions no tag points at and keep the 5 newest;
    the Docker Hub cache drops what no run pulled for 30 days. The runs bucket deletes raw logs
    after raw_log_retention_days and every other run object after run_retention_days."""
    repositories = {}
    for module in ("runner", "functions"):
        for block in load_hcl(INFRA / "modules" / module / "main.tf")["resource"]:
            for name, body in block.get("google_artifact_registry_repository", {}).items():
                repositories[f"{module}.{name}"] = body
    assert sorted(repositories) == ["functions.images", "runner.dockerhub", "runner.this"]
    for where, body in repositories.items():
        assert body.get("cleanup_policy_dry_run") is False, where
        policies = {p["id"]: p for p in body["cleanup_policies"]}
        if where == "runner.dockerhub":
            assert policies == {
                "drop-old-cache": {
                    "id": "drop-old-cache",
                    "action": "DELETE",
                    "condition": [{"tag_state": "ANY", "older_than": "2592000s"}],
                }
            }
            continue
        assert policies["delete-untagged"]["condition"] == [
            {"tag_state": "UNTAGGED", "older_than": "${var.untagged_image_days * 86400}s"}
        ]
        assert policies["keep-newest"]["action"] == "KEEP"
        assert policies["keep-newest"]["most_recent_versions"] == [{"keep_count": 5}]
    rules = root()["module"]["runs"]["lifecycle_rules"]
    assert rules == [
        {
            "age_days": "${var.raw_log_retention_days}",
            "prefixes": ["raw/"],
            "suffixes": ["/simulation.log"],
        },
        {"age_days": "${var.run_retention_days}", "prefixes": ["runs/"], "suffixes": []},
        {
            "age_days": "${var.build_source_retention_days}",
            "prefixes": ["pipeline/source/"],
            "suffixes": [],
        },
    ]


def defaults() -> dict[str, Any]:
    return {
        k: v.get("default")
        for block in load_hcl(INFRA / "variables.tf")["variable"]
        for k, v in block.items()
    }


def lifecycle_deletes(bucket: str, name: str, age_days: float) -> bool:
    """Whether Cloud Storage's lifecycle management deletes the live object ``name`` of the
    deployment's bucket (module ``bucket``: "runs" or "state") at ``age_days``, with every
    variable at its default: some rule's conditions all hold (age at least ``age``, the name
    starting with one of ``matches_prefix`` and ending with one of ``matches_suffix`` when they
    are set), as the bucket module writes each rule (infra/modules/bucket/main.tf)."""
    values = defaults()

    def number(text: Any) -> float:
        match = re.fullmatch(r"\$\{var\.(\w+)\}", str(text))
        return float(values[match.group(1)] if match else text)

    for rule in root()["module"][bucket].get("lifecycle_rules") or []:
        if age_days < number(rule["age_days"]):
            continue
        if rule["prefixes"] and not any(name.startswith(p) for p in rule["prefixes"]):
            continue
        if rule["suffixes"] and not any(name.endswith(x) for x in rule["suffixes"]):
            continue
        return True
    return False


def test_staged_build_sources_and_old_run_states_are_deleted_and_nothing_the_deployment_needs() -> (
    None
):
    """Every object a deployment writes again and again goes after its retention: the sources
    each `gcloud builds submit` stages (pipeline/source/), each run's state and a lock a killed
    build left (the state bucket's runs/); what the deployment itself needs stays: its settings,
    its functions' current archives (Terraform replaces one when its content changes) and its
    own state (deployment/)."""
    values = defaults()
    keep = [
        ("runs", "pipeline/settings.json"),
        ("runs", "pipeline/functions/score-0123456789abcdef0123456789abcdef.zip"),
        ("state", "deployment/default.tfstate"),
    ]
    for bucket, name in keep:
        assert not lifecycle_deletes(bucket, name, 10 * 365), name
    aged = [
        ("runs", "pipeline/source/1733000000.123456-0a1b2c.tgz", "build_source_retention_days"),
        ("state", f"runs/{RUN_ID}/default.tfstate", "run_state_retention_days"),
        ("state", f"runs/{RUN_ID}/default.tflock", "run_state_retention_days"),
        ("runs", f"runs/{RUN_ID}/fleet.json", "run_retention_days"),
        ("runs", f"raw/{RUN_ID}/gatling/simulation.log", "raw_log_retention_days"),
    ]
    for bucket, name, variable in aged:
        days = float(values[variable])
        assert not lifecycle_deletes(bucket, name, days - 1), name
        assert lifecycle_deletes(bucket, name, days), name
    # A run's state outlives its VMs by far (apply refuses a shorter retention).
    assert float(values["run_state_retention_days"]) * 86400 > 43200
    settings = root()["resource"]["google_storage_bucket_object.settings"]
    (lifecycle,) = settings["lifecycle"]
    assert any(
        p["condition"] == "${var.run_state_retention_days * 86400 > var.limits.vm_lifetime}"
        for p in lifecycle["precondition"]
    )


# -- locations tied to the region


def test_locations_default_from_the_region_and_a_zone_elsewhere_stops_the_apply() -> None:
    variables = {
        k: v for block in load_hcl(INFRA / "variables.tf")["variable"] for k, v in block.items()
    }
    assert variables["bigquery_location"]["default"] is None
    assert variables["firestore_location"]["default"] is None
    main = load_hcl(INFRA / "main.tf")
    local = {k: v for block in main["locals"] for k, v in block.items()}
    assert local["bigquery_location"] == "${coalesce(var.bigquery_location, var.region)}"
    assert local["firestore_location"] == "${coalesce(var.firestore_location, var.region)}"
    results = root()["module"]["results"]
    assert results["bigquery_location"] == "${local.bigquery_location}"
    assert results["firestore_location"] == "${local.firestore_location}"
    settings = root()["resource"]["google_storage_bucket_object.settings"]
    (lifecycle,) = settings["lifecycle"]
    conditions = [p["condition"] for p in lifecycle["precondition"]]
    assert conditions[0] == '${startswith(var.zone, "${var.region}-")}'
    assert "lower(local.bigquery_location) == lower(var.region)" in conditions[1]
    # The deployment's region reaches the parse step, which refuses a plan's zone elsewhere
    # (tests/unit/test_cloud_parse_limits.py).
    assert local["settings"]["region"] == "${var.region}"
    assert local["settings"]["limits"] == "${var.limits}"


def test_cloud_nat_exists_only_when_the_deployment_asks_for_outside_access() -> None:
    network = (INFRA / "modules" / "network" / "main.tf").read_text()
    for resource in ('"google_compute_router" "this"', '"google_compute_router_nat" "this"'):
        body = network[network.index(resource) :].split("\n}")[0]
        assert (
            "count   = var.nat ? 1 : 0" in body
            or "count                              = var.nat ? 1 : 0" in body
        ), resource
    assert root()["module"]["network"]["nat"] == "${var.outside_access}"
    variables = {
        k: v for block in load_hcl(INFRA / "variables.tf")["variable"] for k, v in block.items()
    }
    assert variables["outside_access"]["default"] is False
    main = load_hcl(INFRA / "main.tf")
    local = {k: v for block in main["locals"] for k, v in block.items()}
    assert local["settings"]["outside_access"] == "${var.outside_access}"
    # Private Google Access stays on: the APIs and Artifact Registry without NAT.
    assert "private_ip_google_access = true" in network


def test_a_gateway_vms_token_reads_configurations_not_results() -> None:
    """A gateway container on the host network can take its VM account's token from the
    metadata server: that account reads configurations, the fleet, the render input and the
    load-done markers, and the meters' samples it writes (of any run: the account serves every
    run, the documented remaining exposure), never a workload, raw log, row or the
    deployment's settings."""
    gateway = vm_object_access()["gateway"]
    other = "r-" + "f" * 20
    for name in (
        f"runs/{other}/configs/haproxy/haproxy.cfg",
        f"runs/{other}/fleet.json",
        f"runs/{other}/render-input.json",
    ):
        assert allowed(gateway, "get", name), name
    for name in (
        f"runs/{RUN_ID}/workload.json",
        f"raw/{RUN_ID}/gatling/simulation.log",
        f"runs/{RUN_ID}/rows.jsonl",
        f"runs/{RUN_ID}/backend.json",
        f"runs/{RUN_ID}/testers.jsonl",
        f"runs/{RUN_ID}/x/configs/a",  # configs/ must follow the run's own folder
        "pipeline/settings.json",
    ):
        assert not allowed(gateway, "get", name), name


# -- where the builds run


def test_builds_run_in_a_region_every_project_may_build_in() -> None:
    """Cloud Build restricts some projects (new ones among them) to six regions; the stand-ins
    act as such a project and refuse a build elsewhere. Every build of a deployment left at its
    defaults (the runs' three, through the workflow's GATEBENCH_BUILD_LOCATION, and the runner
    image's, through the output command) runs in build_region, one of those six, apart from the
    VMs' region."""
    from cloud.pipeline import deployed_workflow_env
    from cloud.standins import RESTRICTED_BUILD_REGIONS, build_location_refused

    location = deployed_workflow_env("GATEBENCH_BUILD_LOCATION")
    assert location in RESTRICTED_BUILD_REGIONS
    assert build_location_refused(f"projects/p/locations/{location}") is None
    variables = {
        k.strip('"'): v
        for block in load_hcl(INFRA / "variables.tf")["variable"]
        for k, v in block.items()
    }
    vm_region = str(variables["region"]["default"]).strip('"')
    refused = build_location_refused(f"projects/p/locations/{vm_region}")
    assert refused is not None  # the VMs' default region: a new project cannot build there
    outputs = (INFRA / "outputs.tf").read_text()
    block = outputs[outputs.index('output "runner_image_build_command"') :].split("\n}")[0]
    assert "--region ${var.build_region}" in block
    assert "var.region" not in block


def test_the_terraform_stand_in_refuses_what_the_build_role_lacks(tmp_path: Path) -> None:
    """The pipeline's Terraform stand-in applies as the build account: a role without one of
    the permissions creating an instance needs fails the apply with Compute Engine's 403."""
    from cloud.computeiam import CREATE, build_grant, refusal

    runner = tmp_path / "main.tf"
    text = (INFRA / "modules" / "runner" / "main.tf").read_text()
    runner.write_text(text.replace('    "compute.instances.setTags",\n', ""))
    grant = build_grant("gb", runner)
    vm = f"gb-{RUN_ID}-gw-nginx"
    assert refusal(grant, CREATE, "z", "p", vm, "projects/p/regions/r/subnetworks/s") == (
        "googleapi: Error 403: Required 'compute.instances.setTags' permission for "
        f"'projects/p/zones/z/instances/{vm}', forbidden"
    )


# -- what one run may cost


def console(expression: str, variables: dict[str, Any], tmp_path: Path) -> Any:
    """``expression`` as Terraform evaluates it with these variables (their values given as
    defaults of a scratch configuration; no provider)."""
    blocks = "".join(
        f"variable {json.dumps(name)} {{\n  default = {json.dumps(value)}\n}}\n"
        for name, value in variables.items()
    )
    (tmp_path / "main.tf").write_text(blocks)
    result = subprocess.run(
        [terraform_cli(), "console", "-no-color"],
        input=f"jsonencode({expression})\n",
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "TF_IN_AUTOMATION": "1"},
        timeout=120,
    )
    assert "Error" not in result.stderr, result.stderr
    return json.loads(json.loads(result.stdout.strip().splitlines()[-1]))


def test_a_dataset_location_that_cannot_hold_the_runs_bucket_stops_the_apply(
    tmp_path: Path,
) -> None:
    """A BigQuery load reads the rows file from the runs bucket, in the region: the dataset is
    there or in a multi-region containing it (the precondition, evaluated by Terraform
    itself). London and Zurich are in Europe but not in the EU multi-region."""
    settings = root()["resource"]["google_storage_bucket_object.settings"]
    (lifecycle,) = settings["lifecycle"]
    (condition,) = [
        p["condition"][2:-1]
        for p in lifecycle["precondition"]
        if "bigquery_location" in p["condition"]
    ]
    condition = condition.replace("local.bigquery_location", "var.bigquery_location")
    cases = [
        ("europe-central2", "europe-central2", True),
        ("EU", "europe-central2", True),
        ("EU", "europe-west1", True),
        ("eu", "europe-west4", True),
        ("EU", "europe-west2", False),
        ("EU", "europe-west6", False),
        ("EU", "us-central1", False),
        ("US", "us-east1", True),
        ("US", "europe-west1", False),
        ("europe-west1", "europe-west4", False),
    ]
    for location, region, holds in cases:
        variables = {"bigquery_location": location, "region": region}
        assert console(condition, variables, tmp_path) is holds, variables


def test_no_build_may_outlast_the_connector_that_waits_for_it(tmp_path: Path) -> None:
    """The workflow's build connector gives up after 86,400 s, queueing and polling included
    (workflows/benchmark.yaml, run_build): no build's limit reaches it (the variable's
    validation, evaluated by Terraform itself)."""
    variables = {
        k: v for block in load_hcl(INFRA / "variables.tf")["variable"] for k, v in block.items()
    }
    (condition,) = [
        v["condition"][2:-1]
        for v in variables["limits"]["validation"]
        if "load_s" in v["condition"] and "vm_lifetime" not in v["condition"]
    ]
    workflow = yaml.safe_load((ROOT / "workflows" / "benchmark.yaml").read_text())
    (create,) = [s["create"] for s in workflow["run_build"]["steps"] if "create" in s]
    assert create["args"]["connector_params"]["timeout"] == 86400
    base = {"provision_s": 1800, "load_s": 21600, "teardown_s": 1800}
    for key, value, holds in [
        ("load_s", 21600, True),
        ("load_s", 85800, True),
        ("load_s", 86400, False),
        ("provision_s", 100000, False),
        ("teardown_s", 86400, False),
        ("teardown_s", 59, False),
    ]:
        limits = {**base, key: value}
        assert console(condition, {"limits": limits}, tmp_path) is holds, limits


def test_a_public_upload_form_needs_both_cost_bounds(tmp_path: Path) -> None:
    """The apply stops on a public upload form without allowed_machine_types and
    max_run_cost_usd (the precondition, evaluated by Terraform itself); both reach the parse
    step through the settings (tests/unit/test_cloud_parse_limits.py enforces them)."""
    settings = root()["resource"]["google_storage_bucket_object.settings"]
    (lifecycle,) = settings["lifecycle"]
    (condition,) = [
        p["condition"][2:-1] for p in lifecycle["precondition"] if "public_upload" in p["condition"]
    ]
    cases = [
        (False, [], None, True),
        (True, [], None, False),
        (True, ["n2-standard-2"], None, False),
        (True, [], 5, False),
        (True, ["n2-standard-2"], 5, True),
    ]
    for public, allowed, bound, holds in cases:
        variables = {
            "public_upload": public,
            "allowed_machine_types": allowed,
            "max_run_cost_usd": bound,
        }
        assert console(condition, variables, tmp_path) is holds, variables
    local = {k: v for block in load_hcl(INFRA / "main.tf")["locals"] for k, v in block.items()}
    assert local["settings"]["allowed_machine_types"] == "${var.allowed_machine_types}"
    assert local["settings"]["max_run_cost_usd"] == "${var.max_run_cost_usd}"
    defaults_ = defaults()
    assert (defaults_["allowed_machine_types"], defaults_["max_run_cost_usd"]) == ([], None)


# -- what fires the ingest function


def objects_of_a_run() -> list[str]:
    """Every kind of object a run writes to the runs bucket, by the code's own names."""
    from gatebench.cloud._ingest import CGROUP_OBJECT, TESTERS_OBJECT, raw_object
    from gatebench.cloud._live import answer_object, request_object, result_object
    from gatebench.cloud._objects import VARS_OBJECT, rows_object
    from gatebench.cloud._render import backend_error_object, config_error_object, run_object
    from gatebench.cloud._tester import marker, marker_of_tester
    from gatebench.vm._capacity import share_object

    run = RUN_ID
    return [
        raw_object(run, "gatling"),
        raw_object(run, "gatling-t1"),
        run_object(run, "workload.json"),
        run_object(run, "fleet.json"),
        run_object(run, "configs/nginx/nginx.conf"),
        VARS_OBJECT.format(run_id=run),
        CGROUP_OBJECT.format(run_id=run, target="nginx"),
        TESTERS_OBJECT.format(run_id=run),
        marker(run, "ready"),
        marker(run, marker_of_tester("load-done", 1)),
        marker(run, "load-request"),
        request_object(run, "nginx"),
        answer_object(run, "nginx"),
        result_object(run, "nginx", "s1"),
        share_object(run, 3, 1, "loadgen.records"),
        config_error_object(run, "nginx"),
        backend_error_object(run),
        rows_object(run),
        "site/index.html",
        "pipeline/settings.json",
        "pipeline/source/1733000000.1-0a1b.tgz",
    ]


def test_only_a_raw_log_fires_the_ingest_function() -> None:
    """Ingest reads raw logs only (RAW_LOG); an Eventarc trigger on Cloud Storage's direct
    events fires for every object of its bucket, meters' samples every 5 s included. The
    bucket's notification publishes what is finalized under raw/ alone, and that topic
    triggers the function."""
    from cloud.notifications import PUBLISHED, ingest_trigger
    from gatebench.cloud._ingest import RAW_LOG

    trigger = ingest_trigger()
    assert trigger.event_type == PUBLISHED
    assert trigger.topic == "${google_pubsub_topic.raw_logs.id}"
    fired = [name for name in objects_of_a_run() if trigger.fires(name)]
    assert fired == [name for name in objects_of_a_run() if RAW_LOG.match(name)]
    assert len(fired) == 2
    assert not trigger.fires(fired[0], "OBJECT_DELETE")
    (notification,) = trigger.notifications
    assert (notification["payload_format"], notification["event_types"]) == (
        "JSON_API_V1",
        ["OBJECT_FINALIZE"],
    )


def test_the_ingest_function_reads_the_object_from_the_notification() -> None:
    from cloud.notifications import pubsub_event
    from gatebench.cloud import object_from_event
    from gatebench.cloud._ingest import raw_object

    name = raw_object(RUN_ID, "gatling")
    _, body = pubsub_event("gb-runs", name, "17")
    ref = object_from_event(json.loads(body))
    assert (ref.bucket, ref.name, ref.generation) == ("gb-runs", name, "17")
