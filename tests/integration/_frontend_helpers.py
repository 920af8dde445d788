"""Helpers of the dashboard's integration tests: a real ``gatebench serve`` process, its
HTTP API, and the processes it started."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import psutil
import pytest
from _engine_helpers import interruptible

from gatebench.local.procs import processes_below
from paths import ARTIFACTS, ROOT

T = TypeVar("T")
PETSTORE = ROOT / "examples" / "petstore" / "openapi.yaml"


def unreachable_petstore() -> bytes:
    """The petstore with a backend nobody listens on: its run fails within a second, at
    provisioning, before any load (a real run through the real runner)."""
    text = PETSTORE.read_text(encoding="utf-8")
    return text.replace("    mock: {latency: 1ms}", "    url: http://127.0.0.1:9").encode()


def broken_petstore() -> str:
    text = PETSTORE.read_text(encoding="utf-8")
    return text.replace("operation: listPets", "operation: listPetz").replace(
        "repetitions: 3", "repetitions: -1"
    )


@dataclass
class Serve:
    proc: subprocess.Popen[str]
    url: str
    results: Path
    store: Path | str

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + "api/" + path, timeout=10) as response:
            return json.loads(response.read())

    def upload(self, body: bytes, query: str) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.url}api/uploads?{query}",
            data=body,
            method="POST",
            headers={"X-Gatebench": "1", "Content-Type": "application/octet-stream"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def run(self, run_id: str) -> dict[str, Any]:
        run: dict[str, Any] = self.api(f"runs/{run_id}")["run"]
        return run

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode, err


def start_serve(
    tmp: Path, *extra: str, store: Path | str | None = None, env: dict[str, str] | None = None
) -> Serve:
    """``gatebench serve --port 0`` in its own process; returns once it prints its URL."""
    results = tmp / "results"
    store = store or results / "gatebench.sqlite"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gatebench.cli",
            "serve",
            "--port",
            "0",
            "--results",
            str(results),
            "--store",
            str(store),
            *extra,
        ],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,  # its tests stop it with SIGINT too
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        raise AssertionError(
            f"gatebench serve did not start: {line}{proc.stderr.read() if proc.stderr else ''}"
        )
    url = line.split()[2]
    return Serve(proc, url, results, store)


def wait_for(what: str, check: Callable[[], T | None], timeout: float, interval: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


descendants = processes_below
"""Every live process below a pid, with its command line (the product's own, psutil's tree)."""


def alive(pids: dict[int, str]) -> list[str]:
    """Those of ``pids`` still running (and still the same command)."""
    out = []
    for pid, cmd in pids.items():
        try:
            proc = psutil.Process(pid)
            now = " ".join(proc.cmdline()).strip()[:120]
            zombie = proc.status() == psutil.STATUS_ZOMBIE
        except psutil.Error:
            continue
        if now == cmd and not zombie:
            out.append(f"{pid}: {cmd}")
    return out


# -- the browser ------------------------------------------------------------------------------

NODE_TOOLS = ROOT / "tools" / "node"
E2E = Path(__file__).with_name("frontend_e2e.cjs")


class Site(Protocol):
    """Where the page is served from: ``gatebench serve``, or a static server of an export."""

    @property
    def url(self) -> str: ...


def scenario(name: str, serve: Site, **options: str) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None or not (NODE_TOOLS / "node_modules" / "playwright-core").is_dir():
        pytest.fail(
            "node and tools/node/node_modules are needed: run scripts/setup.d/50-node.sh (`make test` does)"
        )
    if not Path("/usr/bin/chromium").exists():
        pytest.fail(
            "Debian's chromium is needed: scripts/setup.d/apt-packages.txt lists it (`make test` installs it)"
        )
    argv = [node, str(E2E), name, "--base", serve.url, "--artifacts", str(ARTIFACTS)]
    for key, value in options.items():
        argv += [f"--{key.replace('_', '-')}", value]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=420, check=False)
    result: dict[str, Any] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    assert proc.returncode == 0, (
        f"{name}: {result.get('error') or proc.stderr}\n"
        f"console: {result.get('consoleErrors')}\npage errors: {result.get('pageErrors')}\n"
        f"screenshot: {result.get('failureScreenshot')}"
    )
    return result


def assert_clean(result: dict[str, Any], serve: Serve, console: list[str] | None = None) -> None:
    """No script error, no failed request, and nothing fetched from anywhere but the server."""
    assert result["pageErrors"] == []
    assert result["consoleErrors"] == (console or [])
    assert result["failedRequests"] == []
    outside = [r["url"] for r in result["requests"] if not r["url"].startswith(serve.url)]
    assert outside == []


def assert_screenshot(path: str) -> None:
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000


def seed_two_runs(location: str, run_a: str, run_b: str) -> None:
    """Two synthetic runs (five repetitions each), scored, in the store at ``location``."""
    from gatebench.core.report import score_run
    from gatebench.store import open_store
    from synthetic import synthetic_run

    with open_store(location) as store:
        for seed, run_id, created in ((7, run_a, 1_767_268_800.0), (11, run_b, 1_767_355_200.0)):
            run, measurements = synthetic_run(seed=seed, run_id=run_id, created_at=created)
            store.create_run(run)
            for m in measurements:
                store.put_measurement(m)
            score_run(store, run_id)


def seed_capacity_run(location: str, run_id: str) -> tuple[Any, tuple[str, ...]]:
    """A capacity run (a campaign on the simulated target, so every number is known: haproxy,
    envoy and the baseline, three repetitions) in the store at ``location``; returns its
    ``CapacityResult`` and its targets."""
    from dataclasses import replace

    from capacity_sim import SimulatedTarget
    from gatebench.core.model import RunKind, RunRecord, RunStatus
    from gatebench.core.plan import Capacity
    from gatebench.kinds.capacity import (
        RESULT_KEY,
        RESULT_KIND,
        Campaign,
        capacity_result,
        search,
    )
    from gatebench.store import open_store

    settings = replace(Capacity(), repetitions=3)
    targets = {
        "haproxy": SimulatedTarget(workers=11, service_ms=10.0, jitter=0.1),
        "envoy": SimulatedTarget(workers=8, service_ms=10.0, jitter=0.1),
        "baseline": SimulatedTarget(workers=16, service_ms=10.0, jitter=0.1),
    }
    campaign = Campaign(tuple(targets), {"bid": settings}, 5, budget_s=3600.0)
    while keys := campaign.next_round():
        for key in keys:
            target = targets[key.target]
            target.seed = key.repetition
            campaign.record(key, search(settings, target, start_rate=campaign.start_rate(key)))
        campaign.end_round()
    result = capacity_result(campaign)
    run = RunRecord(
        run_id=run_id,
        spec_uri="auction.yaml",
        spec_sha256="c" * 64,
        status=RunStatus.DONE,
        created_at=1_767_441_600.0,
        title="Auction",
        gateways=["haproxy", "envoy"],
        kind=RunKind.CAPACITY,
    )
    with open_store(location) as store:
        store.create_run(run)
        store.put_result(run_id, RESULT_KIND, RESULT_KEY, result.to_dict())
    return result, tuple(targets)


def assert_capacity_run_shown(found: dict[str, Any], result: Any, targets: tuple[str, ...]) -> None:
    """What the ``capacity`` scenario must see of the run ``seed_capacity_run`` writes,
    wherever it reads it from: the runs list says it is a capacity run and it cannot be picked
    for a comparison; its page gives the verdict, one curve chart with every probe inside it,
    each target's knee and the objective marked, and the capacity and pair tables."""
    assert "capacity search" in found["listedRow"] and found["pickDisabled"] is True
    assert found["verdict"].strip() == result.endpoints[0].verdict
    (curves,) = found["curves"]
    assert curves["points"] == len(result.curves)
    assert sorted(curves["knees"]) == sorted(targets)
    assert curves["objective"] == 1 and curves["inside"] and curves["labelled"]
    ids = [t["id"] for t in found["tables"]]
    assert "table-capacity-0" in ids and "table-capacity-pairs-0" in ids
    assert found["unlabelled"] == []
    assert_screenshot(found["screenshots"][0])


