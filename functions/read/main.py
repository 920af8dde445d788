"""Cloud Function `read` (HTTP, called by the dashboard in a browser): the dashboard's read
API (`runs`, `runs/{id}`, `runs/{id}/view`, `runs/{id}/report`, `compare`) over the results
in Firestore, answered by the same Flask handlers as `gatebench serve` answers it from SQLite
(gatebench.web.read_api). CORS for the site's origins (GATEBENCH_ORIGINS); see docs/frontend.md.
"""

import os

import functions_framework

from gatebench import web

_app = web.cloud_app("read", os.environ)  # the store connects on the first request


@functions_framework.http
def read(request):
    return web.dispatch(_app, request)
