"""The dashboard's APIs as Flask blueprints, and the two Cloud Functions built from them.

* :data:`read_api` over a :class:`~gatebench.store.ResultStore`: ``GET runs``, ``runs/{id}``,
  ``runs/{id}/view``, ``runs/{id}/report``, ``runs/{id}/scale``, ``compare?a=&b=``;
* :data:`upload_api`: ``POST validate`` and ``POST uploads`` (the spec as the body): the content
  check, then the app's :class:`~gatebench.web.UploadAcceptor` (queued locally, signed on GCP).

``gatebench serve`` mounts both under ``/api/`` (``_local``); the ``read`` and ``upload``
functions mount one each at their root (:func:`cloud_app`, with CORS for the site's origins),
and answer through :func:`dispatch`. What an app holds (store, acceptor, limits) is a
:class:`Dashboard` in its ``extensions``. The functions' settings are names and origins that
Terraform sets (infra/modules/dashboard); nothing connects before the first request.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import quote

from flask import Blueprint, Flask, Request, Response, current_app, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from gatebench.core.errors import GatebenchError, Problem, RunError, StoreError
from gatebench.core.report import (
    FORMATS,
    compare_view,
    json_safe,
    load_report,
    run_summary,
)
from gatebench.core.spec import DEFAULT_LIMITS, Limits
from gatebench.kinds._live._report import render_scale_html, stored_scale_document
from gatebench.kinds.request import (
    UPLOAD_PREFIX,
    CheckedUpload,
    UploadRejected,
    check_upload,
    run_request_from_query,
)
from gatebench.store import FirestoreStore, ResultStore, open_store
from gatebench.web._uploads import Answer, UploadAcceptor, problems, refusal, too_large

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""Run ids as both paths create them (``20260101-120000-1a2b3c4d``, ``r-<hex>``)."""
MAX_LIST, DEFAULT_LIST = 200, 50
READ_ROUTES = (
    "runs, runs/{id}, runs/{id}/view, runs/{id}/report, runs/{id}/scale, compare?a=ID&b=ID"
)
UPLOAD_ROUTES = "validate, uploads"
_TYPES = {"html": "text/html", "json": "application/json", "csv": "text/csv", "md": "text/markdown"}
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
_PREFIX = re.compile(r"^[a-z0-9][a-z0-9_-]*/$")


class LiveRuns(Protocol):
    """What only the process running the benchmarks knows (``gatebench.local.queue``): runs
    waiting for their turn and the progress of the one running."""

    def queued_runs(self) -> list[dict[str, Any]]:
        """Summaries (``run_summary`` shape, status ``queued``) of runs not started yet."""

    def live_status(self, run_id: str) -> dict[str, Any] | None:
        """``{"queue_position": n}`` or ``{"progress": {...}}`` for a run, else None."""


class NoLiveRuns:
    """The cloud's: it knows neither."""

    def queued_runs(self) -> list[dict[str, Any]]:
        return []

    def live_status(self, run_id: str) -> dict[str, Any] | None:
        return None


@dataclass
class Dashboard:
    """Everything a request may touch, kept in ``app.extensions["gatebench"]``."""

    store: Callable[[], ResultStore] | None = None
    """The result store (built on first use in a function)."""
    acceptor: Callable[[], UploadAcceptor] | None = None
    live: LiveRuns = field(default_factory=NoLiveRuns)
    max_bytes: int = DEFAULT_LIMITS.max_bytes
    local_gateways: Sequence[str] | None = None
    origins: tuple[str, ...] = ()
    """Origins allowed to call from a browser on another origin (CORS; the cloud functions)."""
    parse: Callable[[Callable[[bytes], Answer]], Answer] | None = None
    """How the local server reads and checks a body (its parse slots); None: at once."""
    api_base: str = ""
    """Where the APIs are mounted (``/api`` locally, the root in a function)."""
    refusals: Callable[[CheckedUpload], list[Problem]] = lambda upload: []
    """What this server cannot run of a valid upload (the local server: a credential
    variable its environment lacks); nothing on the cloud path, whose testers read their own."""


def dashboard() -> Dashboard:
    found: Dashboard = current_app.extensions["gatebench"]
    return found


class _Json(DefaultJSONProvider):
    """JSON as the APIs have always written it: UTF-8, keys in their order, no NaN."""

    ensure_ascii = False
    sort_keys = False
    mimetype = "application/json; charset=utf-8"

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        return super().dumps(json_safe(obj), allow_nan=False, **kwargs)


