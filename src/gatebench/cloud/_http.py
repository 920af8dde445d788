"""The HTTP edge shared by the Cloud Functions: JSON in, JSON out, located errors as 400.

A handler in ``functions/*/main.py`` decodes with :func:`json_body`, calls the core, and
answers with :func:`reply` or :func:`problems_reply`; nothing else lives in the handlers.
"""

from __future__ import annotations

import json
from typing import Any

from gatebench.cloud._objects import RequestError
from gatebench.core.errors import Problem, ProblemsError

Response = tuple[str, int, dict[str, str]]
_JSON = {"Content-Type": "application/json"}


def json_body(request: Any) -> Any:
    """The request's JSON body (a flask.Request as functions-framework passes it)."""
    data = request.get_data(cache=False)
    try:
        return json.loads(data or b"null")
    except ValueError as exc:
        raise RequestError([Problem("", f"the request body is not JSON: {exc}")]) from None


def reply(payload: Any, status: int = 200) -> Response:
    return json.dumps(payload, ensure_ascii=False, sort_keys=True), status, dict(_JSON)


def problems_reply(exc: ProblemsError, status: int = 400, **extra: Any) -> Response:
    """``{"errors": [{"pointer", "message", ...}], ...extra}``"""
    payload = {"errors": [p.to_dict() for p in exc.problems], **extra}
    return reply(payload, status)
