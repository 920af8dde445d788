"""Cloud Function `score` (HTTP, called by workflows/benchmark.yaml with OIDC).

Request: {"run_id"}. Scores the run's measurements (Firestore), writes its BigQuery rows to
gs://RUNS_BUCKET/runs/RUN/rows.jsonl and answers {"status": "done" | "partial", "scores",
"rows_uri", ...}; 400/422 with located errors when there is nothing to score.
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
    try:
        run_id = cloud.run_id_from_request(cloud.json_body(request))
        result = cloud.finish_run(_store(), _storage, os.environ["GATEBENCH_RUNS_BUCKET"], run_id)
    except cloud.NothingMeasured as exc:
        return cloud.problems_reply(exc, 422)
    except cloud.RequestError as exc:
        return cloud.problems_reply(exc, 400)
    return cloud.reply(result)
