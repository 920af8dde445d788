"""The load engine's input, rendered from the plan: phases of requests, as plain JSON.

One generic Gatling simulation (``gatling/``) reads this file; nothing is generated as code
per description. The same document would drive another engine. It holds, per phase, the
target's base URL, the request (method, path and query as templates, headers, body), the
value generators of the plan, the injection profile and the control calls to make first
(the backend reset), and never a secret: authentication is a header *name* plus the name of
the environment variable that holds the value, read by the engine when it sends requests.
With ``"per_user": true`` the variable names a file of tokens, one a line (the run's pool of
subjects, gatebench.core.tokens), and simulated user ``i`` of a phase sends line
``(user_base + i * user_stride) mod lines`` (``user_base`` 0 and ``user_stride`` 1 unless a
phase is split across testers: gatebench.core.testers).

Templates are lists of parts, ``{"text": ...}`` (already escaped for where it goes) or
``{"param": NAME, "as": ENCODING}`` where ENCODING is ``path`` / ``query`` (percent-encoded),
``json`` (a JSON value: a number stays a number), ``json-string`` (inside a JSON string) or
``raw``. A JSON body ``{bid: "${amount}"}`` becomes ``{"bid": <amount as JSON>}``.

A weighted list of values (``{"kind": "weighted"}``: a recorded value distribution) is drawn
the same way by every engine: draw ``n`` of a phase (counted from 0 across the phase's users)
takes ``u = unit_draw(seed, n)`` in [0, 1) from a counter-based hash (SplitMix64: 64-bit
integer arithmetic, so Java, Go and LuaJIT compute the same bits), then the first value whose
cumulative weight exceeds ``u * total``; past the listed values, ``others`` gives value
``floor((x - listed) / others_weight * count)``. The seed comes from the workload's and the
parameter's names, so every target and repetition sees the same sequence
(:func:`weighted_value` is the reference the engines are tested against).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

from gatebench.core.capabilities import engine_warmup_s
from gatebench.core.errors import Problem, RunError
from gatebench.core.ir import (
    Api,
    Operation,
    Parameter,
    bare_media_type,
    engine_header,
    is_json_media,
    is_media_type,
)
from gatebench.core.model import BASELINE
from gatebench.core.plan import (
    BodySpec,
    Generator,
    Injection,
    Plan,
    Warmup,
    Workload,
    workload_summary,
)
from gatebench.core.plan._traffic import scaled_counts
from gatebench.core.renderers import encode_literal, jit_warmups, rewrites_request_target
from gatebench.core.styles import form_body, serialized
from gatebench.core.synth import dereferenced, synthesize
from gatebench.core.trust import CEILING_TARGET

FORMAT = "gatebench-workload/1"
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
_PATH_PARAM = re.compile(r"\{([^{}/]+)\}")
QUICK_MAX_DURATION = 2.0
QUICK_MAX_REQUESTS = 100
QUICK_WARMUP = 1.0


@dataclass(frozen=True)
class Control:
    """A call the engine makes before a phase, directly (never through a gateway)."""

    url: str
    method: str = "POST"
    status: int = 204
    wait_s: float = 0.0
    """How long the engine keeps retrying a refused or failed call before the one that
    counts (a replica restarting after a fault); 0: call once."""


@dataclass(frozen=True)
class Phase:
    """One phase of load: a target running one workload (measured) or warming up."""

    index: int
    target: str
    workload: str
    repetition: int
    measured: bool
    base_url: str
    injection: Injection
    before: tuple[Control, ...] = ()
    answers_checked: bool = False
    """Whether the engine checks every answer against the request it answers (docs/trust.md,
    "Right answers under load"): measured phases with gatebench's own backend, which signs its
    answers, except on the ceiling target (a static file server)."""
    refusals: tuple[int, ...] = ()
    """The statuses that are the plan's rate limit refusing a request here (``RATE_LIMITED``):
    a measured phase of a gateway whose operation the plan's policies rate-limit. Such an
    answer is counted as rate-limited, not as an error (gatebench.core.stats.phase_stats)."""

    @property
    def id(self) -> str:
        return f"p{self.index:04d}"

    @property
    def label(self) -> str:
        if self.engine_warmup:
            return f"engine warm-up · {self.workload}"
        what = self.workload if self.measured else f"warm-up {self.workload}"
        return f"rep {self.repetition} · {self.target} · {what}"

    @property
    def engine_warmup(self) -> bool:
        """A phase of the engine's own warm-up (:func:`is_engine_warmup`)."""
        return is_engine_warmup(self.target, self.repetition, self.measured)

    @property
    def planned_s(self) -> float | None:
        """How long its profile says it lasts (a burst: no time); None when it ends after a
        number of requests, at a time nobody knows in advance."""
        inj = self.injection
        if inj.kind == "at_once":
            return 0.0
        if inj.kind in ("ramp", "constant_rate", "concurrent") and inj.duration is not None:
            return inj.duration
        return None


