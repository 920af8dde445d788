"""The Cloud Functions as deployed (unpacked `make bundle` archives) served by
functions-framework over real HTTP, with the Cloud Storage emulator and the Firestore
emulator behind the real google-cloud-storage and google-cloud-firestore clients."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.firestore import EmulatorFirestore, start_firestore_emulator
from cloud.servers import (
    Endpoint,
    gcs_env,
    start_function,
    start_gcs_emulator,
    storage_client,
    unpack_bundle,
)
from cloud.settings import deployment
from gatebench.core.model import run_id_for_object
from gatebench.local.procs import Supervisor

ROOT = Path(__file__).resolve().parents[2]
AUCTION = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()
BUCKET = "gb-uploads"
RUNS = "gb-runs"
SETTINGS = deployment(region="europe-central2", limits={"vm_lifetime": 3600, "max_active_runs": 2})


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("functions")
    with Supervisor() as supervisor:
        gcs = start_gcs_emulator(supervisor, tmp / "logs")
        client: Any = storage_client(gcs)
        bucket = client.create_bucket(BUCKET)
        runs = client.create_bucket(RUNS)
        # What infra/ writes for the functions (the deployment's settings), as a deploy would.
        runs.blob("pipeline/settings.json").upload_from_string(json.dumps(SETTINGS))
        _, firestore_host = start_firestore_emulator(supervisor, tmp / "logs")
        env = {
            **gcs_env(gcs),
            "FIRESTORE_EMULATOR_HOST": firestore_host,
            "GATEBENCH_FIRESTORE_DATABASE": "(default)",
            "GATEBENCH_RUNS_BUCKET": RUNS,
        }
        parse = start_function(supervisor, unpack_bundle("parse", tmp), "parse", tmp / "logs", env)
        score = start_function(supervisor, unpack_bundle("score", tmp), "score", tmp / "logs", env)
        ingest = start_function(
            supervisor, tmp / "score" / "src", "ingest", tmp / "logs", env, signature="cloudevent"
        )
        yield {
            "gcs": gcs,
            "client": client,
            "bucket": bucket,
            "parse": parse,
            "score": score,
            "ingest": ingest,
            "firestore": firestore_host,
        }


def post(endpoint: Endpoint, body: Any, raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(
        endpoint.url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def upload(stack: dict[str, Any], name: str, data: bytes) -> str:
    blob = stack["bucket"].blob(name)
    blob.upload_from_string(data, content_type="application/yaml")
    return str(blob.generation)


def test_parse_answers_the_run_id_and_document_of_an_upload(stack: dict[str, Any]) -> None:
    generation = upload(stack, "specs/auction.yaml", AUCTION)
    body = {"bucket": BUCKET, "name": "specs/auction.yaml", "execution_id": "exec-1"}
    status, answer = post(stack["parse"], body)  # no generation: the live one
    assert status == 200, answer
    assert answer["generation"] == generation
    assert answer["run_id"] == run_id_for_object(BUCKET, "specs/auction.yaml", generation)
    assert answer["gateways"] == ["nginx", "haproxy", "caddy", "envoy", "apache", "traefik"]
    fields = answer["document"]["fields"]
    assert fields["status"] == {"stringValue": "received"}
    assert fields["execution_id"] == {"stringValue": "exec-1"}
    # Same generation, same run; a new upload of the same name, a new run.
    status, again = post(stack["parse"], {**body, "generation": generation})
    assert again["run_id"] == answer["run_id"]
    newer = upload(stack, "specs/auction.yaml", AUCTION)
    status, third = post(stack["parse"], {**body, "generation": newer})
    assert third["run_id"] != answer["run_id"]


def test_parse_answers_400_with_located_errors_and_the_run_id(stack: dict[str, Any]) -> None:
    broken = AUCTION.replace(b"repetitions: 10 ", b"repetiton: 10 ")
    generation = upload(stack, "specs/broken.yaml", broken)
    status, answer = post(stack["parse"], {"bucket": BUCKET, "name": "specs/broken.yaml"})
    assert status == 400
    assert answer["run_id"] == run_id_for_object(BUCKET, "specs/broken.yaml", generation)
    assert [(e["pointer"], e["message"]) for e in answer["errors"]] == [
        (
            "/x-gatebench/repetiton",
            "unknown key 'repetiton' in x-gatebench; did you mean 'repetitions'?",
        )
    ]
    assert answer["document"]["fields"]["status"] == {"stringValue": "received"}


def test_parse_rejects_bad_requests_and_missing_objects(stack: dict[str, Any]) -> None:
    status, answer = post(stack["parse"], None, raw=b"{not json")
    assert status == 400
    assert answer["errors"][0]["pointer"] == ""
    status, answer = post(stack["parse"], {"bucket": "UPPER", "name": "x"})
    assert status == 400
    assert answer["errors"][0]["pointer"] == "/bucket"
    status, answer = post(stack["parse"], {"bucket": BUCKET, "name": "specs/none.yaml"})
    assert status == 404
    assert answer == {
        "errors": [
            {
                "pointer": "/name",
                "message": "gs://gb-uploads/specs/none.yaml: no such object",
                "severity": "error",
            }
        ]
    }


def test_score_scores_the_run_the_workflow_created_and_writes_its_rows(
    stack: dict[str, Any],
) -> None:
    import os

    from gatebench.core.model import Measurement
    from gatebench.store import open_store

    generation = upload(stack, "specs/score.yaml", AUCTION)
    status, parsed = post(stack["parse"], {"bucket": BUCKET, "name": "specs/score.yaml"})
    assert status == 200
    run_id = parsed["run_id"]
    # The run document exactly as the workflow creates it (connector → emulator) ...
    connector = EmulatorFirestore(stack["firestore"])
    try:
        connector.create_document(
            {
                "parent": "projects/gatebench-test/databases/(default)/documents",
                "collectionId": "runs",
                "documentId": run_id,
                "body": parsed["document"],
            }
        )
    finally:
        connector.close()
    # ... and measurements as the ingest step stores them, for two of the six targets.
    os.environ["FIRESTORE_EMULATOR_HOST"] = stack["firestore"]
    store = open_store("firestore://gatebench-test")
    for workload in ("create-auction", "bid", "retrieve"):
        for target, mean in (("nginx", 5.0), ("haproxy", 7.0)):
            store.put_measurement(
                Measurement(
                    run_id,
                    target,
                    workload,
                    1,
                    10,
                    10,
                    0,
                    0.0,
                    20.0,
                    1.0,
                    mean,
                    9.0,
                    1.0,
                    mean,
                    mean,
                    mean,
                    mean,
                )
            )
    status, answer = post(stack["score"], {"run_id": run_id})
    assert status == 200, answer
    assert answer["status"] == "partial"
    assert answer["scores"]["nginx"] == 100.0
    assert answer["scores"]["haproxy"] < 100.0
    assert store.scores(run_id)
    assert store.get_run(run_id).spec_uri == f"gs://{BUCKET}/specs/score.yaml#{generation}"
    rows = stack["client"].bucket(RUNS).blob(f"runs/{run_id}/rows.jsonl").download_as_text()
    assert len(rows.splitlines()) == answer["rows"] > 0


def test_score_rejects_unknown_and_unmeasured_runs(stack: dict[str, Any]) -> None:
    status, answer = post(stack["score"], {"run_id": "nope"})
    assert status == 400
    assert answer["errors"][0]["pointer"] == "/run_id"
    status, answer = post(stack["score"], {"run_id": "r-" + "0" * 20})
    assert status == 400
    assert answer["errors"][0]["message"] == "run 'r-00000000000000000000' does not exist"


def test_ingest_stores_the_measurements_of_a_raw_log_from_a_binary_cloudevent(
    stack: dict[str, Any],
) -> None:
    """Eventarc delivers the bucket's Pub/Sub notification to the function in CloudEvents
    binary mode: the attributes as ce-* headers, the push body (the message, its attributes
    naming the object) as the JSON body (tests/cloud/notifications.py). The bucket notifies
    objects under raw/ alone (infra/modules/functions)."""
    import os

    from cloud.notifications import ingest_trigger, pubsub_event
    from cloud.simlog import SimLogWriter
    from gatebench.cloud import ObjectRef, parse_upload
    from gatebench.cloud._render import render_run
    from gatebench.store import open_store

    ref = ObjectRef(BUCKET, "specs/ingest.yaml", "5")
    run = parse_upload(AUCTION, ref, now=1.0).run
    os.environ["FIRESTORE_EMULATOR_HOST"] = stack["firestore"]
    store = open_store("firestore://gatebench-test")
    store.create_run(run)
    settings = {"prefix": "gb", "project": "p", "zone": "z", "layout": "dns"}
    workload = render_run(AUCTION, ref, settings, RUNS).workload
    measured = [p for p in workload["phases"] if p["measured"]][:2]
    log = SimLogWriter()
    for phase in measured:
        for i in range(10):
            log.request(phase["id"], 100 * phase["index"] + i, 100 * phase["index"] + i + 3)
    runs = stack["client"].bucket(RUNS)
    runs.blob(f"runs/{run.run_id}/workload.json").upload_from_string(json.dumps(workload))
    name = f"raw/{run.run_id}/gatling/simulation.log"
    blob = runs.blob(name)
    blob.upload_from_string(log.bytes())

    def deliver(object_name: str, generation: str) -> int:
        headers, body = pubsub_event(RUNS, object_name, generation)
        request = urllib.request.Request(
            stack["ingest"].url, data=body, method="POST", headers=headers
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            return int(resp.status)

    assert deliver(name, str(blob.generation)) == 200
    stored = store.measurements(run.run_id)
    assert [(m.target, m.workload, m.requests) for m in stored] == sorted(
        (p["target"], p["workload"], 10) for p in measured
    )
    # The bucket never notifies any other object; were one delivered, it would be ignored. A
    # repeated event changes nothing.
    assert not ingest_trigger().fires(f"runs/{run.run_id}/workload.json")
    assert deliver(f"runs/{run.run_id}/workload.json", "1") == 200
    assert deliver(name, str(blob.generation)) == 200
    assert len(store.measurements(run.run_id)) == len(measured)


def test_parse_refuses_a_zone_outside_the_region_and_an_upload_beyond_the_active_runs(
    stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deployed parse function reads the deployment's settings and the runs in progress
    (Firestore): a plan zone outside the region is a located error; while
    limits.max_active_runs runs are in progress an upload starts none, and once one has
    finished the same upload is accepted."""
    import time

    import yaml

    from gatebench.core.model import RunRecord, RunStatus
    from gatebench.store import open_store

    doc = yaml.safe_load(AUCTION)
    doc["x-gatebench"]["infrastructure"]["zone"] = "us-east1-b"
    upload(stack, "specs/elsewhere.yaml", yaml.safe_dump(doc).encode())
    status, answer = post(stack["parse"], {"bucket": BUCKET, "name": "specs/elsewhere.yaml"})
    assert status == 400
    assert [e["pointer"] for e in answer["errors"]] == ["/x-gatebench/infrastructure/zone"]
    assert "'us-east1-b' is not in the deployment's region 'europe-central2'" in answer["message"]

    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", stack["firestore"])
    store = open_store("firestore://gatebench-test/(default)")
    from gatebench.cloud._parse import active_runs

    # whatever earlier tests left counting (as the function counts them): one more is the limit
    in_progress = len(active_runs(store.unfinished_runs(), SETTINGS, time.time(), ""))
    limit = in_progress + 1
    settings = {**SETTINGS, "limits": {**SETTINGS["limits"], "max_active_runs": limit}}
    runs = stack["client"].bucket(RUNS)
    runs.blob("pipeline/settings.json").upload_from_string(json.dumps(settings))
    busy = "r-" + "9" * 20
    now = time.time()
    store.create_run(
        RunRecord(
            busy, "gs://u/x#1", "0" * 64, status=RunStatus.RECEIVED, created_at=now, updated_at=now
        )
    )
    try:
        upload(stack, "specs/one-too-many.yaml", AUCTION)
        body = {"bucket": BUCKET, "name": "specs/one-too-many.yaml"}
        status, answer = post(stack["parse"], body)
        assert status == 400
        assert answer["errors"][0]["pointer"] == ""
        assert f"and this deployment runs at most {limit} at once" in answer["message"]
        assert busy in answer["message"]
        store.set_status(busy, RunStatus.DONE)
        status, answer = post(stack["parse"], body)
        assert status == 200, answer
    finally:
        runs.blob("pipeline/settings.json").upload_from_string(json.dumps(SETTINGS))
