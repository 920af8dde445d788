"""The dashboard's server side: one Flask application for ``gatebench serve`` and the cloud
functions.

The frontend (``frontend/``: static HTML, CSS and ES modules, no build step) talks to two small
APIs (docs/frontend.md), Flask blueprints in ``_app``: the read API over any
:class:`~gatebench.store.ResultStore`, answering the report's views
(:func:`gatebench.core.report.run_view`), and the upload API (the content check,
:func:`gatebench.kinds.request.check_upload`, then an acceptor: a queued local run, or a signed
URL for the bucket on GCP). ``gatebench serve`` mounts both with the page and serves them with
waitress (``_local``, with the run queue of ``gatebench.local.queue``: loaded on first use, so
a Cloud Function that imports this package loads no local server, queue or process
management); the ``read`` and ``upload`` functions mount one each (:func:`cloud_app`).
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
    SignedUploads,
    UploadAcceptor,
    UrlSigner,
    content_type_for,
)

_LOCAL = ("DirectUploads", "Server", "ServeLimits", "build_server", "is_loopback")


def __getattr__(name: str) -> Any:
    """The local server's names, imported when first asked for."""
    if name not in _LOCAL:
        raise AttributeError(f"module 'gatebench.web' has no attribute {name!r}")
    return getattr(import_module(f"{__name__}._local"), name)


__all__ = [
    "READ_ROUTES",
    "RUN_ID",
    "SITE_FORMAT",
    "TICKET_SECONDS",
    "UPLOAD_ROUTES",
    "Dashboard",
    "DashboardSettingError",
    "DirectUploads",
    "LiveRuns",
    "ServeLimits",
    "Server",
    "SignedUploads",
    "SiteConfig",
    "SiteConfigError",
    "UploadAcceptor",
    "UrlSigner",
    "build_server",
    "cloud_app",
    "cloud_origins",
    "content_type_for",
    "default_frontend_dir",
    "dispatch",
    "export_site",
    "is_loopback",
    "new_app",
    "read_api",
    "resolve_static",
    "results_store",
    "signed_uploads",
    "upload_api",
]
