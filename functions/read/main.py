"""Cloud Function `read` (HTTP, called by the dashboard in a browser): the dashboard's read
API (`runs`, `runs/{id}`, `runs/{id}/view`, `runs/{id}/report`, `compare`) over the results
in Firestore, answered by gatebench.web.handle_read exactly as `gatebench serve` answers it
from SQLite. CORS for the site's origins (GATEBENCH_ORIGINS); see docs/frontend.md.
"""

import os

import functions_framework

from gatebench import web

_built = {}  # the store and the CORS policy, built on the first request


def _setup():
    if not _built:
        _built["store"] = web.results_store(os.environ)
        _built["cors"] = web.cors_from_env(os.environ)
    return _built["store"], _built["cors"]


@functions_framework.http
def read(request):
    store, cors = _setup()
    query = request.args.to_dict()
    origin = request.headers.get("Origin")
    return web.handle_read(store, request.method, request.path, query, cors=cors, origin=origin).flask()