class TimeLeft:
    """The load's time left, from the schedule: each phase lasts what its profile says, or
    (one that ends after a number of requests) those requests at the rate its workload last
    ran at, plus the mean time the finished phases took beyond that (the engine's start, the
    gaps between phases, a burst's answers). Unknown (None) until every workload that ends
    after a number of requests has run once."""

    def __init__(self, phases: Sequence[Phase]) -> None:
        self.phases = sorted(phases, key=lambda p: p.index)
        self.rates: dict[str, float] = {}
        """Workload → requests per second of its last phase (warm-ups included)."""
        self.extra: list[float] = []
        self.finished: set[int] = set()
        self.began = (-1, 0.0)
        """(phase index, when) of the phase running or the last one started."""
        self.last_end: float | None = None

    def _expected(self, phase: Phase) -> float | None:
        planned = phase.planned_s
        if planned is not None:
            return planned
        rate, requests = self.rates.get(phase.workload), phase.injection.expected_requests
        return None if not rate or requests is None else requests / rate

    def started(self, index: int, now: float) -> None:
        self.began = (index, now)

    def ended(self, index: int, now: float) -> None:
        began_index, began = self.began
        self.finished.add(index)
        phase = next((p for p in self.phases if p.index == index), None)
        if phase is None or began_index != index:
            return
        took = now - (began if self.last_end is None else self.last_end)
        self.last_end = now
        expected = self._expected(phase)
        if expected is not None:
            self.extra.append(max(0.0, took - expected))

    def ran(self, workload: str, requests: int, seconds: float) -> None:
        """A phase of ``workload`` sent ``requests`` in ``seconds`` (its engine's record)."""
        if requests and seconds > 0:
            self.rates[workload] = requests / seconds

    def left(self, now: float) -> float | None:
        extra = sum(self.extra) / len(self.extra) if self.extra else 0.0
        total = 0.0
        for phase in self.phases:
            if phase.index in self.finished:
                continue
            expected = self._expected(phase)
            if expected is None:
                return None
            if phase.index == self.began[0]:
                expected = max(0.0, expected + extra - (now - self.began[1]))
            else:
                expected += extra
            total += expected
        return total


@dataclass(frozen=True)
class Schedule:
    """Every phase of a run, in the order they run."""

    phases: tuple[Phase, ...]
    seed: int
    target_order: tuple[tuple[int, tuple[str, ...]], ...] = field(default=())
    """(repetition, targets in the order they ran)."""

    def measured(self) -> list[Phase]:
        return [p for p in self.phases if p.measured]


# -- the plan, made shorter for smoke runs -----------------------------------------------------


def quick_plan(plan: Plan) -> Plan:
    """``--quick``: one repetition, 1 s warm-up, durations ≤ 2 s and at most 100 requests."""

    def shorten(inj: Injection) -> Injection:
        duration = min(inj.duration, QUICK_MAX_DURATION) if inj.duration else inj.duration
        requests = min(inj.requests, QUICK_MAX_REQUESTS) if inj.requests else inj.requests
        users = inj.users
        if inj.kind in ("at_once", "ramp") and users:
            users = min(users, QUICK_MAX_REQUESTS)
        rate = inj.rate
        if inj.kind == "constant_rate" and rate and duration and rate * duration > 5000:
            rate = 5000 / duration
        if inj.kind == "arrivals":
            return _quick_arrivals(inj)
        return replace(inj, duration=duration, requests=requests, users=users, rate=rate)

    return replace(
        plan,
        repetitions=1,
        warmup=Warmup(duration=QUICK_WARMUP, requests=None) if plan.warmup.enabled else plan.warmup,
        workloads=tuple(replace(w, injection=shorten(w.injection)) for w in plan.workloads),
    )


def _quick_arrivals(inj: Injection) -> Injection:
    """The first steps of a recorded curve that fit in the quick profile's duration, scaled
    down to at most 5,000 requests (the shape kept)."""
    step = inj.step or 1.0
    steps = max(1, math.floor(QUICK_MAX_DURATION / step + 1e-9))
    counts = inj.counts[:steps]
    total = sum(counts)
    if total > 5000:
        counts = scaled_counts(counts, 5000 / total)
    if not sum(counts):
        counts = (*counts[:-1], 1)
    return replace(inj, counts=counts, duration=step * len(counts))


# -- the schedule: repetitions × shuffled targets × (warm-up, workloads) ----------------------


def plan_as_run(plan: Plan, *, quick: bool = False, repetitions: int | None = None) -> Plan:
    """The plan as a run runs it: the quick profile (:func:`quick_plan`) when asked, then
    ``repetitions`` instead of the plan's own when given."""
    if quick:
        plan = quick_plan(plan)
    return replace(plan, repetitions=repetitions) if repetitions else plan


def _no_problems(plan: Plan) -> list[Problem]:
    return []


@dataclass(frozen=True)
class AsRun:
    """How a kind of run reads a plan, pure: what it refuses of it (located), the plan as it
    runs (``--quick``, ``--repetitions``), and each workload as its record and the upload form
    show it. A kind's ``prepare`` (``gatebench.kinds``) and a request checked before anything
    runs (``kinds.request``: the upload API and the cloud steps, which load no run machinery)
    read a plan with the same one."""

    plan: Callable[..., Plan]
    """``(plan, *, quick, repetitions) -> Plan``."""
    workloads: Callable[[Plan, Api], list[dict[str, Any]]]
    problems: Callable[[Plan], list[Problem]] = _no_problems

    def prepare(
        self, plan: Plan, api: Api, *, quick: bool = False, repetitions: int | None = None
    ) -> tuple[Plan, list[dict[str, Any]]]:
        """The plan as run and its workloads' summary."""
        ran = self.plan(plan, quick=quick, repetitions=repetitions)
        return ran, self.workloads(ran, api)


FIXED_AS_RUN = AsRun(plan_as_run, workload_summary)
"""The fixed workload's reading: the plan's own workloads and injections."""


@dataclass(frozen=True)
class CompiledLoad:
    """A plan compiled for the targets that run: every phase in order, and the document the
    load engine executes (:func:`render_workload`)."""

    schedule: Schedule
    document: dict[str, Any]


