"""The benchmark plan: what to run, read from ``x-gatebench`` (or a separate benchmark file).

Every key is checked; unknown keys are errors with a suggestion, because a typo such as
``repetiton: 10`` would otherwise silently run the default. Every problem is collected and
located (JSON pointer into the document that holds the section) before :class:`PlanError`
is raised.

Secrets never live in a plan. Cloud credentials are refused outright (the cloud path runs as
its own service accounts), and authentication tokens are named by environment variable
(``auth: {bearer: {env: API_TOKEN}}``): the value is read when requests are sent, and never
stored.

Sketch::

    x-gatebench:
      gateways: [nginx, haproxy, caddy]
      baseline: true
      repetitions: 10
      warmup: {duration: 5s}
      backend: {mock: {latency: 5ms}}        # or {url: http://10.0.0.5:8080}, {builtin: auction}
      engine: gatling                        # or wrk: closed-model load only (docs/trust.md)
      auth: {bearer: {env: AUCTION_TOKEN}}
      scoring: {profile: paper}
      workloads:
        - name: bid
          operation: bid                      # operationId, or "POST /auctions/{auctionId}/bids"
          params: {auctionId: {range: [1, 100]}, amount: {counter: {start: 1}}}
          body: {json: {amount: "${amount}"}}
          injection: {concurrent: 50, duration: 30s}
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .errors import PlanError, Problem, pointer
from .ir import Api, Operation, left_out_message, unknown_body_message
from .metrics import METRICS
from .units import parse_duration, parse_size

InjectionKind = Literal["at_once", "ramp", "constant_rate", "concurrent", "sequential"]
GeneratorKind = Literal["constant", "list", "range", "random", "counter"]
BodyKind = Literal["none", "example", "synthesized", "binary", "multipart", "json", "text"]
BackendKind = Literal["url", "mock", "builtin"]
EngineName = Literal["gatling", "wrk"]

BUILTIN_BACKENDS = ("auction", "echo")
MAX_REPETITIONS = 1000
MAX_USERS = 100_000
MAX_REQUESTS = 10_000_000
MAX_DURATION_S = 24 * 3600.0
MAX_BODY_BYTES = 1_000_000_000
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WORKLOAD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_CREDENTIAL_WORDS = re.compile(
    r"(credential|secret|password|passwd|private[_-]?key|access[_-]?key|key[_-]?file|"
    r"service[_-]?account[_-]?key|api[_-]?key|token|auth[_-]?key)",
    re.IGNORECASE,
)


# -- the plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Injection:
    """How requests arrive. Open models: ``at_once``, ``ramp``, ``constant_rate`` (each
    virtual user sends one request). Closed models: ``concurrent`` (N users loop, each on
    its own connection, until ``duration`` or ``requests`` is reached) and ``sequential``
    (one user sends ``requests`` requests back to back)."""

    kind: InjectionKind
    users: int | None = None
    rate: float | None = None
    duration: float | None = None
    requests: int | None = None

    @property
    def expected_requests(self) -> int | None:
        """Requests the profile sends, when it is fixed in advance (None: time-bounded)."""
        if self.kind in ("at_once", "ramp"):
            return self.users
        if self.kind == "sequential":
            return self.requests
        if self.kind == "constant_rate":
            assert self.rate is not None
            assert self.duration is not None
            return round(self.rate * self.duration)
        if self.kind == "concurrent" and self.duration is None:
            return self.requests
        return None


@dataclass(frozen=True)
class Generator:
    """Values for one parameter or body placeholder.

    constant (``value``), list (``values`` in order, cycling; ``order: random`` picks at
    random), range (``low``..``high`` inclusive, step 1, cycling), random (uniform integer in
    ``low``..``high``), counter (``start``, ``start+step``, ... never repeating)."""

    kind: GeneratorKind
    value: Any = None
    values: tuple[Any, ...] = ()
    low: int | None = None
    high: int | None = None
    start: int = 1
    step: int = 1
    random_order: bool = False


@dataclass(frozen=True)
class MultipartPart:
    name: str
    size: int | None = None
    """Generated binary content of this many bytes (a file part)."""
    value: Any = None
    """A text value (may hold ``${placeholders}``)."""
    filename: str | None = None
    content_type: str | None = None


@dataclass(frozen=True)
class BodySpec:
    kind: BodyKind
    media_type: str | None = None
    example: str | None = None
    size: int | None = None
    parts: tuple[MultipartPart, ...] = ()
    value: Any = None


@dataclass(frozen=True)
class Workload:
    name: str
    operation_id: str
    injection: Injection
    params: tuple[tuple[str, Generator], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: BodySpec = BodySpec("none")
    expect: tuple[int, ...] = ()
    """Status codes that count as OK; empty means any 2xx or 3xx."""
    timeout: float = 60.0
    pointer: str = ""

    def param(self, name: str) -> Generator | None:
        return dict(self.params).get(name)


@dataclass(frozen=True)
class Warmup:
    duration: float | None = 3.0
    requests: int | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.duration) or bool(self.requests)


@dataclass(frozen=True)
class Backend:
    kind: BackendKind
    url: str | None = None
    builtin: str | None = None
    latency: float = 0.0
    """Mock only: fixed delay before every response, seconds."""
    response_size: int | None = None
    """Mock only: pad or cut response bodies to this many bytes."""


@dataclass(frozen=True)
class Infrastructure:
    """Where the cloud path runs. Never credentials: see ``infra/README.md``."""

    provider: str = "gcp"
    project: str | None = None
    region: str | None = None
    zone: str | None = None
    gateway_machine: str = "n2-standard-2"
    tester_machine: str = "n2-standard-2"
    backend_machine: str = "n2-standard-2"
    network: str | None = None


@dataclass(frozen=True)
class Auth:
    """Where credentials come from: environment variable names, never values."""

    bearer_env: str | None = None
    basic_username_env: str | None = None
    basic_password_env: str | None = None
    api_key_env: str | None = None


@dataclass(frozen=True)
class Scoring:
    profile: Literal["paper", "robust"] = "paper"
    weights: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Plan:
    gateways: tuple[str, ...]
    baseline: bool
    repetitions: int
    warmup: Warmup
    order: Literal["shuffled", "fixed"]
    seed: int | None
    backend: Backend
    workloads: tuple[Workload, ...]
    auth: Auth = field(default_factory=Auth)
    scoring: Scoring = field(default_factory=Scoring)
    infrastructure: Infrastructure | None = None
    engine: EngineName = "gatling"
    """The load generator (``gatebench.engines``): ``gatling`` runs every injection profile;
    ``wrk`` runs closed-model load only (concurrent users for whole seconds)."""

    @property
    def targets(self) -> tuple[str, ...]:
        """Gateways plus ``baseline`` (no gateway) when enabled."""
        return (*self.gateways, "baseline") if self.baseline else self.gateways

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- reading --------------------------------------------------------------------------------


class _Reader:
    """Collects located problems while walking the section."""

    def __init__(self, base: str, source: str | None) -> None:
        self.base = base
        self.source = source
        self.problems: list[Problem] = []

    def error(self, where: Sequence[str | int], message: str) -> None:
        self.problems.append(Problem(self.base + pointer(*where), message, source=self.source))

    def warn(self, where: Sequence[str | int], message: str) -> None:
        self.problems.append(
            Problem(self.base + pointer(*where), message, "warning", source=self.source)
        )

    def mapping(
        self,
        value: Any,
        where: Sequence[str | int],
        allowed: Iterable[str],
        what: str,
        *,
        skip_credentials: bool = False,
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.error(where, f"{what} must be a mapping, got {_kind(value)}")
            return {}
        allowed = list(allowed)
        for key in value:
            if skip_credentials and _is_credential_key(key):
                continue  # reported by _refuse_credentials, with the reason
            if key not in allowed:
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                suggestion = (
                    f"did you mean {hint[0]!r}?"
                    if hint
                    else f"expected one of: {', '.join(allowed)}"
                )
                self.error([*where, key], f"unknown key {key!r} in {what}; {suggestion}")
        return value

    def integer(self, value: Any, where: Sequence[str | int], low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(where, f"expected a whole number from {low} to {high:,}, got {_show(value)}")
            return None
        if not low <= value <= high:
            self.error(where, f"expected a whole number from {low} to {high:,}, got {value:,}")
            return None
        return value

    def duration(
        self, value: Any, where: Sequence[str | int], *, allow_zero: bool = False
    ) -> float | None:
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            self.error(where, str(exc))
            return None
        if seconds > MAX_DURATION_S:
            self.error(where, f"at most 24h, got {_show(value)}")
            return None
        if seconds == 0 and not allow_zero:
            self.error(where, "a duration must be more than 0")
            return None
        return seconds

    def size(self, value: Any, where: Sequence[str | int]) -> int | None:
        try:
            size = parse_size(value)
        except ValueError as exc:
            self.error(where, str(exc))
            return None
        if size > MAX_BODY_BYTES:
            self.error(where, f"at most 1GB, got {_show(value)}")
            return None
        return size

    def string(self, value: Any, where: Sequence[str | int], what: str) -> str | None:
        if not isinstance(value, str) or not value:
            self.error(where, f"{what} must be a non-empty string, got {_show(value)}")
            return None
        return value


_TOP_KEYS = (
    "spec",
    "gateways",
    "baseline",
    "repetitions",
    "warmup",
    "order",
    "seed",
    "backend",
    "engine",
    "infrastructure",
    "auth",
    "scoring",
    "workloads",
)


def build_plan(
    section: Any,
    api: Api,
    *,
    known_gateways: Sequence[str] | None = None,
    aliases: dict[str, str] | None = None,
    base_pointer: str = "/x-gatebench",
    source: str | None = None,
) -> Plan:
    """Validate ``x-gatebench`` against the IR. Raises :class:`PlanError` with every problem."""
    if known_gateways is None:
        from .renderers import gateway_aliases, gateway_names

        known_gateways = gateway_names()
        aliases = gateway_aliases()
    aliases = aliases or {}
    r = _Reader(base_pointer, source)
    data = r.mapping(section, [], _TOP_KEYS, "x-gatebench", skip_credentials=True)
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
    infrastructure = (
        _infrastructure(data["infrastructure"], r) if "infrastructure" in data else None
    )
    auth = _auth(data.get("auth"), r)
    scoring = _scoring(data.get("scoring"), r)
    workloads = _workloads(data.get("workloads"), r, api, auth)
    engine = _engine(data.get("engine", "gatling"), r, workloads, warmup)
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
        engine=engine,
    )


def _engine(value: Any, r: _Reader, workloads: list[Workload], warmup: Warmup) -> EngineName:
    """The load engine, and whether it can run every workload (wrk: the closed model only)."""
    from .engines import ENGINES, injection_problem

    if value not in ENGINES:
        r.error(["engine"], f"unknown engine {_show(value)}; available: {', '.join(ENGINES)}")
        return "gatling"
    engine: EngineName = value
    for w in workloads:
        inj = w.injection
        reason = injection_problem(engine, inj.kind, inj.duration, inj.requests)
        if reason is not None:
            r.error([*_split(w.pointer.removeprefix(r.base)), "injection"], reason)
    if warmup.requests and injection_problem(engine, "concurrent", 1.0, warmup.requests):
        r.error(
            ["warmup"],
            f"engine {engine} warms up for a duration only; give warmup: {{duration: ...}}",
        )
    return engine


def _split(pointer_text: str) -> list[str | int]:
    """A pointer relative to the section (a workload's) back into tokens."""
    from .errors import split_pointer

    return [int(t) if t.isdigit() else t for t in split_pointer(pointer_text)]


def _is_credential_key(key: Any) -> bool:
    return bool(_CREDENTIAL_WORDS.search(str(key)))


def _refuse_credentials(data: dict[str, Any], r: _Reader) -> None:
    """Credentials are refused by name at the top and in ``infrastructure``, and by shape
    (a private key, a service-account JSON) anywhere in the section."""
    message = (
        "{key!r} looks like a credential; credentials are never accepted in the benchmark "
        "description (the cloud path runs as its own service accounts, and request tokens "
        "come from environment variables: auth: {{bearer: {{env: NAME}}}})"
    )
    for key in data:
        if key not in _TOP_KEYS and _is_credential_key(key):
            r.error([key], message.format(key=str(key)))
    infra = data.get("infrastructure")
    if isinstance(infra, dict):
        for key in infra:
            if _is_credential_key(key):
                r.error(["infrastructure", key], message.format(key=str(key)))
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, [*where, k]) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, [*where, i]) for i, v in enumerate(item))
        elif isinstance(item, str) and (
            ("-----BEGIN" in item and "PRIVATE KEY" in item) or '"private_key"' in item
        ):
            r.error(
                where,
                "this value holds a private key; credentials are never accepted in the benchmark description",
            )


