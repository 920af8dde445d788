"""When the JVM gateways are warm: how long after they start their latency stops falling.

Each JVM gateway (Spring Cloud Gateway, Zuul) is started on the auction example the way a run
starts it (the run's CPU policy: pinned to its share of the cores, its threads sized for it),
in front of the auction backend, and loaded without a pause by h2load (closed model, 10
connections kept alive, ``GET /auctions/7``) for :data:`SECONDS` seconds, every request logged.
The latency of each second is the median of the requests that started in it. The steady
latency is the median of the last :data:`TAIL_S` seconds; the gateway is warm from the first
second after which no :data:`WINDOW_S`-second window's median is more than :data:`MARGIN` above
it. (h2load 1.52 logs an answer whose status line has no reason phrase, as Zuul's Tomcat sends
it, with status 0: those count when the backend served at least as many requests.) Each gateway is measured :data:`REPEATS` times, each time from a fresh start; nginx is
measured the same way as a gateway without a JIT, for comparison.

``gatebench.core.renderers._jvm.JIT_WARMUP_S`` (what every kind of run warms a JVM gateway up for)
comes from this table: the longest time to warm seen, rounded up to 5 s, with a margin.
"""

from __future__ import annotations

import math
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from gatebench.core.fairness import gateway_target
from gatebench.core.renderers import get_renderer
from gatebench.core.renderers._jvm import JIT_WARMUP_S
from gatebench.core.spec import load_spec
from gatebench.local.backends import backend_stats, start_backend
from gatebench.local.procs import Supervisor, free_port

from ._machine import CpuWindow, run_cores

TITLE = "JVM gateways: when their latency stops falling"
ROOT = Path(__file__).resolve().parents[1]
GATEWAYS = ("spring-cloud-gateway", "zuul", "nginx")
SECONDS = 90
CLIENTS = 10
REPEATS = 2
TAIL_S = 20
WINDOW_S = 5
MARGIN = 0.10
PATH = "/auctions/7"


