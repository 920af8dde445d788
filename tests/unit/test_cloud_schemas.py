"""Google's own schemas over the cloud files, offline: workflows/benchmark.yaml against the
Workflows JSON schema (tests/data/gcp/workflows/, vendored with its source) and every
cloudbuild/*.yaml against the Cloud Build schema that check-jsonschema ships
(``--builtin-schema vendor.cloudbuild``). Each checker is shown to catch a mutation: a
misspelled workflow step key, an unknown Cloud Build field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "workflows" / "benchmark.yaml"
WORKFLOWS_SCHEMA = ROOT / "tests" / "data" / "gcp" / "workflows" / "cloud-workflows.schema.json"
CHECK_JSONSCHEMA = str(Path(sys.executable).parent / "check-jsonschema")
BUILD_CONFIGS = sorted((ROOT / "cloudbuild").glob("*.yaml"))


def _pointer(path: Any) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _leaves(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """The innermost errors: the schema's top level is a oneOf (a map with main, or a list of
    steps), whose own message is the whole document; what went wrong is inside."""
    if not error.context:
        return [error]
    return [leaf for sub in error.context for leaf in _leaves(sub)]


def workflow_errors(document: Any) -> list[str]:
    """``POINTER: message`` for each problem, the deepest (most specific) first."""
    schema = json.loads(WORKFLOWS_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    leaves = [leaf for error in validator.iter_errors(document) for leaf in _leaves(error)]
    leaves.sort(key=lambda e: -len(e.absolute_path))
    deepest = [e for e in leaves if len(e.absolute_path) == len(leaves[0].absolute_path)]
    return sorted({f"{_pointer(e.absolute_path)}: {e.message}" for e in deepest})


def test_the_workflow_passes_googles_workflows_schema() -> None:
    assert workflow_errors(yaml.safe_load(WORKFLOW.read_text())) == []


def test_the_workflows_schema_catches_a_misspelled_step_key() -> None:
    text = WORKFLOW.read_text()
    step = (
        "    - create:\n"
        "        call: googleapis.cloudbuild.v1.projects.locations.builds.create\n"
        "        args:\n"
    )
    assert text.count(step) == 1
    mutated = yaml.safe_load(text.replace(step, step.replace("        args:", "        arg:")))
    index = next(
        i for i, s in enumerate(mutated["run_build"]["steps"]) if next(iter(s)) == "create"
    )
    assert workflow_errors(mutated) == [
        f"/run_build/steps/{index}/create: Additional properties are not allowed "
        "('arg' was unexpected)"
    ]
    # A misspelled key in a subworkflow's nested try is caught too.
    nested = text.replace(
        "                  max_retries: 5\n", "                  max_retry: 5\n", 1
    )
    assert nested != text
    pipeline = next(
        i for i, s in enumerate(mutated["main"]["steps"]) if next(iter(s)) == "run_pipeline"
    )
    pointer = f"/main/steps/{pipeline}/run_pipeline/except/steps/2/status_failed/retry"
    assert f"{pointer}: Additional properties are not allowed ('max_retry' was unexpected)" in (
        workflow_errors(yaml.safe_load(nested))
    )


def check_cloudbuild(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHECK_JSONSCHEMA, "--builtin-schema", "vendor.cloudbuild", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_build_config_passes_the_cloud_build_schema() -> None:
    assert [p.name for p in BUILD_CONFIGS] == [
        "load.yaml",
        "provision.yaml",
        "runner-image.yaml",
        "teardown.yaml",
    ]
    result = check_cloudbuild(*BUILD_CONFIGS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok -- validation done"


def test_the_cloud_build_schema_catches_an_unknown_field(tmp_path: Path) -> None:
    config = yaml.safe_load((ROOT / "cloudbuild" / "provision.yaml").read_text())
    config["steps"][0]["entrypiont"] = "terraform"
    mutated = tmp_path / "provision.yaml"
    mutated.write_text(yaml.safe_dump(config, sort_keys=False))
    result = check_cloudbuild(mutated)
    assert result.returncode == 1
    expected = "$.steps[0]: Additional properties are not allowed ('entrypiont' was unexpected)"
    assert f"{mutated}::{expected}" in result.stdout
