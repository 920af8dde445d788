"""The cloud path's own core: what the Cloud Functions, the Cloud Build steps and the VMs
need beyond the shared core (object references and run ids, parsing an upload into a run
record, Firestore's REST encoding for the workflow, Cloud Storage access, the functions'
HTTP edge, the dashboard functions' settings and their deployable bundles). Decisions stay
pure; clients are built on first use.
"""

from __future__ import annotations

from gatebench.cloud._capacity import ingest_run
from gatebench.cloud._firestore_rest import firestore_fields, firestore_value, plain_value
from gatebench.cloud._http import json_body, problems_reply, reply
from gatebench.cloud._ingest import METER_WAIT_S, ingest_object
from gatebench.cloud._objects import (
    NothingMeasured,
    ObjectRef,
    RequestError,
    meter_wait_from_request,
    object_from_event,
    object_from_request,
    run_id_from_request,
)
from gatebench.cloud._parse import ParseOutcome, parse_upload
from gatebench.cloud._render import RenderedRun, render_run
from gatebench.cloud._score import finish_run
from gatebench.cloud._settings import read_settings
from gatebench.cloud._signing import GcsSigner
from gatebench.cloud._storage import ObjectMissing, Storage, StoredObject

__all__ = [
    "METER_WAIT_S",
    "GcsSigner",
    "NothingMeasured",
    "ObjectMissing",
    "ObjectRef",
    "ParseOutcome",
    "RenderedRun",
    "RequestError",
    "Storage",
    "StoredObject",
    "finish_run",
    "firestore_fields",
    "firestore_value",
    "ingest_object",
    "ingest_run",
    "json_body",
    "meter_wait_from_request",
    "object_from_event",
    "object_from_request",
    "parse_upload",
    "plain_value",
    "problems_reply",
    "read_settings",
    "render_run",
    "reply",
    "run_id_from_request",
]
