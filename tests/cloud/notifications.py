"""Which objects of the runs bucket reach the ingest function, as infra/ configures it, and the
event they reach it as.

Read from infra/modules/functions (python-hcl2): the bucket's Pub/Sub notification
(``google_storage_notification``: its event types and ``object_name_prefix``, Cloud Storage's
only filters on a notification) and the ingest function's trigger (an Eventarc trigger on Cloud
Storage's direct events filters by bucket alone: every object of the bucket fires it; one on a
topic fires for what the bucket publishes there). :func:`fires` answers for an object name as
Cloud Storage and Eventarc would; :func:`pubsub_event` is the CloudEvent Eventarc delivers for
a notification (binary mode: ``ce-*`` headers, the Pub/Sub push body), with the attributes
Cloud Storage's ``JSON_API_V1`` notifications carry ("Pub/Sub notifications for Cloud Storage").
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hcl2

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "infra" / "modules" / "functions" / "main.tf"
FINALIZED = "google.cloud.storage.object.v1.finalized"
PUBLISHED = "google.cloud.pubsub.topic.v1.messagePublished"


def _plain(value: Any) -> Any:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class IngestTrigger:
    event_type: str
    topic: str | None
    """The topic resource the trigger listens to (a Pub/Sub trigger), as infra/ names it."""
    notifications: tuple[dict[str, Any], ...]
    """The runs bucket's notifications to that topic."""

    def fires(self, name: str, event: str = "OBJECT_FINALIZE") -> bool:
        """Whether an ``event`` on object ``name`` of the runs bucket invokes ingest."""
        if self.event_type == FINALIZED:  # direct events: filtered by bucket only
            return event == "OBJECT_FINALIZE"
        return any(
            event in (n.get("event_types") or ["OBJECT_FINALIZE"])
            and name.startswith(str(n.get("object_name_prefix") or ""))
            for n in self.notifications
        )


@functools.cache
def ingest_trigger(path: Path = FUNCTIONS) -> IngestTrigger:
    with path.open() as handle:
        doc = _plain(hcl2.load(handle))
    resources = {
        (kind, name): body
        for block in doc["resource"]
        for kind, named in block.items()
        for name, body in named.items()
    }
    function = resources[("google_cloudfunctions2_function", "this")]
    (dynamic,) = [d["event_trigger"] for d in function["dynamic"] if "event_trigger" in d]
    (content,) = dynamic["content"]
    topic = content.get("pubsub_topic")
    notifications = tuple(
        body
        for (kind, _), body in resources.items()
        if kind == "google_storage_notification"
        and body.get("bucket") == "${var.runs_bucket}"
        and topic is not None
        and body.get("topic") == topic
    )
    return IngestTrigger(str(content["event_type"]), topic, notifications)


def pubsub_event(bucket: str, name: str, generation: str) -> tuple[dict[str, str], bytes]:
    """The headers and body of the CloudEvent Eventarc delivers for the bucket's notification
    of object ``name`` finalized."""
    resource = {"kind": "storage#object", "bucket": bucket, "name": name, "generation": generation}
    attributes = {
        "notificationConfig": f"projects/_/buckets/{bucket}/notificationConfigs/1",
        "eventType": "OBJECT_FINALIZE",
        "payloadFormat": "JSON_API_V1",
        "bucketId": bucket,
        "objectId": name,
        "objectGeneration": generation,
        "eventTime": "2026-01-01T00:00:00.000000Z",
    }
    body = {
        "message": {
            "attributes": attributes,
            "data": base64.b64encode(json.dumps(resource).encode()).decode(),
            "messageId": f"m-{generation}",
            "publishTime": "2026-01-01T00:00:00.000Z",
        },
        "subscription": "projects/p/subscriptions/eventarc-raw-logs",
    }
    headers = {
        "Content-Type": "application/json",
        "ce-id": f"m-{generation}",
        "ce-specversion": "1.0",
        "ce-type": PUBLISHED,
        "ce-source": "//pubsub.googleapis.com/projects/p/topics/gb-raw-logs",
        "ce-time": "2026-01-01T00:00:00Z",
    }
    return headers, json.dumps(body).encode()


__all__ = ["FINALIZED", "PUBLISHED", "IngestTrigger", "ingest_trigger", "pubsub_event"]
