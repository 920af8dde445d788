"""The dashboard's JSON API as pure handlers: request parts in, a :class:`Reply` out.

Two small APIs, each served by both edges (docs/frontend.md has the contract):

* the **read API** (:func:`handle_read`) over a :class:`~gatebench.store.ResultStore`:
  ``GET runs``, ``GET runs/{id}``, ``GET runs/{id}/view``, ``GET runs/{id}/report``,
  ``GET compare?a=&b=``. ``gatebench serve`` answers it under ``/api/`` from SQLite; the
  cloud read function answers it from Firestore.
* the **upload API** (:func:`handle_upload`): ``POST validate`` and ``POST uploads``, the
  spec as the request body. Both check the content first (:func:`check_upload`); a valid
  upload goes to an :class:`~gatebench.web.UploadAcceptor` (queued locally, a signed URL on
  GCP).

Paths are relative to the API's base (``runs/abc``, with or without a leading slash).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from gatebench.core.errors import GatebenchError, Problem, StoreError
from gatebench.core.model import RunKind, RunRecord
from gatebench.core.report import FORMATS, load_report, render
from gatebench.core.spec import DEFAULT_LIMITS
from gatebench.kinds._live._report import render_scale_html, stored_scale_document
from gatebench.kinds.capacity._report import load_capacity_report, render_capacity
from gatebench.kinds.request import UploadRejected, run_request_from_query
from gatebench.store import ResultStore
from gatebench.web._reply import Reply
from gatebench.web._uploads import UploadAcceptor, check_upload
from gatebench.web._views import capacity_view, compare_view, run_summary, run_view

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""Run ids as both paths create them (``20260101-120000-1a2b3c4d``, ``r-<hex>``)."""
MAX_LIST = 200
DEFAULT_LIST = 50
READ_ROUTES = (
    "runs, runs/{id}, runs/{id}/view, runs/{id}/report, runs/{id}/scale, compare?a=ID&b=ID"
)
UPLOAD_ROUTES = "validate, uploads"
_REPORT_TYPES = {
    "html": "text/html; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
}


class LiveRuns(Protocol):
    """What only the process running the benchmarks knows (the local server's queue):
    runs waiting for their turn and the progress of the one running."""

    def queued_runs(self) -> list[dict[str, Any]]:
        """Summaries (``run_summary`` shape, status ``queued``) of runs not started yet."""

    def live_status(self, run_id: str) -> dict[str, Any] | None:
        """``{"queue_position": n}`` or ``{"progress": {...}}`` for a run, else None."""


@dataclass(frozen=True)
class Cors:
    """Origins allowed to call an API from a browser on another origin (the bucket-served
    frontend calling the cloud functions). The local server is same-origin and needs none."""

    origins: tuple[str, ...]
    max_age: int = 3600

    def headers(self, origin: str | None) -> list[tuple[str, str]]:
        if origin is None or origin not in self.origins:
            return [("Vary", "Origin")]
        return [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]

    def preflight(self, origin: str | None, methods: str) -> Reply:
        if origin is None or origin not in self.origins:
            return Reply.error(403, f"origin {origin!r} may not call this API")
        return Reply(
            204,
            headers=(
                ("Access-Control-Allow-Origin", origin),
                ("Access-Control-Allow-Methods", methods),
                ("Access-Control-Allow-Headers", "Content-Type, X-Gatebench"),
                ("Access-Control-Max-Age", str(self.max_age)),
                ("Vary", "Origin"),
            ),
        )


def _segments(path: str) -> list[str]:
    return [s for s in path.split("?", 1)[0].strip("/").split("/") if s != ""] if path else []


def _method_not_allowed(allowed: str) -> Reply:
    return Reply.error(405, f"method not allowed here; use {allowed}", headers=[("Allow", allowed)])


def _with_cors(reply: Reply, cors: Cors | None, origin: str | None) -> Reply:
    return reply if cors is None else reply.with_headers(cors.headers(origin))


# -- read API -----------------------------------------------------------------------------


def handle_read(
    store: ResultStore,
    method: str,
    path: str,
    query: Mapping[str, str],
    *,
    live: LiveRuns | None = None,
    cors: Cors | None = None,
    origin: str | None = None,
) -> Reply:
    """Answer one read API request (``GET``/``HEAD``; ``OPTIONS`` for CORS)."""
    if method == "OPTIONS" and cors is not None:
        return cors.preflight(origin, "GET, HEAD, OPTIONS")
    if method not in ("GET", "HEAD"):
        return _with_cors(_method_not_allowed("GET, HEAD"), cors, origin)
    try:
        reply = _route_read(store, _segments(path), query, live)
    except StoreError as exc:
        reply = Reply.error(503, f"the result store failed: {exc}")
    except GatebenchError as exc:  # a stored run that cannot be summarised (ScoreError, ...)
        reply = Reply.error(409, str(exc))
    return _with_cors(reply, cors, origin)


