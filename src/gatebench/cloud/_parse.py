"""The parse step of the cloud path: an uploaded object → a run record, or every problem.

Pure: the function (functions/parse) reads the object and passes its bytes here. The answer
carries the run id in both cases, so the workflow records an invalid spec as a failed run
(with the problems) instead of dropping it.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import PlanError, Problem
from ..model import RunRecord
from ..plan import cloud_problems, load_plan, workload_summary
from ..run_request import METADATA_HEADER, METADATA_KEY, UploadRejected, run_request_from_metadata
from ..spec import read_spec
from ._firestore_rest import firestore_fields
from ._objects import ObjectRef

MAX_MESSAGE = 1500


@dataclass
class ParseOutcome:
    run: RunRecord
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def message(self) -> str:
        """One line per error, for the run's ``error`` field (bounded)."""
        lines = [p.format(self.spec_name) for p in self.problems if p.severity == "error"]
        text = "\n".join(lines)
        return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"

    @property
    def spec_name(self) -> str:
        return posixpath.basename(self.run.spec_uri.split("#", 1)[0])

    def response(self, execution_id: str | None = None) -> dict[str, Any]:
        """What the parse function answers (HTTP 200, or 400 when ``ok`` is false)."""
        record = self.run.to_dict()
        if execution_id:
            record["execution_id"] = execution_id
        out: dict[str, Any] = {
            "run_id": self.run.run_id,
            "generation": self.run.spec_uri.rsplit("#", 1)[1],
            "spec_uri": self.run.spec_uri,
            "document": {"fields": firestore_fields(record)},
            "warnings": [p.to_dict() for p in self.problems if p.severity != "error"],
        }
        if not self.ok:
            out["errors"] = [p.to_dict() for p in self.problems if p.severity == "error"]
            out["message"] = self.message
        else:
            out["title"] = self.run.title
            out["gateways"] = self.run.gateways
            out["workloads"] = self.run.workloads
        return out


def parse_upload(
    data: bytes, ref: ObjectRef, *, now: float, metadata: Mapping[str, str] | None = None
) -> ParseOutcome:
    """Read and validate an uploaded description and its plan. Never raises for bad input.

    ``metadata`` is the object's custom metadata: its ``gatebench`` value is the run request
    the upload form signed into the object (:func:`gatebench.run_request.run_request_from_metadata`:
    a subset of the plan's gateways, the quick profile). The run records the plan as it will
    run; a malformed request is a located problem like a bad spec."""
    try:
        request = run_request_from_metadata((metadata or {}).get(METADATA_KEY))
        request_problems: list[Problem] = []
    except UploadRejected as exc:
        request, request_problems = None, list(exc.problems)
    name = posixpath.basename(ref.name) or "spec"
    run = RunRecord(
        run_id=ref.run_id,
        spec_uri=ref.uri,
        spec_sha256=hashlib.sha256(data).hexdigest(),
        created_at=now,
        updated_at=now,
    )
    result = read_spec(data, name=name)
    outcome = ParseOutcome(run, [*request_problems, *result.problems])
    if result.errors or result.api is None:
        return outcome
    api = result.api
    run.title = api.title
    try:
        plan = load_plan(result)
    except PlanError as exc:
        outcome.problems.extend(exc.problems)
        return outcome
    if request is None:
        return outcome
    refused = request.problems(plan, source=METADATA_HEADER)
    if refused:
        outcome.problems.extend(refused)
        return outcome
    plan = request.apply(plan)
    not_here = cloud_problems(plan)
    if not_here:
        outcome.problems.extend(not_here)
        return outcome
    run.gateways = list(plan.gateways)
    # JSON-shaped (lists, not tuples): the run reads back from Firestore exactly as built.
    run.plan = json.loads(json.dumps(plan.to_dict()))
    run.workloads = workload_summary(plan, api)
    return outcome
