"""Which uploaded object a request or an event is about, and the run id it gives.

The workflow receives either the Eventarc "object finalized" CloudEvent (its ``data`` is
Cloud Storage's object resource) or ``{"bucket", "name"[, "generation"]}`` from
``gcloud workflows run --data``, and passes the same three fields to the functions. A run is
one object *generation*: the same upload delivered twice gives the same run id
(:func:`gatebench.core.model.run_id_for_object`), a new upload of the same name a new one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from gatebench.core.errors import GatebenchError, Problem, ProblemsError
from gatebench.core.model import run_id_for_object

# Cloud Storage's own rules: bucket names 3-222 characters of [a-z0-9._-]; object names up
# to 1024 bytes of UTF-8 without carriage return or line feed.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_GENERATION = re.compile(r"^[1-9][0-9]{0,19}$")

VARS_OBJECT = "runs/{run_id}/vms.tfvars.json"
"""The variables of infra/vms the provision build saved for a run (gatebench.cloud._vms)."""


class RequestError(ProblemsError):
    """A function's request (or event) is not what it expects; answered with HTTP 400."""


class NothingMeasured(RequestError):
    """The run has no measurement to score (HTTP 422 at the edge)."""


def failure_reason(exc: GatebenchError) -> str:
    """Why a gateway of a run failed, in one line: its problems' messages, else the error's
    text (a run's ``failures``)."""
    problems = getattr(exc, "problems", None)
    return "; ".join(p.message for p in problems) if problems else str(exc)


def rows_object(run_id: str) -> str:
    """The run's BigQuery rows (newline-delimited JSON), written by the score step."""
    return f"runs/{run_id}/rows.jsonl"


@dataclass(frozen=True)
class ObjectRef:
    bucket: str
    name: str
    generation: str | None = None
    """A decimal string (Cloud Storage's int64 in JSON); None: the object's live version."""

    @property
    def uri(self) -> str:
        base = f"gs://{self.bucket}/{self.name}"
        return f"{base}#{self.generation}" if self.generation else base

    @property
    def run_id(self) -> str:
        if self.generation is None:
            raise ValueError(f"{self.uri}: the run id needs the object's generation")
        return run_id_for_object(self.bucket, self.name, self.generation)

    def at(self, generation: str | int) -> ObjectRef:
        return replace(self, generation=str(generation))


def object_from_request(body: Any) -> ObjectRef:
    """``{"bucket": ..., "name": ..., "generation": ...}``; every problem located."""
    if not isinstance(body, dict):
        raise RequestError([Problem("", "expected a JSON object with bucket, name, generation")])
    problems: list[Problem] = []
    bucket, name, generation = body.get("bucket"), body.get("name"), body.get("generation")
    if not isinstance(bucket, str) or not _BUCKET.match(bucket):
        problems.append(Problem("/bucket", f"expected a Cloud Storage bucket name, got {bucket!r}"))
    if (
        not isinstance(name, str)
        or not name
        or len(name.encode()) > 1024
        or "\r" in name
        or "\n" in name
    ):
        problems.append(Problem("/name", f"expected an object name, got {name!r}"))
    if isinstance(generation, int) and not isinstance(generation, bool):
        generation = str(generation)
    if generation is not None and not (
        isinstance(generation, str) and _GENERATION.match(generation)
    ):
        problems.append(
            Problem("/generation", f"expected a positive decimal number, got {generation!r}")
        )
    if problems:
        raise RequestError(problems)
    assert isinstance(bucket, str)
    assert isinstance(name, str)
    assert generation is None or isinstance(generation, str)
    return ObjectRef(bucket, name, generation)


def object_from_event(data: Any) -> ObjectRef:
    """The object of a ``google.cloud.storage.object.v1.finalized`` event (its ``data``, the
    object resource), or of a bucket's Pub/Sub notification delivered as a
    ``google.cloud.pubsub.topic.v1.messagePublished`` event (``{"message": {"attributes":
    ...}}``: Cloud Storage names the object in the attributes ``bucketId``, ``objectId`` and
    ``objectGeneration``, and the change in ``eventType``; only ``OBJECT_FINALIZE`` is one)."""
    if isinstance(data, dict) and isinstance(data.get("message"), dict):
        attributes = data["message"].get("attributes")
        if not isinstance(attributes, dict):
            raise RequestError([Problem("/message/attributes", "a notification carries them")])
        kind = attributes.get("eventType")
        if kind != "OBJECT_FINALIZE":
            raise RequestError(
                [
                    Problem(
                        "/message/attributes/eventType", f"expected OBJECT_FINALIZE, got {kind!r}"
                    )
                ]
            )
        data = {
            "bucket": attributes.get("bucketId"),
            "name": attributes.get("objectId"),
            "generation": attributes.get("objectGeneration"),
        }
    ref = object_from_request(data)
    if ref.generation is None:
        raise RequestError([Problem("/generation", "an object-finalized event carries one")])
    return ref


_RUN_ID = re.compile(r"^r-[0-9a-f]{20}$")


def run_id_from_request(body: Any) -> str:
    """``{"run_id": "r-…"}`` (a cloud run id, see :func:`gatebench.core.model.run_id_for_object`)."""
    run_id = body.get("run_id") if isinstance(body, dict) else None
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise RequestError(
            [Problem("/run_id", f"expected a run id (r- and 20 hex digits), got {run_id!r}")]
        )
    return run_id


MAX_METER_WAIT_S = 600
"""Upper bound of ``meter_wait_s`` (the score call's own timeout in the workflow is 1800 s)."""


def meter_wait_from_request(body: Any, default: float) -> float:
    """``{"meter_wait_s": N}``: how long the score step waits for the gateways' meters
    (0 to :data:`MAX_METER_WAIT_S` seconds); ``default`` when absent."""
    value = body.get("meter_wait_s") if isinstance(body, dict) else None
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        got = repr(value)
    elif 0 <= value <= MAX_METER_WAIT_S:
        return float(value)
    else:
        got = f"{value:g}"
    raise RequestError(
        [Problem("/meter_wait_s", f"expected seconds from 0 to {MAX_METER_WAIT_S}, got {got}")]
    )
