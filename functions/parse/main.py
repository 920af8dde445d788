"""Cloud Function `parse` (HTTP, called by workflows/benchmark.yaml with OIDC).

Request: {"bucket", "name", "generation"?, "execution_id"?}. Reads the uploaded spec and
answers its run id and run document (200), or the same with every located problem (400),
or 404 when the object does not exist. The object's `gatebench` metadata (the upload form's
run request, signed into the upload URL) is applied to the plan; the deployment's settings
and the runs in progress may refuse it (a zone outside the region, too many runs at once).
See gatebench.cloud.parse_upload.
"""

import os
import time

import functions_framework

from gatebench import cloud
from gatebench.store import open_store

_storage = cloud.Storage()  # builds its client on first use
_stores = {}


def _store():
    location = f"firestore://{os.environ['GATEBENCH_PROJECT']}/{os.environ['GATEBENCH_FIRESTORE_DATABASE']}"
    return _stores.setdefault(location, open_store(location))


@functions_framework.http
def parse(request):
    try:
        body = cloud.json_body(request)
        ref = cloud.object_from_request(body)
        found = _storage.fetch(ref)
    except cloud.ObjectMissing as exc:
        return cloud.problems_reply(exc, 404)
    except cloud.RequestError as exc:
        return cloud.problems_reply(exc, 400)
    try:
        settings = cloud.read_settings(_storage, os.environ["GATEBENCH_RUNS_BUCKET"])
    except cloud.RequestError as exc:
        return cloud.problems_reply(exc, 500)
    outcome = cloud.parse_upload(
        found.data,
        ref.at(found.generation),
        now=time.time(),
        metadata=found.metadata,
        settings=settings,
        unfinished=_store().unfinished_runs(),
    )
    return cloud.reply(outcome.response(body.get("execution_id")), 200 if outcome.ok else 400)