def new_app(state: Dashboard) -> Flask:
    """An app whose every answer is JSON or a report, errors included (located problems)."""
    app = Flask("gatebench.web", static_folder=None)
    app.json = _Json(app)
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
    app.extensions["gatebench"] = state
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(StoreError, lambda e: refusal(503, f"the result store failed: {e}"))
    # a stored run that cannot be summarised (ScoreError, ...)
    app.register_error_handler(GatebenchError, lambda e: refusal(409, str(e)))
    app.register_error_handler(Exception, _internal_error)
    app.after_request(_reason)
    return app


def _reason(response: Response) -> Response:
    """The standard reason phrase (``400 Bad Request``), not werkzeug's capitals."""
    response.status = f"{response.status_code} {HTTPStatus(response.status_code).phrase}"
    return response


def _http_error(exc: HTTPException) -> Answer:
    if isinstance(exc, MethodNotAllowed):
        allowed = ", ".join(
            m for m in ("GET", "HEAD", "POST", "PUT") if m in (exc.valid_methods or ())
        )
        return refusal(405, f"method not allowed here; use {allowed}", [("Allow", allowed)])
    if exc.code == 404:
        return not_found()
    return refusal(exc.code or 500, str(exc.description))


def not_found() -> Answer:
    """A 404 that lists the API's routes when the path is under the API."""
    if not raw_path().startswith(dashboard().api_base + "/"):
        return refusal(404, "not found")
    mounted = {"read": READ_ROUTES, "upload": UPLOAD_ROUTES}
    routes = ", ".join(r for name, r in mounted.items() if name in current_app.blueprints)
    return refusal(404, f"no API route {_api_path()[:100]!r}; routes: {routes}")


def _internal_error(exc: Exception) -> Answer:
    current_app.logger.error(f"{request.method} {request.path[:200]}: internal error: {exc!r}")
    return refusal(500, "internal error; see the server's log")


def raw_path() -> str:
    """The request's path as sent (``%2f`` stays encoded: never a separator)."""
    env = request.environ
    return str(env.get("REQUEST_URI") or env.get("RAW_URI") or quote(request.path)).split("?")[0]


def _api_path() -> str:
    """The raw path below the API's base (``runs/abc``)."""
    below = raw_path().removeprefix(dashboard().api_base)
    return "/".join(s for s in below.split("/") if s)


def query() -> dict[str, str]:
    """Query parameters, the first value of each."""
    return request.args.to_dict()


# -- the read API ---------------------------------------------------------------------------

read_api = Blueprint("read", __name__)


@read_api.get("/runs")
def list_runs() -> Answer:
    """Newest first, queued runs (local) on top; ``spec_uri`` finds the run an upload started
    (compared without ``#generation``)."""
    raw = request.args.get("limit", str(DEFAULT_LIST))
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIST:
        return refusal(400, f"limit: expected a whole number from 1 to {MAX_LIST}, got {raw!r}")
    limit, wanted, state = int(raw), request.args.get("spec_uri"), dashboard()
    assert state.store is not None
    # the run an upload started is among the newest: no need to read more to find it
    stored = state.store().list_runs(limit=max(limit, DEFAULT_LIST) if wanted else limit)
    runs = state.live.queued_runs() + [_live_summary(r) for r in stored]
    if wanted:
        runs = [r for r in runs if r["spec_uri"].split("#", 1)[0] == wanted.split("#", 1)[0]]
    return {"runs": runs[:limit]}, 200, []


def _live_summary(run: Any) -> dict[str, Any]:
    summary = run_summary(run)
    if not run.status.finished:
        summary.update(dashboard().live.live_status(run.run_id) or {})
    return summary


def _missing(run_id: str) -> Answer:
    return refusal(404, f"run {run_id!r} does not exist")


