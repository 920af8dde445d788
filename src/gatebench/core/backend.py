"""The backend gatebench serves (backend/, the Go server): its control prefix, and the mock
mode's routes file, rendered from the IR (the Go server never reads a spec).

One route per operation, in the order the gateways try them (``core.renderers.priority_key``;
the backend answers with the first route a request matches): method, the path the backend
receives (base path + template) split into segments of literal text and parameters as the
gateways split it (``core.renderers.split_template``; the Go server only matches them: a
parameter is one non-empty segment or part of one), the status to answer (the first 2xx declared,
else 200) and its body: the response's example when the description has one, else a value
synthesized from its schema (``gatebench.core.synth``), else no body. Fixed latency and response
size come from ``backend: {mock: {latency, response_size}}``; ``workers`` bounds how many
responses are held at once (a known capacity of ``workers / latency`` requests per second).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gatebench.core.ir import Api, Operation, Response
from gatebench.core.plan import Backend
from gatebench.core.renderers import priority_key, split_template
from gatebench.core.synth import synthesize

CONTROL_PREFIX = "/__gatebench__/"
CONTROL_TIMEOUT_S = 40.0
"""How long a caller waits for a control call: the reset answers once the earlier load's
requests are served, up to 30 s (backend/control.go, ``drainLimit``); loadgen's
``controlTimeout`` is the same."""
"""The backend's own paths (health, stats, reset): reached straight, never through a gateway."""


def _answer(op: Operation) -> tuple[int, Response | None]:
    """What the mock answers ``op`` with: its first documented success (``200``, then
    ``2XX``), else ``default`` as 200; an operation that documents neither (a redirect, ``410
    Gone``) gets the lowest status it documents, as the service would answer it; none at all,
    an empty 200."""
    for response in op.responses:
        if response.status.isdigit() and 200 <= int(response.status) < 300:
            return int(response.status), response
    for response in op.responses:
        if response.status.upper() == "2XX":
            return 200, response
    default = next((r for r in op.responses if r.status == "default"), None)
    if default is not None:
        return 200, default
    others = [
        (int(r.status.upper().replace("X", "0")), r)
        for r in op.responses
        if re.fullmatch(r"[3-5](\d\d|XX)", r.status.upper())
    ]
    return min(others, key=lambda found: found[0], default=(200, None))


def mock_segments(path: str) -> list[list[dict[str, Any]]]:
    """``/items/{id}.json`` → ``[[{"text": "items"}], [{"param": "id"}, {"text": ".json"}]]``."""
    return [
        [{"param": p.text} if p.is_param else {"text": p.text} for p in segment.pieces]
        for segment in split_template(path)
    ]


def mock_route(op: Operation, api: Api) -> dict[str, Any]:
    status, response = _answer(op)
    content_type = ""
    body = ""
    if response is not None and response.content and status not in (204, 304):
        media = next((m for m in response.content if "json" in m.media_type), response.content[0])
        content_type = media.media_type
        if media.examples:
            value = media.examples[0][1]
        elif media.schema is not None:
            value = synthesize(media.schema, api.schemas, sent_by="server")
        else:
            value = None
        if value is not None:
            body = (
                value
                if isinstance(value, str) and "json" not in content_type
                else json.dumps(value, ensure_ascii=False, sort_keys=True)
            )
    return {
        "method": op.method,
        "path": op.route_path or "/",
        "segments": mock_segments(op.route_path or "/"),
        "status": status,
        "content_type": content_type,
        "body": body,
        "headers": {},
    }


def route_order(route: dict[str, Any]) -> tuple[object, ...]:
    """Where a mock route goes in the routes file: the gateways' order
    (``core.renderers.priority_key``), since the backend answers with the first that matches."""
    return priority_key(split_template(route["path"]), route["method"])


def mock_config(api: Api, backend: Backend) -> dict[str, Any]:
    """The JSON the Go server reads with ``-mode mock -config FILE``."""
    config: dict[str, Any] = {
        "latency_ms": backend.latency * 1000.0,
        "response_size": backend.response_size,
        "routes": sorted((mock_route(op, api) for op in api.operations), key=route_order),
    }
    if backend.workers:
        config["workers"] = backend.workers  # a known capacity: workers / latency (req/s)
    return config


__all__ = ["mock_config", "mock_route", "mock_segments", "route_order"]