def assert_two_seeded_runs_compared(result: dict[str, Any], run_a: str, run_b: str) -> None:
    """What the comparison page of the two runs ``seed_two_runs`` writes must show, wherever
    it reads them from: two cards, two throughput charts on one scale with their whiskers,
    the four tables, change tags, and a column sorted by keyboard."""
    assert result["compareDisabledBefore"] is True
    assert result["compareDisabledAfter"] is False
    # The list is newest first; the comparison puts the older run as A.
    assert result["url"].endswith(f"#/compare/{run_a}/{run_b}")
    assert result["cards"] == ["Run A: Synthetic auction run", "Run B: Synthetic auction run"]
    chart_a, chart_b = result["charts"]
    assert chart_a["bars"] == chart_b["bars"] == 12
    assert chart_a["whiskers"] == chart_b["whiskers"] == 12  # five repetitions each
    assert chart_a["lastTick"] == chart_b["lastTick"]  # one scale for both
    assert [t["id"] for t in result["tables"]] == [
        "table-scores-compared",
        "table-compare-create-auction",
        "table-compare-bid",
        "table-compare-retrieve",
    ]
    assert set(result["changeTags"]) <= {"better", "worse", "noise", "no gateway"}
    assert "noise" in result["changeTags"]
    # Enter on the "Score A" column's button sorts the rows by that score, ascending.
    assert result["sortState"] == "ascending"
