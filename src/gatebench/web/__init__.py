"""The dashboard's server side: one Flask application for ``gatebench serve`` and the cloud
functions, and the pages' data.

The frontend (``frontend/``: static HTML, CSS and ES modules, no build step) talks to two small
APIs (docs/frontend.md), Flask blueprints in ``_app``: the read API over any
:class:`~gatebench.store.ResultStore` and the upload API (the content check, :func:`check_upload`,
then an acceptor: a queued local run, or a signed URL for the bucket on GCP). ``gatebench
serve`` mounts both with the page and serves them with waitress (``_local``: loaded on first
use, so a Cloud Function that imports this package loads no local server, queue or process
management); the ``read`` and ``upload`` functions mount one each (:func:`cloud_app`). What the
pages show is decided in ``_views``, with the report's formatting.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from gatebench.web._app import (
    READ_ROUTES,
    RUN_ID,
    UPLOAD_ROUTES,
    Dashboard,
    DashboardSettingError,
    LiveRuns,
    cloud_app,
    cloud_origins,
    dispatch,
    new_app,
    read_api,
    results_store,
    signed_uploads,
    upload_api,
)
from gatebench.web._gcs import GcsSigner
from gatebench.web._site import (
    SITE_FORMAT,
    SiteConfig,
    SiteConfigError,
    default_frontend_dir,
    export_site,
    resolve_static,
)
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
from gatebench.web._views import (
    VIEW_FORMAT,
    capacity_view,
    compare_view,
    run_summary,
    run_view,
    spec_name,
)

_LOCAL = {
    "LocalBucket": "_local",
    "Server": "_local",
    "ServeLimits": "_local",
    "build_server": "_local",
    "is_loopback": "_local",
    "local_app": "_local",
    "DirectUploads": "_queue",
    "QueueFull": "_queue",
    "QueuedRun": "_queue",
    "RunQueue": "_queue",
}


def __getattr__(name: str) -> Any:
    """The local server's names, imported when first asked for."""
    if name not in _LOCAL:
        raise AttributeError(f"module 'gatebench.web' has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_LOCAL[name]}"), name)


__all__ = [
    "READ_ROUTES",
    "RUN_ID",
    "SITE_FORMAT",
    "TICKET_SECONDS",
    "UPLOAD_PREFIX",
    "UPLOAD_ROUTES",
    "VIEW_FORMAT",
    "CheckedUpload",
    "Dashboard",
    "DashboardSettingError",
    "DirectUploads",
    "GcsSigner",
    "HmacSigner",
    "LiveRuns",
    "LocalBucket",
    "QueueFull",
    "QueuedRun",
    "RunQueue",
    "ServeLimits",
    "Server",
    "SignedUploads",
    "SiteConfig",
    "SiteConfigError",
    "UploadAcceptor",
    "UrlSigner",
    "build_server",
    "capacity_view",
    "check_upload",
    "cloud_app",
    "cloud_origins",
    "compare_view",
    "content_type_for",
    "default_frontend_dir",
    "dispatch",
    "export_site",
    "is_loopback",
    "local_app",
    "new_app",
    "object_name_for",
    "read_api",
    "resolve_static",
    "results_store",
    "run_summary",
    "run_view",
    "safe_name",
    "signed_uploads",
    "spec_name",
    "upload_api",
    "upload_name_from_object",
]
