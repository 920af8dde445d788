"""Cloud Function `upload` (HTTP, called by the dashboard in a browser): the dashboard's
upload API. `POST validate` checks a spec and answers the plan as it will run; `POST uploads`
checks it and answers a Cloud Storage V4 signed URL for one PUT of it into the uploads
bucket (with the form's run request signed in as `x-goog-meta-gatebench`); the bucket's
"object finalized" event then starts the workflow. The same Flask handlers as `gatebench
serve` (gatebench.web.upload_api); CORS for the site's origins (GATEBENCH_ORIGINS); see
docs/frontend.md.
"""

import os

import functions_framework

from gatebench import web

_app = web.cloud_app("upload", os.environ)  # the signer is built on the first request


@functions_framework.http
def upload(request):
    return web.dispatch(_app, request)
