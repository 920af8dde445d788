"""The real Gatling, driven by a workload document, against the real auction backend: every
injection profile, the 8.6 MB multipart upload, the bid conflicts; our reader of the binary
simulation.log must count exactly what the backend served."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import ROOT

from gatebench.core.measure import ingest_simlog
from gatebench.core.plan import Injection
from gatebench.core.simlog import GroupRecord, RequestRecord, RunHeader, read_simlog
from gatebench.core.workload import Control, Phase, Schedule
from gatebench.local.backends import start_backend
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult


class Hooks:
    def __init__(self) -> None:
        self.events: list[EngineEvent] = []
        self.results: dict[int, PhaseResult] = {}

    def on_event(self, event: EngineEvent) -> None:
        self.events.append(event)

    def on_phase(self, result: PhaseResult) -> None:
        self.results[result.phase] = result

    def tick(self) -> None:
        pass


def _served(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/__gatebench__/stats", timeout=5) as r:
        count: int = json.load(r)["requests"]
        return count


def _document(port: int) -> dict[str, Any]:
    from gatebench.core.plan import build_plan
    from gatebench.core.spec import read_spec
    from gatebench.core.workload import render_workload

    result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
    assert result.api is not None
    section = dict(result.benchmark)
    bid = next(w for w in section["workloads"] if w["name"] == "bid")
    section["workloads"] = [
        *section["workloads"],
        # the example's bids fired in the same millisecond instead of over its ramp
        {**bid, "name": "bid-burst", "injection": {"at_once": 50}},
        {
            "name": "rate",
            "operation": "getAuction",
            "params": {"auctionId": {"list": [1, 2, 3]}},
            "injection": {"constant_rate": {"rate": 40, "duration": "1s"}},
        },
        {
            "name": "ramp",
            "operation": "getAuction",
            "params": {"auctionId": 5},
            "injection": {"ramp": {"users": 10, "duration": "500ms"}},
        },
        {
            "name": "loop",
            "operation": "getAuction",
            "params": {"auctionId": {"range": [1, 9]}},
            "injection": {"concurrent": 3, "requests": 90},
        },
    ]
    plan = build_plan(section, result.api)
    base = f"http://127.0.0.1:{port}"
    reset = Control(f"{base}/__gatebench__/reset")
    phases = []
    for w in plan.workloads:
        inj = w.injection
        if w.name == "retrieve":
            inj = Injection("sequential", users=1, requests=120)
        phases.append(Phase(len(phases), "baseline", w.name, 1, True, base, inj, (reset,)))
    return render_workload(plan, result.api, Schedule(tuple(phases), seed=9))


@pytest.fixture(scope="module")
def gatling_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("gatling")
    with Supervisor() as sup:
        _, port = start_backend(sup, "auction", work)
        document = _document(port)
        hooks = Hooks()
        # the token reaches the JVM through the environment, as in a real run
        result = GatlingEngine().run(
            document, work, hooks, supervisor=sup, env={"AUCTION_TOKEN": "gatling-test-token"}
        )
        served_after = _served(port)
    return document, hooks, result, served_after


def test_every_phase_completes_with_the_defined_counts(gatling_run: Any) -> None:
    document, hooks, result, _ = gatling_run
    assert not result.crashed, result.reason
    assert result.completed == list(range(len(document["phases"])))
    by_name = {p["workload"]: hooks.results[p["index"]].sample for p in document["phases"]}
    assert by_name["create-auction"].requests == 50
    assert by_name["create-auction"].ok == 50
    # the example's bidders arrive one every 5 ms, each bid above the one before: a bid is
    # refused (409) only when it was overtaken on its way (the paper's errors)
    bid = by_name["bid"]
    assert bid.requests == 50
    assert set(bid.errors) <= {"status.find.in(200), found 409"}
    assert bid.duration_ms >= 200  # spread over the ramp (user 50 arrives at 49 × 5 ms)
    # the same bids in the same millisecond overtake each other
    burst = by_name["bid-burst"]
    assert burst.requests == 50 and burst.ko > 0
    assert set(burst.errors) == {"status.find.in(200), found 409"}
    assert by_name["retrieve"].requests == by_name["retrieve"].ok == 120
    assert by_name["rate"].requests == 40
    assert by_name["ramp"].requests == 10
    assert by_name["loop"].requests == by_name["loop"].ok == 90
    kinds = {(e.kind, e.phase) for e in hooks.events}
    assert all(("start", p["index"]) in kinds for p in document["phases"])


def test_log_counts_match_what_the_backend_served(gatling_run: Any) -> None:
    document, hooks, result, served_after = gatling_run
    records = list(read_simlog(result.raw_log))
    assert isinstance(records[0], RunHeader)
    assert records[0].gatling_version == "3.15.1"
    requests = [r for r in records if isinstance(r, RequestRecord)]
    phase_requests = [r for r in requests if r.name.startswith("p")]
    resets = [r for r in requests if r.name == "__control__"]
    assert len(resets) == len(document["phases"])
    assert all(r.ok for r in resets)
    # the backend counts requests since its last reset: the last phase's requests
    last = document["phases"][-1]["id"]
    assert served_after == sum(1 for r in phase_requests if r.name == last) == 90
    assert len(phase_requests) == sum(
        s.requests for s in (h.sample for h in hooks.results.values())
    )
    flushes = [
        r for r in records if isinstance(r, GroupRecord) and r.groups[0].startswith("__flush__")
    ]
    # One per phase and one at the end; phase 0 has two, so that the first recorded request
    # always follows a flush (GenericSimulation.control, Gatling 3.15.1's buffer).
    assert len(flushes) == len(document["phases"]) + 2
    assert [f.groups[0][len("__flush__") :].split("_")[0] for f in flushes[:3]] == ["0", "0", "1"]


def test_ingest_of_the_finished_log_matches_the_live_figures(gatling_run: Any) -> None:
    document, hooks, result, _ = gatling_run
    ingested = {m.workload: m for m in ingest_simlog(result.raw_log, document, "r1")}
    for p in document["phases"]:
        sample = hooks.results[p["index"]].sample
        m = ingested[p["workload"]]
        assert (m.requests, m.ok, m.ko) == (sample.requests, sample.ok, sample.ko)


def test_token_is_sent_but_never_written(gatling_run: Any) -> None:
    document, _, result, _ = gatling_run
    assert "gatling-test-token" not in json.dumps(document)
    for path in Path(result.log_path).parent.rglob("*"):
        if path.is_file():
            assert b"gatling-test-token" not in path.read_bytes(), path


def test_cli_load_and_ingest(tmp_path: Path) -> None:
    """`gatebench load` (the tester's step) and `gatebench ingest` on its log."""
    with Supervisor() as sup:
        _, port = start_backend(sup, "auction", tmp_path)
        doc = _document(port)
        doc["phases"] = [p for p in doc["phases"] if p["workload"] in ("bid", "retrieve")]
        wl = tmp_path / "workload.json"
        wl.write_text(json.dumps(doc))
        import os

        env = {**os.environ, "AUCTION_TOKEN": "x"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "gatebench.cli",
                "load",
                str(wl),
                "--out",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("2 phases; measurements in ")
    rows = [json.loads(x) for x in (tmp_path / "out/measurements.jsonl").read_text().splitlines()]
    assert [(r["workload"], r["requests"]) for r in rows] == [("bid", 50), ("retrieve", 120)]
    (log,) = (tmp_path / "out").glob("gatling-results/*/simulation.log")
    ingested = subprocess.run(
        [sys.executable, "-m", "gatebench.cli", "ingest", str(log), "--workload", str(wl)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows2 = [json.loads(x) for x in ingested.stdout.splitlines()]
    assert [(r["workload"], r["requests"], r["ok"]) for r in rows2] == [
        (r["workload"], r["requests"], r["ok"]) for r in rows
    ]
