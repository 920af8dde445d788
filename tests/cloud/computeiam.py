"""What the build account may do in Compute Engine, read from infra/, and what Terraform's
``google_compute_instance`` asks of it: the Terraform stand-in (tests/cloud/localterraform.py)
refuses an apply or a destroy the account could not make, as Compute Engine answers 403.

The grant is read from infra/modules/runner (python-hcl2): its role (a custom role's
``permissions``, or a predefined role from :data:`PREDEFINED`) and its IAM condition, evaluated
on each call's resource (:func:`cel`). What each call needs comes from Google's pages, per
argument of the resource as infra/vms/main.tf sets it:

- creating an instance ("Create and start a Compute Engine instance", required permissions):
  ``compute.instances.create``; ``compute.disks.create`` for its new boot disk (named as the
  instance); ``compute.subnetworks.use`` for its subnetwork; ``compute.instances.setMetadata``,
  ``setTags``, ``setLabels`` and ``setServiceAccount`` for the metadata, network tags, labels
  and service account it is created with (actAs on that account is a grant of its own);
- reading it back (the provider's refresh, and its wait on the operation):
  ``compute.instances.get``, ``compute.disks.get`` (the boot disk's settings),
  ``compute.zoneOperations.get``;
- deleting it with its auto-delete boot disk ("Delete a Compute Engine instance"):
  ``compute.instances.delete``, ``compute.disks.delete``.

The public Container-Optimized OS image is readable by anyone (its own project's grant), so
no permission of this project is needed for it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hcl2

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "infra" / "modules" / "runner" / "main.tf"
INSTANCE = "compute.googleapis.com/Instance"
DISK = "compute.googleapis.com/Disk"
SUBNETWORK = "compute.googleapis.com/Subnetwork"
OPERATION = "compute.googleapis.com/ZoneOperation"

PREDEFINED = {
    # The IAM roles reference for Compute Engine, roles/compute.instanceAdmin.v1 ("Compute
    # Instance Admin (v1)"): full control of instances, instance groups, disks, snapshots and
    # images, and of instance templates; the permissions the builds use, and a sample of the
    # rest, on resource types its old condition left unrestricted.
    "roles/compute.instanceAdmin.v1": frozenset(
        {
            "compute.disks.create",
            "compute.disks.delete",
            "compute.disks.get",
            "compute.instances.create",
            "compute.instances.delete",
            "compute.instances.get",
            "compute.instances.setLabels",
            "compute.instances.setMetadata",
            "compute.instances.setServiceAccount",
            "compute.instances.setTags",
            "compute.subnetworks.use",
            "compute.zoneOperations.get",
            "compute.images.create",
            "compute.images.delete",
            "compute.instanceGroupManagers.create",
            "compute.instanceGroups.create",
            "compute.instanceGroups.delete",
            "compute.instanceTemplates.create",
            "compute.instanceTemplates.delete",
            "compute.snapshots.create",
            "compute.snapshots.delete",
        }
    ),
}

CREATE = (
    ("compute.instances.create", INSTANCE),
    ("compute.disks.create", DISK),
    ("compute.subnetworks.use", SUBNETWORK),
    ("compute.instances.setMetadata", INSTANCE),
    ("compute.instances.setTags", INSTANCE),
    ("compute.instances.setLabels", INSTANCE),
    ("compute.instances.setServiceAccount", INSTANCE),
)
READ = (
    ("compute.instances.get", INSTANCE),
    ("compute.disks.get", DISK),
    ("compute.zoneOperations.get", OPERATION),
)
DELETE = (("compute.instances.delete", INSTANCE), ("compute.disks.delete", DISK))
USED = frozenset(p for p, _ in CREATE + READ + DELETE)
"""Every permission the builds' Terraform needs: what the role should hold, and no more."""


def cel(expression: str, resource_type: str, name: str) -> bool:
    """The subset of IAM Conditions' CEL the conditions use: ==, !=, &&, ||, parentheses,
    string literals, resource.type, resource.name.startsWith/endsWith/extract("...{x}")."""

    def extract(value: str, template: str) -> str:
        # The text after the template's part before ``{x}`` up to the first occurrence of its
        # part after ``{x}`` (to the end when there is none); "" when either is missing.
        prefix, _, rest = template.partition("{")
        suffix = rest.split("}", 1)[1]
        if prefix not in value:
            return ""
        after = value.split(prefix, 1)[1]
        if not suffix:
            return after
        return after.split(suffix, 1)[0] if suffix in after else ""

    python = (
        expression.replace("&&", " and ")
        .replace("||", " or ")
        .replace("resource.type", "resource_type")
    )
    python = re.sub(r'resource\.name\.extract\(("[^"]*")\)', r"extract(resource_name, \1)", python)
    python = python.replace("resource.name", "resource_name")
    python = python.replace(".startsWith(", ".startswith(").replace(".endsWith(", ".endswith(")
    scope = {"extract": extract, "resource_type": resource_type, "resource_name": name}
    return bool(eval(python, {"__builtins__": {}}, scope))


