"""The backend's ceiling, measured with wrk: it must out-run the gateways in front of it.

wrk is the only generator here that uses less CPU than the server it loads (FACTS), so it
shows the most a server can do on this machine. Each server is loaded three times for a few
seconds with 50 connections; the table gives the median and the range, and the CPU other
processes used meanwhile. nginx in front of the same backend is measured the same way for
comparison: the backend's figure must be well above the gateway's.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from gatebench.core.spec import load_spec
from gatebench.local.backends import start_backend
from gatebench.local.procs import Supervisor, free_port

from ._machine import CpuWindow

TITLE = "Backend ceiling (wrk)"
ROOT = Path(__file__).resolve().parents[1]
SECONDS = 4
CONNECTIONS = 50
RUNS = 3


def _wrk(url: str, headers: list[str]) -> float:
    argv = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{SECONDS}s"]
    for h in headers:
        argv += ["-H", h]
    out = subprocess.run([*argv, url], capture_output=True, text=True, timeout=60, check=True)
    match = re.search(r"Requests/sec:\s+([\d.]+)", out.stdout)
    if not match:
        raise RuntimeError(f"wrk printed no rate:\n{out.stdout}{out.stderr}")
    return float(match.group(1))


def _measure(url: str, headers: list[str]) -> tuple[list[float], float]:
    rates = []
    others = []
    for _ in range(RUNS):
        with CpuWindow() as cpu:
            rates.append(_wrk(url, headers))
        others.append(cpu.others_pct)
    return rates, statistics.mean(others)


def run() -> str:
    if shutil.which("wrk") is None:
        return "wrk is not installed (scripts/setup.d/apt-packages.txt installs it)."
    from gatebench.core.fairness import gateway_target, stated_cpu_policy
    from gatebench.local.provisioners import boot_gateway

    rows = []
    auth = ["Authorization: Bearer bench"]
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _, auction_port = start_backend(sup, "auction", work)
        mock_cfg = work / "mock.json"
        api = load_spec(ROOT / "examples/auction/openapi.yaml").api
        assert api is not None
        import json

        from gatebench.core.backend import mock_config
        from gatebench.core.plan import Backend

        mock_cfg.write_text(json.dumps(mock_config(api, Backend("mock"))))
        _, mock_port = start_backend(sup, "mock", work, extra_args=["-config", str(mock_cfg)])
        cases = [
            (
                "backend auction mode, GET /auctions/7",
                f"http://127.0.0.1:{auction_port}/auctions/7",
            ),
            ("backend mock mode, GET /auctions/7", f"http://127.0.0.1:{mock_port}/auctions/7"),
        ]
        gw_port = free_port()
        target = gateway_target(
            stated_cpu_policy(1),
            workdir=str(work / "nginx"),
            listen_port=gw_port,
            backend_url=f"http://127.0.0.1:{auction_port}",
        )
        boot_gateway("nginx", api, target, sup)
        cases.append(
            (
                "nginx (1 worker) → auction backend, GET /auctions/7",
                f"http://127.0.0.1:{gw_port}/auctions/7",
            )
        )
        for label, url in cases:
            rates, others = _measure(url, auth)
            rows.append((label, statistics.median(rates), min(rates), max(rates), others))
    lines = [
        f"`wrk -t2 -c{CONNECTIONS} -d{SECONDS}s`, {RUNS} runs each, loopback; the median and the "
        "range of the runs, and the CPU other processes used meanwhile (% of the machine).",
        "",
        "| server | req/s (median) | range | others' CPU |",
        "|---|---:|---:|---:|",
    ]
    for label, median, low, high, others in rows:
        lines.append(f"| {label} | {median:,.0f} | {low:,.0f}–{high:,.0f} | {others:.0f} % |")
    backend = min(r[1] for r in rows[:2])
    gateway = rows[2][1]
    lines += [
        "",
        f"The backend's slower mode serves {backend / gateway:.1f}× what nginx in front of it "
        "serves on the same machine: the backend is not what limits a gateway's figures. "
        "(wrk itself shares the 2 cores, so every figure is a ceiling of this machine, not of "
        "the server alone.)",
    ]
    return "\n".join(lines)
