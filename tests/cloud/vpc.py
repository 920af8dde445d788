"""The benchmark network's firewall rules (infra/modules/network), read with python-hcl2 so the
local VMs' router enforces what Terraform creates, never restated here.

On Compute Engine a VPC firewall rule lets traffic from VMs with a source tag reach VMs with a
target tag on the listed ports; everything else between VMs is dropped (the network has no
other ingress rule). Tags are the module's ``local.tags`` (one per role: tester, gateway,
backend), ports ``var.ports`` (their defaults: the deployment passes none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hcl2

ROOT = Path(__file__).resolve().parents[2]
NETWORK = ROOT / "infra" / "modules" / "network"


@dataclass(frozen=True)
class FirewallRule:
    name: str
    sources: frozenset[str]
    """Roles whose VMs may connect."""
    targets: frozenset[str]
    """Roles whose VMs accept."""
    ports: frozenset[int]

    def allows(self, source: str, target: str, port: int) -> bool:
        return source in self.sources and target in self.targets and port in self.ports


def _load(folder: Path) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(folder.glob("*.tf")):
        with path.open() as handle:
            docs.append(hcl2.load(handle))
    return docs


def _role(expression: str) -> str:
    match = re.fullmatch(r"\$\{local\.tags\.(\w+)\}", expression)
    if match is None:
        raise ValueError(f"{expression}: expected a role's tag (local.tags.ROLE)")
    return match.group(1)


def _ports(name: str, port: str, defaults: dict[str, int]) -> set[int]:
    """One entry of an ``allow`` block's ``ports``: ``tostring(var.ports.NAME)``, or the range
    ``"${var.ports.FIRST}-${var.ports.LAST}"`` (Compute Engine's ``FIRST-LAST``)."""
    port = port[1:-1] if len(port) >= 2 and port[0] == port[-1] == '"' else port
    single = re.fullmatch(r"\$\{tostring\(var\.ports\.(\w+)\)\}", port)
    if single is not None:
        return {defaults[single.group(1)]}
    span = re.fullmatch(r"\$\{var\.ports\.(\w+)\}-\$\{var\.ports\.(\w+)\}", port)
    if span is not None:
        first, last = defaults[span.group(1)], defaults[span.group(2)]
        if last < first:
            raise ValueError(f"{name}: the range {port} is empty")
        return set(range(first, last + 1))
    raise ValueError(f"{name}: port {port} is not var.ports.NAME nor a range of two")


def firewall_rules(folder: Path = NETWORK) -> list[FirewallRule]:
    """Every ``google_compute_firewall`` of the network module, tags as roles, ports as the
    numbers ``var.ports`` defaults to."""
    docs = _load(folder)
    defaults: dict[str, int] = {}
    for doc in docs:
        for block in doc.get("variable", []):
            body = block.get('"ports"') or block.get("ports")
            if body:
                found = re.findall(r"(\w+) = optional\(number, (\d+)\)", str(body["type"]))
                defaults.update({k: int(v) for k, v in found})
    rules = []
    for doc in docs:
        for block in doc.get("resource", []):
            for kind, named in block.items():
                if kind.strip('"') != "google_compute_firewall":
                    continue
                for name, body in named.items():
                    if name.startswith("__"):
                        continue
                    if str(body["direction"]).strip('"') != "INGRESS" or "source_ranges" in body:
                        raise ValueError(f"{name}: only tag-to-tag ingress rules are modelled")
                    ports: set[int] = set()
                    for allow in body["allow"]:
                        for port in allow["ports"]:
                            ports |= _ports(name, port, defaults)
                    rules.append(
                        FirewallRule(
                            name.strip('"'),
                            frozenset(_role(t) for t in body["source_tags"]),
                            frozenset(_role(t) for t in body["target_tags"]),
                            frozenset(ports),
                        )
                    )
    return rules


__all__ = ["FirewallRule", "firewall_rules"]
