"""The dashboard's API on a large run: a 10-gateway × 20-endpoint × 10-repetition run (plus
the baseline, 2,200 measurements) in SQLite, asked over real HTTP from ``gatebench serve``'s
server (in this process, on a loopback port).

Targets (why this benchmark exists): the run page polls the run's status every second, so
a status answer must take a small part of that (< 50 ms); the run page and the comparison
must come back while a person waits (view < 2 s, comparison of two such runs < 3 s); a
spec must be checked before the person has let go of the mouse (the petstore < 0.5 s).
Each request is made five times; the table shows the median and the range.
"""

from __future__ import annotations

import http.client
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

from gatebench.core.report import score_run
from gatebench.store import SqliteStore
from gatebench.web import build_server, default_frontend_dir

from ._machine import CpuWindow

TITLE = "Dashboard API on a 10 × 20 × 10 run"
ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5
PETSTORE = (ROOT / "examples" / "petstore" / "openapi.yaml").read_bytes()


def _request(
    port: int, method: str, path: str, body: bytes | None = None
) -> tuple[float, int, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"X-Gatebench": "1"} if method == "POST" else {}
    start = time.perf_counter()
    conn.request(method, path, body, headers)
    response = conn.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed, response.status, len(data)


def run() -> str:
    sys.path.insert(0, str(ROOT / "tests"))  # the synthetic runs are a test helper
    from synthetic import synthetic_run

    gateways = [f"gw{i:02d}" for i in range(10)]
    workloads = [f"endpoint-{i:02d}" for i in range(20)]
    work = ROOT / ".cache" / "bench-web"
    shutil.rmtree(work, ignore_errors=True)
    ids = ["20260101-120000-large-a", "20260102-120000-large-b"]
    with SqliteStore(work / "store.sqlite") as store:
        for seed, run_id in zip((7, 11), ids, strict=True):
            record, measurements = synthetic_run(gateways, workloads, 10, seed=seed, run_id=run_id)
            store.create_run(record)
            for m in measurements:
                store.put_measurement(m)
            score_run(store, run_id)
        server = build_server(
            host="127.0.0.1",
            port=0,
            frontend=default_frontend_dir(),
            store=store,
            store_location=str(work / "store.sqlite"),
            results_dir=work,
            start_queue=False,
            log=lambda line: None,
        )
        thread = threading.Thread(target=server.serve_forever)
        thread.start()
        port = server.server_address[1]
        steps = {
            "status of a run (GET runs/ID, what the page polls)": (
                "GET",
                f"/api/runs/{ids[0]}",
                None,
                0.05,
            ),
            "runs list (GET runs)": ("GET", "/api/runs", None, 0.2),
            "run page (GET runs/ID/view)": ("GET", f"/api/runs/{ids[0]}/view", None, 2.0),
            "comparison (GET compare?a=&b=)": (
                "GET",
                f"/api/compare?a={ids[0]}&b={ids[1]}",
                None,
                3.0,
            ),
            "check the petstore (POST validate)": (
                "POST",
                "/api/validate?name=p.yaml",
                PETSTORE,
                0.5,
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in steps}
        sizes: dict[str, int] = {}
        try:
            with CpuWindow() as cpu:
                for _ in range(REPEATS):
                    for name, (method, path, body, _target) in steps.items():
                        elapsed, status, size = _request(port, method, path, body)
                        assert status == 200, (name, status)
                        times[name].append(elapsed)
                        sizes[name] = size
        finally:
            server.shutdown()
            thread.join(5)
            server.server_close()
    shutil.rmtree(work, ignore_errors=True)
    lines = [
        f"Two synthetic runs of {len(gateways)} gateways + baseline × {len(workloads)} workloads "
        f"× 10 repetitions (2,200 measurements each) in one SQLite store; {REPEATS} requests "
        f"of each kind. Other processes used {cpu.others_pct:.0f} % of the CPU during the "
        "benchmark.",
        "",
        "| request | median | range | answer | target | met |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, (_m, _p, _b, target) in steps.items():
        median = statistics.median(times[name])
        lines.append(
            f"| {name} | {median * 1000:,.0f} ms | {min(times[name]) * 1000:,.0f}–"
            f"{max(times[name]) * 1000:,.0f} ms | {sizes[name] / 1024:,.0f} KiB | "
            f"< {target * 1000:,.0f} ms | {'yes' if median < target else 'NO'} |"
        )
    return "\n".join(lines)
