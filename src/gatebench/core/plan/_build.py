"""``build_plan``: the ``x-gatebench`` section walked once, section by section, into a
:class:`Plan`, every problem collected and located before :class:`PlanError` is raised.

Keys come from the shipped JSON Schema (``_schema``); values are read here with the messages
people act on; cross-checks against the description live in ``_checks``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, Literal

from gatebench.core.errors import PlanError, pointer
from gatebench.core.ir import (
    Api,
    Operation,
    is_http_token,
    server_authority_problem,
    unknown_body_message,
)
from gatebench.core.metrics import COST_METRICS, METRICS
from gatebench.core.plan._capacity import read_capacity
from gatebench.core.plan._checks import (
    _check_auth,
    _check_params,
    _engine,
    _operation,
    _refuse_credentials,
)
from gatebench.core.plan._deployment import read_fault, read_pool, read_tls
from gatebench.core.plan._model import (
    BUILTIN_BACKENDS,
    MAX_REPETITIONS,
    MAX_REQUESTS,
    MAX_TESTERS,
    MAX_USERS,
    Auth,
    Backend,
    BodyKind,
    BodySpec,
    Cpus,
    Generator,
    Infrastructure,
    Injection,
    MultipartPart,
    Plan,
    Scoring,
    Tls,
    Warmup,
    Workload,
)
from gatebench.core.plan._policies import ReadFile, read_policies
from gatebench.core.plan._reader import Reader, _kind, _show
from gatebench.core.plan._schema import SectionSchema
from gatebench.core.policies import JwtAuth
from gatebench.core.thresholds import parse_thresholds

MAX_WORKERS = 100_000
"""The most workers a mock backend may hold responses with (``backend.mock.workers``)."""
_BODY_KINDS = ("example", "synthesized", "binary", "multipart", "json", "text", "none")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WORKLOAD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


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

        known_gateways = gateway_names()
        aliases = gateway_aliases()
    aliases = aliases or {}
    r = Reader(base_pointer, source, SectionSchema(section))
    data = r.mapping(section, [], "plan", skip_credentials=True)
    _refuse_credentials(data, r)

    gateways = _gateways(data.get("gateways"), r, list(known_gateways), aliases)
    baseline = True
    if "baseline" in data:
        if not isinstance(data["baseline"], bool):
            r.error(["baseline"], f"expected true or false, got {_show(data['baseline'])}")
        else:
            baseline = data["baseline"]
    repetitions = 3
    if "repetitions" in data:
        repetitions = r.integer(data["repetitions"], ["repetitions"], 1, MAX_REPETITIONS) or 3
    warmup = _warmup(data.get("warmup", None), r, "warmup" in data)
    order: Literal["shuffled", "fixed"] = "shuffled"
    if "order" in data:
        if data["order"] not in ("shuffled", "fixed"):
            r.error(["order"], f"expected 'shuffled' or 'fixed', got {_show(data['order'])}")
        else:
            order = data["order"]
    seed = None
    if "seed" in data:
        seed = r.integer(data["seed"], ["seed"], 0, 2**63 - 1)
    backend = _backend(data.get("backend", {"mock": True}), r)
    tls = read_tls(data.get("tls"), r)
    infrastructure = (
        _infrastructure(data["infrastructure"], r) if "infrastructure" in data else None
    )
    auth = _auth(data.get("auth"), r)
    scoring = _scoring(data.get("scoring"), r)
    workloads = _workloads(data.get("workloads"), r, api, auth)
    policies = read_policies(data.get("policies"), r, api, read_file)
    capacity = read_capacity(data, data.get("workloads"), r)
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
    engine = _engine(data.get("engine", "gatling"), r, workloads, warmup)
    fault = read_fault(data.get("fault"), r, backend, workloads, warmup.duration)
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
    errors = [p for p in r.problems if p.severity == "error"]
    if errors:
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
    )


def _check_tls(tls: Tls, engine: str, backend: Backend, baseline: bool, r: Reader) -> None:
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


def _gateways(value: Any, r: Reader, known: list[str], aliases: dict[str, str]) -> list[str]:
    if value is None:
        from gatebench.core.renderers import local_gateway_names

        return list(local_gateway_names())
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        r.error(["gateways"], f"expected a list of gateway names, got {_kind(value)}")
        return []
    out: list[str] = []
    for i, name in enumerate(value):
        if not isinstance(name, str):
            r.error(["gateways", i], f"expected a gateway name, got {_show(name)}")
            continue
        canonical = aliases.get(name.lower(), name.lower())
        if canonical not in known:
            hint = difflib.get_close_matches(name.lower(), [*known, *aliases], n=1)
            extra = f"did you mean {hint[0]!r}? " if hint else ""
            r.error(
                ["gateways", i],
                f"unknown gateway {name!r}; {extra}available: {', '.join(sorted(known))}",
            )
            continue
        if canonical in out:
            r.warn(["gateways", i], f"gateway {name!r} is listed twice; measured once")
            continue
        out.append(canonical)
    return out


def _warmup(value: Any, r: Reader, present: bool) -> Warmup:
    if not present:
        return Warmup()
    if value is False or value is None:
        return Warmup(duration=None, requests=None)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        seconds = r.duration(value, ["warmup"], allow_zero=True)
        return Warmup(duration=seconds or None, requests=None)
    data = r.mapping(value, ["warmup"], "warmup")
    duration = (
        r.duration(data["duration"], ["warmup", "duration"], allow_zero=True)
        if "duration" in data
        else None
    )
    requests = (
        r.integer(data["requests"], ["warmup", "requests"], 0, MAX_REQUESTS)
        if "requests" in data
        else None
    )
    if duration and requests:
        r.error(["warmup"], "give either 'duration' or 'requests', not both")
    return Warmup(duration=duration or None, requests=requests or None)


def _backend(value: Any, r: Reader) -> Backend:
    data = r.mapping(value, ["backend"], "backend")
    return read_pool(data, r, _backend_kind(data, value, r))


def _backend_kind(data: dict[str, Any], value: Any, r: Reader) -> Backend:
    chosen = [k for k in ("url", "mock", "builtin") if k in data]
    if len(chosen) != 1:
        pool_only = isinstance(value, dict) and not chosen
        if (data and not pool_only) or not isinstance(value, dict):
            r.error(["backend"], "give exactly one of 'url' (your service), 'mock' or 'builtin'")
        return Backend("mock")
    kind = chosen[0]
    if kind == "url":
        url = r.string(data["url"], ["backend", "url"], "backend.url")
        if url is not None and re.search(r"//[^/]*@", url):
            r.error(
                ["backend", "url"],
                "credentials in the URL are never accepted; use auth: {...} with an env variable",
            )
        elif url is not None and (
            not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+(:\d+)?(/[^\s]*)?", url)
            or server_authority_problem(url)
        ):
            r.error(["backend", "url"], f"expected an http:// or https:// URL, got {url!r}")
        return Backend("url", url=url)
    if kind == "builtin":
        name = data["builtin"]
        if name not in BUILTIN_BACKENDS:
            r.error(
                ["backend", "builtin"],
                f"unknown builtin backend {_show(name)}; available: {', '.join(BUILTIN_BACKENDS)}",
            )
            return Backend("mock")
        return Backend("builtin", builtin=name)
    mock = data["mock"]
    if mock is True:
        return Backend("mock")
    if mock is False:
        r.error(
            ["backend", "mock"], "mock: false is not a backend; give 'url' or 'builtin' instead"
        )
        return Backend("mock")
    options = r.mapping(mock, ["backend", "mock"], "mock")
    latency = 0.0
    if "latency" in options:
        latency = (
            r.duration(options["latency"], ["backend", "mock", "latency"], allow_zero=True) or 0.0
        )
        if latency > 60:
            r.error(
                ["backend", "mock", "latency"], "a mock latency above 60s would time requests out"
            )
    size = (
        r.size(options["response_size"], ["backend", "mock", "response_size"])
        if "response_size" in options
        else None
    )
    workers = None
    if "workers" in options:
        workers = r.integer(options["workers"], ["backend", "mock", "workers"], 1, MAX_WORKERS)
        if workers is not None and not latency:
            r.error(
                ["backend", "mock", "workers"],
                "workers need a latency (each request holds a worker for it): "
                "mock: {latency: 10ms, workers: 4} serves 400 requests per second",
            )
    return Backend("mock", latency=latency, response_size=size, workers=workers)


def _infrastructure(value: Any, r: Reader) -> Infrastructure | None:
    data = r.mapping(value, ["infrastructure"], "infrastructure", skip_credentials=True)
    out: dict[str, Any] = {}
    checks = {
        "provider": (r"^gcp$", "'gcp' (the only provider)"),
        "project": (
            r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$",
            "a Google Cloud project id (6-30 lower-case letters, digits, hyphens)",
        ),
        "region": (r"^[a-z]+-[a-z]+[0-9]+$", "a region such as 'europe-central2'"),
        "zone": (r"^[a-z]+-[a-z]+[0-9]+-[a-z]$", "a zone such as 'europe-central2-a'"),
        "gateway_machine": (r"^[a-z0-9]+(-[a-z0-9]+)+$", "a machine type such as 'n2-standard-2'"),
        "tester_machine": (r"^[a-z0-9]+(-[a-z0-9]+)+$", "a machine type such as 'n2-standard-2'"),
        "backend_machine": (r"^[a-z0-9]+(-[a-z0-9]+)+$", "a machine type such as 'n2-standard-2'"),
        "network": (r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", "a VPC network name"),
    }
    for key, raw in data.items():
        if key == "testers":
            testers = _testers(raw, r)
            if testers is not None:
                out[key] = testers
            continue
        if key not in checks:
            continue
        pattern, expected = checks[key]
        if not isinstance(raw, str) or not re.match(pattern, raw):
            r.error(["infrastructure", key], f"expected {expected}, got {_show(raw)}")
            continue
        out[key] = raw
    if "zone" in out and "region" in out and not out["zone"].startswith(out["region"] + "-"):
        r.error(
            ["infrastructure", "zone"], f"zone {out['zone']!r} is not in region {out['region']!r}"
        )
    if "zone" in out and "region" not in out:
        out["region"] = out["zone"].rsplit("-", 1)[0]
    return Infrastructure(**out)


def _testers(raw: Any, r: Reader) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_TESTERS:
        r.error(
            ["infrastructure", "testers"],
            f"expected a whole number of load generators from 1 to {MAX_TESTERS}, got {_show(raw)}",
        )
        return None
    return raw


def _auth(value: Any, r: Reader) -> Auth:
    if value is None:
        return Auth()
    data = r.mapping(value, ["auth"], "auth")
    out: dict[str, Any] = {}
    if "jwt" in data:
        out.update(_auth_jwt(data["jwt"], r))
    for kind, fields in (
        ("bearer", {"env": "bearer_env"}),
        ("api_key", {"env": "api_key_env"}),
        ("basic", {"username_env": "basic_username_env", "password_env": "basic_password_env"}),
    ):
        if kind not in data:
            continue
        section = data[kind]
        if isinstance(section, dict):
            for key in section:
                if key not in fields:
                    what = "a token" if kind != "basic" else "a password"
                    if key in ("token", "value", "key", "password", "username", "secret"):
                        r.error(
                            ["auth", kind, key],
                            f"{what} is never written in the description; name the environment "
                            f"variable that holds it: auth: {{{kind}: {{{next(iter(fields))}: NAME}}}}",
                        )
                    else:
                        r.error(
                            ["auth", kind, key],
                            f"unknown key {key!r}; expected {', '.join(fields)}",
                        )
        elif isinstance(section, str):
            r.error(
                ["auth", kind],
                f"write auth: {{{kind}: {{{next(iter(fields))}: NAME}}}} with the name of an "
                "environment variable; a literal token is never accepted",
            )
            continue
        else:
            r.error(["auth", kind], f"expected a mapping, got {_kind(section)}")
            continue
        for key, attr in fields.items():
            if key not in section:
                r.error(["auth", kind], f"'{key}' (an environment variable name) is required")
                continue
            name = section[key]
            if not isinstance(name, str) or not _ENV_NAME.match(name):
                r.error(
                    ["auth", kind, key],
                    f"expected an environment variable name such as API_TOKEN, got {_show(name)}",
                )
                continue
            out[attr] = name
    return Auth(**out)


MAX_CPU = 4095
"""The highest core number ``cpus:`` accepts (Linux's default NR_CPUS limit)."""


def _cpus(value: Any, r: Reader) -> Cpus:
    """``cpus: pinned | unpinned`` or ``cpus: {gateway: [1], engine: [0], backend: [0]}``
    (gatebench.local.pinning decides what each means on the machine that runs it)."""
    if isinstance(value, str):
        if value in ("pinned", "unpinned"):
            return Cpus(mode="pinned" if value == "pinned" else "unpinned", given=True)
        r.error(
            ["cpus"],
            "expected 'pinned', 'unpinned' or a mapping of core lists such as "
            f"{{gateway: [1], engine: [0], backend: [0]}}, got {_show(value)}",
        )
        return Cpus()
    if not isinstance(value, dict):
        r.error(
            ["cpus"],
            "expected 'pinned', 'unpinned' or a mapping of core lists such as "
            f"{{gateway: [1], engine: [0], backend: [0]}}, got {_kind(value)}",
        )
        return Cpus()
    data = r.mapping(value, ["cpus"], "cpus")
    lists: dict[str, tuple[int, ...]] = {}
    for role in ("gateway", "engine", "backend"):
        if role not in data:
            continue
        raw = data[role]
        if not isinstance(raw, list) or not raw:
            r.error(
                ["cpus", role],
                f"expected a non-empty list of core numbers such as [0], got {_show(raw)}",
            )
            continue
        found = [r.integer(c, ["cpus", role, i], 0, MAX_CPU) for i, c in enumerate(raw)]
        lists[role] = tuple(sorted({c for c in found if c is not None}))
    if not any(role in data for role in ("gateway", "engine", "backend")):
        r.error(["cpus"], "expected at least one of: gateway, engine, backend")
    if "gateway" in lists and set(lists["gateway"]) & {
        c for role in ("engine", "backend") for c in lists.get(role, ())
    }:
        r.warn(
            ["cpus", "gateway"],
            "the gateway shares a core with the engine or the backend: pinning then does not "
            "keep them apart",
        )
    return Cpus(mode="explicit", given=True, **lists)


def _auth_jwt(value: Any, r: Reader) -> dict[str, Any]:
    """``auth.jwt``: the run signs the tokens itself (the key's variable, subjects, lifetime)."""
    where: list[str | int] = ["auth", "jwt"]
    if not isinstance(value, dict):
        r.error(where, f"expected a mapping such as {{private_key_env: NAME}}, got {_kind(value)}")
        return {}
    out: dict[str, Any] = {}
    for key in value:
        if key not in ("private_key_env", "subjects", "lifetime"):
            r.error(
                [*where, key], f"unknown key {key!r}; expected private_key_env, subjects, lifetime"
            )
    name = value.get("private_key_env")
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        r.error(
            [*where, "private_key_env"],
            f"expected the name of the environment variable holding the PEM private key, got {_show(name)}",
        )
    else:
        out["jwt_private_key_env"] = name
    if "subjects" in value:
        subjects = r.integer(value["subjects"], [*where, "subjects"], 1, 100_000)
        if subjects is not None:
            out["jwt_subjects"] = subjects
    if "lifetime" in value:
        lifetime = r.duration(value["lifetime"], [*where, "lifetime"])
        if lifetime is not None:
            out["jwt_lifetime"] = lifetime
    return out


def _scoring(value: Any, r: Reader) -> Scoring:
    if value is None:
        return Scoring()
    data = r.mapping(value, ["scoring"], "scoring")
    profile: Literal["paper", "robust"] = "paper"
    if "profile" in data:
        if data["profile"] not in ("paper", "robust"):
            r.error(
                ["scoring", "profile"],
                f"expected 'paper' (AGE, the default) or 'robust', got {_show(data['profile'])}",
            )
        else:
            profile = data["profile"]
    weights: list[tuple[str, float]] = []
    if "weights" in data:
        table = r.mapping(data["weights"], ["scoring", "weights"], "weights")
        for metric, weight in table.items():
            if metric not in METRICS and metric not in COST_METRICS:
                continue
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
                r.error(
                    ["scoring", "weights", metric], f"expected a weight >= 0, got {_show(weight)}"
                )
                continue
            weights.append((metric, float(weight)))
        if profile == "paper" and weights:
            r.error(
                ["scoring", "weights"],
                "weights apply to the 'robust' profile; the 'paper' profile weighs every metric equally",
            )
        if weights and not any(w for _, w in weights):
            r.error(["scoring", "weights"], "at least one weight must be above 0")
    return Scoring(profile=profile, weights=tuple(sorted(weights)))


def _workloads(value: Any, r: Reader, api: Api, auth: Auth) -> list[Workload]:
    if value is None:
        r.error(
            ["workloads"],
            "at least one workload is required (an operation and an injection profile)",
        )
        return []
    if not isinstance(value, list) or not value:
        r.error(["workloads"], f"expected a non-empty list of workloads, got {_kind(value)}")
        return []
    out: list[Workload] = []
    names: set[str] = set()
    for i, raw in enumerate(value):
        data = r.mapping(raw, ["workloads", i], "workload")
        if not data:
            continue
        name = data.get("name")
        if not isinstance(name, str) or not _WORKLOAD_NAME.match(name):
            r.error(
                ["workloads", i, "name"],
                "a workload needs a 'name' of letters, digits, '.', '_' or '-' (at most 64)",
            )
            name = f"workload-{i + 1}"
        elif name in names:
            r.error(["workloads", i, "name"], f"workload name {name!r} is used twice")
        names.add(name)
        op = _operation(data.get("operation"), r, ["workloads", i, "operation"], api)
        injection = _injection(data.get("injection"), r, ["workloads", i, "injection"])
        params = _params(data.get("params"), r, ["workloads", i, "params"])
        headers = _headers(data.get("headers"), r, ["workloads", i, "headers"])
        body = _body(data.get("body"), r, ["workloads", i, "body"], op)
        expect = _expect(data.get("expect"), r, ["workloads", i, "expect"])
        timeout = 60.0
        if "timeout" in data:
            timeout = r.duration(data["timeout"], ["workloads", i, "timeout"]) or 60.0
        if op is not None:
            _check_params(op, params, headers, body, r, ["workloads", i])
            _check_auth(op, auth, r, ["workloads", i, "operation"])
        if injection is not None:
            _warn_too_short(injection, body, r, ["workloads", i, "injection"])
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
                pointer=r.base + pointer("workloads", i),
            )
        )
    return out