def compile_load(
    plan: Plan,
    api: Api,
    base_urls: dict[str, str],
    *,
    reset_url: str | None = None,
    seed: int | None = None,
    keep: Callable[[Phase], bool] | None = None,
    ceiling_url: str | None = None,
    skip_file: str | None = None,
    reset_urls: Sequence[str] = (),
    trust_store: str | None = None,
    reset_wait_s: float = 0.0,
    engine_warmup: tuple[str, float] | None = None,
) -> CompiledLoad:
    """From a plan to what the engine runs, in one call: the schedule (:func:`build_schedule`),
    only the phases ``keep`` accepts, the ceiling target's phases before them when
    ``ceiling_url`` is given (docs/trust.md), the engine's own warm-up first of all when
    ``engine_warmup`` (the backend's URL, seconds) is given, and its workload document.
    ``reset_urls``: more backend resets (every replica of a pool); ``trust_store``: the run's
    trust store (TLS plans); ``reset_wait_s``: how long a reset may be retried (a replica
    restarting after a fault)."""
    schedule = build_schedule(
        plan,
        base_urls,
        reset_url=reset_url,
        seed=seed,
        reset_urls=reset_urls,
        reset_wait_s=reset_wait_s,
    )
    if keep is not None:
        schedule = replace(schedule, phases=tuple(p for p in schedule.phases if keep(p)))
    if ceiling_url is not None:
        schedule = _with_ceiling(schedule, plan, ceiling_url)
    if engine_warmup is not None:
        schedule = _with_engine_warmup(schedule, plan, *engine_warmup)
    return CompiledLoad(
        schedule,
        render_workload(plan, api, schedule, skip_file=skip_file, trust_store=trust_store),
    )


def is_engine_warmup(target: str, repetition: int | None, measured: bool | None) -> bool:
    """Whether a phase (or a workload document's phase) is the engine's own warm-up: against
    the backend, before every other phase (:func:`compile_load`). It reaches no target: a plan
    without the baseline has none, so the targets a tester waits for leave it out."""
    return repetition == 0 and target == BASELINE and measured is False


def engine_warmup(url: str, engine: str, *, quick: bool) -> tuple[str, float] | None:
    """The engine's own warm-up against the backend at ``url`` (:func:`compile_load`'s
    ``engine_warmup``) on both paths: ``engine``'s ``ENGINE_WARMUP_S``, none in the quick
    profile or for an engine without a JIT."""
    seconds = 0.0 if quick else engine_warmup_s(engine)
    return (url, seconds) if seconds > 0 else None


def _with_ceiling(schedule: Schedule, plan: Plan, url: str) -> Schedule:
    """The ceiling target's phases first (its warm-up, then every workload once, as
    repetition 0, with no backend reset), then the schedule, re-indexed."""
    ceiling_plan = replace(
        plan, gateways=(CEILING_TARGET,), baseline=False, repetitions=1, order="fixed"
    )
    first = build_schedule(ceiling_plan, {CEILING_TARGET: url}, seed=schedule.seed)
    return _after([replace(p, repetition=0) for p in first.phases], schedule)


def _with_engine_warmup(schedule: Schedule, plan: Plan, url: str, seconds: float) -> Schedule:
    """The engine's warm-up first: every workload in turn against the backend itself (no
    gateway, so no target gains from it), its answers checked as the measured phases check
    them, for ``seconds`` in all, as repetition 0; then the schedule (the ceiling's phases
    first, read on a warm engine), re-indexed (docs/trust.md, "The engine's own warm-up")."""
    warm = replace(plan, warmup=Warmup(duration=seconds, requests=None))
    checked = answers_checked(plan, BASELINE)
    head = [
        Phase(i, BASELINE, w.name, 0, False, url, inj, answers_checked=checked)
        for i, (w, inj) in enumerate(_warmups(warm))
    ]
    return _after(head, schedule)


def _after(head: Sequence[Phase], schedule: Schedule) -> Schedule:
    """``head`` (indexed from 0), then the schedule's phases, re-indexed after it."""
    shifted = [replace(p, index=p.index + len(head)) for p in schedule.phases]
    return replace(schedule, phases=(*head, *shifted))


def build_schedule(
    plan: Plan,
    base_urls: dict[str, str],
    *,
    reset_url: str | None = None,
    seed: int | None = None,
    repetitions: int | None = None,
    reset_urls: Sequence[str] = (),
    reset_wait_s: float = 0.0,
) -> Schedule:
    """Phases for every repetition: targets in a shuffled order (``order: shuffled``, seeded),
    each with its warm-up (excluded from the statistics) and then one measured phase per
    workload, each preceded by the backend reset when the backend has one.

    ``base_urls`` maps each target that runs to its URL; targets missing from it are left out.
    The measured phases check their answers where the backend signs them
    (:func:`answers_checked`)."""
    seed = plan.seed if seed is None else seed
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    targets = [t for t in plan.targets if t in base_urls]
    # A JIT gateway warms up until its latency stops falling, once, after it starts.
    jit = jit_warmups(targets)
    before = tuple(
        Control(url, wait_s=reset_wait_s)
        for url in ([reset_url] if reset_url else []) + list(reset_urls)
    )
    phases: list[Phase] = []
    order: list[tuple[int, tuple[str, ...]]] = []
    for rep in range(1, (repetitions or plan.repetitions) + 1):
        ordered = list(targets)
        if plan.order == "shuffled":
            rng.shuffle(ordered)
        order.append((rep, tuple(ordered)))
        for target in ordered:
            # The warm-up's requests name themselves too: a gateway's cache fills during it,
            # and the measured phases' cached answers then name a request of the run.
            for w, inj in _warmups(plan, jit.get(target, 0.0) if rep == 1 else 0.0):
                phases.append(
                    Phase(
                        len(phases),
                        target,
                        w.name,
                        rep,
                        False,
                        base_urls[target],
                        inj,
                        answers_checked=answers_checked(plan, target),
                    )
                )
            for w in plan.workloads:
                phases.append(
                    Phase(
                        len(phases),
                        target,
                        w.name,
                        rep,
                        True,
                        base_urls[target],
                        w.injection,
                        before,
                        answers_checked=answers_checked(plan, target),
                        refusals=refusals_of(plan, w, target),
                    )
                )
    return Schedule(tuple(phases), seed, tuple(order))


