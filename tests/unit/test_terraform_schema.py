"""infra/ against the Google provider's own schema (tests/terraform_schema.py, the vendored
schema in tests/data/terraform/), shown to catch each kind of mistake on a mutated copy, and
`terraform fmt -check -recursive infra` with the terraform CLI."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from terraform_schema import ROOT, SCHEMA, check_tree, provider_schema

INFRA = ROOT / "infra"


def filter_script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "filter_provider_schema", ROOT / "scripts" / "filter_provider_schema.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_resource_and_data_block_fits_the_provider_schema() -> None:
    problems = check_tree(INFRA)
    assert [str(p) for p in problems] == []


def test_the_vendored_schema_is_exactly_the_types_infra_uses() -> None:
    schema = provider_schema()
    used = filter_script().used_types(INFRA)
    assert set(schema["resource_schemas"]) == used["resource"], (
        "rerun scripts/filter_provider_schema.py on the provider schema"
    )
    assert set(schema["data_source_schemas"]) == used["data"]
    assert len(used["resource"]) >= 20
    assert schema["version"] == "6.50.0"
    assert schema["provider"] == "registry.terraform.io/hashicorp/google"
    assert "terraform providers schema -json, hashicorp/google 6.50.0" in schema["source"]
    # A real provider schema, not a hand-written one: the instance block as Google ships it.
    instance = schema["resource_schemas"]["google_compute_instance"]["block"]
    assert instance["attributes"]["machine_type"]["required"] is True
    assert instance["block_types"]["boot_disk"]["min_items"] == 1


def mutated(tmp_path: Path, relative: str, old: str, new: str) -> list[str]:
    copy = tmp_path / "infra"
    shutil.copytree(INFRA, copy)
    path = copy / relative
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1))
    return [str(p) for p in check_tree(copy, root=tmp_path)]


def line_of(relative: str, needle: str) -> int:
    text = (INFRA / relative).read_text()
    return text[: text.index(needle)].count("\n") + 1


def test_a_misspelled_argument_is_named_with_file_line_and_resource(tmp_path: Path) -> None:
    line = line_of("vms/main.tf", 'resource "google_compute_instance" "backend"')
    problems = mutated(
        tmp_path, "vms/main.tf", "  machine_type = var.backend", "  machine_typ = var.backend"
    )
    assert problems == [
        f"infra/vms/main.tf:{line}: google_compute_instance.backend: unknown argument "
        "'machine_typ' (did you mean 'machine_type'?)",
        f"infra/vms/main.tf:{line}: google_compute_instance.backend: missing required "
        "argument 'machine_type'",
    ]


def test_a_misspelled_nested_argument_and_block(tmp_path: Path) -> None:
    line = line_of("vms/main.tf", 'resource "google_compute_instance" "backend"')
    problems = mutated(
        tmp_path, "vms/main.tf", "      image = local.image", "      imag = local.image"
    )
    assert problems == [
        f"infra/vms/main.tf:{line}: google_compute_instance.backend: unknown argument "
        "boot_disk.initialize_params.'imag' (did you mean 'image'?)"
    ]
    problems = mutated(
        tmp_path / "b", "vms/main.tf", "  shielded_instance_config {", "  shielded_instance_confg {"
    )
    assert problems == [
        f"infra/vms/main.tf:{line}: google_compute_instance.backend: unknown argument "
        "'shielded_instance_confg' (did you mean 'shielded_instance_config'?)"
    ]


def test_types_required_blocks_read_only_attributes_and_block_syntax(tmp_path: Path) -> None:
    bucket = line_of("modules/bucket/main.tf", 'resource "google_storage_bucket" "this"')
    assert mutated(
        tmp_path / "1",
        "modules/bucket/main.tf",
        "uniform_bucket_level_access = true",
        'uniform_bucket_level_access = "yes"',
    ) == [
        f"infra/modules/bucket/main.tf:{bucket}: google_storage_bucket.this: "
        "uniform_bucket_level_access: expected bool, got the string 'yes'"
    ]
    assert mutated(
        tmp_path / "2",
        "modules/bucket/main.tf",
        'storage_class               = "STANDARD"',
        "storage_class = [1]",
    ) == [
        f"infra/modules/bucket/main.tf:{bucket}: google_storage_bucket.this: "
        "storage_class: expected string, got a list"
    ]
    assert mutated(
        tmp_path / "3",
        "modules/bucket/main.tf",
        "  force_destroy               = false",
        '  self_link = "x"',
    ) == [
        f"infra/modules/bucket/main.tf:{bucket}: google_storage_bucket.this: "
        "'self_link' is read-only (computed by the provider)"
    ]
    instance = line_of("vms/main.tf", 'resource "google_compute_instance" "tester"')
    backend = line_of("vms/main.tf", 'resource "google_compute_instance" "backend"')
    text = (INFRA / "vms" / "main.tf").read_text()
    tester = text[text.index('resource "google_compute_instance" "tester"') :]
    boot = tester[tester.index("  boot_disk {") : tester.index("  network_interface {")]
    assert mutated(
        tmp_path / "4",
        "vms/main.tf",
        tester[: tester.index(boot) + len(boot)],
        tester[: tester.index(boot)],
    ) == [
        f"infra/vms/main.tf:{instance}: google_compute_instance.tester: missing required block 'boot_disk'"
    ]
    assert mutated(
        tmp_path / "5",
        "vms/main.tf",
        "  shielded_instance_config {",
        "  shielded_instance_config = {",
    ) == [
        f"infra/vms/main.tf:{backend}: "
        "google_compute_instance.backend: 'shielded_instance_config' is a block: write "
        "`shielded_instance_config { ... }`"
    ]


def test_unknown_types_and_other_providers(tmp_path: Path) -> None:
    problems = mutated(
        tmp_path / "1",
        "vms/main.tf",
        'resource "google_compute_instance" "backend"',
        'resource "google_compute_instanse" "backend"',
    )
    line = line_of("vms/main.tf", 'resource "google_compute_instance" "backend"')
    assert problems == [
        f"infra/vms/main.tf:{line}: google_compute_instanse.backend: google_compute_instanse is "
        f"not in the vendored provider schema {SCHEMA.name} (did you mean "
        "'google_compute_instance'?); if it is a real type, rerun scripts/filter_provider_schema.py"
    ]
    sleep = line_of("iam.tf", 'resource "time_sleep" "event_permissions"')
    assert mutated(tmp_path / "2", "iam.tf", "create_duration =", "create_duraton =") == [
        f"infra/iam.tf:{sleep}: time_sleep.event_permissions: unknown argument 'create_duraton' "
        "(did you mean 'create_duration'?)"
    ]


def test_terraform_fmt_finds_nothing_to_change() -> None:
    terraform = shutil.which("terraform")
    if terraform is None:
        pytest.fail(
            "the terraform CLI is not on PATH: install Terraform from HashiCorp "
            "(https://developer.hashicorp.com/terraform/install; docs/cloud.md, 'First deploy')"
        )
    result = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", "-no-color", str(INFRA)],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TF_CLI_CONFIG_FILE": "/dev/null", "HOME": "/nonexistent"},
        timeout=120,
    )
    assert result.returncode == 0, (
        f"not formatted (run `terraform fmt -recursive infra`): {result.stdout}{result.stderr}"
    )


def test_terraform_fmt_does_report_a_badly_formatted_file(tmp_path: Path) -> None:
    terraform = shutil.which("terraform")
    assert terraform, (
        "the terraform CLI is not on PATH (see test_terraform_fmt_finds_nothing_to_change)"
    )
    (tmp_path / "main.tf").write_text('locals {\n  a = 1\n  bb  = "x"\n}\n')
    result = subprocess.run(
        [terraform, "fmt", "-check", "-recursive", "-no-color", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TF_CLI_CONFIG_FILE": "/dev/null", "HOME": "/nonexistent"},
        timeout=120,
    )
    assert result.returncode == 3
    assert result.stdout == "main.tf\n"


def test_the_checker_reads_every_block(tmp_path: Path) -> None:
    """Each resource and data block is checked: one unknown argument added to each is reported
    once per block."""
    copy = tmp_path / "infra"
    shutil.copytree(INFRA, copy)
    count = 0
    for tf in copy.rglob("*.tf"):
        text = tf.read_text()
        new, n = re.subn(
            r'^((?:resource|data) "[a-z0-9_]+" "[a-z0-9_]+" \{\n)',
            r"\1  bogus_argument = 1\n",
            text,
            flags=re.M,
        )
        tf.write_text(new)
        count += n
    problems = [str(p) for p in check_tree(copy, root=tmp_path)]
    assert len(problems) == count >= 40
    assert all(p.endswith("unknown argument 'bogus_argument'") for p in problems), problems[:3]
    assert json.loads(SCHEMA.read_text())["version"] == "6.50.0"