def per_second(log: Path) -> list[float]:
    """Median latency (ms) of the requests that started in each second of h2load's log
    (``--log-file``: start µs since the epoch, status, duration µs; one line a request)."""
    buckets: dict[int, list[float]] = {}
    first: int | None = None
    for line in log.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) < 3:
            continue
        start_us, status, duration_us = int(parts[0]), int(parts[1]), int(parts[2])
        # 0: an answer h2load could not read a status from (nghttp2 1.52 takes it from the
        # reason phrase, which Zuul's Tomcat leaves out); the backend's count checks those.
        if status not in (200, 0):
            continue
        first = start_us if first is None else min(first, start_us)
        buckets.setdefault(start_us, []).append(duration_us / 1000.0)
    if first is None:
        return []
    seconds: dict[int, list[float]] = {}
    for start_us, values in buckets.items():
        seconds.setdefault((start_us - first) // 1_000_000, []).extend(values)
    return [
        statistics.median(seconds[s]) if s in seconds else math.nan for s in range(max(seconds) + 1)
    ]


def warm_after(medians: list[float]) -> tuple[float, float]:
    """(seconds until the latency stops falling, the steady median in ms): the first second
    after which every ``WINDOW_S``-second window's median is within ``MARGIN`` of the steady
    latency (the median of the last ``TAIL_S`` seconds)."""
    values = [m for m in medians if not math.isnan(m)]
    steady = statistics.median(values[-TAIL_S:])
    limit = steady * (1 + MARGIN)
    for start in range(len(medians)):
        windows = [
            medians[i : i + WINDOW_S]
            for i in range(start, max(start + 1, len(medians) - WINDOW_S + 1))
        ]
        if all(
            statistics.median([m for m in w if not math.isnan(m)] or [math.inf]) <= limit
            for w in windows
        ):
            return float(start), steady
    return float(len(medians)), steady


def run() -> str:
    if shutil.which("h2load") is None:
        return "h2load is not installed (scripts/setup.d/apt-packages.txt: nghttp2-client)."
    from gatebench.local.provisioners import boot_gateway

    api = load_spec(ROOT / "examples/auction/openapi.yaml").api
    assert api is not None
    rows = []
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp, Supervisor() as sup:
        work = Path(tmp)
        cores = run_cores(sup)
        _, backend = start_backend(sup, "auction", work / "backend")
        for gateway in GATEWAYS:
            renderer = get_renderer(gateway)
            reason = renderer.available_here()
            if reason is not None:
                rows.append(f"| {gateway} | not run here: {reason} | | | |")
                continue
            warm: list[float] = []
            steady: list[float] = []
            first: list[float] = []
            others: list[float] = []
            for n in range(REPEATS):
                target = gateway_target(
                    cores.cpu,
                    workdir=str(work / f"{gateway}-{n}"),
                    listen_port=free_port(),
                    backend_url=f"http://127.0.0.1:{backend}",
                    concurrency=CLIENTS,
                )
                proc = boot_gateway(gateway, api, target, sup)
                log = work / f"{gateway}-{n}.log"
                before = int(backend_stats(backend)["requests"])
                with CpuWindow() as cpu:
                    out = subprocess.run(
                        [
                            *("h2load", "--h1", "-D", str(SECONDS), "-c", str(CLIENTS), "-m", "1"),
                            *("-t", "1", "-H", "Authorization: Bearer bench-token"),
                            f"--log-file={log}",
                            f"http://127.0.0.1:{target.listen_port}{PATH}",
                        ],
                        capture_output=True,
                        check=True,
                        timeout=SECONDS + 60,
                        preexec_fn=cores.pin_load_tool,
                    )
                sup.stop(proc)
                served = int(backend_stats(backend)["requests"]) - before
                answered = sum(1 for line in log.read_text().splitlines() if "\t-1\t" not in line)
                if served < answered - CLIENTS:
                    raise RuntimeError(
                        f"{gateway}: the backend served {served} requests, h2load logged "
                        f"{answered} answers"
                    )
                medians = per_second(log)
                if not medians:
                    raise RuntimeError(
                        f"{gateway}: h2load logged no 200 answer:\n"
                        f"{out.stdout.decode(errors='replace')[-800:]}\n{log.read_text()[:400]}"
                    )
                after, level = warm_after(medians)
                warm.append(after)
                steady.append(level)
                first.append(medians[0])
                others.append(cpu.others_pct)
            if renderer.jit_warmup_s > 0:
                worst = max(worst, *warm)
            rows.append(
                f"| {gateway} | {' / '.join(f'{w:.0f}' for w in warm)} | "
                f"{' / '.join(f'{f:.1f}' for f in first)} | "
                f"{' / '.join(f'{s:.2f}' for s in steady)} | "
                f"{statistics.mean(others):.0f} % |"
            )
    suggested = 5 * math.ceil((worst * 1.5) / 5) if worst else 0
    return "\n".join(
        [
            f"h2load `--h1 -D {SECONDS} -c {CLIENTS} -m 1` on `GET {PATH}` (auction backend), "
            f"from the gateway's first answer on, {REPEATS} fresh starts per gateway, each "
            f"gateway on the run's CPU policy ({cores.cpu.describe()}), h2load on the "
            "engine's cores. Warm after: the first second after which no "
            f"{WINDOW_S}-s window's median latency is more than {MARGIN:.0%} above the steady "
            f"median (the last {TAIL_S} s).",
            "",
            "| gateway | warm after (s), each start | first second's median (ms) | steady median (ms) | others' CPU |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"Longest time to warm of a JVM gateway: {worst:.0f} s; half as much again, rounded "
            f"up to 5 s: {suggested} s. Every kind of run warms a JVM gateway up for "
            f"`JIT_WARMUP_S` = {JIT_WARMUP_S:g} s after it starts "
            '(`gatebench.core.renderers._jvm`; docs/jvm-gateways.md, "Warm-up").',
        ]
    )