def answers_checked(plan: Plan, target: str) -> bool:
    """Whether the measured phases of ``target`` check every answer (``Phase.answers_checked``):
    the backend signs its answers (gatebench's own backends do, a user's own ``backend.url``
    does not) and the target is not the ceiling server (a static file server, which answers on
    its own)."""
    return plan.backend.kind != "url" and target != CEILING_TARGET


def body_signed(plan: Plan) -> bool:
    """Whether the backend copies its signature into its bodies as well (the ``answers``
    key's ``body``): the echo backend, whose JSON is its own; the mock and the auction answer
    in the description's shapes, which carry no copy (backend/sign.go, ``bodyCopy``)."""
    return plan.backend.kind == "builtin" and plan.backend.builtin == "echo"


RATE_LIMITED = 429
"""The status every renderer has a gateway answer past the plan's rate limit (Too Many
Requests: ``limit_req_status 429``, HAProxy's ``deny_status 429``, ...; docs/gateways.md)."""


def refusals_of(plan: Plan, workload: Workload, target: str) -> tuple[int, ...]:
    """The statuses that are the plan's rate limit refusing ``workload``'s requests on
    ``target`` (``Phase.refusals``): none on the baseline and the ceiling target, which run no
    policy."""
    if target in (BASELINE, CEILING_TARGET):
        return ()
    limited = plan.policies.for_operation(workload.operation_id).rate_limit is not None
    return (RATE_LIMITED,) if limited else ()


