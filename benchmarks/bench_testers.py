"""Several testers: the local ceiling with 1 and 2 Gatling testers (each in a network namespace
of its own, gatebench.local._fanout) against nginx serving a static file, and an estimate of the
cloud ceiling per tester count and machine type derived from it.

On 2 cores two JVMs share the cores the server also needs, so the local figure cannot scale;
what it shows is the cost of the split (start skew, CPU per request) and that the merge counts
every request. The cloud estimate assumes what a fleet of separate VMs gives and this machine
cannot: testers that do not share CPUs.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from gatebench.core.stats import phase_stats
from gatebench.core.testers import MergedPhase
from gatebench.core.workload import build_schedule, render_workload
from gatebench.local._fanout import run_testers
from gatebench.local._netns import namespaces_problem
from gatebench.local.ceiling import SERVER_LABEL, start_ceiling_server
from gatebench.local.procs import Supervisor

from ._machine import CpuWindow
from .bench_ground_truth import items_plan, read_workload
from .bench_headroom import _Share

TITLE = "Several testers: the local ceiling with 1 and 2 testers, and the cloud estimate"
ROUNDS = 3
SECONDS = 5
USERS = 50
TESTER_COUNTS = (1, 2)
CLOUD_MACHINES = (("n2-standard-2", 2), ("n2-standard-4", 4), ("n2-standard-8", 8))
CLOUD_TESTERS = (1, 2, 4)


class _Collect:
    def __init__(self) -> None:
        self.merged: dict[int, MergedPhase] = {}

    def on_event(self, event: Any) -> None:
        pass

    def on_phase(self, result: Any) -> None:
        raise AssertionError("split phases arrive through on_merged")

    def on_merged(self, merged: MergedPhase) -> None:
        self.merged[merged.result.phase] = merged

    def tick(self) -> None:
        pass


def _document(url: str) -> tuple[dict[str, Any], int]:
    """A 4 s warm-up at 50 users, then 5 s at 50 concurrent users (split across the testers)."""
    api, plan = items_plan(
        gateways=[],
        baseline=True,
        repetitions=1,
        warmup={"duration": "4s"},
        backend={"url": url},
        workloads=[dict(read_workload(USERS, SECONDS), name=f"u{USERS}")],
    )
    schedule = build_schedule(plan, {"baseline": url}, seed=1)
    measured = next(p.index for p in schedule.phases if p.measured)
    return render_workload(plan, api, schedule), measured


def _round(
    testers: int, doc: dict[str, Any], measured: int, sup: Supervisor, pid: int, work: Path
) -> dict[str, Any]:
    hooks = _Collect()
    folder = work / f"n{testers}-{len(list(work.iterdir()))}"
    with CpuWindow() as cpu, _Share(pid) as server:
        run_testers(
            doc,
            testers,
            folder,
            hooks,
            supervisor=sup,
            cpu_groups={"server": [pid]},
            target_groups=lambda target: ["server"],
        )
    merged = hooks.merged[measured]
    s = phase_stats(merged.result.sample)
    usage = merged.result.cpu
    return {
        "rate": s.throughput,
        "requests": [share.requests for share in merged.shares],
        "skew": merged.start_skew_ms,
        "tester_cpu": usage.tester_pct if usage else None,
        "server_cpu": usage.target_pct if usage else None,
        "others": max(0.0, cpu.others_pct - server.pct),
        "flags": merged.flags,
    }


def run() -> str:
    problem = namespaces_problem()
    if problem is not None:
        return f"Not measured: several local testers need network namespaces, and {problem}."
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    rows = []
    rates: dict[int, list[float]] = {n: [] for n in TESTER_COUNTS}
    others: list[float] = []
    per_vcpu: list[float] = []
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        proc, url = start_ceiling_server(sup, work / "nginx")
        doc, measured = _document(url)
        for r in range(1, ROUNDS + 1):
            order = TESTER_COUNTS if r % 2 else tuple(reversed(TESTER_COUNTS))
            for n in order:
                f = _round(n, doc, measured, sup, proc.pid, work)
                rates[n].append(f["rate"])
                others.append(f["others"])
                if n == 1 and f["tester_cpu"]:
                    # req/s per vCPU the tester used (2 cores here = 100 %)
                    per_vcpu.append(f["rate"] / (f["tester_cpu"] / 100 * (os.cpu_count() or 2)))
                rows.append(
                    f"| {r} | {n} | {f['rate']:,.0f} | {' / '.join(map(str, f['requests']))} | "
                    f"{f['skew']:.0f} | {_pct(f['tester_cpu'])} | {_pct(f['server_cpu'])} | "
                    f"{f['others']:.0f} % | {', '.join(f['flags']) or '–'} |"
                )
    med = {n: statistics.median(v) for n, v in rates.items()}
    rate_vcpu = statistics.median(per_vcpu) if per_vcpu else 0.0
    estimate = [
        f"| {machine} ({vcpus} vCPU) | "
        + " | ".join(f"{n * vcpus * rate_vcpu:,.0f}" for n in CLOUD_TESTERS)
        + " |"
        for machine, vcpus in CLOUD_MACHINES
    ]
    return "\n".join(
        [
            f"Target: {SERVER_LABEL} (gatebench.local.ceiling). Each round runs the same document "
            f"(4 s warm-up at {USERS} users, then {SECONDS} s at {USERS} concurrent users) "
            "with 1 and with 2 Gatling testers (`gatebench run --testers N`: each a JVM in a "
            "network namespace of its own, reaching nginx over veth and NAT; the phase split "
            "by the rule in gatebench.core.testers, the logs merged); the order alternates. "
            "Requests: each tester's count; skew: the spread of the testers' first requests. "
            "CPU: share of the machine (2 cores = 100 %); testers' CPU is their sum; others: "
            "processes that are not part of the benchmark (the machine is shared).",
            "",
            "| round | testers | req/s (merged) | requests per tester | start skew ms | "
            "testers' CPU | nginx CPU | others' CPU | flags |",
            "|---:|---:|---:|---|---:|---:|---:|---:|---|",
            *rows,
            "",
            f"Median: 1 tester {med[1]:,.0f} req/s, 2 testers {med[2]:,.0f} req/s "
            f"({med[2] / med[1] if med[1] else 0:.2f}×). On 2 cores the second JVM takes CPU "
            "from the first and from nginx: the local ceiling does not grow with testers here, "
            "and each run above is tester-bound by construction (`gatebench run` flags it). "
            f"Other processes used {min(others):.0f}–{max(others):.0f} % of the machine "
            "during these rounds, so single rounds swing widely; compare medians, and rerun "
            "on a quiet machine before trusting a ratio. The testers meet before every phase "
            '(docs/engine.md, "Several testers"), so the start skew is what remains after '
            "that barrier; throughput is over the union of their windows, so a skew lowers "
            "the merged rate rather than hiding requests.",
            "",
            "**Cloud estimate** (not a measurement): the 1-tester rounds above give "
            f"{rate_vcpu:,.0f} req/s per vCPU the tester used (median of req/s ÷ the tester's "
            f"CPU in vCPUs; the rounds ranged {min(per_vcpu, default=0):,.0f}–"
            f"{max(per_vcpu, default=0):,.0f}). It is an upper bound: Gatling does not scale "
            "linearly over a VM's vCPUs, and an n2 vCPU is one hyperthread. Assuming each tester VM can spend all its vCPUs on Gatling at that "
            "rate, that testers on separate VMs add up (they share no CPU; the merge adds "
            "their records), and that the gateway is not the limit, the ceiling of N testers "
            "on a machine type with V vCPUs is N × V × that rate. Network is not the limit at "
            "these rates (n2 egress is 10 Gbps from 2 vCPUs; a static 1 KiB response at "
            "100,000 req/s is under 1 Gbps). A gateway measured within 20 % of the run's own "
            "ceiling reading is flagged tester-bound either way.",
            "",
            "| tester machine | "
            + " | ".join(f"{n} tester{'s' if n > 1 else ''}" for n in CLOUD_TESTERS)
            + " |",
            "|---|" + "---:|" * len(CLOUD_TESTERS),
            *estimate,
        ]
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f} %"
