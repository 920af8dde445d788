"""hclfmt (canonical formatting) and tflint (its bundled Terraform ruleset, every rule) over
infra/. Both are built by scripts/setup.d/60-terraform-tools.sh, so these tests are marked
integration: `make test` installs them, `make test-fast` leaves them out."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
BIN = ROOT / ".cache" / "bin"

pytestmark = pytest.mark.integration


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(
            f"{path} is missing: run `scripts/setup.sh terraform-tools` (or `make setup-all`)"
        )
    return str(path)


def test_terraform_files_are_hclfmt_clean() -> None:
    files = sorted(str(p) for p in INFRA.rglob("*.tf"))
    assert len(files) > 20
    result = subprocess.run(
        [tool("hclfmt"), "-require-no-change", *files], capture_output=True, text=True
    )
    assert result.returncode == 0, (
        f"not canonically formatted; run `.cache/bin/hclfmt -w`:\n{result.stderr}"
    )


def test_tflint_finds_nothing() -> None:
    result = subprocess.run(
        [
            tool("tflint"),
            "--recursive",
            "--config",
            str(INFRA / ".tflint.hcl"),
            "--format",
            "compact",
        ],
        cwd=INFRA,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_tflint_does_report_problems(tmp_path: Path) -> None:
    """The linter is really linting: an untyped, undocumented, unused variable is reported."""
    (tmp_path / "main.tf").write_text(
        'terraform {\n  required_version = ">= 1.7.0"\n}\n\nvariable "unused" {}\n'
    )
    result = subprocess.run(
        [tool("tflint"), "--config", str(INFRA / ".tflint.hcl"), "--format", "compact"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "terraform_typed_variables" in result.stdout
    assert "terraform_unused_declarations" in result.stdout
