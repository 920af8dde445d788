"""Cloud Function `upload` (HTTP, called by the dashboard in a browser): the dashboard's
upload API. `POST validate` checks a spec and answers the plan as it will run; `POST uploads`
checks it and answers a Cloud Storage V4 signed URL for one PUT of it into the uploads
bucket (with the form's run request signed in as `x-goog-meta-gatebench`); the bucket's
"object finalized" event then starts the workflow. gatebench.web.handle_upload decides;
CORS for the site's origins (GATEBENCH_ORIGINS); see docs/frontend.md.
"""

import os

import functions_framework

from gatebench import web

_built = {}  # the signer and the CORS policy, built on the first request


def _setup():
    if not _built:
        _built["uploads"] = web.signed_uploads(os.environ)
        _built["cors"] = web.cors_from_env(os.environ)
    return _built["uploads"], _built["cors"]


@functions_framework.http
def upload(request):
    uploads, cors = _setup()
    query = request.args.to_dict()
    origin = request.headers.get("Origin")
    body = request.get_data(cache=False)
    return web.handle_upload(
        request.method, request.path, query, body, accept=uploads, cors=cors, origin=origin
    ).flask()
