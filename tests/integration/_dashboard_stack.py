"""The dashboard's Cloud Functions as deployed (functions/read, upload and parse from their
bundles, under functions-framework) with their Google Cloud stand-ins: fake-gcs-server for
the uploads bucket and the Firestore emulator. Shared by test_dashboard_functions.py (HTTP
only) and test_frontend_gcp_functions.py (the exported site in Chromium)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cloud.firestore import start_firestore_emulator
from cloud.servers import gcs_env, start_fake_gcs, start_function, storage_client, unpack_bundle
from cloud.settings import deployment
from cloud.signing import write_key_file
from gatebench.local.procs import Supervisor

UPLOADS = "gb-dash-uploads"
RUNS = "gb-dash-runs"


@contextmanager
def dashboard_stack(
    tmp: Path, origins: Sequence[str], *, cors_headers: Sequence[str] = ()
) -> Iterator[dict[str, Any]]:
    """Everything started under one Supervisor (stopped by PID on exit). ``origins`` become
    GATEBENCH_ORIGINS, the sites the functions answer CORS for; ``cors_headers`` are extra
    request headers fake-gcs-server lets a browser send cross-origin. Yields the endpoints
    (``read``, ``upload``, ``parse``, ``gcs``), the ``bucket``, the ``firestore`` host,
    the ``database``, the signing key's ``public_key`` and ``tmp``."""
    logs = tmp / "logs"
    database = f"d{uuid.uuid4().hex[:12]}"
    previous = os.environ.get("STORAGE_EMULATOR_HOST")
    try:
        with Supervisor() as supervisor:
            gcs = start_fake_gcs(supervisor, logs, cors_headers=cors_headers)
            client: Any = storage_client(gcs)  # sets STORAGE_EMULATOR_HOST
            bucket = client.create_bucket(UPLOADS)
            # The deployment's settings, which the parse function reads (infra/ writes them).
            runs = client.create_bucket(RUNS)
            runs.blob("pipeline/settings.json").upload_from_string(json.dumps(deployment()))
            _, firestore_host = start_firestore_emulator(supervisor, logs)
            public_key = write_key_file(tmp / "key.json")
            env = {
                **gcs_env(gcs),
                "FIRESTORE_EMULATOR_HOST": firestore_host,
                "GATEBENCH_FIRESTORE_DATABASE": database,
                "GATEBENCH_UPLOADS_BUCKET": UPLOADS,
                "GATEBENCH_RUNS_BUCKET": RUNS,
                "GATEBENCH_SPEC_PREFIX": "specs/",
                "GATEBENCH_ORIGINS": ",".join(origins),
            }
            signing = {"GOOGLE_APPLICATION_CREDENTIALS": str(tmp / "key.json")}
            functions = {
                name: start_function(
                    supervisor,
                    unpack_bundle(name, tmp),
                    name,
                    logs,
                    {**env, **signing} if name == "upload" else env,
                )
                for name in ("read", "upload", "parse")
            }
            yield {
                **functions,
                "gcs": gcs,
                "bucket": bucket,
                "firestore": firestore_host,
                "database": database,
                "public_key": public_key,
                "tmp": tmp,
            }
    finally:
        if previous is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = previous
