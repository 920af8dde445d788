"""What the dashboard's two Cloud Functions (``functions/read``, ``functions/upload``) read
from their environment, checked, so each handler stays a few lines over
:func:`handle_read` and :func:`handle_upload`.

Settings are names and origins only (Terraform sets them, infra/modules/dashboard):

* ``GATEBENCH_PROJECT``, ``GATEBENCH_FIRESTORE_DATABASE``: the results store the read
  function answers from;
* ``GATEBENCH_UPLOADS_BUCKET``, ``GATEBENCH_SPEC_PREFIX``: where a signed upload goes (the
  bucket whose "object finalized" events start the workflow);
* ``GATEBENCH_ORIGINS``: comma-separated origins of the site (CORS); empty: no browser.

With ``STORAGE_EMULATOR_HOST`` set (tests, a laptop) signed URLs point at that emulator.
Nothing here builds a client: the store and the signer connect on first use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gatebench.core.errors import GatebenchError
from gatebench.store import FirestoreStore, open_store
from gatebench.web._api import Cors
from gatebench.web._gcs import GcsSigner
from gatebench.web._uploads import UPLOAD_PREFIX, SignedUploads

_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
_PREFIX = re.compile(r"^[a-z0-9][a-z0-9_-]*/$")


class DashboardSettingError(GatebenchError):
    """A dashboard function's environment is not what Terraform sets (a deployment error)."""


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise DashboardSettingError(f"{name} is not set; infra/modules/dashboard sets it")
    return value


def cors_from_env(environ: Mapping[str, str]) -> Cors | None:
    """``GATEBENCH_ORIGINS`` as a :class:`~gatebench.web.Cors` (None when empty)."""
    origins = [o.strip() for o in environ.get("GATEBENCH_ORIGINS", "").split(",") if o.strip()]
    for origin in origins:
        if not _ORIGIN.match(origin):
            raise DashboardSettingError(
                f"GATEBENCH_ORIGINS: {origin[:100]!r} is not an origin "
                "(http(s)://HOST[:PORT], no path, never '*')"
            )
    return Cors(tuple(origins)) if origins else None


def results_store(environ: Mapping[str, str]) -> FirestoreStore:
    """The Firestore store the read function answers from (connects on first use)."""
    project = _required(environ, "GATEBENCH_PROJECT")
    database = environ.get("GATEBENCH_FIRESTORE_DATABASE", "").strip() or "(default)"
    store = open_store(f"firestore://{project}/{database}")
    assert isinstance(store, FirestoreStore)
    return store


def signed_uploads(environ: Mapping[str, str], *, credentials: Any = None) -> SignedUploads:
    """Signed PUTs into the uploads bucket, under the prefix the workflow's trigger watches."""
    bucket = _required(environ, "GATEBENCH_UPLOADS_BUCKET")
    prefix = environ.get("GATEBENCH_SPEC_PREFIX", "").strip() or UPLOAD_PREFIX
    if not _PREFIX.match(prefix):
        raise DashboardSettingError(
            f"GATEBENCH_SPEC_PREFIX: expected lowercase letters, digits, _ and - ending "
            f"with '/', got {prefix[:100]!r}"
        )
    emulator = environ.get("STORAGE_EMULATOR_HOST", "").strip() or None
    signer = GcsSigner(
        bucket,
        credentials=credentials,
        project=environ.get("GATEBENCH_PROJECT") or None,
        api_access_endpoint=emulator,
    )
    return SignedUploads(signer, prefix=prefix)


__all__ = ["DashboardSettingError", "cors_from_env", "results_store", "signed_uploads"]