def _route_read(
    store: ResultStore, parts: list[str], query: Mapping[str, str], live: LiveRuns | None
) -> Reply:
    if parts == ["runs"]:
        return list_runs(store, query, live=live)
    if len(parts) >= 2 and parts[0] == "runs":
        run_id = parts[1]
        if not RUN_ID.match(run_id):
            return Reply.error(400, f"{run_id[:80]!r} is not a run id")
        if len(parts) == 2:
            return get_run(store, run_id, live=live)
        if parts[2:] == ["view"]:
            return get_run_view(store, run_id)
        if parts[2:] == ["report"]:
            return get_report(store, run_id, query.get("format", "html"))
        if parts[2:] == ["scale"]:
            return get_scale(store, run_id, query.get("format", "json"))
    if parts == ["compare"]:
        return compare_runs(store, query.get("a", ""), query.get("b", ""))
    shown = "/".join(parts)[:100]
    return Reply.error(404, f"no API route {shown!r}; routes: {READ_ROUTES}")


def list_runs(
    store: ResultStore, query: Mapping[str, str], *, live: LiveRuns | None = None
) -> Reply:
    """``GET runs[?limit=N][&spec_uri=URI]``: newest first; queued runs (local) on top.

    ``spec_uri`` finds the run an upload started (compared without ``#generation``)."""
    raw = query.get("limit", str(DEFAULT_LIST))
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIST:
        return Reply.error(400, f"limit: expected a whole number from 1 to {MAX_LIST}, got {raw!r}")
    limit = int(raw)
    wanted = query.get("spec_uri")
    queued = live.queued_runs() if live is not None else []
    # The run an upload started is among the newest: no need to read more to find it.
    stored = store.list_runs(limit=max(limit, DEFAULT_LIST) if wanted else limit)
    runs = queued + [_summary_with_live(r, live) for r in stored]
    if wanted:
        runs = [r for r in runs if r["spec_uri"].split("#", 1)[0] == wanted.split("#", 1)[0]]
    return Reply.json(200, {"runs": runs[:limit]})


def _summary_with_live(run: RunRecord, live: LiveRuns | None) -> dict[str, Any]:
    summary = run_summary(run)
    if live is not None and not run.status.finished:
        summary.update(live.live_status(run.run_id) or {})
    return summary


def _queued(live: LiveRuns | None, run_id: str) -> dict[str, Any] | None:
    if live is None:
        return None
    return next((r for r in live.queued_runs() if r["run_id"] == run_id), None)


def _missing(run_id: str) -> Reply:
    return Reply.error(404, f"run {run_id!r} does not exist")


def get_run(store: ResultStore, run_id: str, *, live: LiveRuns | None = None) -> Reply:
    """``GET runs/{id}``: the run's summary (status, step, errors; progress when local)."""
    run = store.get_run(run_id)
    if run is None:
        queued = _queued(live, run_id)
        return Reply.json(200, {"run": queued}) if queued else _missing(run_id)
    return Reply.json(200, {"run": _summary_with_live(run, live)})


def get_run_view(store: ResultStore, run_id: str) -> Reply:
    """``GET runs/{id}/view``: charts and tables of what is measured so far."""
    run = store.get_run(run_id)
    if run is None:
        return _missing(run_id)
    if run.kind == RunKind.CAPACITY:
        return Reply.json(200, capacity_view(load_capacity_report(store, run_id)))
    return Reply.json(200, run_view(load_report(store, run_id)))


def get_report(store: ResultStore, run_id: str, fmt: str) -> Reply:
    """``GET runs/{id}/report?format=html|json|csv|md``: the report as ``gatebench report``
    writes it (the HTML one is self-contained and fetches nothing)."""
    if fmt not in FORMATS:
        return Reply.error(400, f"format: expected one of {', '.join(FORMATS)}, got {fmt[:20]!r}")
    run = store.get_run(run_id)
    if run is None:
        return _missing(run_id)
    if run.kind == RunKind.CAPACITY:
        text = render_capacity(load_capacity_report(store, run_id), fmt)
    else:
        text = render(load_report(store, run_id), fmt)
    disposition = "inline" if fmt == "html" else "attachment"
    return Reply(
        200,
        text.encode("utf-8"),
        _REPORT_TYPES[fmt],
        (("Content-Disposition", f'{disposition}; filename="{run_id}.{fmt}"'),),
    )


