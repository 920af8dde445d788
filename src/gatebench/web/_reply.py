"""An HTTP answer as data, so handlers stay pure and every edge sends it the same way.

The local server writes a :class:`Reply` to its socket; a Cloud Function returns
``reply.flask()`` (functions-framework accepts ``(body, status, headers)``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gatebench.core.errors import Problem

JSON_TYPE = "application/json; charset=utf-8"

REASONS = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    411: "Length Required",
    412: "Precondition Failed",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    421: "Misdirected Request",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    content_type: str = JSON_TYPE
    headers: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @classmethod
    def json(cls, status: int, payload: Any, headers: Iterable[tuple[str, str]] = ()) -> Reply:
        text = json.dumps(_json_safe(payload), ensure_ascii=False, allow_nan=False)
        return cls(status, text.encode("utf-8"), JSON_TYPE, tuple(headers))

    @classmethod
    def problems(
        cls,
        status: int,
        problems: Sequence[Problem],
        *,
        headers: Iterable[tuple[str, str]] = (),
        **extra: Any,
    ) -> Reply:
        """``{"errors": [...], "warnings": [...]}``: errors and warnings apart, each located."""
        errors = [p.to_dict() for p in problems if p.severity == "error"]
        warnings = [p.to_dict() for p in problems if p.severity != "error"]
        return cls.json(
            status, {"ok": False, "errors": errors, "warnings": warnings, **extra}, headers
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        pointer: str = "",
        headers: Iterable[tuple[str, str]] = (),
    ) -> Reply:
        return cls.problems(status, [Problem(pointer, message)], headers=headers)

    def with_headers(self, headers: Iterable[tuple[str, str]]) -> Reply:
        return replace(self, headers=self.headers + tuple(headers))

    def payload(self) -> Any:
        """The JSON body, decoded (tests, and edges that post-process)."""
        return json.loads(self.body.decode("utf-8")) if self.body else None

    def header_map(self) -> dict[str, str]:
        out = {"Content-Type": self.content_type} if self.body or self.status != 204 else {}
        for name, value in self.headers:
            out[name] = value
        return out

    def flask(self) -> tuple[bytes, int, dict[str, str]]:
        """What a functions-framework (flask) handler returns."""
        return self.body, self.status, self.header_map()


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