def _gateways(value: Any, r: _Reader, known: list[str], aliases: dict[str, str]) -> list[str]:
    if value is None:
        from .renderers import local_gateway_names

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


def _warmup(value: Any, r: _Reader, present: bool) -> Warmup:
    if not present:
        return Warmup()
    if value is False or value is None:
        return Warmup(duration=None, requests=None)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        seconds = r.duration(value, ["warmup"], allow_zero=True)
        return Warmup(duration=seconds or None, requests=None)
    data = r.mapping(value, ["warmup"], ("duration", "requests"), "warmup")
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


def _backend(value: Any, r: _Reader) -> Backend:
    data = r.mapping(value, ["backend"], ("url", "mock", "builtin"), "backend")
    chosen = [k for k in ("url", "mock", "builtin") if k in data]
    if len(chosen) != 1:
        if data or not isinstance(value, dict):
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
        elif url is not None and not re.match(
            r"^https?://[A-Za-z0-9.\-\[\]:]+(:\d+)?(/[^\s]*)?$", url
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
    options = r.mapping(mock, ["backend", "mock"], ("latency", "response_size"), "backend.mock")
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
    return Backend("mock", latency=latency, response_size=size)


_INFRA_KEYS = (
    "provider",
    "project",
    "region",
    "zone",
    "gateway_machine",
    "tester_machine",
    "backend_machine",
    "network",
)


def _infrastructure(value: Any, r: _Reader) -> Infrastructure | None:
    data = r.mapping(
        value, ["infrastructure"], _INFRA_KEYS, "infrastructure", skip_credentials=True
    )
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


def _auth(value: Any, r: _Reader) -> Auth:
    if value is None:
        return Auth()
    data = r.mapping(value, ["auth"], ("bearer", "basic", "api_key"), "auth")
    out: dict[str, str | None] = {}
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


def _scoring(value: Any, r: _Reader) -> Scoring:
    if value is None:
        return Scoring()
    data = r.mapping(value, ["scoring"], ("profile", "weights"), "scoring")
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
        table = r.mapping(data["weights"], ["scoring", "weights"], METRICS, "scoring.weights")
        for metric, weight in table.items():
            if metric not in METRICS:
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


# -- workloads ------------------------------------------------------------------------------

_WORKLOAD_KEYS = (
    "name",
    "operation",
    "params",
    "headers",
    "body",
    "injection",
    "expect",
    "timeout",
)


def _workloads(value: Any, r: _Reader, api: Api, auth: Auth) -> list[Workload]:
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
        data = r.mapping(raw, ["workloads", i], _WORKLOAD_KEYS, "a workload")
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


def find_operation(api: Api, ref: str) -> tuple[Operation | None, list[str]]:
    """An operation by id or ``METHOD /path`` (template or full route path); else close matches."""
    for op in api.operations:
        if op.operation_id == ref:
            return op, []
    match = re.match(r"^\s*([A-Za-z]+)\s+(\S+)\s*$", ref)
    if match:
        method, path = match.group(1).upper(), match.group(2)
        for op in api.operations:
            if op.method == method and path in (op.path_template, op.route_path):
                return op, []
    options = [op.operation_id for op in api.operations] + [
        f"{op.method} {op.path_template}" for op in api.operations
    ]
    return None, difflib.get_close_matches(ref, options, n=3, cutoff=0.6)


def _operation(value: Any, r: _Reader, where: list[str | int], api: Api) -> Operation | None:
    if not isinstance(value, str) or not value.strip():
        r.error(where, "expected an operationId or 'METHOD /path'")
        return None
    op, close = find_operation(api, value)
    left_out = next((x for x in api.left_out if x.matches(value)), None)
    if op is None and left_out is not None:
        r.error(where, left_out_message(value, left_out))
    elif op is None:
        hint = (
            f"; did you mean {', '.join(repr(c) for c in close)}?"
            if close
            else (
                f"; the description has {len(api.operations)} operations (gatebench parse SPEC lists them)"
            )
        )
        r.error(where, f"no operation {value!r} in the description{hint}")
    return op


_INJECTION_KEYS = (
    "at_once",
    "ramp",
    "constant_rate",
    "concurrent",
    "sequential",
    "duration",
    "requests",
)


def _injection(value: Any, r: _Reader, where: list[str | int]) -> Injection | None:
    if value is None:
        r.error(
            where,
            "an injection profile is required: at_once, ramp, constant_rate, concurrent or sequential",
        )
        return None
    data = r.mapping(value, where, _INJECTION_KEYS, "injection")
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
        section = r.mapping(raw, [*where, kind], ("users", "duration"), "ramp")
        users = r.integer(section.get("users"), [*where, kind, "users"], 1, MAX_USERS)
        duration = r.duration(section.get("duration"), [*where, kind, "duration"])
        if users is None or duration is None:
            return None
        return Injection("ramp", users=users, duration=duration)
    section = r.mapping(raw, [*where, kind], ("rate", "duration"), "constant_rate")
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


_GENERATOR_KEYS = ("value", "list", "order", "range", "random", "counter")


def _params(value: Any, r: _Reader, where: list[str | int]) -> dict[str, Generator]:
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


def _generator(raw: Any, r: _Reader, where: list[str | int]) -> Generator | None:
    if not isinstance(raw, dict):
        if isinstance(raw, list):
            r.error(where, "write a list of values as {list: [...]}")
            return None
        return Generator("constant", value=raw)
    data = r.mapping(raw, where, _GENERATOR_KEYS, "a parameter")
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
    section = r.mapping(section, [*where, "counter"], ("start", "step"), "counter")
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


def _headers(value: Any, r: _Reader, where: list[str | int]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        r.error(where, f"headers must be a mapping, got {_kind(value)}")
        return {}
    out = {}
    for name, raw in value.items():
        if not re.match(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$", str(name)):
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


_BODY_KEYS = ("example", "synthesized", "binary", "multipart", "json", "text", "media_type")


def _body(value: Any, r: _Reader, where: list[str | int], op: Operation | None) -> BodySpec:
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
    data = r.mapping(value, where, (*_BODY_KEYS, "none"), "body")
    kinds = [k for k in (*_BODY_KEYS[:-1], "none") if k in data]
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
        section = r.mapping(data["binary"], [*where, "binary"], ("size", "content_type"), "binary")
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
            pdata = r.mapping(
                praw, pwhere, ("size", "value", "filename", "content_type"), "a multipart part"
            )
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


def _expect(value: Any, r: _Reader, where: list[str | int]) -> tuple[int, ...]:
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


def _placeholders(value: Any) -> set[str]:
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.update(_PLACEHOLDER.findall(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(k for k in item if isinstance(k, str))
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def _check_params(
    op: Operation,
    params: dict[str, Generator],
    headers: dict[str, str],
    body: BodySpec,
    r: _Reader,
    where: list[str | int],
) -> None:
    known = {p.name for p in op.parameters}
    used = (
        _placeholders(body.value)
        | _placeholders([p.value for p in body.parts])
        | _placeholders(list(headers.values()))
    )
    for name in params:
        if name not in known and name not in used:
            listing = ", ".join(sorted(known)) or "none"
            r.error(
                [*where, "params", name],
                f"{name!r} is neither a parameter of {op.operation_id!r} ({listing}) nor a "
                "${placeholder} in the body or headers",
            )
    for name in sorted(used):
        if name not in params:
            r.error([*where], f"placeholder ${{{name}}} has no value in params")


def _check_auth(op: Operation, auth: Auth, r: _Reader, where: list[str | int]) -> None:
    label = op.security_label
    if label == "none":
        return
    needed = {
        "bearer": auth.bearer_env,
        "basic": auth.basic_username_env,
        "apiKey-header": auth.api_key_env,
        "apiKey-query": auth.api_key_env,
        "apiKey-cookie": auth.api_key_env,
        "oauth2": auth.bearer_env,
        "openIdConnect": auth.bearer_env,
    }
    for part in label.split("+"):
        if part in needed and needed[part] is None:
            key = {"basic": "basic: {username_env: U, password_env: P}"}.get(
                part, "api_key: {env: NAME}" if part.startswith("apiKey") else "bearer: {env: NAME}"
            )
            r.warn(
                where,
                f"operation {op.operation_id!r} requires {part} authentication; add auth: {{{key}}} "
                "or requests are sent without credentials",
            )


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a number"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "Auth",
    "Backend",
    "BodySpec",
    "Generator",
    "Infrastructure",
    "Injection",
    "MultipartPart",
    "Plan",
    "Scoring",
    "Warmup",
    "Workload",
    "build_plan",
    "find_operation",
]


def load_plan(result: Any, plan_file: str | None = None) -> Plan:
    """The plan for a read spec: from ``plan_file`` (a separate benchmark file), else from the
    spec's own ``x-gatebench`` (or the benchmark file it was reached through).

    ``result`` is a :class:`gatebench.spec.SpecResult` without errors.
    """
    from .spec import BENCH_KEY, DEFAULT_LIMITS
    from .spec._bundle import bundle_from_path
    from .spec._reader import Reader

    api = result.api
    if api is None:
        raise PlanError("the API description has errors; fix them first")
    reader = result.reader
    if plan_file is not None:
        try:
            bundle = bundle_from_path(plan_file, DEFAULT_LIMITS)
            reader = Reader(bundle, DEFAULT_LIMITS)
            data = reader.entry.data
        except Exception as exc:  # SpecSyntaxError carries located problems
            problems = getattr(exc, "problems", None)
            if problems is None:
                raise
            raise PlanError(problems) from None
        if not isinstance(data, dict) or BENCH_KEY not in data:
            raise PlanError(
                [
                    Problem(
                        "",
                        f"a benchmark file needs a top-level '{BENCH_KEY}' section",
                        source=bundle.entry,
                    )
                ]
            )
        section, base, source = data[BENCH_KEY], "/" + BENCH_KEY, bundle.entry
    else:
        if result.benchmark_loc is None:
            raise PlanError(
                [
                    Problem(
                        "",
                        f"no '{BENCH_KEY}' section: add one to the description (see examples/) "
                        "or pass a benchmark file with --plan",
                        source=result.spec_name or None,
                    )
                ]
            )
        section, base, source = (
            result.benchmark,
            result.benchmark_loc.pointer,
            result.benchmark_loc.doc,
        )
    try:
        return build_plan(section, api, base_pointer=base, source=source)
    except PlanError as exc:
        located = [reader.locate(p) for p in exc.problems] if reader is not None else exc.problems
        raise PlanError(located) from None


def describe_plan(plan: Plan, api: Api) -> list[str]:
    """The plan in a few lines, for people (``gatebench plan``, ``make demo``)."""
    from .units import format_duration, format_size

    lines = [
        f"Benchmark plan for {api.title or 'the API'!r} ({api.source_format}, {len(api.operations)} operations)"
    ]
    targets = ", ".join(plan.gateways) or "no gateway"
    if plan.baseline:
        targets += " + baseline (no gateway)"
    seed = "random seed" if plan.seed is None else f"seed {plan.seed}"
    lines.append(f"  targets:     {targets}; order {plan.order} ({seed})")
    warm = "no warm-up"
    if plan.warmup.duration:
        warm = f"warm-up {format_duration(plan.warmup.duration)} per target"
    elif plan.warmup.requests:
        warm = f"warm-up {plan.warmup.requests} requests per target"
    lines.append(f"  repetitions: {plan.repetitions} ({warm})")
    backend = {
        "url": f"your service at {plan.backend.url}",
        "mock": "mock built from the description"
        + (f", {format_duration(plan.backend.latency)} latency" if plan.backend.latency else "")
        + (
            f", {format_size(plan.backend.response_size)} responses"
            if plan.backend.response_size
            else ""
        ),
        "builtin": f"built-in {plan.backend.builtin} service",
    }[plan.backend.kind]
    lines.append(f"  backend:     {backend}")
    auth = []
    if plan.auth.bearer_env:
        auth.append(f"bearer token from ${plan.auth.bearer_env}")
    if plan.auth.basic_username_env:
        auth.append(f"basic from ${plan.auth.basic_username_env} / ${plan.auth.basic_password_env}")
    if plan.auth.api_key_env:
        auth.append(f"API key from ${plan.auth.api_key_env}")
    lines.append(f"  auth:        {', '.join(auth) or 'none'}")
    weights = ", ".join(f"{m}×{w:g}" for m, w in plan.scoring.weights)
    lines.append(
        f"  scoring:     {plan.scoring.profile}"
        + (
            f" (weights {weights})"
            if weights
            else " (AGE §IV-C)"
            if plan.scoring.profile == "paper"
            else ""
        )
    )
    if plan.infrastructure is not None:
        infra = plan.infrastructure
        lines.append(
            f"  cloud:       {infra.project or '(project from the deployment)'} {infra.zone or ''} "
            f"gateway {infra.gateway_machine}, tester {infra.tester_machine}, backend {infra.backend_machine}"
        )
    lines.append("  workloads:")
    rows = []
    for w in plan.workloads:
        op = api.operation(w.operation_id)
        rows.append(
            (
                w.name,
                f"{op.method} {op.route_path}",
                describe_injection(w.injection),
                _describe_extras(w),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        line = "    " + "  ".join(row[i].ljust(widths[i]) for i in range(3))
        if row[3]:
            line += "  " + row[3]
        lines.append(line.rstrip())
    phases = len(plan.workloads) * len(plan.targets) * plan.repetitions
    lines.append(
        f"  measured phases: {len(plan.workloads)} workloads × {len(plan.targets)} targets × "
        f"{plan.repetitions} repetitions = {phases}"
    )
    return lines


def describe_injection(inj: Injection) -> str:
    from .units import format_duration

    if inj.kind == "at_once":
        return f"{inj.users} users at once"
    if inj.kind == "sequential":
        return f"{inj.requests} sequential requests"
    if inj.kind == "ramp":
        return f"ramp to {inj.users} users over {format_duration(inj.duration or 0)}"
    if inj.kind == "constant_rate":
        return f"{inj.rate:g} req/s for {format_duration(inj.duration or 0)}"
    bound = []
    if inj.duration:
        bound.append(f"for {format_duration(inj.duration)}")
    if inj.requests:
        bound.append(f"up to {inj.requests} requests")
    return f"{inj.users} concurrent users " + " ".join(bound)


def _describe_extras(w: Workload) -> str:
    from .units import format_size

    parts = []
    if w.body.kind == "multipart":
        files = [f"{p.name} {format_size(p.size)}" for p in w.body.parts if p.size is not None]
        parts.append("multipart " + ", ".join(files or [p.name for p in w.body.parts]))
    elif w.body.kind == "binary":
        parts.append(f"binary body {format_size(w.body.size or 0)}")
    elif w.body.kind != "none":
        parts.append(f"{w.body.kind} body")
    for name, gen in w.params:
        if gen.kind in ("range", "random"):
            parts.append(f"{name} {gen.kind} {gen.low}..{gen.high}")
        elif gen.kind == "counter":
            parts.append(f"{name} counter from {gen.start}")
        elif gen.kind == "list":
            parts.append(f"{name} one of {len(gen.values)}")
        else:
            parts.append(f"{name}={gen.value!r}")
    return "; ".join(parts)
