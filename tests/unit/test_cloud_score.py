"""The cloud score step (gatebench.cloud finish_run) over the SQLite store: scores stored,
BigQuery rows written with exactly the report's columns, done vs partial vs nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gatebench.cloud import ObjectRef, parse_upload
from gatebench.cloud._score import NothingMeasured, expected_keys, finish_run
from gatebench.core.model import Measurement
from gatebench.core.report import column_names
from gatebench.store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]
AUCTION = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()


class Sink:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], str] = {}

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = "") -> None:
        self.objects[(bucket, name)] = data if isinstance(data, str) else data.decode()


def measurement(run_id: str, target: str, workload: str, rep: int, mean: float) -> Measurement:
    return Measurement(
        run_id,
        target,
        workload,
        rep,
        100,
        100,
        0,
        0.0,
        50.0 + rep,
        1.0,
        mean,
        20.0,
        2.0,
        mean,
        mean + 1,
        mean + 2,
        mean + 3,
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    store = SqliteStore(tmp_path / "runs.sqlite")
    outcome = parse_upload(AUCTION, ObjectRef("gb-uploads", "specs/auction.yaml", "1"), now=100.0)
    store.create_run(outcome.run)
    return store, outcome.run


def test_a_complete_run_is_done_with_scores_and_rows(store: Any) -> None:
    db, run = store
    keys = expected_keys(run)
    assert (
        len(keys) == 7 * 3 * 10
    )  # six gateways and the baseline, three workloads, ten repetitions
    for key in sorted(keys):
        target, workload, rep = key.split(":")
        mean = 5.0 if target == "nginx" else 6.0
        db.put_measurement(measurement(run.run_id, target, workload, int(rep), mean))
    sink = Sink()
    result = finish_run(db, sink, "gb-runs", run.run_id)
    assert result["status"] == "done"
    assert result["missing"] == []
    assert set(result["scores"]) == {"nginx", "haproxy", "caddy", "envoy", "apache", "traefik"}
    assert result["scores"]["nginx"] == max(result["scores"].values())
    assert result["rows_uri"] == f"gs://gb-runs/runs/{run.run_id}/rows.jsonl"
    lines = sink.objects[("gb-runs", f"runs/{run.run_id}/rows.jsonl")].splitlines()
    assert len(lines) == result["rows"]
    rows = [json.loads(line) for line in lines]
    assert all(set(row) == set(column_names()) for row in rows)
    assert db.scores(run.run_id)


def test_missing_phases_make_a_partial_run(store: Any) -> None:
    db, run = store
    for workload in ("create-auction", "bid", "retrieve"):
        for target in ("nginx", "baseline"):
            db.put_measurement(measurement(run.run_id, target, workload, 1, 5.0))
    result = finish_run(db, Sink(), "gb-runs", run.run_id)
    assert result["status"] == "partial"
    assert "apache:bid:1" in result["missing"]


def test_nothing_measured_is_an_error_naming_the_run(store: Any) -> None:
    db, run = store
    with pytest.raises(NothingMeasured) as caught:
        finish_run(db, Sink(), "gb-runs", run.run_id)
    assert caught.value.problems[0].message == f"run {run.run_id!r} has no measurement to score"
