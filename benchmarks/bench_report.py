"""Results at scale: a 10-gateway × 20-endpoint × 10-repetition run (plus the baseline,
2,200 measurements) through the SQLite store, the summary and score, and every report format.

Targets (the reason this benchmark exists): writing a measurement durably must not slow a
run down (≥ 200 committed writes/s, one fsync each), and a report of a large run must come
back while a person waits (summary + score < 1 s, each format < 2 s). Each step runs five
times; the table shows the median and the range.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from gatebench.core.report import build_report, render
from gatebench.store import SqliteStore

from ._machine import CpuWindow

TITLE = "Results: store, score and reports for a 10 × 20 × 10 run"
ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5
TARGETS = {
    "SQLite: write 2,200 measurements (each committed, synchronous=FULL)": 11.0,
    "SQLite: read them back": 1.0,
    "summary + score (paper profile)": 1.0,
    "summary + score (robust profile)": 1.0,
    "render html": 2.0,
    "render json": 2.0,
    "render csv": 2.0,
    "render md": 2.0,
}


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run() -> str:
    sys.path.insert(0, str(ROOT / "tests"))  # the synthetic runs are a test helper
    from synthetic import synthetic_run

    gateways = [f"gw{i:02d}" for i in range(10)]
    workloads = [f"endpoint-{i:02d}" for i in range(20)]
    record, measurements = synthetic_run(gateways, workloads, 10)
    work = ROOT / ".cache" / "bench-report"
    results: dict[str, list[float]] = {name: [] for name in TARGETS}
    sizes: dict[str, int] = {}
    with CpuWindow() as cpu:
        for i in range(REPEATS):
            shutil.rmtree(work, ignore_errors=True)
            with SqliteStore(work / f"store-{i}.sqlite") as store:
                store.create_run(record)

                def write(store: SqliteStore = store) -> None:
                    for m in measurements:
                        store.put_measurement(m)

                results[
                    "SQLite: write 2,200 measurements (each committed, synchronous=FULL)"
                ].append(_time(write))
                loaded: list[object] = []
                results["SQLite: read them back"].append(
                    _time(
                        lambda store=store, loaded=loaded: loaded.append(
                            store.measurements(record.run_id)
                        )
                    )
                )
            reports = {}
            for profile in ("paper", "robust"):
                results[f"summary + score ({profile} profile)"].append(
                    _time(
                        lambda profile=profile, reports=reports: reports.__setitem__(
                            profile, build_report(record, measurements, profile=profile, now=0.0)
                        )
                    )
                )
            for fmt in ("html", "json", "csv", "md"):
                out: list[str] = []
                results[f"render {fmt}"].append(
                    _time(
                        lambda fmt=fmt, out=out, reports=reports: out.append(
                            render(reports["paper"], fmt)
                        )
                    )  # type: ignore[arg-type]
                )
                sizes[fmt] = len(out[0].encode())
    shutil.rmtree(work, ignore_errors=True)

    lines = [
        f"{len(measurements):,} synthetic measurements "
        f"({len(gateways)} gateways + baseline × {len(workloads)} workloads × 10 repetitions); "
        f"{REPEATS} runs of each step. Other processes used {cpu.others_pct:.0f} % of the CPU "
        "during the benchmark.",
        "",
        "| step | median | range | target | met |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for name, times in results.items():
        median = statistics.median(times)
        target = TARGETS[name]
        lines.append(
            f"| {name} | {median:.3f} s | {min(times):.3f}–{max(times):.3f} s | "
            f"< {target:g} s | {'yes' if median < target else 'NO'} |"
        )
    write_median = statistics.median(
        results["SQLite: write 2,200 measurements (each committed, synchronous=FULL)"]
    )
    lines += [
        "",
        f"Durable writes: {len(measurements) / write_median:,.0f} measurements/s (target ≥ 200/s).",
        "",
        "Report sizes: "
        + ", ".join(f"{fmt} {size / 1024:,.0f} KiB" for fmt, size in sizes.items())
        + ".",
    ]
    return "\n".join(lines)