@read_api.get("/runs/<path:_rest>")
def run_routes(_rest: str) -> Answer | Response:
    """``runs/{id}``: the summary (progress when local); ``/view``: charts and tables of what is
    measured so far; ``/report?format=``: the report as ``gatebench report`` writes it;
    ``/scale?format=json|html``: a scale or change-under-load run's points and changes."""
    run_id, *tail = _api_path().split("/")[1:]
    if not RUN_ID.match(run_id):
        return refusal(400, f"{run_id[:80]!r} is not a run id")
    state = dashboard()
    assert state.store is not None
    store = state.store()
    if tail == ["scale"]:
        from gatebench.kinds.registry import kind_of

        fmt = request.args.get("format", "json")
        if fmt not in ("json", "html"):
            return refusal(400, f"format: expected json or html, got {fmt[:20]!r}")
        found = store.get_run(run_id)
        if found is None:
            return _missing(run_id)
        if not kind_of(found).live:  # 'Nothing measured yet.' of a finished capacity run
            return refusal(
                400,
                f"run {run_id!r} is a {kind_of(found).title} run: /scale serves route scale "
                f"and change-under-load runs; its report is runs/{run_id}/report",
            )
        document = stored_scale_document(store, run_id)
        if document is None:
            return _missing(run_id)
        if fmt == "json":
            return document, 200, []
        return Response(render_scale_html(document), content_type="text/html; charset=utf-8")
    if tail not in ([], ["view"], ["report"]):
        return not_found()
    fmt = request.args.get("format", "html")
    if tail == ["report"] and fmt not in FORMATS:
        return refusal(400, f"format: expected one of {', '.join(FORMATS)}, got {fmt[:20]!r}")
    run = store.get_run(run_id)
    if run is None:
        queued = next((r for r in state.live.queued_runs() if r["run_id"] == run_id), None)
        return ({"run": queued}, 200, []) if queued and not tail else _missing(run_id)
    if not tail:
        return {"run": _live_summary(run)}, 200, []
    from gatebench.kinds.registry import kind_of  # each kind's own page and report

    kind = kind_of(run)
    if tail == ["view"]:
        return kind.view(store, run), 200, []
    try:
        text = kind.report(store, run, fmt, None).text
    except RunError as exc:
        return refusal(400, str(exc))
    disposition = "inline" if fmt == "html" else "attachment"
    return Response(
        text,
        content_type=f"{_TYPES[fmt]}; charset=utf-8",
        headers={"Content-Disposition": f'{disposition}; filename="{run_id}.{fmt}"'},
    )


@read_api.get("/compare")
def compare_runs() -> Answer:
    """Two fixed-workload runs side by side."""
    from gatebench.kinds.registry import kind_of

    state = dashboard()
    assert state.store is not None
    ids = {key: request.args.get(key, "") for key in ("a", "b")}
    refused = [
        Problem(f"/{key}", f"expected a run id, got {value[:80]!r}")
        for key, value in ids.items()
        if not RUN_ID.match(value)
    ]
    if refused:
        return problems(400, refused)
    store = state.store()
    for key, run_id in ids.items():
        run = store.get_run(run_id)
        if run is None:
            return _missing(run_id)
        if not kind_of(run).compared:
            message = (
                f"run {run_id!r} is a {kind_of(run).title} run: the comparison covers "
                "fixed-workload runs (the other kinds compare their targets themselves)"
            )
            return problems(400, [Problem(f"/{key}", message)])
    return compare_view(load_report(store, ids["a"]), load_report(store, ids["b"])), 200, []


# -- the upload API -------------------------------------------------------------------------

upload_api = Blueprint("upload", __name__)


@upload_api.post("/validate")
@upload_api.post("/uploads")
def upload() -> Answer:
    """``?name=`` the file's name; ``?quick=1``, ``?gateways=a,b``, ``?entry=``, ``?kind=`` the
    run request. ``validate`` answers the plan as it will run; ``uploads`` hands it on."""
    state = dashboard()
    route = request.path.rsplit("/", 1)[1]

    def check(body: bytes) -> Answer:
        if len(body) > state.max_bytes:
            return refusal(413, too_large(len(body), state.max_bytes))
        try:
            asked = run_request_from_query(query())
            limits = Limits(max_bytes=state.max_bytes)
            checked = check_upload(body, request.args.get("name"), asked, limits=limits)
        except UploadRejected as exc:
            return problems(400, exc.problems)
        refused = state.refusals(checked)
        if refused:
            return problems(409, refused)
        if route == "validate":
            return checked.summary(local_gateways=state.local_gateways), 200, []
        assert state.acceptor is not None
        try:
            return state.acceptor().accept(checked)
        except UploadRejected as exc:
            return problems(409, exc.problems)
        except GatebenchError as exc:
            return refusal(503, str(exc))

    if state.parse is not None:
        return state.parse(check)
    return check(request.get_data(cache=False))


# -- the Cloud Functions ----------------------------------------------------------------------


class DashboardSettingError(GatebenchError):
    """A dashboard function's environment is not what Terraform sets (a deployment error)."""


def _setting(environ: Mapping[str, str], name: str, default: str | None = None) -> str:
    value = environ.get(name, "").strip() or default
    if not value:
        raise DashboardSettingError(f"{name} is not set; infra/modules/dashboard sets it")
    return value


