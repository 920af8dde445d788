"""What running workflows/benchmark.yaml needs around it in tests: the environment Terraform
gives the workflow (infra/main.tf, module "workflow"), with the build configs read from
cloudbuild/*.yaml exactly as Terraform encodes them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = (ROOT / "workflows" / "benchmark.yaml").read_text()


def build_config(name: str) -> str:
    """cloudbuild/NAME.yaml as Terraform passes it: jsonencode(yamldecode(file(...)))."""
    return json.dumps(yaml.safe_load((ROOT / "cloudbuild" / f"{name}.yaml").read_text()))


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
        "GATEBENCH_BUILD_LOCATION": "europe-west1",
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
