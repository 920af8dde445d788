"""The capacity search on the examples, as a user runs it: ``gatebench capacity`` of the petstore
and auction descriptions through nginx and HAProxy (one worker each, their vendors' production
settings) and the baseline, two repetitions, the plans' own objectives and workloads.

What a reader needs beside each knee: how each search ended (a knee found, or a bound and
what set it), the probes it took (at most 10 is the target, from a cold start too), the worst
schedule lag of the load generator and its busiest CPU share (it must not be what limits), the
cores as the run split them, and what the rest of the machine used meanwhile. Each example is
one run (``gatebench.local.runner.run_local`` of the capacity kind, the code behind the command).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from gatebench.core.model import RunKind
from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.kinds.capacity import RESULT_KIND, CapacityResult, SearchResult
from gatebench.local.runner import run_local
from gatebench.run import RunOptions

from ._machine import CpuWindow

TITLE = "Capacity of the examples: petstore and auction through nginx and HAProxy"
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ("petstore", "auction")
GATEWAYS = ("nginx", "haproxy")
REPETITIONS = 2
SEED = 7


def _searches(run_dir: Path) -> dict[tuple[str, str], list[SearchResult]]:
    """(target, endpoint) → its searches in order, from the run's capacity-searches.jsonl;
    the load generator's ceiling searches under ("ceiling", endpoint)."""
    out: dict[tuple[str, str], list[SearchResult]] = {}
    path = run_dir / "capacity-searches.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "target" in entry or "ceiling" in entry:
            target, workload = (
                entry.get("target", "ceiling"),
                entry.get("workload", entry.get("ceiling")),
            )
            out.setdefault((str(target), str(workload)), []).append(
                SearchResult.from_dict(entry["search"])
            )
    return out


def _ceiling(rate: float | None, found: list[SearchResult], max_rate: float) -> str:
    """The generator's ceiling on one endpoint, or why there is no number (a ceiling above
    what the plan offers is not one the search could find)."""
    if rate is not None:
        return f"{rate:,.0f}/s"
    if found and found[-1].status == "at-max":
        return f"≥ {max_rate:,.0f}/s (the plan's max_rate held)"
    return "not measured" if not found else f"none ({found[-1].status})"


MARKS = {"within": "✓", "breached": "✗", "tester-bound": "T"}


def trail(result: SearchResult) -> str:
    """A search's probes in order: rate, ✓ held / ✗ broke / T tester-bound, what an overloaded
    probe served, C before a confirmation: ``100 ✓ · 6,400 ✗ (served 4,210) · C 4,105 ✓``."""
    out = []
    for p in result.probes:
        rate, mark = p.request.rate, MARKS.get(p.verdict.outcome, "?")
        served = p.metrics.served_rate or p.metrics.achieved_rate
        said = f" (served {served:,.0f})" if mark != "✓" and served < 0.9 * rate else ""
        out.append(f"{'C ' if p.request.kind == 'confirm' else ''}{rate:,.0f} {mark}{said}")
    return " · ".join(out)


def _one(example: str, results: Path) -> tuple[list[str], list[str]]:
    spec = ROOT / "examples" / example / "openapi.yaml"
    read = read_spec(str(spec))
    assert read.api is not None, [p.format() for p in read.errors]
    section = dict(read.benchmark, gateways=list(GATEWAYS))
    plan = build_plan(section, read.api)
    started = time.monotonic()
    with CpuWindow() as cpu:
        outcome = run_local(
            RunKind.CAPACITY,
            read.api,
            plan,
            spec_uri=str(spec),
            spec_sha256="0" * 64,
            options=RunOptions(results_dir=results, seed=SEED, repetitions=REPETITIONS),
        )
    wall = time.monotonic() - started
    record = outcome.record
    stored = outcome.run_dir / f"{RESULT_KIND}.jsonl"  # the journal's line: {"key", **result}
    assert stored.is_file(), f"{example}: the run stored no result ({record.status})"
    (line,) = stored.read_text(encoding="utf-8").splitlines()
    result = CapacityResult.from_dict(json.loads(line))
    searches = _searches(outcome.run_dir)
    env: dict[str, Any] = record.environment
    settings = plan.capacity_settings()
    rows = []
    for e in result.endpoints:
        for s in e.summaries:
            found = searches.get((s.target, e.workload), [])
            probes = [p for r in found for p in r.probes]
            lag = max((p.metrics.lag_p99_ms for p in probes), default=0.0)
            engine = max((p.metrics.engine_cpu_pct for p in probes), default=0.0)
            ends = ", ".join(f"{r.status} {r.knee:,.0f}/s" if r.knee else r.status for r in found)
            rows.append(
                f"| {example} | {e.workload} | {s.target} | {s.label()} | {ends} | "
                f"{', '.join(str(len(r.probes)) for r in found)} | {lag:.2f} ms | "
                f"{engine:.0f} % |"
            )
    ceilings = env.get("capacity_ceiling") or {}
    notes = [
        f"- **{example}** ({record.status.value}, {wall / 60:.1f} min, others' CPU "
        f"{cpu.others_pct:.0f} % of the machine): cores {env.get('cpus', 'unrecorded')}; "
        f"the generator's ceiling per endpoint "
        + ", ".join(
            f"{w} {_ceiling(c, searches.get(('ceiling', w), []), settings[w].max_rate)}"
            for w, c in sorted(ceilings.items())
        )
        + f"; stopped: {result.stop}.",
        *(f"  - {e.workload}: {e.verdict}." for e in result.endpoints),
        "  - the searches' probes in order (✓ held, ✗ broke, T tester-bound, C a confirmation, "
        "with what an overloaded probe served):",
        *(
            f"    - {workload} · {target} · rep {k}: {trail(r)}"
            for (target, workload), found in sorted(searches.items())
            for k, r in enumerate(found, 1)
        ),
    ]
    return rows, notes


def run() -> str:
    os.environ.setdefault("AUCTION_TOKEN", "bench-token")
    rows: list[str] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for example in EXAMPLES:
            r, n = _one(example, Path(tmp))
            rows += r
            notes += n
    return "\n".join(
        [
            f"`gatebench capacity examples/EXAMPLE/openapi.yaml --gateways "
            f"{','.join(GATEWAYS)} --repetitions {REPETITIONS} --seed {SEED}`, each example's "
            "own objective and workloads (its plan's `capacity:` defaults: p99 ≤ 50 ms, errors ≤ "
            "0.1 %). Per endpoint and target: what it carries (the mean knee with its 95 % "
            "interval; ≥ a bound and what set it; noisy with both figures), how each repetition's "
            "search ended, the probes each took, the worst schedule lag p99 of the load generator "
            "over the target's probes and its busiest share of its cores.",
            "",
            "| example | endpoint | target | carries within the objective | searches | probes | "
            "worst lag p99 | engine CPU |",
            "|---|---|---|---|---|---:|---:|---:|",
            *rows,
            "",
            *notes,
        ]
    )