def get_scale(store: ResultStore, run_id: str, fmt: str) -> Reply:
    """``GET runs/{id}/scale?format=json|html``: a scale or change-under-load run's points and
    changes (docs/scale.md), as JSON or as its self-contained HTML report."""
    if fmt not in ("json", "html"):
        return Reply.error(400, f"format: expected json or html, got {fmt[:20]!r}")
    document = stored_scale_document(store, run_id)
    if document is None:
        return _missing(run_id)
    if fmt == "json":
        return Reply.json(200, document)
    return Reply(200, render_scale_html(document).encode("utf-8"), _REPORT_TYPES["html"])


def compare_runs(store: ResultStore, a: str, b: str) -> Reply:
    """``GET compare?a=ID&b=ID``: two runs side by side."""
    problems = [
        Problem(f"/{key}", f"expected a run id, got {value[:80]!r}")
        for key, value in (("a", a), ("b", b))
        if not RUN_ID.match(value)
    ]
    if problems:
        return Reply.problems(400, problems)
    for key, run_id in (("a", a), ("b", b)):
        run = store.get_run(run_id)
        if run is None:
            return _missing(run_id)
        if run.kind == RunKind.CAPACITY:
            return Reply.problems(
                400,
                [
                    Problem(
                        f"/{key}",
                        f"run {run_id!r} is a capacity run: the comparison covers "
                        "fixed-workload runs (a capacity run compares its targets itself)",
                    )
                ],
            )
    return Reply.json(200, compare_view(load_report(store, a), load_report(store, b)))


# -- upload API ---------------------------------------------------------------------------


def handle_upload(
    method: str,
    path: str,
    query: Mapping[str, str],
    body: bytes,
    *,
    accept: UploadAcceptor,
    max_bytes: int = DEFAULT_LIMITS.max_bytes,
    local_gateways: Sequence[str] | None = None,
    cors: Cors | None = None,
    origin: str | None = None,
) -> Reply:
    """Answer ``POST validate`` or ``POST uploads`` (the spec is the body; ``?name=`` its
    file name; ``?quick=1``, ``?gateways=a,b`` the run request). The caller has already
    refused a body over ``max_bytes`` when it could (413 without reading it)."""
    if method == "OPTIONS" and cors is not None:
        return cors.preflight(origin, "POST, OPTIONS")
    parts = _segments(path)
    if parts not in (["validate"], ["uploads"]):
        shown = "/".join(parts)[:100]
        reply = Reply.error(404, f"no API route {shown!r}; routes: {UPLOAD_ROUTES}")
        return _with_cors(reply, cors, origin)
    if method != "POST":
        return _with_cors(_method_not_allowed("POST"), cors, origin)
    return _with_cors(
        _upload(parts[0], query, body, accept, max_bytes, local_gateways), cors, origin
    )


def _upload(
    route: str,
    query: Mapping[str, str],
    body: bytes,
    accept: UploadAcceptor,
    max_bytes: int,
    local_gateways: Sequence[str] | None,
) -> Reply:
    if len(body) > max_bytes:
        return too_large(len(body), max_bytes)
    try:
        request = run_request_from_query(query)
        from gatebench.core.spec import Limits

        upload = check_upload(body, query.get("name"), request, limits=Limits(max_bytes=max_bytes))
    except UploadRejected as exc:
        return Reply.problems(400, exc.problems)
    if route == "validate":
        return Reply.json(200, upload.summary(local_gateways=local_gateways))
    try:
        return accept.accept(upload)
    except UploadRejected as exc:
        return Reply.problems(409, exc.problems)
    except GatebenchError as exc:
        return Reply.error(503, str(exc))


def too_large(size: int, max_bytes: int) -> Reply:
    return Reply.error(
        413, f"the upload is {size:,} bytes; the limit is {max_bytes:,} (--max-bytes)"
    )


__all__ = [
    "READ_ROUTES",
    "RUN_ID",
    "UPLOAD_ROUTES",
    "Cors",
    "LiveRuns",
    "compare_runs",
    "get_report",
    "get_run",
    "get_run_view",
    "handle_read",
    "handle_upload",
    "list_runs",
    "too_large",
]
