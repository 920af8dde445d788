"""A probe as the load engine's input: the workload document of one rate offered to one target.

A probe is two constant-rate phases of the same workload at the same rate, back to back: the
warm-up (not measured; its queue, connections and caches carry into the next phase, since the
engine continues the schedule without a gap) and the measured window. The backend is reset
before the warm-up. The requests are built by the same code as every other run's
(``gatebench.core.workload.render_workload``), so a capacity probe sends what a fixed-workload run
of that workload sends.

In two steps, so the cloud path's tester needs neither the description nor the plan: the render
step writes one :func:`probe_template` per target and workload (the requests, the reset), and
:func:`probe_document` sets a probe's rate and durations in it wherever the search runs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from gatebench.core.errors import Problem, pointer
from gatebench.core.ir import Api
from gatebench.core.plan import (
    Capacity,
    CapacityPlan,
    Injection,
    Objective,
    Plan,
    workload_summary,
)
from gatebench.core.stats import counted
from gatebench.core.workload import (
    AsRun,
    Control,
    Phase,
    Schedule,
    answers_checked,
    injection_json,
    render_workload,
)
from gatebench.kinds.capacity._metrics import ProbeRequest

MIN_WARMUP_S = 0.001
PROBE_TIMEOUT_FACTOR = 20.0
MIN_PROBE_TIMEOUT_S = 1.0
"""A probe's requests time out after 20 times the objective's tightest latency bound (at least
1 s; never later than the workload's own ``timeout``): a request that slow broke the objective
beyond doubt, and an overloaded probe then ends a second or two after its schedule instead of
a minute. It counts as an error, so a target whose 0.1 % slowest requests take that long
breaks an objective of errors ≤ 0.1 % (docs/capacity.md, "One probe")."""
WARMUP, MEASURED = 0, 1
"""The template's phases: the warm-up, then the measured window."""


def probe_template(
    plan: Plan,
    api: Api,
    workload: str,
    target: str,
    base_url: str,
    *,
    reset_url: str | None = None,
    reset_urls: Sequence[str] = (),
) -> dict[str, Any]:
    """The workload document of a probe of ``target`` on ``workload``, its rate still to be
    set (:func:`probe_document`): a warm-up phase with the backend reset before it (and the
    resets of the other replicas, ``reset_urls``), then the measured phase."""
    placeholder = Injection("constant_rate", rate=1.0, duration=1.0)
    before = tuple(Control(url) for url in ([reset_url] if reset_url else []) + list(reset_urls))
    checked = answers_checked(plan, target)
    # The warm-up's requests name themselves too: a gateway's cache fills during it, and the
    # window's cached answers then name a request already sent (docs/trust.md).
    phases = (
        Phase(
            WARMUP,
            target,
            workload,
            1,
            False,
            base_url,
            placeholder,
            before,
            answers_checked=checked,
        ),
        Phase(
            MEASURED,
            target,
            workload,
            1,
            True,
            base_url,
            placeholder,
            answers_checked=checked,
        ),
    )
    only = replace(plan, workloads=tuple(w for w in plan.workloads if w.name == workload))
    document = render_workload(only, api, Schedule(phases, 0))
    settings = plan.capacity_settings().get(workload)
    if settings is not None:
        cap_ms = round(probe_timeout_s(settings.objective) * 1000)
        for phase in document["phases"]:
            request = phase["request"]
            request["timeout_ms"] = min(int(request.get("timeout_ms", cap_ms)), cap_ms)
    return document


def capacity_workloads(plan: Plan, api: Api) -> list[dict[str, Any]]:
    """What a capacity run records of each workload (``core.plan.workload_summary``), its
    ``injection`` being its search, not the injection a capacity run does not use."""
    searched = plan.capacity_settings()
    workloads = workload_summary(plan, api)
    for row in workloads:
        s = searched.get(row["name"])
        row["injection"] = (
            f"searched: constant rates from {s.start_rate:,g}/s up to {s.max_rate:,g}/s within "
            f"{s.objective.label()}, {counted(s.repetitions, 'search')} a target"
            if s is not None
            else "not searched (capacity: false)"
        )
    return workloads


def probe_timeout_s(objective: Objective) -> float:
    """A probe's request timeout (:data:`PROBE_TIMEOUT_FACTOR`)."""
    tightest = min((limit for _, limit in objective.latency), default=50.0)
    return max(MIN_PROBE_TIMEOUT_S, PROBE_TIMEOUT_FACTOR * tightest / 1000.0)


def capacity_problems(plan: Plan) -> list[Problem]:
    """What a capacity run cannot search in ``plan``, located: its load generator speaks plain
    HTTP/1.1 (``tls:`` is measured by a fixed-workload run), and a replica killed mid-phase
    (``fault:``) has no place in a search whose every probe must see the same backend."""
    out = []
    if plan.tls is not None:
        out.append(
            Problem(
                pointer("x-gatebench", "tls"),
                "the capacity search's load generator speaks plain HTTP/1.1: run this plan's "
                "TLS with `gatebench run`, or search it without tls:",
            )
        )
    if plan.fault is not None:
        out.append(
            Problem(
                pointer("x-gatebench", "fault"),
                "a capacity search keeps every replica up (each probe must see the same "
                "backend): run the fault with `gatebench run`, or search it without fault:",
            )
        )
    return out


def probe_document(
    template: dict[str, Any], request: ProbeRequest, *, seed: int = 0
) -> dict[str, Any]:
    """The template with the probe's rate, warm-up and window; without a warm-up, the reset
    moves to the measured phase. ``seed`` seeds the value generators of this probe."""
    document = copy.deepcopy(template)
    warmup, measured = document["phases"]
    warm = Injection("constant_rate", rate=request.rate, duration=request.warmup_s)
    warmup["injection"] = injection_json(warm)
    measured["injection"] = injection_json(
        Injection("constant_rate", rate=request.rate, duration=request.duration_s)
    )
    for phase in (warmup, measured):
        phase["seed"] = (seed * 1_000_003 + int(phase["index"])) % (2**62)
    if request.warmup_s < MIN_WARMUP_S:
        measured["before"] = warmup["before"]
        document["phases"] = [measured]
    else:
        _continue_counters(measured, warm.expected_requests or 0)
    document["seed"] = seed
    return document


def _continue_counters(phase: dict[str, Any], after: int) -> None:
    """The measured phase's counters go on from where the warm-up's ended. The two phases share
    the backend's state (one reset, before the warm-up: nothing comes between them), so a
    workload whose values must rise (the auction example's bids, each above the one before)
    would otherwise send the warm-up's values again and be refused (409) until it passed them:
    half of every probe's requests, at any rate."""
    for spec in phase["params"].values():
        if spec.get("kind") == "counter":
            spec["start"] = int(spec["start"]) + int(spec["step"]) * after


CAPACITY_FORMAT = "gatebench-capacity-input/1"


def settings_dict(settings: Capacity) -> dict[str, Any]:
    """A workload's capacity settings as JSON (:func:`settings_from_dict` reads them back)."""
    data = asdict(settings)
    data["objective"]["latency"] = [list(b) for b in settings.objective.latency]
    return data


def settings_from_dict(data: Mapping[str, Any]) -> Capacity:
    objective = data.get("objective") or {}
    values = {k: v for k, v in data.items() if k in Capacity.__dataclass_fields__}
    values["objective"] = Objective(
        latency=tuple((str(m), float(v)) for m, v in objective.get("latency", ())),
        error_pct=float(objective.get("error_pct", Objective().error_pct)),
    )
    return Capacity(**values)


QUICK = {"warmup": 0.5, "probe": 1.0, "confirm": 1.0, "precision": 0.2, "budget": 300.0}
"""``gatebench capacity --quick``: at most these durations (s) and budget, at least this
precision, one repetition: a smoke run that shows the search works, not a capacity."""


def capacity_as_run(plan: Plan, *, quick: bool = False, repetitions: int | None = None) -> Plan:
    """The plan's capacity settings as a run searches them: :data:`QUICK` when asked, then
    ``repetitions`` instead of the plan's when given (every workload's, defaults included)."""
    section = plan.capacity or CapacityPlan()

    def adjusted(settings: Capacity | None) -> Capacity | None:
        if settings is None:
            return None
        if quick:
            settings = replace(
                settings,
                warmup=min(settings.warmup, QUICK["warmup"]),
                probe=min(settings.probe, QUICK["probe"]),
                confirm=min(settings.confirm, QUICK["confirm"]),
                precision=max(settings.precision, QUICK["precision"]),
                budget=min(settings.budget, QUICK["budget"]),
                repetitions=1,
            )
        return replace(settings, repetitions=repetitions) if repetitions else settings

    default = adjusted(section.default)
    assert default is not None
    return replace(
        plan,
        capacity=CapacityPlan(
            default=default, workloads=tuple((w, adjusted(s)) for w, s in section.workloads)
        ),
    )


CAPACITY_AS_RUN = AsRun(capacity_as_run, capacity_workloads, capacity_problems)
"""How a capacity search reads a plan: refuses ``tls:`` and ``fault:``, runs its search's
settings, and shows each workload's search."""


def capacity_input(
    plan: Plan,
    api: Api,
    base_urls: Mapping[str, str],
    *,
    reset_url: str | None,
    seed: int,
) -> dict[str, Any]:
    """Everything a capacity run's search needs, as JSON, for wherever the search runs (the
    cloud path's tester reads it from the runs bucket): the targets, each searched workload's
    settings and probe templates, the seed and the thresholds. No secret: the templates name
    environment variables only (``gatebench.core.workload``)."""
    settings = plan.capacity_settings()
    targets = [t for t in plan.targets if t in base_urls]
    return {
        "format": CAPACITY_FORMAT,
        "seed": seed,
        "targets": targets,
        "settings": {w: settings_dict(s) for w, s in settings.items()},
        "templates": {
            w: {
                t: probe_template(plan, api, w, t, base_urls[t], reset_url=reset_url)
                for t in targets
            }
            for w in settings
        },
    }


def measured_index(document: dict[str, Any]) -> int:
    """The index of a probe document's measured phase."""
    return int(next(p["index"] for p in document["phases"] if p["measured"]))


__all__ = [
    "CAPACITY_AS_RUN",
    "CAPACITY_FORMAT",
    "MEASURED",
    "WARMUP",
    "capacity_input",
    "measured_index",
    "probe_document",
    "probe_template",
    "settings_dict",
    "settings_from_dict",
]
