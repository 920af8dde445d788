"""What a person asked for on top of the spec's own plan: a :class:`RunRequest` (a quick smoke
run, a subset of the plan's gateways, the root description of a zip that holds several, a
capacity search, a route-scale or a change-under-load run instead of the fixed workload),
read from where each path carries it, and an uploaded spec checked with it before anything
runs (:func:`check_upload`: the dashboard's upload API on both paths, and the local run queue's
worker).

The upload form sends it as query parameters to the local server
(:func:`run_request_from_query`) and, on GCP, signs it into the uploaded object's
``x-goog-meta-gatebench`` metadata, which the cloud parse and render steps read back with
:func:`run_request_from_metadata`. It is core (pure, no server): the Cloud Functions that
read it load nothing of the web server.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gatebench.core.errors import PlanError, Problem, ProblemsError
from gatebench.core.ir import Api
from gatebench.core.model import RunKind
from gatebench.core.plan import Plan, left_out, load_plan
from gatebench.core.scaleplan import ScaleAsk, scale_ask_from_json
from gatebench.core.spec import DEFAULT_LIMITS, Limits, SpecResult, read_spec
from gatebench.core.workload import FIXED_AS_RUN, AsRun
from gatebench.kinds.capacity import CAPACITY_AS_RUN

METADATA_KEY = "gatebench"
"""The custom metadata key that carries a :class:`RunRequest` (Cloud Storage's custom metadata)."""
METADATA_HEADER = f"x-goog-meta-{METADATA_KEY}"
"""The same metadata as an HTTP header (what a signed PUT sends)."""
UPLOAD_PREFIX = "specs/"
"""Objects under this prefix start a run when they land in the uploads bucket."""
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_OBJECT_NAME = re.compile(r"^.*?\d{8}-\d{6}-[0-9a-f]{8}-(?P<name>[^/]+)$")


AS_RUN: dict[RunKind, AsRun] = {
    RunKind.FIXED: FIXED_AS_RUN,
    RunKind.CAPACITY: CAPACITY_AS_RUN,
    RunKind.SCALE: FIXED_AS_RUN,
    RunKind.CHANGE: FIXED_AS_RUN,
}
"""How each kind reads a plan (its refusals, the plan as run, its workloads' summary): the
reading its ``prepare`` in the registry uses, here where the cloud steps, which may not load
the registry, find it too. A scale or change-under-load run reads the plan as the fixed
workload does (its request refuses ``quick``: its own sizes and load come with it)."""


def as_run(kind: RunKind) -> AsRun:
    return AS_RUN[kind]


class UploadRejected(ProblemsError):
    """An upload that must not run: every located problem, answered with HTTP 400."""


@dataclass(frozen=True)
class RunRequest:
    """Choices made in the upload form on top of the spec's own plan."""

    quick: bool = False
    """``--quick``: one short repetition (``workload.quick_plan``)."""
    gateways: tuple[str, ...] | None = None
    """Measure only these gateways of the plan (``()``: the baseline only); None: all."""
    entry: str | None = None
    """The root description inside an uploaded zip that holds several (``--entry``)."""
    kind: RunKind = RunKind.FIXED
    """The kind of run: the plan's fixed workloads, the capacity search, route scale or a
    change under load."""
    scale: ScaleAsk | None = None
    """A scale or change-under-load run's sizes, change and load settings (``kind`` is one of
    those; None for a fixed or capacity run)."""

    def to_metadata(self) -> str:
        """The ``x-goog-meta-gatebench`` value: compact, sorted JSON."""
        data: dict[str, Any] = {"quick": self.quick}
        if self.gateways is not None:
            data["gateways"] = list(self.gateways)
        if self.entry is not None:
            data["entry"] = self.entry
        if self.kind != "fixed":
            data["kind"] = self.kind
        if self.scale is not None:
            data["scale"] = self.scale.to_json()
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    def to_query(self) -> dict[str, str]:
        out = {"quick": "1" if self.quick else "0"}
        if self.gateways is not None:
            out["gateways"] = ",".join(self.gateways) or "none"
        if self.entry is not None:
            out["entry"] = self.entry
        if self.kind != "fixed":
            out["kind"] = self.kind
        return out

    def select(self, plan: Plan) -> Plan:
        """The plan with only the chosen gateways (the caller checked them: :func:`check_upload`)."""
        if self.gateways is None:
            return plan
        return replace(plan, gateways=tuple(g for g in plan.gateways if g in self.gateways))

    def problems(self, plan: Plan, *, source: str | None = None) -> list[Problem]:
        """Why this request cannot run ``plan`` (a gateway the plan lacks, nothing left to
        measure; for a capacity run, what its search cannot run: ``tls:`` or ``fault:``,
        located in the spec); empty when it can. ``source`` names where the request came from."""
        refused = as_run(self.kind).problems(plan)
        if refused:
            return refused
        if self.gateways is None:
            return []
        unknown = [g for g in self.gateways if g not in plan.gateways]
        if unknown:
            return [
                Problem(
                    "/gateways" if source else "",
                    f"gateways: {unknown[0]!r} is not in the plan; choose among "
                    f"{', '.join(plan.gateways) or '(none)'}",
                    source=source,
                )
            ]
        if not self.gateways and not plan.baseline:
            return [
                Problem(
                    "/gateways" if source else "",
                    "choose at least one gateway: this plan has no baseline",
                    source=source,
                )
            ]
        return []

    def apply(self, plan: Plan) -> Plan:
        """The plan as it will run: chosen gateways, then its kind's reading (:func:`as_run`:
        the quick profile when asked)."""
        return as_run(self.kind).plan(self.select(plan), quick=self.quick, repetitions=None)


@dataclass(frozen=True)
class CheckedUpload:
    """An upload that reads as a description with a valid plan, ready to run."""

    name: str
    """A safe file name (letters, digits, ``._-``), derived from the uploaded one."""
    data: bytes
    sha256: str
    api: Api
    plan: Plan
    """The plan as written in the spec."""
    request: RunRequest
    spec: SpecResult

    @property
    def run_plan(self) -> Plan:
        return self.request.apply(self.plan)

    def summary(self, *, local_gateways: Sequence[str] | None = None) -> dict[str, Any]:
        """What the form shows before anything runs: the plan as it will run, and each
        workload as its kind's run records it (:func:`as_run`: a capacity run's search, not an
        injection it does not use)."""
        plan = self.run_plan
        workloads = as_run(self.request.kind).workloads(plan, self.api)
        out: dict[str, Any] = {
            "ok": True,
            "name": self.name,
            "sha256": self.sha256,
            "title": self.api.title,
            "gateways": list(self.plan.gateways),
            "selected": list(plan.gateways),
            "left_out": {g: why.reason for g, why in left_out(plan).items()},
            "baseline": plan.baseline,
            "repetitions": plan.repetitions,
            "quick": self.request.quick,
            "kind": self.request.kind,
            "workloads": workloads,
            "backend": plan.backend.kind,
            "warnings": [p.to_dict() for p in self.spec.warnings],
        }
        if local_gateways is not None:
            out["cloud_only"] = [g for g in plan.gateways if g not in local_gateways]
        return out


def safe_name(name: str | None) -> str:
    """The uploaded file's base name, reduced to ``[A-Za-z0-9._-]`` (never a path, never hidden)."""
    base = posixpath.basename((name or "").replace("\\", "/"))
    return _SAFE_NAME.sub("-", base).strip(".-")[:80] or "spec.yaml"


def upload_name_from_object(object_name: str) -> str:
    """The uploaded file's name inside an object name :func:`object_name_for` made."""
    found = _OBJECT_NAME.match(object_name)
    return found.group("name") if found else safe_name(object_name)


def object_name_for(upload: CheckedUpload, now: float, prefix: str = UPLOAD_PREFIX) -> str:
    """``specs/20260101-120000-1a2b3c4d-petstore.yaml``: unique per content and second."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    return f"{prefix}{stamp}-{upload.sha256[:8]}-{upload.name}"


def check_upload(
    data: bytes,
    name: str | None,
    request: RunRequest | None = None,
    *,
    limits: Limits = DEFAULT_LIMITS,
) -> CheckedUpload:
    """Read ``data`` as an API description with its plan; :class:`UploadRejected` with every
    located problem (and the warnings) when it cannot run. No ``request``: the plan as written."""
    request = request or RunRequest()
    filename = safe_name(name)
    if not data.strip():
        raise UploadRejected([Problem("", "the upload is empty", source=filename)])
    result = read_spec(data, name=filename, limits=limits, entry=request.entry)
    if result.errors or result.api is None:
        raise UploadRejected(result.problems)
    try:
        plan = load_plan(result)
    except PlanError as exc:
        raise UploadRejected([*exc.problems, *result.warnings]) from None
    refused = [result.in_plan(p) for p in request.problems(plan)]
    if refused:
        raise UploadRejected(refused)
    digest = hashlib.sha256(data).hexdigest()
    return CheckedUpload(filename, data, digest, result.api, plan, request, result)


def run_request_from_query(query: Mapping[str, str]) -> RunRequest:
    """``?quick=1&gateways=nginx,caddy&entry=api/openapi.yaml`` (``gateways=none``: the
    baseline only; ``entry``: the root description of a zip that holds several; ``kind``:
    ``capacity`` for a capacity run)."""
    problems: list[Problem] = []
    quick = _flag(query.get("quick"), "quick", problems)
    kind = query.get("kind", "fixed") or "fixed"
    if kind not in ("fixed", "capacity"):  # scale runs: an upload's metadata only
        problems.append(
            Problem("", f"query parameter 'kind': expected fixed or capacity, got {kind[:40]!r}")
        )
    gateways: tuple[str, ...] | None = None
    raw = query.get("gateways")
    if raw is not None:
        names = [] if raw.strip() == "none" else [g.strip() for g in raw.split(",") if g.strip()]
        gateways = tuple(dict.fromkeys(names))
    if problems:
        raise UploadRejected(problems)
    return RunRequest(
        quick=quick,
        gateways=gateways,
        entry=query.get("entry") or None,
        kind=RunKind(kind),
    )


def run_request_from_metadata(value: str | None) -> RunRequest:
    """The :class:`RunRequest` an uploaded object carries (its ``gatebench`` metadata); no
    metadata (``gcloud storage cp``) is the plan as written. Problems are located in the
    metadata (``source`` is :data:`METADATA_HEADER`, pointers inside its JSON value)."""
    if value is None or value == "":
        return RunRequest()
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise UploadRejected(
            [Problem("", f"metadata {METADATA_HEADER}: not JSON ({exc})", source=METADATA_HEADER)]
        ) from None
    if not isinstance(data, dict) or set(data) - {"quick", "gateways", "entry", "kind", "scale"}:
        raise UploadRejected(
            [
                Problem(
                    "",
                    f"metadata {METADATA_HEADER}: expected an object with 'quick', 'gateways', "
                    f"'entry', 'kind' and 'scale', got {value[:200]!r}",
                    source=METADATA_HEADER,
                )
            ]
        )
    quick = data.get("quick", False)
    gateways = data.get("gateways")
    problems = []
    if not isinstance(quick, bool):
        problems.append(
            Problem("/quick", f"expected true or false, got {quick!r}", source=METADATA_HEADER)
        )
    if gateways is not None and not (
        isinstance(gateways, list) and all(isinstance(g, str) for g in gateways)
    ):
        problems.append(
            Problem(
                "/gateways", f"expected a list of names, got {gateways!r}", source=METADATA_HEADER
            )
        )
    entry = data.get("entry")
    if entry is not None and not (isinstance(entry, str) and entry):
        problems.append(
            Problem(
                "/entry",
                f"expected the name of a file inside the zip, got {entry!r}",
                source=METADATA_HEADER,
            )
        )
    kind, scale = _kind(data, bool(quick), problems)
    if problems:
        raise UploadRejected(problems)
    return RunRequest(
        quick=bool(quick),
        gateways=None if gateways is None else tuple(gateways),
        entry=entry,
        kind=kind,
        scale=scale,
    )


def _kind(
    data: Mapping[str, Any], quick: bool, problems: list[Problem]
) -> tuple[RunKind, ScaleAsk | None]:
    """The metadata's ``kind`` and, for a scale or change-under-load run, its ``scale``
    settings (every setting's default when absent)."""
    kind = data.get("kind", "fixed")
    if kind not in tuple(RunKind):
        problems.append(
            Problem(
                "/kind",
                f"expected one of {', '.join(RunKind)}, got {kind!r}",
                source=METADATA_HEADER,
            )
        )
        return RunKind.FIXED, None
    if kind in (RunKind.FIXED, RunKind.CAPACITY):
        if "scale" in data:
            problems.append(
                Problem(
                    "/scale",
                    "only a scale or change-under-load run takes these settings: add "
                    '"kind": "scale" or "kind": "change-under-load"',
                    source=METADATA_HEADER,
                )
            )
        return RunKind(kind), None
    live = RunKind(kind)
    if quick:
        problems.append(
            Problem(
                "/quick",
                f"a {live} run has no quick profile: shorten it with /scale/duration and "
                "/scale/warmup instead",
                source=METADATA_HEADER,
            )
        )
    ask, found = scale_ask_from_json(live, data.get("scale"), source=METADATA_HEADER)
    problems.extend(found)
    return live, ask


def _flag(value: str | None, name: str, problems: list[Problem]) -> bool:
    if value is None or value.lower() in ("", "0", "false", "no", "off"):
        return False
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    problems.append(Problem("", f"query parameter '{name}': expected 1 or 0, got {value!r}"))
    return False


__all__ = [
    "AS_RUN",
    "METADATA_HEADER",
    "METADATA_KEY",
    "UPLOAD_PREFIX",
    "CheckedUpload",
    "RunRequest",
    "UploadRejected",
    "check_upload",
    "object_name_for",
    "run_request_from_metadata",
    "run_request_from_query",
    "safe_name",
    "upload_name_from_object",
]