def _warmups(plan: Plan, at_least_s: float = 0.0) -> list[tuple[Workload, Injection]]:
    """The warm-up of one target: every workload in turn, with its own number of users (so
    the connections the measured phase uses are open), for an equal share of the warm-up;
    ``at_least_s``: the least it lasts in all (a JIT gateway's first, ``jit_warmups``)."""
    if not plan.warmup.enabled or not plan.workloads:
        return []
    if at_least_s > (plan.warmup.duration or 0.0):
        plan = replace(plan, warmup=Warmup(duration=at_least_s, requests=None))
    n = len(plan.workloads)
    out = []
    for w in plan.workloads:
        users = w.injection.users or 1
        if w.injection.kind == "sequential":
            users = 1
        if w.injection.kind == "constant_rate":
            users = max(1, min(50, round((w.injection.rate or 1) / 100)))
        if w.injection.kind == "arrivals":
            mean = sum(w.injection.counts) / (w.injection.duration or 1.0)
            users = max(1, min(50, round(mean / 100)))
        if plan.warmup.duration:
            inj = Injection("concurrent", users=users, duration=plan.warmup.duration / n)
        else:
            share = max(1, (plan.warmup.requests or n) // n)
            inj = Injection("concurrent", users=min(users, share), requests=share)
        out.append((w, inj))
    return out


# -- rendering ---------------------------------------------------------------------------------


def render_workload(
    plan: Plan,
    api: Api,
    schedule: Schedule,
    *,
    skip_file: str | None = None,
    trust_store: str | None = None,
) -> dict[str, Any]:
    """The workload JSON the generic simulation reads (no secret in it, only env names).

    With a TLS plan, ``trust_store`` is the run's trust store (``gatebench.core.tls.TRUST_P12``:
    the run's CA alone): the engine trusts it and nothing else, and speaks HTTP/2 when the
    plan asks (``tls`` in the document)."""
    workloads = {w.name: w for w in plan.workloads}
    requests: dict[str, dict[str, Any]] = {}
    generators: dict[str, dict[str, Generator]] = {}
    for w in plan.workloads:
        requests[w.name], generators[w.name] = _request(api.operation(w.operation_id), w, plan, api)
    secret_env = sorted(
        {
            name
            for r in requests.values()
            for header in r["auth"]
            for name in (header["env"] if isinstance(header["env"], list) else [header["env"]])
        }
        | {
            part["secret"]
            for r in requests.values()
            for _, parts in r["query"]
            for part in parts
            if "secret" in part
        }
    )
    phases = []
    for phase in schedule.phases:
        w = workloads[phase.workload]
        request = dict(requests[w.name], base_url=phase.base_url.rstrip("/"))
        phases.append(
            {
                "id": phase.id,
                "index": phase.index,
                "target": phase.target,
                "workload": phase.workload,
                "repetition": phase.repetition,
                "measured": phase.measured,
                "seed": (schedule.seed * 1_000_003 + phase.index) % (2**62),
                "injection": injection_json(phase.injection),
                "before": [_control_json(c) for c in phase.before],
                "params": {
                    name: generator_json(g, stream=f"{w.name}/{name}")
                    for name, g in generators[w.name].items()
                },
                "request": request,
                **({"refusals": list(phase.refusals)} if phase.refusals else {}),
                **_answers_json(phase, plan, request),
            }
        )
    document: dict[str, Any] = {
        "format": FORMAT,
        "seed": schedule.seed,
        "secret_env": secret_env,
        "skip_file": skip_file or "",
        "phases": phases,
    }
    if plan.tls is not None:
        document["tls"] = tls_json(plan.tls.http2, trust_store)
    return document


def _answers_json(phase: Phase, plan: Plan, request: dict[str, Any]) -> dict[str, Any]:
    """The phase's ``answers`` key when its answers are checked (``Phase.answers_checked``):
    whether the backend's receipt of the request target is held to what was sent (not through
    a gateway that rebuilds it), the plan's headers the backend signs as it received them,
    ``body`` when the backend copies its signature into its bodies (:func:`body_signed`),
    and ``cached`` when the plan caches the operation's answers at the gateway (an answer
    may then be the answer to another request of the run already sent, with the same
    ``cache_key``, the parts the cache keys on: docs/trust.md)."""
    if not phase.answers_checked:
        return {}
    answers: dict[str, Any] = {
        "target": not rewrites_request_target(phase.target),
        "headers": sorted({str(name).lower() for name, _ in request["headers"]}),
    }
    if body_signed(plan):
        answers["body"] = True
    if plan.answers_every > 1:
        answers["every"] = plan.answers_every
    cache = plan.policies.for_operation(str(request["operation"])).cache
    if cache is not None and str(request["method"]).upper() in {m.upper() for m in cache.methods}:
        answers["cached"] = True
        answers["cache_key"] = [v.lower() if v.startswith("header:") else v for v in cache.vary]
    return {"answers": answers}


def tls_json(http2: bool, trust_store: str | None) -> dict[str, Any]:
    """The document's ``tls``: HTTP/2 by ALPN or not, and the trust store the engine uses
    (its password is ``gatebench.core.tls.STORE_PASSWORD``, which guards nothing secret)."""
    from gatebench.core.tls import STORE_PASSWORD

    if trust_store is None:
        raise RunError("a TLS plan needs the run's trust store (gatebench.core.tls.TRUST_P12)")
    return {"http2": http2, "trust_store": trust_store, "trust_store_password": STORE_PASSWORD}


def _control_json(c: Control) -> dict[str, Any]:
    out: dict[str, Any] = {"method": c.method, "url": c.url, "status": c.status}
    if c.wait_s > 0:
        out["wait_ms"] = round(c.wait_s * 1000)
    return out


def injection_json(inj: Injection) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": inj.kind}
    if inj.users is not None:
        out["users"] = inj.users
    if inj.rate is not None:
        out["rate"] = inj.rate
    if inj.duration is not None:
        out["duration_ms"] = round(inj.duration * 1000)
    if inj.requests is not None:
        out["requests"] = inj.requests
    if inj.kind == "arrivals":
        # whole microseconds: a compressed step (1 s at speed 3) is not a whole millisecond
        out["step_us"] = round((inj.step or 1.0) * 1_000_000)
        out["counts"] = list(inj.counts)
    return out


def injection_from_json(data: dict[str, Any]) -> Injection:
    duration = data.get("duration_ms")
    step_us = data.get("step_us")
    return Injection(
        kind=data["kind"],
        users=data.get("users"),
        rate=data.get("rate"),
        duration=duration / 1000.0 if duration is not None else None,
        requests=data.get("requests"),
        counts=tuple(data.get("counts") or ()),
        step=step_us / 1_000_000 if step_us is not None else None,
    )


def phases_from_document(document: dict[str, Any]) -> list[Phase]:
    """The phases of a workload document (for ingesting a log written elsewhere)."""
    if document.get("format") != FORMAT:
        raise RunError(f"not a {FORMAT} document (format: {document.get('format')!r})")
    return [
        Phase(
            index=int(p["index"]),
            target=str(p["target"]),
            workload=str(p["workload"]),
            repetition=int(p["repetition"]),
            measured=bool(p["measured"]),
            base_url=str(p["request"]["base_url"]),
            injection=injection_from_json(p["injection"]),
            before=tuple(
                Control(c["url"], c["method"], c["status"], c.get("wait_ms", 0) / 1000.0)
                for c in p["before"]
            ),
            answers_checked="answers" in p,
            refusals=tuple(int(s) for s in p.get("refusals") or ()),
        )
        for p in document["phases"]
    ]


def generator_json(g: Generator, *, stream: str = "") -> dict[str, Any]:
    """A generator as the engines read it; ``stream`` names its sequence (the workload and
    the parameter) for the draws of a weighted list."""
    if g.kind == "constant":
        return {"kind": "constant", "value": g.value}
    if g.kind == "list" and g.weights:
        return _weighted_json(g, stream)
    if g.kind == "list":
        return {"kind": "list", "values": list(g.values), "random": g.random_order}
    if g.kind in ("range", "random"):
        return {"kind": g.kind, "low": g.low, "high": g.high}
    return {"kind": "counter", "start": g.start, "step": g.step}


_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def stream_seed(stream: str) -> int:
    """A weighted list's seed: 48 bits of the SHA-256 of its stream name (exact as a double,
    so the Lua engine reads it without loss)."""
    return int.from_bytes(hashlib.sha256(stream.encode("utf-8")).digest()[:6], "big")


def unit_draw(seed: int, n: int) -> float:
    """Draw ``n`` (0, 1, ...) of a sequence in [0, 1): SplitMix64's output for the state
    ``seed + (n + 1) × gamma``, its top 53 bits. Stateless, so each engine (and each thread
    or tester taking every k-th draw) computes any draw on its own."""
    z = (seed + (n + 1) * _GAMMA) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return (z >> 11) * 2.0**-53


def _weighted_json(g: Generator, stream: str) -> dict[str, Any]:
    cumulative = []
    total = 0.0
    for weight in g.weights:
        total += weight
        cumulative.append(total)
    out: dict[str, Any] = {
        "kind": "weighted",
        "values": list(g.values),
        "cumulative": cumulative,
        "total": total + (g.others.weight if g.others else 0.0),
        "seed": stream_seed(stream),
    }
    if g.others is not None:
        o = g.others
        out["others"] = {
            "count": o.count,
            "weight": o.weight,
            "start": o.start,
            "text": o.prefix is not None or o.width > 0,
            "prefix": o.prefix or "",
            "width": o.width,
        }
    return out


def weighted_value(spec: dict[str, Any], n: int) -> Any:
    """The ``n``-th value (0, 1, ...) a weighted generator (its JSON) gives: the reference
    every engine matches. A tester's share of a phase takes draws ``offset + n × stride``."""
    draw = int(spec.get("offset", 0)) + n * int(spec.get("stride", 1))
    x = unit_draw(int(spec["seed"]), draw) * float(spec["total"])
    cumulative = spec["cumulative"]
    index = bisect.bisect_right(cumulative, x)
    others = spec.get("others")
    if index < len(cumulative) or others is None:
        # u × total rounds up to total once in a while: the last value then
        return spec["values"][min(index, len(cumulative) - 1)]
    listed = cumulative[-1] if cumulative else 0.0
    j = min(math.floor((x - listed) / others["weight"] * others["count"]), others["count"] - 1)
    number = others["start"] + j
    if others["text"]:
        return f"{others['prefix']}{number:0{others['width']}d}"
    return number


def _request(
    op: Operation, w: Workload, plan: Plan, api: Api
) -> tuple[dict[str, Any], dict[str, Generator]]:
    """The request of a workload, and its value generators (the plan's). A required parameter
    the plan leaves out is fixed text in the request: its example, or a value from its schema,
    as its style writes it (``gatebench.core.styles``)."""
    given = dict(w.params)
    path = _path_template(op, given, api)
    query: list[list[Any]] = []
    headers: list[list[Any]] = []
    cookie: list[dict[str, Any]] = []
    for p in op.query_params:
        if (value := _fixed(p, given, api)) is not _DRAWN:
            query.extend([n, [{"text": v}]] for n, v in serialized(p, value))
        elif p.name in given:
            query.append([quote(p.name, safe=""), [{"param": p.name, "as": "query"}]])
    for p in (p for p in op.header_params if not engine_header(p.name)):
        if (value := _fixed(p, given, api)) is not _DRAWN:
            headers.append([p.name, [{"text": serialized(p, value)[0][1]}]])
        elif p.name in given:
            headers.append([p.name, [{"param": p.name, "as": "raw"}]])
    for p in op.cookie_params:
        if (value := _fixed(p, given, api)) is not _DRAWN:
            pairs = [(n, {"text": v}) for n, v in serialized(p, value)]
        elif p.name in given:
            pairs = [(p.name, {"param": p.name, "as": "raw"})]
        else:
            continue
        for n, part in pairs:
            cookie += [{"text": f"{'; ' if cookie else ''}{n}="}, part]
    for name, value in w.headers:
        headers.append([name, _text_template(value, "raw")])
    auth, auth_query = _auth(op, plan)
    query.extend(auth_query)
    _add_cookie(cookie, auth, headers)
    request = {
        "operation": op.operation_id,
        "method": op.method,
        "path": path,
        "query": query,
        "headers": headers,
        "auth": auth,
        "body": _body(op, w.body, api),
        "expect": list(w.expect),
        "timeout_ms": round(w.timeout * 1000),
    }
    return request, given


def _default_value(p: Parameter, api: Api) -> Any:
    """A required parameter the plan leaves out: its example, else one from its schema."""
    return p.examples[0] if p.examples else synthesize(p.schema, api.schemas)


_DRAWN = object()
"""What :func:`_fixed` says of a parameter the plan's generator writes, or that is left out."""


def _fixed(p: Parameter, given: dict[str, Generator], api: Api) -> Any:
    """The value a parameter is written with as fixed text, by its style
    (``gatebench.core.styles``): a list or mapping the plan gives it with ``{value: ...}``
    (``filter: {value: {status: new}}`` is ``filter[status]=new`` in a deepObject query, as the
    description's own values are: as one text it would read ``{"status":"new"}``), or, when the
    plan leaves a required parameter out, its example or a value from its schema; else
    ``_DRAWN`` (the engine writes the generator's values, or the parameter is not sent)."""
    g = given.get(p.name)
    if g is None:
        return _default_value(p, api) if p.required else _DRAWN
    return g.value if g.kind == "constant" and isinstance(g.value, list | dict) else _DRAWN


def _add_cookie(
    cookie: list[dict[str, Any]], auth: list[dict[str, Any]], headers: list[list[Any]]
) -> None:
    """The cookie parameters as the one ``Cookie`` header a client sends (RFC 6265 5.4): in
    front of an API key sent as a cookie when they are fixed text, else a header of their own."""
    if not cookie:
        return
    key = next((a for a in auth if a["header"] == "Cookie"), None)
    if key is not None and all("text" in part for part in cookie):
        key["prefix"] = "".join(part["text"] for part in cookie) + "; " + key["prefix"]
    else:
        headers.append(["Cookie", cookie])


def _path_template(op: Operation, given: dict[str, Generator], api: Api) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    route = op.route_path
    pos = 0
    by_name = {p.name: p for p in op.path_params}
    for match in _PATH_PARAM.finditer(route):
        if match.start() > pos:
            parts.append({"text": _literal_path(route[pos : match.start()])})
        name = match.group(1)
        param = by_name.get(name) or Parameter(name, "path", True, {"type": "string"})
        value = _fixed(param, given, api) if name in given else _default_value(param, api)
        if value is _DRAWN:
            parts.append({"param": name, "as": "path"})
        else:  # a path parameter is always sent
            parts.append({"text": serialized(param, value)[0][1]})
        pos = match.end()
    if pos < len(route):
        parts.append({"text": _literal_path(route[pos:])})
    return parts or [{"text": "/"}]


def _literal_path(text: str) -> str:
    """A template's literal text as the client sends it, encoded as the gateways' routes and
    the mock backend expect it (a ``%XX`` escape stays one, a bare ``%`` is ``%25``)."""
    return "/".join(encode_literal(segment) for segment in text.split("/"))


def _auth(op: Operation, plan: Plan) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Headers (and query parameters) that carry credentials: names only, never values."""
    headers: list[dict[str, Any]] = []
    query: list[list[Any]] = []
    sent = op.sent_security
    for scheme in sent.schemes if sent else ():
        label = scheme.label
        if label in ("bearer", "oauth2", "openIdConnect") and plan.auth.bearer_env:
            header: dict[str, Any] = {
                "header": "Authorization",
                "prefix": "Bearer ",
                "env": plan.auth.bearer_env,
            }
            if plan.auth.bearer_per_user:
                header["per_user"] = True
            headers.append(header)
        elif label == "basic" and plan.auth.basic_username_env and plan.auth.basic_password_env:
            headers.append(
                {
                    "header": "Authorization",
                    "prefix": "Basic ",
                    "env": [plan.auth.basic_username_env, plan.auth.basic_password_env],
                }
            )
        elif label == "apiKey-header" and plan.auth.api_key_env and scheme.param_name:
            headers.append(
                {"header": scheme.param_name, "prefix": "", "env": plan.auth.api_key_env}
            )
        elif label == "apiKey-cookie" and plan.auth.api_key_env and scheme.param_name:
            headers.append(
                {
                    "header": "Cookie",
                    "prefix": f"{scheme.param_name}=",
                    "env": plan.auth.api_key_env,
                }
            )
        elif label == "apiKey-query" and plan.auth.api_key_env and scheme.param_name:
            query.append([quote(scheme.param_name, safe=""), [{"secret": plan.auth.api_key_env}]])
    return headers, query


def _text_template(text: str, encoding: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(text):
        if match.start() > pos:
            parts.append({"text": text[pos : match.start()]})
        parts.append({"param": match.group(1), "as": encoding})
        pos = match.end()
    if pos < len(text):
        parts.append({"text": text[pos:]})
    return parts


def json_template(value: Any) -> list[dict[str, Any]]:
    """A JSON value with ``${name}`` placeholders as template parts (see the module doc)."""
    parts: list[dict[str, Any]] = []

    def text(s: str) -> None:
        if parts and "text" in parts[-1]:
            parts[-1] = {"text": parts[-1]["text"] + s}
        else:
            parts.append({"text": s})

    def walk(v: Any) -> None:
        if isinstance(v, str):
            whole = _PLACEHOLDER.fullmatch(v)
            if whole:
                parts.append({"param": whole.group(1), "as": "json"})
                return
            text('"')
            for piece in _text_template(v, "json-string"):
                if "text" in piece:
                    text(json.dumps(piece["text"], ensure_ascii=False)[1:-1])
                else:
                    parts.append(piece)
            text('"')
        elif isinstance(v, dict):
            text("{")
            for i, (k, item) in enumerate(v.items()):
                if i:
                    text(",")
                text(json.dumps(str(k), ensure_ascii=False) + ":")
                walk(item)
            text("}")
        elif isinstance(v, list | tuple):
            text("[")
            for i, item in enumerate(v):
                if i:
                    text(",")
                walk(item)
            text("]")
        else:
            text(json.dumps(v))

    walk(value)
    return parts


OCTETS = "application/octet-stream"
"""The media type of generated bytes whose type nothing names."""


def _body(op: Operation, body: BodySpec, api: Api) -> dict[str, Any]:
    kind = body.kind
    if kind == "none":
        return {"kind": "none"}
    if kind == "json":
        return {
            "kind": "template",
            "content_type": body.media_type or "application/json",
            "parts": json_template(body.value),
        }
    if kind == "text":
        return {
            "kind": "template",
            "content_type": body.media_type or "text/plain",
            "parts": _text_template(str(body.value), "raw"),
        }
    if kind == "binary":
        return {
            "kind": "bytes",
            "size": body.size or 0,
            "content_type": body.media_type or OCTETS,
        }
    if kind == "multipart":
        parts = []
        for part in body.parts:
            if part.size is not None:
                parts.append(
                    {
                        "name": part.name,
                        "size": part.size,
                        "filename": part.filename or f"{part.name}.bin",
                        "content_type": part.content_type or OCTETS,
                    }
                )
            else:
                parts += _plan_parts(part.name, part.value, part.content_type)
        return {"kind": "multipart", "parts": parts + _required_parts(op, body, api)}
    # example / synthesized: from the description itself
    content = op.request_body.content if op.request_body else ()
    media = next((m for m in content if m.media_type == body.media_type), None) or (
        content[0] if content else None
    )
    if media is None:
        raise RunError(f"operation {op.operation_id!r} has no request body to send")
    if kind == "example":
        examples = dict(media.examples)
        if not examples:
            raise RunError(f"operation {op.operation_id!r} has no request body example")
        value = examples.get(body.example or "", next(iter(examples.values())))
    else:
        value = synthesize(media.schema or {}, api.schemas)
    media_type = media.media_type
    if bare_media_type(media_type) == "multipart/form-data" and isinstance(value, dict):
        schema = dereferenced(media.schema, api.schemas)
        return {"kind": "multipart", "parts": _described_parts(value, schema, media.encoding)}
    if bare_media_type(media_type) == "application/x-www-form-urlencoded" and isinstance(
        value, dict
    ):
        encoded = form_body(value, media.encoding)
        return {"kind": "template", "content_type": media_type, "parts": [{"text": encoded}]}
    if is_json_media(media_type) or not isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = value
    return {"kind": "template", "content_type": media_type, "parts": [{"text": text}]}


def _required_parts(op: Operation, body: BodySpec, api: Api) -> list[dict[str, Any]]:
    """The parts a multipart body the plan writes leaves out and the description requires,
    as the description gives them (as a required parameter the plan leaves out is sent)."""
    content = op.request_body.content if op.request_body else ()
    media = next(
        (m for m in content if bare_media_type(m.media_type) == "multipart/form-data"), None
    )
    schema = dereferenced(media.schema, api.schemas) if media is not None else {}
    required = schema.get("required")
    if not isinstance(required, list):
        return []
    given = {part.name for part in body.parts}
    value = synthesize(schema, api.schemas)
    if not isinstance(value, dict):
        return []
    left_out = {k: v for k, v in value.items() if k in required and k not in given}
    return _described_parts(left_out, schema, media.encoding if media is not None else ())


def _plan_parts(name: str, value: Any, content_type: str | None) -> list[dict[str, Any]]:
    """The parts of a value the plan's ``multipart`` gives, written as a value taken from the
    description is (:func:`_described_parts`): text as written (its ``${placeholders}``
    filled), a list as one part per item, an object as its JSON (``application/json``), a
    number, a boolean or null as its JSON text; ``content_type`` names each part's type."""
    parts = []
    for one in value if isinstance(value, list) else [value]:
        typed = content_type
        if isinstance(one, str):
            text = _text_template(one, "raw")
        elif isinstance(one, dict | list):
            text, typed = json_template(one), content_type or "application/json"
        else:
            text = [{"text": json.dumps(one)}]
        parts.append({"name": name, "parts": text, **({"content_type": typed} if typed else {})})
    return parts


def _described_parts(
    value: dict[str, Any], schema: dict[str, Any], encoding: Sequence[Parameter] = ()
) -> list[dict[str, Any]]:
    """The parts of a multipart body taken from the description: a file (``format: binary``;
    OpenAPI 3.1's ``contentMediaType`` of a string that is not text, without a
    ``contentEncoding``) as 1 kB of generated content of its type; base64 (``format: byte``,
    ``contentEncoding: base64``) as its text, as the synthesizer writes it; text as written, an object as its JSON (``application/json``,
    OpenAPI 3's default), another value as its JSON text; an array as one part per item, all of
    its name (OpenAPI 3: an array's parts are those of its items). The media type's Encoding
    Object names a part's type where it gives one (``contentType: image/png``): a file's, a
    text's, or a JSON one's (an object stays JSON: gatebench writes no other notation of it)."""
    found = schema.get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    declared = {p.name: p.content for p in encoding if p.content}
    parts: list[dict[str, Any]] = []
    for name, item in value.items():
        prop: dict[str, Any] = props[name] if isinstance(props.get(name), dict) else {}
        if isinstance(item, list) and isinstance(prop.get("items"), dict):
            prop, items = prop["items"], item
        else:
            items = [item]
        media = prop.get("contentMediaType")
        named = isinstance(media, str) and is_media_type(media) and not media.startswith("text/")
        is_file = prop.get("format") == "binary" or (named and "contentEncoding" not in prop)
        given = declared.get(name)
        for one in items:
            if is_file:
                file = {"size": 1024, "filename": f"{name}.bin"}
                typed = given or (media if named else OCTETS)
                parts.append({"name": name, **file, "content_type": typed})
            elif isinstance(one, dict | list) or (given and is_json_media(given)):
                text = {"text": json.dumps(one)}
                typed = given if given and is_json_media(given) else "application/json"
                parts.append({"name": name, "parts": [text], "content_type": typed})
            else:
                text = {"text": one if isinstance(one, str) else json.dumps(one)}
                parts.append(
                    {"name": name, "parts": [text], **({"content_type": given} if given else {})}
                )
    return parts


def workload_json_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


__all__ = [
    "FIXED_AS_RUN",
    "FORMAT",
    "RATE_LIMITED",
    "AsRun",
    "Control",
    "Phase",
    "Schedule",
    "TimeLeft",
    "answers_checked",
    "body_signed",
    "build_schedule",
    "generator_json",
    "injection_from_json",
    "injection_json",
    "json_template",
    "phases_from_document",
    "quick_plan",
    "refusals_of",
    "render_workload",
    "stream_seed",
    "unit_draw",
    "weighted_value",
    "workload_json_text",
]
