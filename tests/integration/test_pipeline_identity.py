"""workflows/benchmark.yaml with its first half real: the parse function as deployed
(functions-framework, unpacked bundle) reading the upload from the Cloud Storage emulator,
and the Firestore connector mapped onto the Firestore emulator (tests/cloud/firestore.py).
Render, score, the builds and BigQuery are the stand-ins of tests/cloud/standins.py here
(tests/integration/test_pipeline.py runs them for real).

Checks: a re-delivered event starts one run; an invalid spec becomes a failed run at parse
with its located errors, read back by the real Firestore client."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.firestore import EmulatorFirestore, start_firestore_emulator
from cloud.pipeline import WORKFLOW, workflow_env
from cloud.servers import gcs_env, start_function, start_gcs_emulator, storage_client, unpack_bundle
from cloud.settings import deployment
from cloud.standins import RecordingBigQuery, RecordingBuilds, RoutedHttp
from cloud.workflows_interpreter import Clock, Execution, Interpreter
from gatebench.core.model import run_id_for_object
from gatebench.local.procs import Supervisor

ROOT = Path(__file__).resolve().parents[2]
AUCTION = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()
UPLOADS = "gb-uploads"
RENDER, SCORE = "https://standin.example/render", "https://standin.example/score"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("identity")
    logs = tmp / "logs"
    with Supervisor() as supervisor:
        gcs = start_gcs_emulator(supervisor, logs)
        client: Any = storage_client(gcs)
        bucket = client.create_bucket(UPLOADS)
        runs = client.create_bucket("gb-runs")
        runs.blob("pipeline/settings.json").upload_from_string(json.dumps(deployment()))
        _, firestore_host = start_firestore_emulator(supervisor, logs)
        env = {
            **gcs_env(gcs),
            "FIRESTORE_EMULATOR_HOST": firestore_host,
            "GATEBENCH_FIRESTORE_DATABASE": "(default)",
            "GATEBENCH_RUNS_BUCKET": "gb-runs",
        }
        parse = start_function(supervisor, unpack_bundle("parse", tmp), "parse", logs, env)
        firestore = EmulatorFirestore(firestore_host)
        try:
            yield {
                "bucket": bucket,
                "parse": parse.url,
                "firestore": firestore,
                "host": firestore_host,
            }
        finally:
            firestore.close()


def run(
    world: dict[str, Any], event: dict[str, Any], execution_id: str, builds: RecordingBuilds
) -> Execution:
    def render(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"run_id": body["run_id"]}

    def score(body: dict[str, Any]) -> tuple[int, Any]:
        rows = f"gs://gb-runs/runs/{body['run_id']}/rows.jsonl"
        return 200, {"status": "done", "scores": {"nginx": 100.0}, "rows_uri": rows}

    env = workflow_env(
        parse=world["parse"],
        render=RENDER,
        score=SCORE,
        GOOGLE_CLOUD_WORKFLOW_EXECUTION_ID=execution_id,
    )
    connectors = {
        **world["firestore"].connectors(),
        **builds.connectors(),
        **RecordingBigQuery().connectors(),
    }
    http = RoutedHttp({RENDER: render, SCORE: score})
    return Interpreter(
        WORKFLOW,
        env=env,
        connectors=connectors,
        http_transport=http,
        clock=Clock(sleep=lambda s: None),
    ).run(event)


def upload(world: dict[str, Any], name: str, data: bytes) -> dict[str, Any]:
    blob = world["bucket"].blob(name)
    blob.upload_from_string(data, content_type="application/yaml")
    return {
        "specversion": "1.0",
        "type": "google.cloud.storage.object.v1.finalized",
        "source": f"//storage.googleapis.com/projects/_/buckets/{UPLOADS}",
        "subject": f"objects/{name}",
        "id": f"event-{blob.generation}",
        "data": {"bucket": UPLOADS, "name": name, "generation": str(blob.generation)},
    }


def read_run(world: dict[str, Any], run_id: str) -> dict[str, Any]:
    from google.cloud import firestore

    os.environ["FIRESTORE_EMULATOR_HOST"] = world["host"]
    snapshot = firestore.Client(project="proj").collection("runs").document(run_id).get()
    assert snapshot.exists
    return dict(snapshot.to_dict() or {})


def test_a_redelivered_event_starts_one_run(world: dict[str, Any]) -> None:
    event = upload(world, "specs/auction.yaml", AUCTION)
    run_id = run_id_for_object(UPLOADS, "specs/auction.yaml", event["data"]["generation"])
    builds = RecordingBuilds()
    first = run(world, event, "exec-1", builds)
    assert first.state == "SUCCEEDED", first.error
    assert first.result["run_id"] == run_id
    second = run(world, event, "exec-2", builds)
    assert second.result == {"run_id": run_id, "duplicate": True, "status": "done"}
    assert [b["kind"] for b in builds.builds] == ["provision", "load", "teardown"]
    stored = read_run(world, run_id)
    assert stored["execution_id"] == "exec-1"
    assert stored["status"] == "done"
    transitions = sorted(stored["status_times"], key=stored["status_times"].get)
    assert transitions == ["parsed", "rendered", "provisioning", "loading", "scoring", "done"]
    assert stored["gateways"] == ["nginx", "haproxy", "caddy", "envoy", "apache", "traefik"]
    assert stored["teardown"] == "ok"


def test_an_invalid_spec_is_a_failed_run_with_its_errors(world: dict[str, Any]) -> None:
    broken = AUCTION.replace(b"repetitions: 10 ", b"repetiton: 10 ")
    event = upload(world, "specs/broken.yaml", broken)
    run_id = run_id_for_object(UPLOADS, "specs/broken.yaml", event["data"]["generation"])
    builds = RecordingBuilds()
    execution = run(world, event, "exec-3", builds)
    assert execution.state == "FAILED"
    assert execution.error["step"] == "parse"
    stored = read_run(world, run_id)
    assert stored["status"] == "failed"
    assert stored["failed_step"] == "parse"
    assert "/x-gatebench/repetiton: unknown key 'repetiton' in x-gatebench" in stored["error"]
    assert [b["kind"] for b in builds.builds] == ["teardown"]
