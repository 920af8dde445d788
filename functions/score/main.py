"""Cloud Functions `score` (HTTP, called by workflows/benchmark.yaml with OIDC) and
`ingest` (CloudEvent: the runs bucket's notification of a raw log finalized, through Pub/Sub).

score: {"run_id", "meter_wait_s"} → ingests every raw log of the run (idempotent; waits up to
meter_wait_s for the gateway VMs' meters to finish their last upload), scores its measurements
(Firestore), writes its BigQuery rows to gs://RUNS_BUCKET/runs/RUN/rows.jsonl, and answers
{"status": "done" | "partial", "scores", "rows_uri", ...}; 400/422 with located errors.
A scale or change-under-load run: its scale points and change outcomes, with the gateway VMs'
memory samples, stored as results; its report and rows written.
ingest: a raw log (raw/RUN/*/simulation.log) → the run's measurements, as it lands (the bucket
notifies only objects under raw/: infra/modules/functions); any other object is ignored.
"""

import os

import functions_framework

from gatebench import cloud
from gatebench.store import open_store

_storage = cloud.Storage()  # clients are built on first use
_stores = {}


def _store():
    location = f"firestore://{os.environ['GATEBENCH_PROJECT']}/{os.environ['GATEBENCH_FIRESTORE_DATABASE']}"
    return _stores.setdefault(location, open_store(location))


@functions_framework.http
def score(request):
    bucket = os.environ["GATEBENCH_RUNS_BUCKET"]
    try:
        body = cloud.json_body(request)
        run_id = cloud.run_id_from_request(body)
        wait = cloud.meter_wait_from_request(body, cloud.METER_WAIT_S)
        cloud.ingest_run(_storage, _store(), bucket, run_id, meter_wait_s=wait)
        result = cloud.finish_run(_store(), _storage, bucket, run_id, meter_wait_s=wait)
    except cloud.NothingMeasured as exc:
        return cloud.problems_reply(exc, 422)
    except cloud.RequestError as exc:
        return cloud.problems_reply(exc, 400)
    return cloud.reply(result)


@functions_framework.cloud_event
def ingest(event):
    ref = cloud.object_from_event(event.data)
    stored = cloud.ingest_object(_storage, _store(), ref.bucket, ref.name)
    if stored is not None:
        print(f"{ref.uri}: {stored} measurement(s) stored")
