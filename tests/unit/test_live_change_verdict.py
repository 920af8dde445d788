"""What a change under load says of itself (gatebench.kinds._live): a change with a problem
makes the run partial as a scale point's does, the verdict claims nothing of a window that held
no request and qualifies one whose change has a problem, and the timeline rings a bucket whose
requests got wrong answers as one whose requests failed."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

from gatebench.core.model import RunStatus
from gatebench.core.scaleplan import ChangeSpec
from gatebench.kinds._live._report import change_timeline, scale_document, scale_summary
from gatebench.kinds._live._stages import Results, ScaleInput, ScaleRequest, live_status
from gatebench.kinds._live.metrics import Arrival, ChangeOutcome, change_outcome

T0 = 1_700_000_000_000.0


def _change(gateway: str, arrivals: list[Arrival], **extra: Any) -> ChangeOutcome:
    fields: dict[str, Any] = {
        "gateway": gateway,
        "mechanism": "SIGHUP",
        "kind": "signal",
        "routes_before": 10,
        "routes_added": 10,
        "upstream_changed": True,
        "rate": 100.0,
        "engine": "loadgen",
        "measured_from": "intended start",
        "new_routes_s": {"a": 0.1},
        "mechanism_s": 0.0,
        "check_s": 0.0,
        **extra,
    }
    return change_outcome(arrivals, T0 + 1000, window_s=1.0, calm_s=1.0, **fields)


def _steady(skip_every: int = 0) -> list[Arrival]:
    """100 a second for 2 s, every one answered (with ``skip_every``, that share never sent)."""
    return [
        Arrival(T0 + 10.0 * i, 1.0, True, "end")
        for i in range(200)
        if not skip_every or i % skip_every
    ]


def _status(changes: list[ChangeOutcome]) -> RunStatus:
    request = ScaleRequest(("nginx",), change=ChangeSpec(10, 10, 1.0, 1.0))
    scale = ScaleInput(request, ("nginx",), load=None, results=Results(changes=changes))  # type: ignore[arg-type]
    ctx = SimpleNamespace(get=lambda _kind: scale, record=SimpleNamespace(target_errors={}))
    return live_status(ctx)  # type: ignore[arg-type]


def test_a_change_with_a_problem_makes_the_run_partial_as_a_scale_points_does() -> None:
    clean = _change("nginx", _steady())
    assert clean.problem == "" and _status([clean]) == RunStatus.DONE
    behind = _change("haproxy", _steady(skip_every=2))  # half the window's requests never sent
    assert "tester-bound" in behind.problem and behind.all_new_routes_answered
    assert _status([clean, behind]) == RunStatus.PARTIAL


def _doc(*changes: ChangeOutcome) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(scale_document([], list(changes), run="r")))
    return document


def test_the_verdict_claims_nothing_of_an_empty_window_and_qualifies_a_doubtful_one() -> None:
    crashed = _change("envoy", [], problem="the load generator crashed")
    behind = _change("haproxy", _steady(skip_every=2))
    clean = _change("nginx", _steady())
    verdict, cautions = scale_summary(_doc(crashed, behind, clean))
    assert verdict[0] == (
        "In the 1 s after the change, nginx: none; haproxy: none, with a problem (below); "
        "envoy: not measured, no request in the window."
    )
    assert any(c.startswith("haproxy: tester-bound") for c in cautions)
    assert scale_summary(_doc(crashed))[0][0] == (
        "In the 1 s after the change, envoy: not measured, no request in the window."
    )
    # a new route that never answered is said apart: the window's count stands
    late = _change("caddy", _steady(), new_routes_s={"a": None})
    assert scale_summary(_doc(late, clean))[0][0] == (
        "No gateway failed a request in the 1 s after the change."
    )


def test_a_bucket_of_wrong_answers_is_ringed_as_failed() -> None:
    load = _steady()
    load[150] = Arrival(load[150].at_ms, 1.0, False, "end", "wrong answer (crossed): body is x")
    doc = _doc(_change("nginx", load))
    assert doc["changes"][0]["failures"] == 1
    svg = change_timeline(doc["changes"])
    ringed = re.findall(r'class="marked"[^>]*data-x="([^"]+)"', svg)
    assert [float(x) for x in ringed] == [0.5]
    assert "1 of 10 failed (1 wrong answer)" in svg
