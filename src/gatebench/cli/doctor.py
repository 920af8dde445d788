"""``gatebench doctor``: which gateways, engines and tools are present here (gatebench.local.doctor)."""

from __future__ import annotations

import argparse

from gatebench.local._resources import build_dir
from gatebench.local.doctor import Diagnosis, diagnose

SECTIONS = (
    ("run", "Every run needs"),
    ("engine", "Load engines"),
    ("backend", "Backend"),
    ("gateway", "Gateways"),
    ("tool", "Build tools"),
)


def report_lines(diagnosis: Diagnosis) -> list[str]:
    lines = [f"Build folder: {build_dir()}"]
    width = max(len(c.name) for c in diagnosis.checks)
    for kind, title in SECTIONS:
        checks = diagnosis.of(kind)
        lines.append("")
        lines.append(f"{title}:")
        for c in checks:
            lines.append(f"  {c.status:<10}  {c.name:<{width}}  {c.detail}")
    gateways = diagnosis.of("gateway")
    ready = [c.name for c in gateways if c.usable]
    lines.append("")
    lines.append(
        f"{len(ready)} of {len(gateways)} gateways can run here"
        + (f": {', '.join(ready)}." if ready else ".")
    )
    lines.extend(f"Nothing can run here: {why}." for why in diagnosis.why_nothing_runs)
    return lines


def run(args: argparse.Namespace) -> int:
    diagnosis = diagnose()
    for line in report_lines(diagnosis):
        print(line)
    return 0 if diagnosis.can_run else 1
