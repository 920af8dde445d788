"""``build_plan``: ``x-gatebench`` read key by key with its models (``_document``) into a
:class:`Plan`, and checked as a whole: against the description (``_checks``), the engines'
capabilities, and itself (a fault's replica, TLS and the baseline...). Every problem is
collected and located before :class:`PlanError` is raised; warnings stay with the plan.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from gatebench.core.errors import PlanError, pointer, shown
from gatebench.core.ir import (
    Api,
    Operation,
    bare_media_type,
    engine_header,
    is_http_token,
    is_json_media,
    unknown_body_message,
)
from gatebench.core.plan._checks import (
    _check_auth,
    _check_params,
    _engine,
    _operation,
    _refuse_credentials,
)
from gatebench.core.plan._document import (
    BODIES,
    INJECTIONS,
    WORKLOAD_NAME,
    AuthDoc,
    BackendDoc,
    BodyDoc,
    CapacityDoc,
    Count,
    CpusDoc,
    Duration,
    FaultDoc,
    InfrastructureDoc,
    InjectionDoc,
    ParameterDoc,
    PlanDoc,
    Reading,
    TlsDoc,
    WorkloadDoc,
    kind,
)
from gatebench.core.plan._model import (
    MAX_REPLICAS,
    Auth,
    Backend,
    Balance,
    BodySpec,
    Capacity,
    CapacityPlan,
    Cpus,
    Fault,
    Generator,
    Injection,
    MultipartPart,
    Objective,
    Plan,
    Scoring,
    Warmup,
    Workload,
)
from gatebench.core.plan._policies import ReadFile, check_workloads, read_policies
from gatebench.core.plan._traffic import arrivals_injection, traffic_source, weighted_list
from gatebench.core.policies import JwtAuth
from gatebench.core.stats import counted
from gatebench.core.synth import closes, synthesize
from gatebench.core.thresholds import bound_of, parse_thresholds

RECOVERY_S = 3.0
"""About how long the gateways' active health checks take to put a restarted replica back
(two passed checks a second apart, plus its start)."""
SHORT_ROUNDS = 100
"""A closed-model phase of fewer round trips per user than this can end within 20 ms on a
fast local target (a loopback round trip takes about 0.2 ms): too short to measure."""
LONG_BURST_BYTES = 40 * 1024 * 1024
"""A burst that uploads this much in all lasts at least ~20 ms on loopback (about 2 GB/s):
long enough to measure (the auction example's 50 images of 8.6 MB take hundreds of ms)."""


def build_plan(
    section: Any,
    api: Api,
    *,
    known_gateways: Sequence[str] | None = None,
    aliases: dict[str, str] | None = None,
    base_pointer: str = "/x-gatebench",
    source: str | None = None,
    read_file: ReadFile | None = None,
) -> Plan:
    """Validate ``x-gatebench`` against the IR. Raises :class:`PlanError` with every problem.

    ``read_file`` reads a file of the bundle by its relative path (a JWT policy's keys)."""
    if known_gateways is None:
        from gatebench.core.renderers import gateway_aliases, gateway_names

        known_gateways, aliases = gateway_names(), gateway_aliases()
    aliases = aliases or {}
    r = Reading(base_pointer, source)
    data = r.keys(PlanDoc, section, [])
    _refuse_credentials(data, r)

    def value(name: str, default: Any = None) -> Any:
        found = r.value(PlanDoc, name, data, [], default)
        return default if found is None else found

    gateways = _gateways(data.get("gateways"), r, list(known_gateways), aliases)
    baseline, repetitions = value("baseline", True), value("repetitions", 3)
    warmup_doc = value("warmup")
    warmup = Warmup() if warmup_doc is None else _warmup(warmup_doc, r)
    order, seed = value("order", "shuffled"), r.value(PlanDoc, "seed", data, [])
    backend = _backend(data.get("backend", {"mock": True}), r)
    tls = value("tls")
    infra_doc = value("infrastructure") if "infrastructure" in data else None
    infrastructure = (
        None if infra_doc is None and "infrastructure" not in data else _infra(infra_doc, r)
    )
    auth = _auth(data.get("auth"), r)
    scoring = _scoring(value("scoring"), r) if "scoring" in data else Scoring()
    workloads, raw_workloads = _workloads(data.get("workloads"), r, api, auth)
    policies = read_policies(value("policies"), r, api, read_file)
    check_workloads(policies, workloads, api, r)
    capacity = _capacity(data, raw_workloads, r)
    if auth.jwt_private_key_env is not None:
        if not isinstance(policies.default.auth, JwtAuth) and not any(
            isinstance(p.auth, JwtAuth) for _, p in policies.operations
        ):
            r.error(
                ["auth", "jwt"],
                "signing tokens needs a JWT policy (policies: {auth: {jwt: {issuer, audience, "
                "keys}}}): its issuer, audience and algorithm are the tokens' claims",
            )
        if auth.bearer_env is not None:
            r.error(
                ["auth", "jwt"],
                "give either auth.bearer (a token from a variable) or auth.jwt (signed tokens), not both",
            )
    engine = _engine(value("engine", "gatling"), r, workloads, warmup, api)
    fault = (
        _fault(value("fault"), r, backend, workloads, warmup.duration) if "fault" in data else None
    )
    traffic = traffic_source(value("traffic"), r) if "traffic" in data else None
    answers_doc = value("answers")
    answers_every = 1 if answers_doc is None else answers_doc.every
    if tls is not None:
        _check_tls(tls, engine, backend, baseline, r)
    if auth.jwt_private_key_env is not None:
        from gatebench.core.capabilities import token_pool_problem

        pool_problem = token_pool_problem(engine, auth.jwt_subjects)
        if pool_problem is not None:
            r.error(["auth", "jwt", "subjects"], pool_problem)
    cpus = _cpus(data["cpus"], r) if "cpus" in data else Cpus()
    thresholds, threshold_problems = parse_thresholds(
        data.get("thresholds"),
        gateways=gateways,
        baseline=baseline,
        workloads=[w.name for w in workloads],
        aliases=aliases,
        base=r.base,
        source=r.source,
    )
    r.problems.extend(threshold_problems)
    if not gateways and not baseline:
        r.error(["gateways"], "nothing to measure: no gateways and baseline: false")
    if any(p.severity == "error" for p in r.problems):
        raise PlanError(r.problems)
    return Plan(
        gateways=tuple(gateways),
        baseline=baseline,
        repetitions=repetitions,
        warmup=warmup,
        order=order,
        seed=seed,
        backend=backend,
        workloads=tuple(workloads),
        auth=auth,
        scoring=scoring,
        infrastructure=infrastructure,
        thresholds=thresholds,
        engine=engine,
        cpus=cpus,
        warnings=tuple(r.problems),
        policies=policies,
        capacity=capacity,
        tls=tls,
        fault=fault,
        traffic=traffic,
        answers_every=answers_every,
    )


def _check_tls(tls: TlsDoc, engine: str, backend: Backend, baseline: bool, r: Reading) -> None:
    """What the engine and the baseline need for a TLS plan."""
    from gatebench.core.capabilities import tls_problem

    problem = tls_problem(engine, http2=tls.http2)
    if problem is not None:
        r.error(["engine"], problem)
    if baseline and backend.kind == "url" and (backend.url or "").startswith("https:"):
        r.error(
            ["backend", "url"],
            "with tls, the load engine trusts the run's own CA only, so the baseline cannot "
            "reach an https:// service with its own certificate; use an http:// URL (the "
            "baseline then has no TLS: the report says so) or baseline: false",
        )
    elif baseline and backend.kind == "url":
        r.warn(
            ["baseline"],
            "with your own service (url) the baseline reaches it without TLS, so the gateways' "
            "overhead includes their TLS; a mock or builtin backend serves the baseline over "
            "the same TLS",
        )


def _gateways(value: Any, r: Reading, known: list[str], aliases: dict[str, str]) -> list[str]:
    if value is None:
        from gatebench.core.renderers import local_gateway_names

        return list(local_gateway_names())
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        r.error(["gateways"], f"expected a list of gateway names, got {kind(value)}")
        return []
    out: list[str] = []
    for i, name in enumerate(value):
        if not isinstance(name, str):
            r.error(["gateways", i], f"expected a gateway name, got {shown(name)}")
            continue
        canonical = aliases.get(name.lower(), name.lower())
        if canonical not in known:
            hint = difflib.get_close_matches(name.lower(), [*known, *aliases], n=1)
            extra = f"did you mean {hint[0]!r}? " if hint else ""
            r.error(
                ["gateways", i],
                f"unknown gateway {name!r}; {extra}available: {', '.join(sorted(known))}",
            )
        elif canonical in out:
            r.warn(["gateways", i], f"gateway {name!r} is listed twice; measured once")
        else:
            out.append(canonical)
    return out


def _warmup(doc: Any, r: Reading) -> Warmup:
    if doc.duration and doc.requests:
        r.error(["warmup"], "give either 'duration' or 'requests', not both")
    return Warmup(duration=doc.duration or None, requests=doc.requests or None)


def _backend(value: Any, r: Reading) -> Backend:
    where: list[str | int] = ["backend"]
    data = r.keys(BackendDoc, value, where)
    if not data:
        return Backend("mock")
    doc_value = (
        {**data} if any(k in data for k in ("url", "mock", "builtin")) else {**data, "mock": True}
    )
    chosen = [k for k in ("url", "mock", "builtin") if k in doc_value]
    replicas = r.value(BackendDoc, "replicas", data, where, 1) or 1
    balance: Balance = r.value(BackendDoc, "balance", data, where, "round_robin") or "round_robin"
    backend = Backend("mock")
    if len(chosen) != 1:
        r.error(where, "give exactly one of 'url' (your service), 'mock' or 'builtin'")
    elif chosen[0] == "url":
        backend = Backend("url", url=r.value(BackendDoc, "url", data, where))
    elif chosen[0] == "builtin":
        builtin = r.value(BackendDoc, "builtin", data, where)
        backend = Backend("mock") if builtin is None else Backend("builtin", builtin=builtin)
    else:
        mock = r.value(BackendDoc, "mock", doc_value, where)
        if mock is not None:
            if mock.latency > 60:
                r.error(
                    ["backend", "mock", "latency"],
                    "a mock latency above 60s would time requests out",
                )
            if mock.workers is not None and not mock.latency:
                r.error(
                    ["backend", "mock", "workers"],
                    "workers need a latency (each request holds a worker for it): "
                    "mock: {latency: 10ms, workers: 4} serves 400 requests per second",
                )
            backend = Backend(
                "mock", latency=mock.latency, response_size=mock.response_size, workers=mock.workers
            )
    if replicas > 1 and backend.kind == "url":
        r.error(
            ["backend", "replicas"],
            "replicas are copies of a backend gatebench starts (mock or builtin); with your "
            "own service (url), run its replicas behind one address yourself",
        )
        replicas = 1
    if "balance" in data and replicas == 1 and backend.kind != "url":
        r.warn(["backend", "balance"], "balance has no effect with one replica")
    return replace(backend, replicas=replicas, balance=balance)


def _infra(doc: InfrastructureDoc | None, r: Reading) -> InfrastructureDoc | None:
    if doc is None:
        return None
    if doc.zone and doc.region and not doc.zone.startswith(doc.region + "-"):
        r.error(["infrastructure", "zone"], f"zone {doc.zone!r} is not in region {doc.region!r}")
    if doc.zone and not doc.region:
        return doc.model_copy(update={"region": doc.zone.rsplit("-", 1)[0]})
    return doc


def _auth(value: Any, r: Reading) -> Auth:
    """``auth``: the variables that hold the credentials, key by key (``AuthDoc``)."""
    where: list[str | int] = ["auth"]
    data = r.keys(AuthDoc, {} if value is None else value, where)
    bearer, api_key, basic, jwt = (
        r.value(AuthDoc, key, data, where) for key in ("bearer", "api_key", "basic", "jwt")
    )
    return Auth(
        bearer_env=bearer.env if bearer else None,
        api_key_env=api_key.env if api_key else None,
        basic_username_env=basic.username_env if basic else None,
        basic_password_env=basic.password_env if basic else None,
        jwt_private_key_env=jwt.private_key_env if jwt else None,
        jwt_subjects=jwt.subjects if jwt else 1,
        jwt_lifetime=jwt.lifetime if jwt else None,
    )


def _cpus(value: Any, r: Reading) -> Cpus:
    """``cpus: pinned | unpinned`` or ``cpus: {gateway: [1], engine: [0], backend: [0]}``
    (gatebench.core.pinning decides what each means on the machine that runs it)."""
    expected = (
        "expected 'pinned', 'unpinned' or a mapping of core lists such as "
        "{gateway: [1], engine: [0], backend: [0]}, got "
    )
    if isinstance(value, str):
        if value in ("pinned", "unpinned"):
            return Cpus(mode="pinned" if value == "pinned" else "unpinned", given=True)
        r.error(["cpus"], expected + shown(value))
        return Cpus()
    if not isinstance(value, dict):
        r.error(["cpus"], expected + kind(value))
        return Cpus()
    data = r.keys(CpusDoc, value, ["cpus"])
    lists: dict[str, tuple[int, ...]] = {}
    for role in ("gateway", "engine", "backend"):
        found = r.value(CpusDoc, role, data, ["cpus"])
        if found is not None:
            lists[role] = tuple(sorted(set(found)))
    if not any(role in data for role in ("gateway", "engine", "backend")):
        r.error(["cpus"], "expected at least one of: gateway, engine, backend")
    others = {c for role in ("engine", "backend") for c in lists.get(role, ())}
    if set(lists.get("gateway", ())) & others:
        r.warn(
            ["cpus", "gateway"],
            "the gateway shares a core with the engine or the backend: pinning then does not "
            "keep them apart",
        )
    return Cpus(mode="explicit", given=True, **lists)


def _scoring(doc: Scoring | None, r: Reading) -> Scoring:
    if doc is None:
        return Scoring()
    weights = doc.weights
    if doc.profile == "paper" and weights:
        r.error(
            ["scoring", "weights"],
            "weights apply to the 'robust' profile; the 'paper' profile weighs every metric equally",
        )
    if weights and not any(w for _, w in weights):
        r.error(["scoring", "weights"], "at least one weight must be above 0")
    return doc


# -- workloads ------------------------------------------------------------------------------


def _workloads(value: Any, r: Reading, api: Api, auth: Auth) -> tuple[list[Workload], list[Any]]:
    if value is None:
        r.error(
            ["workloads"],
            "at least one workload is required (an operation and an injection profile)",
        )
        return [], []
    if not isinstance(value, list) or not value:
        r.error(["workloads"], f"expected a non-empty list of workloads, got {kind(value)}")
        return [], []
    out: list[Workload] = []
    names: set[str] = set()
    for i, raw in enumerate(value):
        at: list[str | int] = ["workloads", i]
        data = r.keys(WorkloadDoc, raw, at)
        if not data:
            continue
        name = r.checked(WORKLOAD_NAME, data.get("name"), [*at, "name"])
        if name in names:
            r.error([*at, "name"], f"workload name {name!r} is used twice")
        name = name or f"workload-{i + 1}"
        names.add(name)
        op = _operation(data.get("operation"), r, [*at, "operation"], api)
        injection = _injection(data.get("injection"), r, [*at, "injection"])
        params = _params(data.get("params"), r, [*at, "params"])
        headers = _headers(data.get("headers"), r, [*at, "headers"])
        body = _body(data.get("body"), r, [*at, "body"], op, api)
        expect = r.value(WorkloadDoc, "expect", data, at) or ()
        timeout = r.value(WorkloadDoc, "timeout", data, at, 60.0) or 60.0
        if op is not None:
            _check_params(op, params, headers, body, r, at)
            _check_auth(op, auth, r, [*at, "operation"])
        if injection is not None:
            _warn_too_short(injection, body, r, [*at, "injection"])
        if op is None or injection is None:
            continue
        out.append(
            Workload(
                name=name,
                operation_id=op.operation_id,
                injection=injection,
                params=tuple(params.items()),
                headers=tuple(headers.items()),
                body=body,
                expect=expect,
                timeout=timeout,
                pointer=r.base + pointer(*at),
            )
        )
    return out, value


def _injection(value: Any, r: Reading, where: list[str | int]) -> Injection | None:
    if value is None:
        r.error(
            where,
            "an injection profile is required: at_once, ramp, constant_rate, arrivals, "
            "concurrent or sequential",
        )
        return None
    doc = r.whole(InjectionDoc, value, where)
    kind_ = next((k for k in INJECTIONS if doc and k in doc.model_fields_set), None)
    if doc is None or kind_ is None:  # an empty mapping says nothing more
        return None
    extra = [k for k in ("duration", "requests") if k in doc.model_fields_set]
    if kind_ == "arrivals":
        if extra:
            r.error([*where, extra[0]], "arrivals: {counts: [...], step: 1s} lasts its curve")
        return arrivals_injection(doc.arrivals, r, [*where, kind_])
    if kind_ == "at_once":
        if extra:
            r.error([*where, extra[0]], "at_once takes only a number of users")
        return Injection("at_once", users=doc.at_once)
    if kind_ == "sequential":
        if extra:
            r.error([*where, extra[0]], "sequential takes only a number of requests")
        return Injection("sequential", users=1, requests=doc.sequential)
    if kind_ == "concurrent":
        if not extra:
            r.error(
                where, "concurrent users need a 'duration' (such as 30s) or a number of 'requests'"
            )
            return None
        return Injection(
            "concurrent", users=doc.concurrent, duration=doc.duration, requests=doc.requests
        )
    if extra:
        r.error([*where, extra[0]], f"write {kind_}: {{..., duration: ...}}")
    if kind_ == "ramp":
        return Injection("ramp", users=doc.ramp.users, duration=doc.ramp.duration)
    rate, seconds = doc.constant_rate.rate, doc.constant_rate.duration
    from gatebench.core.plan._model import MAX_REQUESTS

    if rate * seconds > MAX_REQUESTS:
        r.error(
            [*where, kind_],
            f"{rate * seconds:,.0f} requests is above the limit of {MAX_REQUESTS:,}",
        )
        return None
    return Injection("constant_rate", rate=rate, duration=seconds)


def _params(value: Any, r: Reading, where: list[str | int]) -> dict[str, Generator]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        r.error(where, f"params must be a mapping of name to values, got {kind(value)}")
        return {}
    out: dict[str, Generator] = {}
    for name, raw in value.items():
        if isinstance(raw, list):
            r.error(
                [*where, name],
                "write values to cycle through as {list: [...]}, or one list sent as the "
                "parameter's value (by its style: ids=1,2) as {value: [...]}",
            )
            continue
        if not isinstance(raw, dict):
            out[str(name)] = Generator("constant", value=raw)
            continue
        doc = r.whole(ParameterDoc, raw, [*where, name])
        if doc is None:
            continue
        given = doc.model_fields_set
        for key in ("order", "weights", "others"):
            if key in given and "list_" not in given:
                r.error([*where, name, key], f"{key!r} applies to a list")
        if "value" in given:
            out[str(name)] = Generator("constant", value=doc.value)
        elif "list_" in given:
            found = weighted_list(doc, r, [*where, name])
            if found is not None:
                out[str(name)] = found
        elif "counter" in given:
            out[str(name)] = Generator("counter", start=doc.counter.start, step=doc.counter.step)
        else:
            low, high = doc.range if "range" in given else doc.random
            out[str(name)] = Generator(
                "range" if "range" in given else "random", low=low, high=high
            )
    return out


def _headers(value: Any, r: Reading, where: list[str | int]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        r.error(where, f"headers must be a mapping, got {kind(value)}")
        return {}
    out = {}
    for name, raw in value.items():
        if not is_http_token(str(name)):
            r.error([*where, name], f"{str(name)!r} is not a valid HTTP header name")
        elif engine_header(str(name)):
            r.error(
                [*where, name],
                f"{name} is set by the load engine (how the request is framed and its "
                "connection kept alive): leave it out",
            )
        elif str(name).lower() in ("authorization", "proxy-authorization", "cookie"):
            r.error(
                [*where, name],
                f"{name} is never written in the description; use auth: {{...}} with an environment variable",
            )
        elif (
            not isinstance(raw, str | int | float)
            or isinstance(raw, bool)
            or re.search(r"[\r\n\x00]", str(raw))
        ):
            r.error([*where, name], "a header value must be a single-line string")
        else:
            out[str(name)] = str(raw)
    return out


def _body(
    value: Any, r: Reading, where: list[str | int], op: Operation | None, api: Api
) -> BodySpec:
    media_types = [m.media_type for m in op.request_body.content] if op and op.request_body else []
    if value is None:
        if op is not None and op.body_unknown is not None:
            r.error(where, unknown_body_message(op))
        if op is None or op.request_body is None:
            return BodySpec("none")
        first = op.request_body.content[0]
        if first.examples:
            return BodySpec("example", media_type=first.media_type)
        if op.request_body.required:
            _warn_synthesized(op, first.media_type, api, r, where)
            return BodySpec("synthesized", media_type=first.media_type)
        return BodySpec("none")
    word = value in ("example", "synthesized", "none")  # body: example is {example: true}
    doc = r.whole(BodyDoc, {value: True} if word else value, where)
    if doc is None:
        return BodySpec("none")
    kind_ = next(k for k in BODIES if k in {f.removesuffix("_") for f in doc.model_fields_set})
    media = doc.media_type
    if kind_ == "none":
        return BodySpec("none")
    if kind_ == "example":
        name = doc.example if isinstance(doc.example, str) else None
        if op is not None:
            content = op.request_body.content if op.request_body else ()
            available = [n for m in content if media in (None, m.media_type) for n, _ in m.examples]
            if not available:
                r.error(
                    where,
                    f"operation {op.operation_id!r} has no request body example; use synthesized, json or binary",
                )
            elif name is not None and name not in available:
                r.error(
                    [*where, "example"], f"no example {name!r}; available: {', '.join(available)}"
                )
        return BodySpec("example", media_type=media or next(iter(media_types), None), example=name)
    if kind_ == "synthesized":
        if op is not None and op.body_unknown is not None:
            r.error(where, unknown_body_message(op))
        elif op is not None and op.request_body is None:
            r.error(
                where, f"operation {op.operation_id!r} declares no request body to synthesize from"
            )
        chosen = media or next(iter(media_types), None)
        if op is not None and op.request_body is not None:
            _warn_synthesized(op, chosen, api, r, where)
        return BodySpec("synthesized", media_type=chosen)
    if kind_ == "binary":
        content_type = doc.binary.content_type or media or "application/octet-stream"
        return BodySpec("binary", media_type=content_type, size=doc.binary.size)
    if kind_ == "multipart":
        parts = []
        for name, part in doc.multipart.items():
            if (part.size is None) == ("value" not in part.model_fields_set):
                r.error(
                    [*where, "multipart", name],
                    "a part needs either 'size' (generated file content) or 'value' (text)",
                )
                continue
            file_part = part.size is not None
            parts.append(
                MultipartPart(
                    name=str(name),
                    size=part.size,
                    value=part.value,
                    filename=part.filename or (f"{name}.bin" if file_part else None),
                    content_type=part.content_type
                    or ("application/octet-stream" if file_part else None),
                )
            )
        return BodySpec("multipart", media_type="multipart/form-data", parts=tuple(parts))
    if kind_ == "json":
        return BodySpec("json", media_type=media or "application/json", value=doc.json_)
    return BodySpec("text", media_type=media or "text/plain", value=doc.text)


def _warn_synthesized(
    op: Operation, media_type: str | None, api: Api, r: Reading, where: list[str | int]
) -> None:
    """A synthesized body its media type does not read (gatebench writes a structure as JSON,
    a form or multipart; ``application/xml`` got JSON text), or whose schema no finite value
    matches (it requires itself)."""
    content = op.request_body.content if op.request_body else ()
    media = next((m for m in content if m.media_type == media_type), None) or next(
        iter(content), None
    )
    if media is None:
        return
    bare = bare_media_type(media.media_type)
    written = is_json_media(bare) or bare.startswith(("multipart/", "application/x-www-form"))
    if not written and not isinstance(synthesize(media.schema or {}, api.schemas), str):
        r.warn(
            where,
            f"the request body of operation {op.operation_id!r} is {media.media_type} without "
            "an example: gatebench synthesizes a structure as JSON text, which a service "
            f"reading {bare} refuses. Give the body to send: body: {{text: '...', media_type: "
            f"{bare}}}, or an example in the description",
        )
    if closes(media.schema or {}, api.schemas):
        return
    r.warn(
        where,
        f"no finite body matches the request body schema of operation {op.operation_id!r}: a "
        "required property (or a non-empty list) leads back to its own schema; the synthesized "
        "body ends that branch with null, which the schema refuses. Write the body to send: "
        "body: {json: {...}}",
    )


def _warn_too_short(inj: Injection, body: BodySpec, r: Reading, where: list[str | int]) -> None:
    """A profile whose phase can end before it is long enough to measure a throughput (the
    rule of gatebench.core.trust.too_short: 20 × (timer resolution + a burst's launch spread)),
    with a profile that measures. Warned, not refused: only the run can tell how long the
    phase lasted, and the run flags it ``too-short`` when it was."""
    users = inj.users or 1
    if inj.kind == "at_once":
        if users * ((body.size or 0) + sum(p.size or 0 for p in body.parts)) >= LONG_BURST_BYTES:
            return
        r.warn(
            [*where, "at_once"],
            f"a burst of {counted(users, 'request')} lasts about one response time (a few ms on a fast "
            "target): its throughput is not scored when the phase is too short to measure "
            f"(docs/trust.md); to measure throughput, repeat the burst: concurrent: {users}, "
            "duration: 10s",
        )
        return
    if inj.kind not in ("sequential", "concurrent") or inj.duration is not None:
        return  # ramp and constant_rate last as long as the profile says
    if (inj.requests or 0) // users >= SHORT_ROUNDS:
        return
    if inj.kind == "sequential":
        what = counted(inj.requests or 0, "sequential request")
        better, key = (
            f"sequential: {SHORT_ROUNDS * 20}, or concurrent: 1, duration: 10s",
            "sequential",
        )
    else:
        what = f"{counted(inj.requests or 0, 'request')} from {counted(users, 'user')}"
        better, key = f"concurrent: {users}, duration: 10s", "requests"
    r.warn(
        [*where, key],
        f"{what} can end within a few ms on a fast target (a loopback round trip takes "
        "about 0.2 ms): the throughput is not scored when the phase is too short to measure "
        f"(docs/trust.md); to measure throughput, send more or for a while: {better}",
    )


# -- capacity and fault -------------------------------------------------------------------------


def _capacity(section: dict[str, Any], workloads: list[Any], r: Reading) -> CapacityPlan | None:
    """``x-gatebench.capacity`` (every workload's defaults) and ``workloads[i].capacity`` (one
    workload's overrides, or ``false``); None when neither gives any."""
    default, given = Capacity(), "capacity" in section
    if given and section["capacity"] is False:
        r.error(
            ["capacity"],
            "capacity: false at the top leaves nothing out; remove it, or write capacity: "
            "false in a workload to leave that workload out of the search",
        )
    elif given and section["capacity"] is not True:
        default = _settings(section["capacity"], ["capacity"], default, r)
    overrides: list[tuple[str, Capacity | None]] = []
    for i, raw in enumerate(workloads):
        if not isinstance(raw, dict) or "capacity" not in raw:
            continue
        given, value, name = True, raw["capacity"], str(raw.get("name"))
        if value is False:
            overrides.append((name, None))
        elif value is not True:
            overrides.append((name, _settings(value, ["workloads", i, "capacity"], default, r)))
    return CapacityPlan(default=default, workloads=tuple(overrides)) if given else None


def _settings(value: Any, where: list[str | int], base: Capacity, r: Reading) -> Capacity:
    """``base`` with the keys of one ``capacity`` mapping applied."""
    data = r.keys(CapacityDoc, value, where)
    out: dict[str, Any] = {}
    for name in CapacityDoc.model_fields:
        if name == "budget" and name in data and where[0] == "workloads":
            r.error(
                [*where, name],
                "the budget is the whole capacity run's: give it in x-gatebench.capacity",
            )
            continue
        found = r.value(CapacityDoc, name, data, where)
        if found is not None:
            out[name] = found
    if "objective" in out:
        given = data["objective"]  # in the order the plan gives the bounds
        bounds = {str(k): float(bound_of(k, given[k])[0]) for k in given}
        latency = tuple((k, v) for k, v in bounds.items() if k != "error_pct")
        error_pct = bounds.get("error_pct", Objective().error_pct)
        out["objective"] = Objective(latency or Objective().latency, error_pct)
    settings = Capacity(**{**base.__dict__, **out})
    if settings.max_rate < settings.start_rate:
        key = "max_rate" if "max_rate" in out else "start_rate"
        r.error(
            [*where, key],
            f"max_rate ({settings.max_rate:g}/s) is below start_rate ({settings.start_rate:g}/s)",
        )
    return settings


def _fault(
    doc: FaultDoc | None,
    r: Reading,
    backend: Backend,
    workloads: list[Workload],
    warmup_s: float | None,
) -> Fault | None:
    """``fault: {type: kill_replica, replica: N, workload: NAME, at: 50% | 5s}``."""
    if doc is None:
        return None
    ok = True
    if backend.replicas < 2:
        r.error(
            ["fault"],
            "killing a replica needs at least two (backend: {replicas: 2} or more): with one, "
            "there is nothing left to send to",
        )
        ok = False
    replica = 1
    if "replica" in doc.model_fields_set:
        found = r.checked(Count(1, max(backend.replicas, 1)), doc.replica, ["fault", "replica"])
        ok, replica = ok and found is not None, found or 1
    if not workloads:
        return None
    workload = workloads[0]
    if "workload" in doc.model_fields_set:
        found = [w for w in workloads if w.name == doc.workload]
        if not found:
            names = ", ".join(w.name for w in workloads)
            r.error(
                ["fault", "workload"],
                f"no workload named {shown(doc.workload)}; the plan has: {names}",
            )
            return None
        workload = found[0]
    at_s, at_fraction = _fault_at(doc.at, r, workload)
    if not ok or (at_s is None and at_fraction is None):
        return None
    if (warmup_s or 0.0) < RECOVERY_S:
        r.warn(
            ["fault"],
            f"the replica starts again when its phase ends and the gateways take it back over "
            f"about {RECOVERY_S:g}s (longer with passive checks only): a warm-up of at least "
            f"{RECOVERY_S:g}s keeps the phases after it from meeting a pool still recovering",
        )
    return Fault(replica=replica, workload=workload.name, at_s=at_s, at_fraction=at_fraction)


def _fault_at(raw: Any, r: Reading, workload: Workload) -> tuple[float | None, float | None]:
    """(seconds, None) or (None, fraction) for ``at``; (None, None) after a problem."""
    inj = workload.injection
    phase_s = (
        inj.duration if inj.kind in ("concurrent", "constant_rate", "ramp", "arrivals") else None
    )
    where: list[str | int] = ["fault", "at"]
    if isinstance(raw, str) and "%" in raw:
        match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$", raw)
        if match is None or not 0 < float(match.group(1)) < 100:
            r.error(where, f"expected a percentage above 0 and below 100, got {shown(raw)}")
            return None, None
        if phase_s is None:
            r.error(
                where,
                f"workload {workload.name!r} ends after a number of requests, so a percentage "
                "of it has no time; give a duration from the phase's start (at: 5s) or a "
                "workload with a duration",
            )
            return None, None
        return None, float(match.group(1)) / 100
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        r.error(where, f"expected a percentage (50%) or a duration (5s), got {kind(raw)}")
        return None, None
    seconds = r.checked(Duration(), raw, where)
    if seconds is None:
        return None, None
    if phase_s is not None and seconds >= phase_s:
        r.error(
            where,
            f"{shown(raw)} is not inside the phase: workload {workload.name!r} lasts {phase_s:g}s",
        )
        return None, None
    return seconds, None


__all__ = ["MAX_REPLICAS", "RECOVERY_S", "build_plan"]
