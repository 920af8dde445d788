"""A quick capacity run of two gateways (nginx, haproxy) and the baseline, on 127.0.0.1, through
``gatebench capacity`` itself: the stage list runs (render, provision, the campaign, teardown,
score), every target gets a knee on the endpoint, the result is stored with the run and in its
folder, the report marks the knees, a capacity threshold gates the exit code, and nothing is
left running. Short probes at a few hundred requests per second (0.1 s of warm-up and 0.3 s
measured, at least 45 arrivals a window): under twenty seconds.

The backend is the mock with known capacity (4 workers × 10 ms = 400 req/s; its ground truth is
tests/integration/test_capacity_ground_truth.py): no target can carry more than that, so every
knee lies below it and the bracket above it (the search's precision is 20 % here). How far below
depends on what else the machine runs, which this test does not judge.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from _engine_helpers import processes_mentioning

from gatebench.cli import main
from gatebench.kinds.capacity import stored_capacity
from gatebench.store import SqliteStore

CAPACITY = 400.0
PRECISION = 0.2

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Items", "version": "1"},
    "paths": {
        "/items/{id}": {
            "get": {
                "operationId": "getItem",
                "parameters": [
                    {
                        "name": "id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 1},
                    }
                ],
                "responses": {"200": {"description": "the item"}},
            }
        }
    },
    "x-gatebench": {
        "gateways": ["nginx", "haproxy"],
        "baseline": True,
        "backend": {"mock": {"latency": "10ms", "workers": 4}},
        "capacity": {
            "objective": {"p50": "25ms"},
            "start_rate": "150/s",
            "warmup": "0.1s",
            "probe": "0.3s",
            "confirm": "0.3s",
            "precision": "20%",
            "repetitions": 2,
        },
        "thresholds": [
            {"metric": "capacity", "min": "1/s"},
            {"metric": "capacity", "min": "100000/s", "gateway": "nginx"},
        ],
        "workloads": [
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "injection": {"constant_rate": {"rate": 100, "duration": "1s"}},
            }
        ],
    },
}


@pytest.mark.skipif(
    not (shutil.which("nginx") and shutil.which("haproxy")), reason="needs nginx and haproxy"
)
def test_a_quick_capacity_run_of_two_gateways(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "items.yaml"
    spec.write_text(yaml.safe_dump(SPEC, sort_keys=False), encoding="utf-8")
    results = tmp_path / "results"
    argv = ["capacity", str(spec), "--results", str(results), "--no-ceiling", "--seed", "7"]
    code = main([*argv, "--fail-on-threshold"])
    out, err = capsys.readouterr()

    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    assert processes_mentioning(str(run_dir.resolve())) == []
    with SqliteStore(results / "gatebench.sqlite") as store:
        (run,) = store.list_runs()
        stored = stored_capacity(store, run.run_id)
    assert run.kind == "capacity" and stored is not None
    assert str(run.status) == "done", (out, err)

    (line,) = (run_dir / "capacity.jsonl").read_text(encoding="utf-8").splitlines()
    result = json.loads(line)
    assert result.pop("key") == "result" and result == stored
    (endpoint,) = result["endpoints"]
    summaries = {s["target"]: s for s in endpoint["summaries"]}
    assert set(summaries) == {"nginx", "haproxy", "baseline"}
    for target, s in summaries.items():
        assert len(s["knees"]) == 2, target
        assert 0 < s["estimate"] <= CAPACITY * (1 + PRECISION), (target, s["knees"])
    assert [sorted(order) for _, order in result["orders"]] == [sorted(summaries)] * 2
    searches = (run_dir / "capacity-searches.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(searches) == 6

    # what the command printed: a table per endpoint, the verdict, where the files are
    assert "read — objective p50 ≤ 25 ms, errors ≤ 0.1 %" in out
    assert endpoint["verdict"] in out
    assert f"Results: {run_dir.resolve()}/" in out
    # the impossible threshold on nginx fails the run's gate; the other one holds
    assert code == 1
    assert "Thresholds: 2 of 3 met." in out  # the gateways only: the baseline competes in none
    assert "threshold failed: nginx/read: capacity" in err

    html = tmp_path / "report.html"
    store_flag = ["--store", str(results / "gatebench.sqlite")]
    assert main(["report", run.run_id, *store_flag, "-o", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    assert "gatebench capacity report" in text and "<svg" in text and "knee" in text
    capsys.readouterr()
    assert main(["runs", *store_flag]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.endswith("Items")]
    assert len(listed) == 1 and "  capacity search  " in listed[0], listed


@pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx")
def test_a_gateway_that_dies_during_its_search_is_failed_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nginx killed as its first probe starts: its search ends ``failed`` (its errors are not
    read as a knee), it is recorded as failed with its log tail and searched no more, the
    baseline is searched in both repetitions, and the run ends partial with nothing left."""
    import os
    import signal

    from _engine_helpers import ITEMS, TOKEN_ENV, RecordingSupervisor, items

    from gatebench.local.runner import run_local
    from gatebench.run import Progress, RunOptions

    monkeypatch.setenv(TOKEN_ENV, "t")
    section = SPEC["x-gatebench"]
    api, plan = items(
        gateways=["nginx"],
        backend=section["backend"],
        capacity=section["capacity"],
        workloads=[{**section["workloads"][0], "operation": "getItem"}],
    )
    supervisor = RecordingSupervisor()
    killed: list[int] = []

    def display(p: Progress) -> None:
        if "· nginx · read: grow" in p.message and not killed:
            proc = supervisor.named("nginx")
            killed.append(proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)

    outcome = run_local(
        "capacity",
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="5" * 64,
        options=RunOptions(results_dir=tmp_path, seed=3, ceiling=False),
        display=display,
        supervisor_factory=lambda: supervisor,
    )
    assert killed
    record = outcome.record
    assert str(record.status) == "partial"
    assert record.target_errors["nginx"].startswith("nginx exited with code -9")
    searches = [
        json.loads(line)
        for line in (outcome.run_dir / "capacity-searches.jsonl").read_text().splitlines()
    ]
    nginx = [s for s in searches if s["target"] == "nginx"]
    assert [s["search"]["status"] for s in nginx] == ["failed"]
    assert nginx[0]["search"]["knee"] is None
    baseline = [s for s in searches if s["target"] == "baseline"]
    assert len(baseline) == 2 and all(s["search"]["knee"] for s in baseline)
    (line,) = (outcome.run_dir / "capacity.jsonl").read_text(encoding="utf-8").splitlines()
    stored = json.loads(line)
    assert [order for _, order in stored["orders"]][1] == ["baseline"]
    assert processes_mentioning(str(outcome.run_dir)) == []
