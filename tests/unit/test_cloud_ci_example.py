"""The example CI job (.github/workflows/gatebench.yml) uses commands that exist: its
`gatebench cloud check` line parses with the real CLI, and it starts the workflow with the
fields benchmark.yaml reads, outside the spec prefix the upload trigger starts runs for."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from gatebench.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def steps() -> list[dict[str, str]]:
    job = yaml.safe_load((ROOT / ".github" / "workflows" / "gatebench.yml").read_text())
    return list(job["jobs"]["benchmark"]["steps"])


def test_the_check_command_parses_with_the_real_cli() -> None:
    (line,) = [
        line.strip()
        for step in steps()
        for line in step.get("run", "").splitlines()
        if line.strip().startswith("gatebench cloud check")
    ]
    argv = shlex.split(line.replace('"$BASELINE"', "baseline.json"))[1:]
    args = build_parser().parse_args(argv)
    assert args.result == "result.json"
    assert args.tolerance == 2.0


def test_the_run_uses_the_fields_the_workflow_reads_outside_the_spec_prefix() -> None:
    run = next(s["run"] for s in steps() if "gcloud workflows run" in s.get("run", ""))
    assert '\\"bucket\\"' in run
    assert '\\"name\\": \\"ci/' in run
    assert "--format='value(result)'" in run
    upload = next(s["run"] for s in steps() if "gcloud storage cp" in s.get("run", ""))
    assert re.search(r"gs://\$UPLOADS_BUCKET/ci/", upload)