def cloud_origins(environ: Mapping[str, str]) -> tuple[str, ...]:
    """``GATEBENCH_ORIGINS``: comma-separated origins of the site; empty: no browser."""
    origins = tuple(o.strip() for o in environ.get("GATEBENCH_ORIGINS", "").split(",") if o.strip())
    for origin in origins:
        if not _ORIGIN.match(origin):
            raise DashboardSettingError(
                f"GATEBENCH_ORIGINS: {origin[:100]!r} is not an origin "
                "(http(s)://HOST[:PORT], no path, never '*')"
            )
    return origins


def results_store(environ: Mapping[str, str]) -> FirestoreStore:
    """The Firestore store the read function answers from (``GATEBENCH_PROJECT``,
    ``GATEBENCH_FIRESTORE_DATABASE``; connects on first use)."""
    project = _setting(environ, "GATEBENCH_PROJECT")
    database = _setting(environ, "GATEBENCH_FIRESTORE_DATABASE", "(default)")
    store = open_store(f"firestore://{project}/{database}")
    assert isinstance(store, FirestoreStore)
    return store


def signed_uploads(environ: Mapping[str, str], *, credentials: Any = None) -> Any:
    """Signed PUTs into ``GATEBENCH_UPLOADS_BUCKET`` under ``GATEBENCH_SPEC_PREFIX`` (what the
    workflow's trigger watches); signed for ``STORAGE_EMULATOR_HOST`` when it is set."""
    from gatebench.cloud import GcsSigner
    from gatebench.web._uploads import SignedUploads

    bucket = _setting(environ, "GATEBENCH_UPLOADS_BUCKET")
    prefix = _setting(environ, "GATEBENCH_SPEC_PREFIX", UPLOAD_PREFIX)
    if not _PREFIX.match(prefix):
        raise DashboardSettingError(
            f"GATEBENCH_SPEC_PREFIX: expected lowercase letters, digits, _ and - ending "
            f"with '/', got {prefix[:100]!r}"
        )
    emulator = environ.get("STORAGE_EMULATOR_HOST", "").strip() or None
    project = environ.get("GATEBENCH_PROJECT") or None
    signer = GcsSigner(
        bucket, credentials=credentials, project=project, api_access_endpoint=emulator
    )
    return SignedUploads(signer, prefix=prefix)


def _once(build: Callable[[], Any]) -> Callable[[], Any]:
    lock, built = threading.Lock(), list[Any]()

    def get() -> Any:
        with lock:
            if not built:
                built.append(build())
            return built[0]

    return get


def cloud_app(name: str, environ: Mapping[str, str], **given: Any) -> Flask:
    """The ``read`` or ``upload`` function's app: one API at the root, CORS for
    ``GATEBENCH_ORIGINS``. ``given`` replaces what the environment would build (tests)."""
    state = Dashboard(origins=cloud_origins(environ), **given)
    if name == "read" and state.store is None:
        state.store = _once(lambda: results_store(environ))
    if name == "upload" and state.acceptor is None:
        state.acceptor = _once(lambda: signed_uploads(environ))
    app = new_app(state)
    app.register_blueprint(read_api if name == "read" else upload_api)
    app.before_request(_preflight)
    app.after_request(_cors)
    return app


def _preflight() -> Answer | None:
    if request.method != "OPTIONS":
        return None
    origin = request.headers.get("Origin")
    if origin not in dashboard().origins:
        return refusal(403, f"origin {origin!r} may not call this API")
    methods = "GET, HEAD, OPTIONS" if "read" in current_app.blueprints else "POST, OPTIONS"
    headers = [("Access-Control-Allow-Origin", str(origin))]
    headers += [("Access-Control-Allow-Methods", methods), ("Access-Control-Max-Age", "3600")]
    headers += [("Access-Control-Allow-Headers", "Content-Type, X-Gatebench")]
    return {}, 204, headers


def _cors(response: Response) -> Response:
    origin = request.headers.get("Origin")
    if origin in dashboard().origins and request.method != "OPTIONS":
        response.headers["Access-Control-Allow-Origin"] = str(origin)
    response.headers.add("Vary", "Origin")
    if response.status_code == 204:
        response.data = b""
        response.headers.pop("Content-Type", None)
    return response


def dispatch(app: Flask, given: Request) -> Response:
    """Answer a function's request (functions-framework's) with ``app``."""
    with app.request_context(given.environ):
        return app.full_dispatch_request()


__all__ = [
    "READ_ROUTES",
    "RUN_ID",
    "UPLOAD_ROUTES",
    "Dashboard",
    "DashboardSettingError",
    "LiveRuns",
    "cloud_app",
    "cloud_origins",
    "dispatch",
    "new_app",
    "not_found",
    "query",
    "raw_path",
    "read_api",
    "results_store",
    "signed_uploads",
    "upload_api",
]
