"""What `gcloud builds submit` uploads for the runner image (cloudbuild/runner-image.yaml), as
.gcloudignore selects it (gitignore syntax; `#!include:.gitignore` adds what git ignores): no
Terraform working folder, state, plan or variables file, no virtualenv or cache. The same
selection is the context of the runner image `make test` builds (tests/cloud/image.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cloud.image import uploaded_files
from paths import ROOT


def test_gcloudignore_leaves_terraform_state_and_caches_out(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in (".gitignore", ".gcloudignore"):
        shutil.copy(ROOT / name, tmp_path / name)
    kept = [
        "src/gatebench/cli/__init__.py",
        "infra/main.tf",
        "infra/vms/main.tf",
        "gatling/pom.xml",
    ]
    left_out = [
        "infra/.terraform/providers/registry.terraform.io/hashicorp/google/x",
        "infra/vms/.terraform/modules/modules.json",
        "infra/terraform.tfstate",
        "infra/terraform.tfstate.backup",
        "infra/terraform.tfvars",
        "infra/prod.tfvars.json",
        "infra/plan.tfplan",
        ".venv/bin/python",
        ".cache/podman/storage/x",
        "build/functions/parse.zip",
        "gatling/target/test-classes/x.class",
        "results/r-1/run.json",
    ]
    for name in kept + left_out:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    uploaded = uploaded_files(tmp_path)
    assert sorted(uploaded) == sorted(kept)  # nor .gitignore / .gcloudignore themselves
