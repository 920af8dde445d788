"""The dashboard's server side: the JSON APIs both paths serve, and ``gatebench serve``.

The frontend (``frontend/``: static HTML, CSS and ES modules, no build step) talks to two
small APIs, described in docs/frontend.md:

* the read API, :func:`handle_read` (``runs``, ``runs/{id}``, ``runs/{id}/view``,
  ``runs/{id}/report``, ``compare``) over any :class:`~gatebench.store.ResultStore`;
* the upload API, :func:`handle_upload` (``validate``, ``uploads``): the content check
  (:func:`check_upload`), then an :class:`UploadAcceptor`: :class:`DirectUploads` queues a
  local run, :class:`SignedUploads` answers a signed URL for the bucket (GCP).

Both are pure (request parts in, a :class:`Reply` out), so a Cloud Function wraps each in
a few lines and the local server (:func:`build_server`) in a few more. What the pages show
is decided here too (:func:`run_view`, :func:`compare_view`), with the report's formatting.
"""

from __future__ import annotations

from gatebench.web._api import (
    READ_ROUTES,
    RUN_ID,
    UPLOAD_ROUTES,
    Cors,
    LiveRuns,
    compare_runs,
    get_report,
    get_run,
    get_run_view,
    handle_read,
    handle_upload,
    list_runs,
)
from gatebench.web._bucket import LocalBucket
from gatebench.web._dashboard import (
    DashboardSettingError,
    cors_from_env,
    results_store,
    signed_uploads,
)
from gatebench.web._gcs import GcsSigner
from gatebench.web._queue import DirectUploads, QueuedRun, QueueFull, RunQueue
from gatebench.web._reply import Reply
from gatebench.web._server import App, GatebenchHTTPServer, ServeLimits, build_server, is_loopback
from gatebench.web._site import (
    SITE_FORMAT,
    SiteConfig,
    SiteConfigError,
    default_frontend_dir,
    export_site,
)
from gatebench.web._static import resolve_static
from gatebench.web._uploads import (
    TICKET_SECONDS,
    UPLOAD_PREFIX,
    CheckedUpload,
    HmacSigner,
    SignedUploads,
    UploadAcceptor,
    UrlSigner,
    check_upload,
    content_type_for,
    object_name_for,
    safe_name,
    upload_name_from_object,
)
from gatebench.web._views import VIEW_FORMAT, compare_view, run_summary, run_view, spec_name

__all__ = [
    "READ_ROUTES",
    "RUN_ID",
    "SITE_FORMAT",
    "TICKET_SECONDS",
    "UPLOAD_PREFIX",
    "UPLOAD_ROUTES",
    "VIEW_FORMAT",
    "App",
    "CheckedUpload",
    "Cors",
    "DashboardSettingError",
    "DirectUploads",
    "GatebenchHTTPServer",
    "GcsSigner",
    "HmacSigner",
    "LiveRuns",
    "LocalBucket",
    "QueueFull",
    "QueuedRun",
    "Reply",
    "RunQueue",
    "ServeLimits",
    "SignedUploads",
    "SiteConfig",
    "SiteConfigError",
    "UploadAcceptor",
    "UrlSigner",
    "build_server",
    "check_upload",
    "compare_runs",
    "compare_view",
    "content_type_for",
    "cors_from_env",
    "default_frontend_dir",
    "export_site",
    "get_report",
    "get_run",
    "get_run_view",
    "handle_read",
    "handle_upload",
    "is_loopback",
    "list_runs",
    "object_name_for",
    "resolve_static",
    "results_store",
    "run_summary",
    "run_view",
    "safe_name",
    "signed_uploads",
    "spec_name",
    "upload_name_from_object",
]
