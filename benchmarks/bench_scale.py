"""Route scale and configuration changes under load, on every gateway that runs here
(docs/scale.md): the auction example replicated to 10, 100, 1,000 and 10,000 routes, and a
change of 100 routes plus a new upstream applied while a constant-rate load runs.

Uses the measurements the scale and change-under-load runs are made of
(``gatebench.local.liveruns``) with their constant-rate load (the open-model load generator,
latency from the intended start); ``GATEBENCH_BENCH_SCALE_ENGINE=gatling`` runs Gatling's
adapter instead (latency from the send), as the figures before it were measured.
``GATEBENCH_BENCH_SCALE_SIZES`` (``10,100``) and ``GATEBENCH_BENCH_SCALE_GATEWAYS``
(``nginx,haproxy``) shorten it.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from gatebench.core.errors import GatebenchError
from gatebench.core.renderers import all_renderers
from gatebench.core.renderers._jvm import JIT_WARMUP_S
from gatebench.core.routescale import DEFAULT_SIZES, parse_sizes
from gatebench.core.spec import load_spec
from gatebench.kinds._live.metrics import ChangeOutcome, ScalePoint
from gatebench.local.backends import start_backend
from gatebench.local.engines.constant_rate import GatlingRateLoad, LoadgenRateLoad
from gatebench.local.liveruns import LoadSettings, measure_change, measure_size
from gatebench.local.procs import Supervisor

from ._before import before, rows_of, side_by_side
from ._machine import CpuWindow, run_cores

TITLE = "Route scale and configuration changes under load"
ROOT = Path(__file__).resolve().parents[1]
SCALE = LoadSettings(
    rate=200, duration_s=5, warmup_s=3, deadline_s=300, check_timeout_s=900, probe_interval_s=0.05
)
CHANGE = LoadSettings(
    rate=200, duration_s=8, warmup_s=3, deadline_s=120, check_timeout_s=900, probe_interval_s=0.05
)
CHANGE_BEFORE, CHANGE_ADDED, CHANGE_AT_S, WINDOW_S = 100, 100, 3.0, 4.0
EARLIER = "6db6b76"
"""The last commit before the fair-fight configurations (docs/gateways.md, "A fair fight"): its
figures stand beside this run's."""
SCALE_HEADER = (
    "| gateway | routes | config, KiB | start, s | RSS idle, MB | RSS load, MB | "
    "start p50 / p99, ms | middle p50 / p99, ms | end p50 / p99, ms | ko |"
)
CHANGE_HEADER = (
    "| gateway | mechanism | failed of sent | what failed | p99 before, ms | p99 / max "
    "after, ms | worst 100 ms p99 | new routes: median / slowest, s | mechanism, s | |"
)
SLOWEST = "slowest route p50 / p99, ms"
ROUTES = ("start p50 / p99, ms", "middle p50 / p99, ms", "end p50 / p99, ms")


def _gateways() -> list[str]:
    wanted = os.environ.get("GATEBENCH_BENCH_SCALE_GATEWAYS")
    names = [r.name for r in all_renderers() if r.runs_here and r.available_here() is None]
    return [n for n in names if not wanted or n in wanted.split(",")]


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def _scale_row(p: ScalePoint) -> str:
    if p.problem and not p.latency:
        return f"| {p.gateway} | {p.routes:,} | {p.config_bytes / 1024:,.0f} | – | – | – | – | – | – | {p.problem[:80]} |"
    lat = [p.latency.get(k) for k in ("start", "middle", "end")]
    cells = " | ".join(f"{_ms(x.p50_ms)} / {_ms(x.p99_ms)}" if x else "–" for x in lat)
    ko = sum(x.ko for x in lat if x)
    return (
        f"| {p.gateway} | {p.routes:,} | {p.config_bytes / 1024:,.0f} | "
        f"{p.start_s:.2f} | {p.rss_idle_mb:.0f} | {p.rss_load_mb or 0:.0f} | {cells} | "
        f"{ko}{' (' + p.problem[:70] + ')' if p.problem else ''} |"
    )