SHORT_ROUNDS = 100
"""A closed-model phase of fewer round trips per user than this can end within 20 ms on a
fast local target (a loopback round trip takes about 0.2 ms): too short to measure."""
LONG_BURST_BYTES = 40 * 1024 * 1024
"""A burst that uploads this much in all lasts at least ~20 ms on loopback (about 2 GB/s):
long enough to measure (the auction example's 50 images of 8.6 MB take hundreds of ms)."""


def _body_bytes(body: BodySpec) -> int:
    return (body.size or 0) + sum(part.size or 0 for part in body.parts)


def _warn_too_short(inj: Injection, body: BodySpec, r: Reader, where: list[str | int]) -> None:
    """A profile whose phase can end before it is long enough to measure a throughput (the
    rule of gatebench.core.trust.too_short: 20 × (timer resolution + a burst's launch spread)),
    with a profile that measures. Warned, not refused: only the run can tell how long the
    phase lasted, and the run flags it ``too-short`` when it was."""
    users = inj.users or 1
    if inj.kind == "at_once":
        if users * _body_bytes(body) >= LONG_BURST_BYTES:
            return
        r.warn(
            [*where, "at_once"],
            f"a burst of {users} requests lasts about one response time (a few ms on a fast "
            "target): its throughput is not scored when the phase is too short to measure "
            f"(docs/trust.md); to measure throughput, repeat the burst: concurrent: {users}, "
            "duration: 10s",
        )
        return
    if inj.kind not in ("sequential", "concurrent") or inj.duration is not None:
        return  # ramp and constant_rate last as long as the profile says
    requests = inj.requests or 0
    if requests // users >= SHORT_ROUNDS:
        return
    if inj.kind == "sequential":
        what = f"{requests} sequential requests"
        better = f"sequential: {SHORT_ROUNDS * 20}, or concurrent: 1, duration: 10s"
        key = "sequential"
    else:
        what = f"{requests} requests from {users} users"
        better = f"concurrent: {users}, duration: 10s"
        key = "requests"
    r.warn(
        [*where, key],
        f"{what} can end within a few ms on a fast target (a loopback round trip takes "
        "about 0.2 ms): the throughput is not scored when the phase is too short to measure "
        f"(docs/trust.md); to measure throughput, send more or for a while: {better}",
    )


