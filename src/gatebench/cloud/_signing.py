"""Cloud Storage V4 signed URLs for the upload function (the GCP ``gatebench.web.UrlSigner``).

The edge the upload function needs beyond the pure handlers: ``google-cloud-storage``
signs a ``PUT`` of one object whose ``Content-Type`` and ``x-goog-meta-gatebench`` headers
are part of the signature (``X-Goog-SignedHeaders``), so the browser must send exactly
what the ticket says and cannot change the run request. On Cloud Functions the runtime's
credentials hold no private key: the signature is made by IAM ``signBlob`` for the
function's own service account (it needs ``roles/iam.serviceAccountTokenCreator`` on
itself). Credentials that can sign (a service-account key, as in the tests) sign locally.
Nothing is built or fetched until the first URL is signed.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Mapping
from typing import Any


class GcsSigner:
    """Signs ``PUT gs://BUCKET/NAME`` for the upload function (``gatebench.web.SignedUploads``)."""

    def __init__(
        self,
        bucket: str,
        *,
        credentials: Any = None,
        project: str | None = None,
        api_access_endpoint: str | None = None,
    ) -> None:
        self.bucket = bucket
        self._credentials = credentials
        self._project = project
        self.api_access_endpoint = api_access_endpoint
        """``https://storage.googleapis.com`` unless told (an emulator in tests)."""
        self._lock = threading.Lock()

    @property
    def bucket_uri(self) -> str:
        return f"gs://{self.bucket}"

    def _signing(self) -> tuple[Any, dict[str, Any]]:
        """Credentials, and the extra arguments that make IAM sign when they cannot."""
        import google.auth
        from google.auth import credentials as auth_credentials
        from google.auth.transport.requests import Request

        with self._lock:
            if self._credentials is None:
                self._credentials, project = google.auth.default()
                self._project = self._project or project
            credentials = self._credentials
            if isinstance(credentials, auth_credentials.Signing):
                return credentials, {}
            if not credentials.valid:
                credentials.refresh(Request())
            return credentials, {
                "service_account_email": credentials.service_account_email,
                "access_token": credentials.token,
            }

    def sign_put(
        self, object_name: str, content_type: str, headers: Mapping[str, str], expires_at: float
    ) -> str:
        from google.cloud import storage

        credentials, extra = self._signing()
        client = storage.Client(project=self._project or "-", credentials=credentials)
        blob = client.bucket(self.bucket).blob(object_name)
        if self.api_access_endpoint:
            extra["api_access_endpoint"] = self.api_access_endpoint
        url: str = blob.generate_signed_url(
            version="v4",
            method="PUT",
            content_type=content_type,
            headers=dict(headers),
            expiration=datetime.datetime.fromtimestamp(expires_at, datetime.UTC),
            **extra,
        )
        return url


__all__ = ["GcsSigner"]
