"""What running workflows/benchmark.yaml needs around it in tests: the environment Terraform
gives the workflow (infra/main.tf, module "workflow"), with the build configs read from
cloudbuild/*.yaml exactly as Terraform encodes them, and the values a deployment leaves at
their defaults read from infra/ itself (the builds' region)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import hcl2
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = (ROOT / "workflows" / "benchmark.yaml").read_text()


def build_config(name: str) -> str:
    """cloudbuild/NAME.yaml as Terraform passes it: jsonencode(yamldecode(file(...)))."""
    return json.dumps(yaml.safe_load((ROOT / "cloudbuild" / f"{name}.yaml").read_text()))


@functools.cache
def deployed_workflow_env(name: str) -> str:
    """The value infra/main.tf gives the workflow's environment variable ``name`` in a
    deployment that leaves every variable at its default (``var.X``: its default in
    infra/variables.tf)."""
    infra = ROOT / "infra"
    with (infra / "main.tf").open() as handle:
        main = hcl2.load(handle)
    (workflow,) = [b[k] for b in main["module"] for k in b if k.strip('"') == "workflow"]
    expression = str(workflow["env"][name]).strip('"')
    match = re.fullmatch(r"\$\{var\.(\w+)\}", expression)
    if match is None:
        raise ValueError(f"{name} = {expression}: only var.NAME is read here")
    with (infra / "variables.tf").open() as handle:
        variables = {k.strip('"'): v for b in hcl2.load(handle)["variable"] for k, v in b.items()}
    return str(variables[match.group(1)]["default"]).strip('"')


def workflow_env(
    *,
    parse: str,
    render: str,
    score: str,
    runs_bucket: str = "gb-runs",
    state_bucket: str = "gb-tfstate",
    **overrides: str,
) -> dict[str, str]:
    values = {
        "GOOGLE_CLOUD_PROJECT_ID": "proj",
        "GOOGLE_CLOUD_WORKFLOW_EXECUTION_ID": "exec-1",
        "GATEBENCH_FIRESTORE_DATABASE": "(default)",
        "GATEBENCH_SPEC_PREFIX": "specs/",
        "GATEBENCH_PARSE_URL": parse,
        "GATEBENCH_RENDER_URL": render,
        "GATEBENCH_SCORE_URL": score,
        "GATEBENCH_RUNS_BUCKET": runs_bucket,
        "GATEBENCH_STATE_BUCKET": state_bucket,
        "GATEBENCH_BQ_DATASET": "gatebench",
        "GATEBENCH_BQ_TABLE": "measurements",
        "GATEBENCH_BUILD_LOCATION": deployed_workflow_env("GATEBENCH_BUILD_LOCATION"),
        "GATEBENCH_BUILD_SERVICE_ACCOUNT": "projects/proj/serviceAccounts/gb-build@proj.iam.gserviceaccount.com",
        "GATEBENCH_RUNNER_IMAGE": "europe-docker.pkg.dev/proj/gb/runner:0.1.0",
        "GATEBENCH_BUILD_PROVISION": build_config("provision"),
        "GATEBENCH_BUILD_LOAD": build_config("load"),
        "GATEBENCH_BUILD_TEARDOWN": build_config("teardown"),
        "GATEBENCH_PROVISION_TIMEOUT_S": "1800",
        "GATEBENCH_LOAD_TIMEOUT_S": "7200",
        "GATEBENCH_TEARDOWN_TIMEOUT_S": "1800",
        "GATEBENCH_METER_WAIT_S": "60",
    }
    values.update(overrides)
    return values
