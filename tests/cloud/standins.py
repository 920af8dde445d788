"""In-memory stand-ins for the services benchmark.yaml calls, for fast tests of the
workflow's control flow (which path runs teardown, what each status transition writes).

They are stand-ins, not emulators: the end-to-end tests in tests/integration/ replace them
with the real functions (functions-framework), the GCS emulator, the Firestore emulator and
the build YAMLs run locally. What they do implement follows the REST semantics of the
connectors: createDocument fails with 409 when the document exists, patch honours
``updateMask.fieldPaths`` (nested paths included) and ``currentDocument.exists``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .workflows_interpreter import WorkflowError, error, urllib_transport

DOCS = "googleapis.firestore.v1.projects.databases.documents"
BUILD_CREATE = "googleapis.cloudbuild.v1.projects.locations.builds.create"
BQ_JOBS_INSERT = "googleapis.bigquery.v2.jobs.insert"


RESTRICTED_BUILD_REGIONS = (
    "us-central1",
    "us-west2",
    "europe-west1",
    "asia-east1",
    "australia-southeast1",
    "southamerica-east1",
)
"""Where a project restricted by its usage may run Cloud Build at all (Cloud Build's
"Locations" page, "Restricted regions for some projects"): a new project is one. Both Cloud
Build stand-ins act as such a project, the strictest case."""


def build_location_refused(parent: str) -> WorkflowError | None:
    """What Cloud Build answers a new project's ``builds.create`` in a region outside
    :data:`RESTRICTED_BUILD_REGIONS` (``parent``: ``projects/P/locations/L``); None when it
    may run there."""
    location = parent.rsplit("/", 1)[-1]
    if location in RESTRICTED_BUILD_REGIONS:
        return None
    return http_error(
        400,
        "failed precondition: due to quota restrictions, cannot run builds in this region. "
        "Please contact support",
        "FAILED_PRECONDITION",
    )


def http_error(code: int, message: str, status: str) -> WorkflowError:
    return error(
        "HttpError",
        f"HTTP server responded with error code {code}",
        code=code,
        body={"error": {"code": code, "message": message, "status": status}},
        headers={"content-type": "application/json"},
    )


@dataclass
class MemoryFirestore:
    """Documents by full resource name, in Firestore's REST shape (``{"fields": ...}``)."""

    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    writes: list[tuple[str, str, list[str]]] = field(default_factory=list)
    failing_patches: dict[str, int] = field(default_factory=dict)
    """A status value → the HTTP code every patch writing that status answers (Firestore
    down, or refusing): the write is not applied."""
    refused: list[tuple[str, int]] = field(default_factory=list)
    flaky: dict[str, int] = field(default_factory=dict)
    """What a patch writes (a status value, else the first field it updates) → how many of
    those writes answer 500 (INTERNAL, which Firestore documents as transient; the connector
    retries 503 itself) before one is applied."""

    def connectors(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {
            f"{DOCS}.createDocument": self.create_document,
            f"{DOCS}.patch": self.patch,
            f"{DOCS}.get": self.get,
        }

    def create_document(self, args: dict[str, Any]) -> dict[str, Any]:
        name = f"{args['parent']}/{args['collectionId']}/{args['documentId']}"
        if name in self.documents:
            raise http_error(409, f"Document already exists: {name}", "ALREADY_EXISTS")
        self.documents[name] = {"name": name, "fields": copy.deepcopy(args["body"]["fields"])}
        self.writes.append(("create", name, sorted(args["body"]["fields"])))
        return self.documents[name]

    def get(self, args: dict[str, Any]) -> dict[str, Any]:
        if args["name"] not in self.documents:
            raise http_error(404, f"Document not found: {args['name']}", "NOT_FOUND")
        doc = copy.deepcopy(self.documents[args["name"]])
        mask = args.get("mask.fieldPaths")
        if mask is not None:  # only the fields asked for (top-level names here)
            doc["fields"] = {k: v for k, v in doc["fields"].items() if k in mask}
        return doc

    def patch(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args["name"]
        status = args["body"]["fields"].get("status", {}).get("stringValue")
        if status in self.failing_patches:
            code = self.failing_patches[status]
            self.refused.append((status, code))
            raise http_error(code, f"write of status {status!r} refused", "UNAVAILABLE")
        written = status or next(iter(args.get("updateMask.fieldPaths") or [""]))
        if self.flaky.get(written, 0) > 0:
            self.flaky[written] -= 1
            self.refused.append((written, 500))
            raise http_error(500, f"write of {written!r} failed for now", "INTERNAL")
        exists = args.get("currentDocument.exists")
        if exists is True and name not in self.documents:
            raise http_error(404, f"No document to update: {name}", "NOT_FOUND")
        if exists is False and name in self.documents:
            raise http_error(409, f"Document already exists: {name}", "ALREADY_EXISTS")
        doc = self.documents.setdefault(name, {"name": name, "fields": {}})
        mask = args.get("updateMask.fieldPaths")
        body = args["body"]["fields"]
        if mask is None:
            doc["fields"] = copy.deepcopy(body)
            mask = sorted(body)
        for path in mask:
            _apply_path(doc["fields"], body, path.split("."))
        self.writes.append(("patch", name, list(mask)))
        return copy.deepcopy(doc)

    def field(self, name: str, path: str) -> Any:
        """A plain value from a stored document: ``field(doc, "status_times.parsed")``."""
        value: Any = {"mapValue": {"fields": self.documents[name]["fields"]}}
        for part in path.split("."):
            value = value["mapValue"]["fields"][part]
        return plain(value)


def _apply_path(target: dict[str, Any], source: dict[str, Any], parts: list[str]) -> None:
    head, rest = parts[0], parts[1:]
    if not rest:
        if head in source:
            target[head] = copy.deepcopy(source[head])
        else:
            target.pop(head, None)
        return
    src = source.get(head, {}).get("mapValue", {}).get("fields", {})
    dst = target.setdefault(head, {"mapValue": {"fields": {}}})
    dst.setdefault("mapValue", {}).setdefault("fields", {})
    _apply_path(dst["mapValue"]["fields"], src, rest)


def plain(value: dict[str, Any]) -> Any:
    """A Firestore REST value as a Python value."""
    (kind, inner), *_ = value.items()
    if kind == "mapValue":
        return {k: plain(v) for k, v in (inner.get("fields") or {}).items()}
    if kind == "arrayValue":
        return [plain(v) for v in inner.get("values") or []]
    if kind == "integerValue":
        return int(inner)
    if kind == "nullValue":
        return None
    return inner


@dataclass
class RecordingBuilds:
    """Cloud Build stand-in: records each build; a config can be made to fail or time out
    the way the connector reports it (an OperationError carrying the failed operation). As a
    new project, it runs builds in the restricted regions only (:func:`build_location_refused`)."""

    outcomes: dict[str, str] = field(default_factory=dict)
    """Build id (provision/load/teardown, read from the config's tags) → SUCCESS|FAILURE|TIMEOUT."""
    builds: list[dict[str, Any]] = field(default_factory=list)

    def connectors(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {BUILD_CREATE: self.create}

    def create(self, args: dict[str, Any]) -> dict[str, Any]:
        refused = build_location_refused(args["parent"])
        if refused is not None:
            raise refused
        body = args["body"]
        kind = next(t for t in body.get("tags", []) if t in ("provision", "load", "teardown"))
        self.builds.append({"kind": kind, **copy.deepcopy(args)})
        status = self.outcomes.get(kind, "SUCCESS")
        build = {"id": f"build-{len(self.builds)}", "status": status, **body}
        if status != "SUCCESS":
            raise WorkflowError(
                {
                    "message": f"Build {build['id']} finished with status {status}",
                    "tags": ["OperationError"],
                    "operation": {"done": True, "metadata": {"build": build}},
                }
            )
        return build


@dataclass
class RecordingBigQuery:
    """The one stand-in for BigQuery (no emulator exists): records load jobs by id and answers
    409 for a job id it has seen, as BigQuery does."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def connectors(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {BQ_JOBS_INSERT: self.insert}

    def insert(self, args: dict[str, Any]) -> dict[str, Any]:
        job_id = args["body"]["jobReference"]["jobId"]
        if job_id in self.jobs:
            raise http_error(409, f"Already Exists: Job {job_id}", "ALREADY_EXISTS")
        self.jobs[job_id] = copy.deepcopy(args["body"])
        return {"jobReference": args["body"]["jobReference"], "status": {"state": "DONE"}}


Handler = Callable[[dict[str, Any]], tuple[int, Any]]


@dataclass
class RoutedHttp:
    """An HTTP transport for the interpreter that answers by URL from Python handlers; each
    handler gets the decoded JSON body and returns (status, JSON body). URLs without a
    handler go to real HTTP (a function served by functions-framework)."""

    routes: dict[str, Handler]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __call__(
        self, method: str, url: str, headers: dict[str, str], data: bytes | None, timeout: float
    ) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(data) if data else None
        self.calls.append({"method": method, "url": url, "headers": headers, "body": body})
        if url not in self.routes:
            return urllib_transport(method, url, headers, data, timeout)
        status, payload = self.routes[url](body)
        return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


@dataclass
class BigQueryLoads:
    """The one stand-in for BigQuery (no emulator exists): ``jobs.insert`` load jobs read
    their newline-delimited JSON from the emulated bucket and every row is checked against
    the table's schema (src/gatebench/core/report/bigquery_schema.json: names, required fields,
    types), then recorded. A job id seen before answers 409, as BigQuery does."""

    storage: Any
    schema: list[dict[str, Any]]
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def connectors(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {BQ_JOBS_INSERT: self.insert}

    def insert(self, args: dict[str, Any]) -> dict[str, Any]:
        body = args["body"]
        job_id = body["jobReference"]["jobId"]
        if job_id in self.jobs:
            raise http_error(409, f"Already Exists: Job {job_id}", "ALREADY_EXISTS")
        load = body["configuration"]["load"]
        assert load["sourceFormat"] == "NEWLINE_DELIMITED_JSON"
        rows = []
        for uri in load["sourceUris"]:
            bucket, name = uri.removeprefix("gs://").split("/", 1)
            data = self.storage.read_optional(bucket, name)
            if data is None:
                raise http_error(404, f"Not found: URI {uri}", "NOT_FOUND")
            rows += [json.loads(line) for line in data.decode().splitlines() if line]
        errors = [e for row in rows for e in self.check(row)]
        self.jobs[job_id] = copy.deepcopy(body)
        if errors:
            return {
                "jobReference": body["jobReference"],
                "status": {"state": "DONE", "errorResult": {"message": errors[0]}},
            }
        self.rows += rows
        return {"jobReference": body["jobReference"], "status": {"state": "DONE"}}

    def check(self, row: dict[str, Any]) -> list[str]:
        columns = {c["name"]: c for c in self.schema}
        errors = [f"no such field: {k}" for k in row if k not in columns]
        kinds = {
            "STRING": str,
            "INTEGER": int,
            "FLOAT": (int, float),
            "BOOLEAN": bool,
            "TIMESTAMP": str,
        }
        for name, column in columns.items():
            value = row.get(name)
            if value is None:
                if column.get("mode") == "REQUIRED":
                    errors.append(f"missing required field: {name}")
                continue
            if not isinstance(value, kinds[column["type"]]) or (
                column["type"] != "BOOLEAN" and isinstance(value, bool)
            ):
                errors.append(f"{name}: {value!r} is not {column['type']}")
        return errors