def _plain(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class BuildGrant:
    role: str
    permissions: frozenset[str]
    condition: str
    """The condition with the deployment's prefix filled in."""

    def allows(self, permission: str, resource_type: str, name: str) -> bool:
        return permission in self.permissions and cel(self.condition, resource_type, name)


@functools.cache
def build_grant(prefix: str, runner: Path = RUNNER) -> BuildGrant:
    """The build account's Compute Engine grant of a deployment with ``prefix``."""
    with runner.open() as handle:
        doc = _plain(hcl2.load(handle))
    resources = {
        (kind, name): body
        for block in doc["resource"]
        for kind, named in block.items()
        for name, body in named.items()
    }
    grant = resources[("google_project_iam_member", "build_instances")]
    role = str(grant["role"])
    custom = re.fullmatch(r"\$\{google_project_iam_custom_role\.(\w+)\.(id|name)\}", role)
    if custom is not None:
        permissions = frozenset(
            resources[("google_project_iam_custom_role", custom.group(1))]["permissions"]
        )
    elif role in PREDEFINED:
        permissions = PREDEFINED[role]
    else:
        raise ValueError(f"the build account's Compute Engine role {role}: unknown here")
    local = {k: v for block in doc["locals"] for k, v in block.items()}
    (condition,) = grant["condition"]
    assert condition["expression"] == "${local.run_vms_only}", condition
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', local["run_vms_only"].split("[", 1)[1])
    expression = " || ".join(
        p.replace('\\"', '"').replace("${local.run_vm_prefix}", f"{prefix}-r-") for p in parts
    )
    return BuildGrant(role, permissions, expression)


def refusal(
    grant: BuildGrant,
    calls: tuple[tuple[str, str], ...],
    zone: str,
    project: str,
    vm: str,
    subnetwork: str,
) -> str | None:
    """Compute Engine's 403 for the first of ``calls`` on VM ``vm`` the grant does not allow;
    None when every one is allowed."""
    names = {
        INSTANCE: f"projects/{project}/zones/{zone}/instances/{vm}",
        DISK: f"projects/{project}/zones/{zone}/disks/{vm}",
        SUBNETWORK: subnetwork.split("/v1/", 1)[-1],
        OPERATION: f"projects/{project}/zones/{zone}/operations/operation-{vm}",
    }
    for permission, resource_type in calls:
        if not grant.allows(permission, resource_type, names[resource_type]):
            return (
                f"googleapi: Error 403: Required '{permission}' permission for "
                f"'{names[resource_type]}', forbidden"
            )
    return None


def vm_names(values: dict[str, Any]) -> list[str]:
    """The instances infra/vms/main.tf makes of run.tfvars.json's ``values``."""
    base = f"{values['prefix']}-{values['run_id']}"
    names = [f"{base}-backend"] if values.get("backend") else []
    names += [f"{base}-gw-{g}" for g in sorted(values.get("gateways") or {})]
    tester = values.get("tester")
    count = int(tester.get("count") or 1) if tester else 0
    names += [f"{base}-tester" + ("" if t == 0 else f"-{t}") for t in range(count)]
    return names


def terraform_refusal(values: dict[str, Any], command: str) -> str | None:
    """Compute Engine's answer to the build account when Terraform applies (``apply``: create
    and read back every instance) or destroys (``destroy``: read and delete) the run's VMs;
    None when every call is allowed."""
    grant = build_grant(str(values["prefix"]))
    calls = CREATE + READ if command == "apply" else READ + DELETE
    for vm in vm_names(values):
        found = refusal(
            grant,
            calls,
            str(values["zone"]),
            str(values["project"]),
            vm,
            str(values.get("subnetwork") or ""),
        )
        if found is not None:
            verb = "creating" if command == "apply" else "deleting"
            return f"Error: Error {verb} instance: {found}"
    return None


__all__ = [
    "CREATE",
    "DELETE",
    "PREDEFINED",
    "READ",
    "USED",
    "BuildGrant",
    "build_grant",
    "cel",
    "refusal",
    "terraform_refusal",
    "vm_names",
]