def _injection(value: Any, r: Reader, where: list[str | int]) -> Injection | None:
    if value is None:
        r.error(
            where,
            "an injection profile is required: at_once, ramp, constant_rate, concurrent or sequential",
        )
        return None
    data = r.mapping(value, where, "injection")
    kinds = [
        k for k in ("at_once", "ramp", "constant_rate", "concurrent", "sequential") if k in data
    ]
    if len(kinds) != 1:
        if data:
            r.error(
                where, "give exactly one of at_once, ramp, constant_rate, concurrent, sequential"
            )
        return None
    kind = kinds[0]
    raw = data[kind]
    extra = [k for k in ("duration", "requests") if k in data]
    if kind == "at_once":
        if extra:
            r.error([*where, extra[0]], "at_once takes only a number of users")
        users = r.integer(raw, [*where, kind], 1, MAX_USERS)
        return Injection("at_once", users=users) if users else None
    if kind == "sequential":
        if extra:
            r.error([*where, extra[0]], "sequential takes only a number of requests")
        requests = r.integer(raw, [*where, kind], 1, MAX_REQUESTS)
        return Injection("sequential", users=1, requests=requests) if requests else None
    if kind == "concurrent":
        users = r.integer(raw, [*where, kind], 1, MAX_USERS)
        duration = (
            r.duration(data["duration"], [*where, "duration"]) if "duration" in data else None
        )
        requests = (
            r.integer(data["requests"], [*where, "requests"], 1, MAX_REQUESTS)
            if "requests" in data
            else None
        )
        if "duration" not in data and "requests" not in data:
            r.error(
                where, "concurrent users need a 'duration' (such as 30s) or a number of 'requests'"
            )
            return None
        if users is None:
            return None
        return Injection("concurrent", users=users, duration=duration, requests=requests)
    if extra:
        r.error([*where, extra[0]], f"write {kind}: {{..., duration: ...}}")
    if kind == "ramp":
        section = r.mapping(raw, [*where, kind], "ramp")
        users = r.integer(section.get("users"), [*where, kind, "users"], 1, MAX_USERS)
        duration = r.duration(section.get("duration"), [*where, kind, "duration"])
        if users is None or duration is None:
            return None
        return Injection("ramp", users=users, duration=duration)
    section = r.mapping(raw, [*where, kind], "constant_rate")
    rate = section.get("rate")
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1_000_000:
        r.error([*where, kind, "rate"], f"expected requests per second above 0, got {_show(rate)}")
        rate = None
    duration = r.duration(section.get("duration"), [*where, kind, "duration"])
    if rate is None or duration is None:
        return None
    if rate * duration > MAX_REQUESTS:
        r.error(
            [*where, kind],
            f"{rate * duration:,.0f} requests is above the limit of {MAX_REQUESTS:,}",
        )
        return None
    return Injection("constant_rate", rate=float(rate), duration=duration)


