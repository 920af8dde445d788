"""Cloud Function `render` (HTTP, called by workflows/benchmark.yaml with OIDC).

Request: {"run_id", "bucket", "name", "generation"}. Renders every gateway's configuration
for the run's machines, the machines themselves (fleet.json) and the tester's workload,
and writes them under gs://RUNS_BUCKET/runs/RUN/. Same input, same objects: safe to retry.
"""

import os

import functions_framework

from gatebench import cloud

_storage = cloud.Storage()  # builds its client on first use


@functions_framework.http
def render(request):
    runs_bucket = os.environ["GATEBENCH_RUNS_BUCKET"]
    try:
        body = cloud.json_body(request)
        ref = cloud.object_from_request(body)
        run_id = cloud.run_id_from_request(body)
        found = _storage.fetch(ref)
        settings = cloud.read_settings(_storage, runs_bucket)
        rendered = cloud.render_run(found.data, ref.at(found.generation), settings, runs_bucket, found.metadata)
    except cloud.ObjectMissing as exc:
        return cloud.problems_reply(exc, 404)
    except cloud.RequestError as exc:
        return cloud.problems_reply(exc, 400)
    if rendered.run_id != run_id:
        return cloud.reply({"errors": [{"pointer": "/run_id", "message": f"the object's run is {rendered.run_id}"}]}, 400)
    for name, text in rendered.objects().items():
        _storage.write(runs_bucket, name, text, "text/plain; charset=utf-8")
    return cloud.reply(rendered.summary())