def _change_row(c: ChangeOutcome) -> str:
    answered = [v for v in c.new_routes_s.values() if v is not None]
    median = statistics.median(answered) if answered else None
    kinds = "; ".join(f"{n}× {k[:50]}" for k, n in c.failure_kinds.items()) or "–"
    return (
        f"| {c.gateway} | {c.kind} | {c.failures} of {c.during.requests} | {kinds} | "
        f"{_ms(c.before.p99_ms)} | "
        f"{_ms(c.during.p99_ms)} / {_ms(c.during.max_ms)} | {_ms(c.worst_bucket_p99_ms)} | "
        f"{len(answered)}/{len(c.new_routes_s)}: "
        f"{'–' if median is None else f'{median:.2f}'} / "
        f"{'–' if c.slowest_new_route_s is None else f'{c.slowest_new_route_s:.2f}'} | "
        f"{c.mechanism_s:.2f} |{' ' + c.problem[:90] if c.problem else ''}"
    )


def _slowest(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each row with its slowest route's "p50 / p99" (highest p99) added as ``SLOWEST``."""

    def p99(cell: str) -> float:
        try:
            return float(cell.split("/")[1])
        except (IndexError, ValueError):
            return -1.0

    return [{**row, SLOWEST: max((row.get(c, "–") for c in ROUTES), key=p99)} for row in rows]


def _compared(scale_rows: list[str], change_rows: list[str]) -> list[str]:
    earlier = before("scale", EARLIER)
    if earlier.problem:
        return ["", f"Earlier figures: {earlier.describe()}."]
    scale_now = _slowest(rows_of([SCALE_HEADER, "|---|", *scale_rows]))
    change_now = rows_of([CHANGE_HEADER, "|---|", *change_rows])
    return [
        "",
        f"Before and now: each cell is the figure {earlier.describe()} published, then this "
        "run's. Before, every gateway ran unpinned, with one worker where it has a setting for "
        'it; docs/gateways.md ("A fair fight") says what changed since: one CPU policy, route '
        "tables as each vendor advises, pools and keep-alive. Latency then came from Gatling, "
        "timed from the send in whole milliseconds, now from the engine named above, on the "
        "machine each line names: a difference of a few milliseconds is not the "
        "configuration's.",
        "",
        *side_by_side(
            _slowest(earlier.table(0)),
            scale_now,
            ("gateway", "routes"),
            ("start, s", "RSS idle, MB", "RSS load, MB", SLOWEST, "ko"),
        ),
        "",
        *side_by_side(
            earlier.table(1),
            change_now,
            ("gateway",),
            (
                "failed of sent",
                "p99 / max after, ms",
                "new routes: median / slowest, s",
                "mechanism, s",
            ),
        ),
    ]


def run() -> str:
    sizes = (
        parse_sizes(os.environ.get("GATEBENCH_BENCH_SCALE_SIZES") or "")
        if os.environ.get("GATEBENCH_BENCH_SCALE_SIZES")
        else DEFAULT_SIZES
    )
    api = load_spec(ROOT / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    scale_rows: list[str] = []
    change_rows: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gatebench-bench-scale-") as tmp, Supervisor() as sup:
        gatling = os.environ.get("GATEBENCH_BENCH_SCALE_ENGINE") == "gatling"
        load = GatlingRateLoad(sup) if gatling else LoadgenRateLoad(sup)
        engine = (
            "Gatling's open-model constant rate" if gatling else "the open-model load generator"
        )
        measured = "send in whole milliseconds" if gatling else "intended start, in µs"
        work = Path(tmp)
        cores = run_cores(sup)  # as a run here: each gateway on its share, the load elsewhere
        _a, port_a = start_backend(sup, "echo", work / "a", extra_args=["-instance", "a"])
        _b, port_b = start_backend(sup, "echo", work / "b", extra_args=["-instance", "b"])
        url_a, url_b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
        with CpuWindow() as cpu:
            for gateway in _gateways():
                for size in sizes:
                    print(f"   {gateway} {size} routes", flush=True)
                    point = measure_size(
                        gateway,
                        api,
                        size,
                        backend_url=url_a,
                        instance="a",
                        load=load,
                        settings=SCALE,
                        workdir=work / gateway / str(size),
                        supervisor=sup,
                        cpu=cores.cpu,
                    )
                    scale_rows.append(_scale_row(point))
                print(f"   {gateway} change under load", flush=True)
                try:
                    outcome = measure_change(
                        gateway,
                        api,
                        routes_before=CHANGE_BEFORE,
                        routes_added=CHANGE_ADDED,
                        backends=(("a", url_a), ("b", url_b)),
                        load=load,
                        settings=CHANGE,
                        change_after_s=CHANGE_AT_S,
                        window_s=WINDOW_S,
                        workdir=work / gateway / "change",
                        supervisor=sup,
                        cpu=cores.cpu,
                    )
                    change_rows.append(_change_row(outcome))
                except GatebenchError as exc:
                    change_rows.append(f"| {gateway} | – | – | {str(exc)[:100]} | | | | | | |")
    minutes = (time.monotonic() - started) / 60
    return "\n".join(
        [
            f"The auction example (3 routes) replicated under distinct prefixes to each size; "
            f"each gateway booted alone behind the echo backend, with the files it takes live "
            f"changes with, on the run's CPU policy ({cores.cpu.describe()}; the load and the "
            f"backends on the other cores). Start: from the process start to the first correct answer of the "
            f"routes at the start, middle and end of its table. Memory: resident memory of the "
            f"gateway's process tree, idle (1 s after those answers) and the highest sampled "
            f"under load. Latency: {engine}, {SCALE.rate:g} requests "
            f"a second for {SCALE.duration_s:g} s on each of the three routes in turn after a "
            f"{SCALE.warmup_s:g} s warm-up ({JIT_WARMUP_S:g} s for the JVM gateways, "
            f"docs/jvm-gateways.md), each arrival on a new connection, measured from the "
            f'{measured} (docs/scale.md, "The load"). ko: requests '
            f"that were not 2xx; a route that got fewer than 90 % of its requests is flagged "
            f"tester-bound. {minutes:.0f} min in all; CPU used by other work meanwhile: "
            f"{cpu.others_pct:.0f} % of the machine.",
            "",
            SCALE_HEADER,
            "|---|---|---|---|---|---|---|---|---|---|",
            *scale_rows,
            "",
            f"Change under load: {CHANGE_BEFORE} routes behind backend a, a constant "
            f"{CHANGE.rate:g} requests a second on the route at the end of that table; "
            f"{CHANGE_AT_S:g} s into the measured load, {CHANGE_ADDED} routes are added and the "
            f"upstream moves to backend b, through each gateway's own mechanism "
            f"(docs/scale.md). Failed of sent: every request of the {WINDOW_S:g} s after the "
            f"change that was not 2xx or got no answer, of those the load sent then (a window "
            f"that got fewer than 90 % of the requests due is flagged tester-bound: the load "
            f"generator stalled, and its figures are not the gateway's); before: p99 of the {min(CHANGE_AT_S, WINDOW_S):g} s "
            f"before it; worst 100 ms: the highest p99 of a 100 ms bucket after it; new routes: "
            f"answered correctly from backend b (probed every "
            f"{CHANGE.probe_interval_s * 1000:.0f} ms, each on a new connection), median / "
            f"slowest seconds after the change; mechanism: until the signal, request or "
            f"command returned (a restart: until the new process answered).",
            "",
            CHANGE_HEADER,
            "|---|---|---|---|---|---|---|---|---|---|",
            *change_rows,
            *_compared(scale_rows, change_rows),
        ]
    )
