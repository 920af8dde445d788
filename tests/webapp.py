"""The dashboard's Flask handlers in a test, without a server: the Cloud Functions' apps (the
blueprints ``gatebench serve`` mounts under ``/api``) over a given store or acceptor, asked
through Flask's test client (``from webapp import read_client``)."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from gatebench.store import ResultStore
from gatebench.web import UploadAcceptor, cloud_app


def read_client(store: ResultStore, origins: str = "", **given: Any) -> FlaskClient:
    """The ``read`` function's app over ``store`` (CORS for ``origins``, comma-separated)."""
    app = cloud_app("read", {"GATEBENCH_ORIGINS": origins}, store=lambda: store, **given)
    return app.test_client()


def upload_client(acceptor: UploadAcceptor, origins: str = "", **given: Any) -> FlaskClient:
    """The ``upload`` function's app, handing valid uploads to ``acceptor``."""
    app = cloud_app("upload", {"GATEBENCH_ORIGINS": origins}, acceptor=lambda: acceptor, **given)
    return app.test_client()