def _params(value: Any, r: Reader, where: list[str | int]) -> dict[str, Generator]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        r.error(where, f"params must be a mapping of name to values, got {_kind(value)}")
        return {}
    out: dict[str, Generator] = {}
    for name, raw in value.items():
        gen = _generator(raw, r, [*where, name])
        if gen is not None:
            out[str(name)] = gen
    return out


def _generator(raw: Any, r: Reader, where: list[str | int]) -> Generator | None:
    if not isinstance(raw, dict):
        if isinstance(raw, list):
            r.error(where, "write a list of values as {list: [...]}")
            return None
        return Generator("constant", value=raw)
    data = r.mapping(raw, where, "parameter")
    kinds = [k for k in ("value", "list", "range", "random", "counter") if k in data]
    if len(kinds) != 1:
        r.error(where, "give exactly one of value, list, range, random, counter")
        return None
    kind = kinds[0]
    if "order" in data and kind != "list":
        r.error([*where, "order"], "'order' applies to a list")
    if kind == "value":
        return Generator("constant", value=data["value"])
    if kind == "list":
        values = data["list"]
        if not isinstance(values, list) or not values:
            r.error([*where, "list"], "expected a non-empty list of values")
            return None
        order = data.get("order", "sequential")
        if order not in ("sequential", "random"):
            r.error([*where, "order"], f"expected 'sequential' or 'random', got {_show(order)}")
        return Generator("list", values=tuple(values), random_order=order == "random")
    if kind in ("range", "random"):
        bounds = data[kind]
        if isinstance(bounds, dict):
            bounds = [bounds.get("min"), bounds.get("max")]
        if (
            not isinstance(bounds, list)
            or len(bounds) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
            or bounds[0] > bounds[1]
        ):
            r.error(
                [*where, kind],
                f"expected [low, high] whole numbers with low <= high, got {_show(bounds)}",
            )
            return None
        return Generator("range" if kind == "range" else "random", low=bounds[0], high=bounds[1])
    section = data["counter"]
    if section is None or section is True:
        section = {}
    section = r.mapping(section, [*where, "counter"], "counter")
    start, step = section.get("start", 1), section.get("step", 1)
    if isinstance(start, bool) or not isinstance(start, int):
        r.error([*where, "counter", "start"], f"expected a whole number, got {_show(start)}")
        return None
    if isinstance(step, bool) or not isinstance(step, int) or step == 0:
        r.error(
            [*where, "counter", "step"], f"expected a whole number other than 0, got {_show(step)}"
        )
        return None
    return Generator("counter", start=start, step=step)


