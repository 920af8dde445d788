"""Score and ingest read a raw log of any length in memory that does not grow with it.

The score and ingest functions have 1 GiB (infra/modules/functions); Cloud Run stops an
instance that goes over. A phase keeps counts per latency (Gatling's whole milliseconds), never
a list of every request (gatebench.core.stats), and the log is read a chunk at a time
(gatebench.core.simlog), so 10^7 requests take what 10^5 take. Each size is ingested in a
process of its own, through the function the ingest step calls
(gatebench.core.measure.ingest_simlog), from a log made as it is read (tests/cloud/simlog.py:
never whole in memory, here or there); the process reports its resident memory before and its
peak after. The figures must also be exact: every percentile, the mean and the standard deviation
are checked against the distribution the log was made from (request i takes i mod 997 ms).

What the bound is not: a claim about speed (this machine reads ~400,000 records a second; the
test times nothing) or about Cloud Run's own overhead beside the interpreter."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TESTS = Path(__file__).resolve().parents[1]
SPREAD = 997
GROWTH_BOUND_MB = 48.0
"""What ingesting may add to the process's peak memory, whatever the log's length. Before
counts per latency, 10^7 latencies alone took over 300 MB (a list of 10^7 numbers)."""

INGEST = """
import io, json, sys
from cloud.simlog import RequestStream
from gatebench.core.measure import ingest_simlog
from gatebench.core.plan import Injection
from gatebench.core.workload import FORMAT, injection_json

requests, spread = int(sys.argv[1]), int(sys.argv[2])
phase = {
    "id": "p0000", "index": 0, "target": "nginx", "workload": "w", "repetition": 1,
    "measured": True, "seed": 1, "before": [], "params": {},
    "injection": injection_json(Injection("sequential", requests=requests)),
    "request": {"base_url": "http://gw.invalid:8000"},
}
document = {"format": FORMAT, "seed": 1, "secret_env": [], "skip_file": "", "phases": [phase]}
log = io.BufferedReader(RequestStream("p0000", requests, spread), 1 << 20)
status = open("/proc/self/status").read()
before = int(status.split("VmRSS:")[1].split()[0])  # resident now, kB
(measured,) = ingest_simlog(log, document, "r-" + "0" * 20)
# this process's own peak (VmHWM): getrusage's ru_maxrss also counts the parent's memory at
# the fork, as large as the pytest that started us
after = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
print(json.dumps({"before_kb": before, "after_kb": after, "measurement": measured.to_dict()}))
"""


def ingest(requests: int) -> dict[str, Any]:
    path = os.environ.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", INGEST, str(requests), str(SPREAD)],
        capture_output=True,
        text=True,
        timeout=500,
        cwd=TESTS,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), path]))},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def expected(requests: int) -> dict[str, float]:
    """The figures of ``requests`` latencies i mod SPREAD, from their counts, each computed
    here on its own (nearest rank: the smallest value with at least p % at or below it)."""
    counts = {v: requests // SPREAD + (1 if v < requests % SPREAD else 0) for v in range(SPREAD)}
    counts = {v: c for v, c in counts.items() if c}
    mean = Fraction(sum(v * c for v, c in counts.items()), requests)
    variance = sum((v - mean) ** 2 * c for v, c in counts.items()) / requests
    out: dict[str, float] = {"mean": float(mean), "stddev": math.sqrt(variance)}
    for p in (50, 90, 95, 99):
        rank, seen = math.ceil(p * requests / 100), 0
        for v in sorted(counts):
            seen += counts[v]
            if seen >= rank:
                out[f"p{p}"] = float(v)
                break
    last_end = max(i + i % SPREAD for i in range(max(0, requests - SPREAD), requests))
    out["duration_s"] = last_end / 1000.0
    out["max"] = float(max(counts))
    return out


@pytest.mark.parametrize("requests", [100_000, 10_000_000])
def test_a_raw_log_is_ingested_exactly_in_bounded_memory(requests: int) -> None:
    result = ingest(requests)
    growth_mb = (result["after_kb"] - result["before_kb"]) / 1024
    print(f"{requests:,} requests: peak memory grew by {growth_mb:.1f} MB while ingesting")
    assert growth_mb < GROWTH_BOUND_MB
    m = result["measurement"]
    want = expected(requests)
    assert (m["requests"], m["ok"], m["ko"], m["min"]) == (requests, requests, 0, 0.0)
    for key in ("p50", "p90", "p95", "p99", "max", "duration_s"):
        assert m[key] == want[key], key
    assert m["mean"] == want["mean"]
    assert m["stddev"] == pytest.approx(want["stddev"], rel=1e-15)
    assert m["throughput"] == pytest.approx(requests / want["duration_s"], rel=1e-12)