def _headers(value: Any, r: Reader, where: list[str | int]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        r.error(where, f"headers must be a mapping, got {_kind(value)}")
        return {}
    out = {}
    for name, raw in value.items():
        if not is_http_token(str(name)):
            r.error([*where, name], f"{str(name)!r} is not a valid HTTP header name")
            continue
        if str(name).lower() in ("authorization", "proxy-authorization", "cookie"):
            r.error(
                [*where, name],
                f"{name} is never written in the description; use auth: {{...}} with an environment variable",
            )
            continue
        if (
            not isinstance(raw, str | int | float)
            or isinstance(raw, bool)
            or re.search(r"[\r\n\x00]", str(raw))
        ):
            r.error([*where, name], "a header value must be a single-line string")
            continue
        out[str(name)] = str(raw)
    return out


def _body(value: Any, r: Reader, where: list[str | int], op: Operation | None) -> BodySpec:
    media_types = [m.media_type for m in op.request_body.content] if op and op.request_body else []
    if value is None:
        if op is not None and op.body_unknown is not None:
            r.error(where, unknown_body_message(op))
        if op is None or op.request_body is None:
            return BodySpec("none")
        first = op.request_body.content[0]
        kind: BodyKind = "example" if first.examples else "synthesized"
        if op.request_body.required or first.examples:
            return BodySpec(kind, media_type=first.media_type)
        return BodySpec("none")
    if value in ("example", "synthesized", "none"):
        value = {value: True}
    data = r.mapping(value, where, "body")
    kinds = [k for k in _BODY_KINDS if k in data]
    if len(kinds) != 1:
        r.error(
            where, "give exactly one of example, synthesized, binary, multipart, json, text, none"
        )
        return BodySpec("none")
    kind = kinds[0]  # type: ignore[assignment]
    media = data.get("media_type")
    if media is not None and not isinstance(media, str):
        r.error([*where, "media_type"], "expected a media type such as 'application/json'")
        media = None
    if kind == "none":
        return BodySpec("none")
    if kind == "example":
        name = data["example"] if isinstance(data["example"], str) else None
        if op is not None:
            content = op.request_body.content if op.request_body else ()
            chosen = [m for m in content if media in (None, m.media_type)]
            available = [n for m in chosen for n, _ in m.examples]
            if not available:
                r.error(
                    where,
                    f"operation {op.operation_id!r} has no request body example; use synthesized, json or binary",
                )
            elif name is not None and name not in available:
                r.error(
                    [*where, "example"], f"no example {name!r}; available: {', '.join(available)}"
                )
        return BodySpec(
            "example", media_type=media or (media_types[0] if media_types else None), example=name
        )
    if kind == "synthesized":
        if op is not None and op.body_unknown is not None:
            r.error(where, unknown_body_message(op))
        elif op is not None and op.request_body is None:
            r.error(
                where, f"operation {op.operation_id!r} declares no request body to synthesize from"
            )
        return BodySpec(
            "synthesized", media_type=media or (media_types[0] if media_types else None)
        )
    if kind == "binary":
        section = r.mapping(data["binary"], [*where, "binary"], "binary")
        size = r.size(section.get("size"), [*where, "binary", "size"])
        content_type = section.get("content_type", media or "application/octet-stream")
        return BodySpec("binary", media_type=str(content_type), size=size)
    if kind == "multipart":
        section = data["multipart"]
        if not isinstance(section, dict) or not section:
            r.error(
                [*where, "multipart"],
                "expected a mapping of part name to {size: ...} or {value: ...}",
            )
            return BodySpec("none")
        parts = []
        for pname, praw in section.items():
            pwhere = [*where, "multipart", pname]
            pdata = r.mapping(praw, pwhere, "part")
            if ("size" in pdata) == ("value" in pdata):
                r.error(
                    pwhere, "a part needs either 'size' (generated file content) or 'value' (text)"
                )
                continue
            size = r.size(pdata["size"], [*pwhere, "size"]) if "size" in pdata else None
            filename = pdata.get("filename")
            if filename is not None and (
                not isinstance(filename, str) or re.search(r'["\r\n\\/\x00]', filename)
            ):
                r.error(
                    [*pwhere, "filename"],
                    "a file name may not contain quotes, slashes or line breaks",
                )
                filename = None
            parts.append(
                MultipartPart(
                    name=str(pname),
                    size=size,
                    value=pdata.get("value"),
                    filename=filename
                    if filename
                    else (f"{pname}.bin" if size is not None else None),
                    content_type=str(pdata["content_type"])
                    if "content_type" in pdata
                    else ("application/octet-stream" if size is not None else None),
                )
            )
        return BodySpec("multipart", media_type="multipart/form-data", parts=tuple(parts))
    if kind == "json":
        return BodySpec("json", media_type=media or "application/json", value=data["json"])
    text = data["text"]
    if not isinstance(text, str):
        r.error([*where, "text"], "expected a string")
    return BodySpec("text", media_type=media or "text/plain", value=text)


def _expect(value: Any, r: Reader, where: list[str | int]) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599 for v in value
    ):
        r.error(where, "expected a list of HTTP status codes such as [200, 201]")
        return ()
    return tuple(sorted(set(value)))
