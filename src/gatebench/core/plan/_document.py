"""``x-gatebench`` as written: one typed model per mapping (pydantic), the one definition of
every key's type, default, bounds, documentation and message.

The published JSON Schema (``schemas/x-gatebench.schema.json``, for editors) is generated from
these models (:func:`schema_text`; ``make schema`` writes it, a test compares them). A value is
read by its :class:`Rule`, which words the message people act on and says what the schema
says; a mapping (:class:`Section`) reports its unknown keys with the closest known one, a key
it lacks, and the keys it needs exactly one of. :class:`Reading` reads a mapping key by key,
so that one bad key does not hide the problems of the others; ``_build`` turns what was read
into the :class:`~gatebench.core.plan.Plan` and checks it against the description.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, NoReturn

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from gatebench.core._locations import PACKAGE_DIR
from gatebench.core.capabilities import ENGINES
from gatebench.core.errors import Problem, pointer, shown
from gatebench.core.ir import is_media_type, server_authority_problem
from gatebench.core.metrics import COST_METRICS, METRICS
from gatebench.core.policies import JWT_ALGORITHMS
from gatebench.core.synth import numbered_value
from gatebench.core.thresholds import bound_of
from gatebench.core.units import parse_duration, parse_size

BUILTIN_BACKENDS = ("auction", "echo")
TlsKey = Literal["ecdsa-p256", "rsa-2048"]
TLS_KEYS: tuple[TlsKey, ...] = ("ecdsa-p256", "rsa-2048")
"""The server key types a run's throwaway certificate can have (``tls.key``)."""
Balance = Literal["round_robin", "least_conn"]
BALANCES: tuple[Balance, ...] = ("round_robin", "least_conn")
"""How a gateway spreads requests over the backend replicas (``backend.balance``)."""
MAX_REPLICAS = 16
"""The most backend replicas a plan may start (``backend.replicas``)."""
MAX_REPETITIONS = 1000
MAX_USERS = 100_000
MAX_REQUESTS = 10_000_000
MAX_TESTERS = 16
"""The most load generators one phase is split across (``infrastructure.testers``, ``--testers``)."""
MAX_DURATION_S = 24 * 3600.0
MAX_BODY_BYTES = 1_000_000_000
MAX_STEPS = 86_400
"""The most steps a recorded arrival curve may hold (``injection.arrivals.counts``): a day at
one-second steps."""
MAX_RATE = 1_000_000.0
"""The highest arrival rate (requests per second) a capacity search may offer."""
SCHEMA_PATH = PACKAGE_DIR / "core" / "schemas" / "x-gatebench.schema.json"
"""The published schema (a document whose ``x-gatebench`` property is the plan)."""
MAX_WORKERS, MAX_CPU, MAX_GROWTH = 100_000, 4095, 10.0
"""Mock backend workers; a core number (Linux's NR_CPUS); a capacity probe's growth."""
MAX_ANSWERS_EVERY = 1_000_000
MAX_SCALE = 1000.0
"""The largest ``scale`` or ``speed`` a recorded arrival curve accepts."""
MAX_OTHER_VALUES = 1_000_000_000
"""The most values a weighted list's ``others`` may stand for."""
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
TOKEN = r"^[A-Za-z0-9_.-]{1,64}$"
BUNDLE_PATH = r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9._/-]{1,200}$"
INJECTIONS = ("at_once", "ramp", "constant_rate", "arrivals", "concurrent", "sequential")
_LOAD_WORDS = ("users", "vus", "duration", "rate", "requests", "iterations", "concurrency")
"""What other load tools call a load's size, written where gatebench has no such key."""
_LOAD_EXAMPLE = (
    "e.g. injection: {concurrent: 10, duration: 5s} (10 users looping for 5 s) or "
    "injection: {constant_rate: {rate: 50, duration: 5s}}"
)
BODIES = ("example", "synthesized", "binary", "multipart", "json", "text", "none")

# -- values ------------------------------------------------------------------------------------


def kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    names = {dict: "a mapping", list: "a list", str: "a string"}
    return next((n for t, n in names.items() if isinstance(value, t)), "a number")


def fail(message: str) -> NoReturn:
    raise PydanticCustomError("plan", "{message}", {"message": message})


@dataclass(frozen=True)
class Rule:
    """How a value is read (``check``: the value it reads as, or :func:`fail` with the message
    people act on) and what the schema says of it."""

    check: Callable[[Any], Any]
    schema: dict[str, Any]

    @classmethod
    def of(cls, test: Callable[[Any], bool], message: str, schema: dict[str, Any]) -> Rule:
        """The value as written when ``test`` holds; else ``message`` (``{v}``: the value)."""

        def check(value: Any) -> Any:
            return value if test(value) else fail(message.format(v=shown(value)))

        return cls(check, schema)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return core_schema.no_info_before_validator_function(self.check, core_schema.any_schema())

    def __get_pydantic_json_schema__(self, core: Any, handler: Any) -> dict[str, Any]:
        return dict(self.schema)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def Count(low: int, high: int, what: str = "a whole number") -> Rule:
    def check(value: Any) -> int:
        if not _int(value) or not low <= value <= high:
            text = f"{value:,}" if _int(value) and what == "a whole number" else shown(value)
            fail(f"expected {what} from {low} to {high:,}, got {text}")
        return int(value)

    return Rule(check, {"type": "integer", "minimum": low, "maximum": high})


def Flag() -> Rule:
    return Rule.of(
        lambda v: isinstance(v, bool), "expected true or false, got {v}", {"type": "boolean"}
    )


def Choice(values: Sequence[str], message: str = "") -> Rule:
    message = message or f"expected one of {', '.join(values)}, got {{v}}"
    return Rule.of(lambda v: v in values, message, {"enum": list(values)})


def Matching(pattern: str, expected: str) -> Rule:
    test: Callable[[Any], bool] = lambda v: isinstance(v, str) and bool(re.match(pattern, v))  # noqa: E731
    return Rule.of(test, f"expected {expected}, got {{v}}", {"type": "string", "pattern": pattern})


def Anything(schema: dict[str, Any] | None = None) -> Rule:
    return Rule(lambda value: value, schema or {})


def Model(model: type[BaseModel], alternative: dict[str, Any] | None = None) -> Rule:
    """A mapping read by ``model`` (null is no mapping either); ``alternative``: what else the
    schema accepts in its place (``true``...), read by the model's own validator."""
    schema = {"x-ref": model.__name__}
    return Rule(model.model_validate, {"anyOf": [alternative, schema]} if alternative else schema)


def Duration(zero: bool = False) -> Rule:
    def check(value: Any) -> float:
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            fail(str(exc))
        if seconds > MAX_DURATION_S:
            fail(f"at most 24h, got {shown(value)}")
        return seconds if seconds or zero else fail("a duration must be more than 0")

    return Rule(check, {"type": ["string", "number"]})


def Size() -> Rule:
    def check(value: Any) -> int:
        try:
            found = parse_size(value)
        except ValueError as exc:
            fail(str(exc))
        return found if found <= MAX_BODY_BYTES else fail(f"at most 1GB, got {shown(value)}")

    return Rule(check, {"type": ["string", "integer"]})


def Rate() -> Rule:
    """Requests per second: a number, or ``500/s`` / ``500 req/s``."""

    def check(value: Any) -> float:
        found: Any = float(value) if isinstance(value, int | float) and value is not True else None
        if isinstance(value, str):
            found = bound_of("throughput", value)
            found = None if isinstance(found, str) else found[0]
        if found is None or value is False or not 0 < found <= MAX_RATE:
            fail(
                f"expected an arrival rate above 0 and at most {MAX_RATE:,.0f}/s, such as "
                f"100/s, got {shown(value)}"
            )
        return float(found)

    return Rule(check, {"type": ["string", "number"]})


def Number(test: Callable[[float], bool], message: str, schema: dict[str, Any]) -> Rule:
    def check(value: Any) -> float:
        ok = isinstance(value, int | float) and not isinstance(value, bool) and test(value)
        return float(value) if ok else fail(message.format(v=shown(value)))

    return Rule(check, {"type": "number", **schema})


def Listed(values: Sequence[str]) -> Rule:
    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or any(v not in values for v in value):
            fail(f"expected a list of {', '.join(values)}, got {shown(value)}")
        return tuple(dict.fromkeys(value))

    return Rule(check, {"type": "array", "items": {"enum": list(values)}, "minItems": 1})


def Items(item: Rule, message: str) -> Rule:
    """A non-empty list read item by item by ``item``, each problem located at its index;
    ``message`` for anything else (``{v}``: the value, ``{k}``: its kind)."""

    def check(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, list) or not value:
            fail(message.format(v=shown(value), k=kind(value)))
        out, errors = [], []
        for i, found in enumerate(value):
            try:
                out.append(item.check(found))
            except PydanticCustomError as exc:
                errors.append(_error((i,), exc.message()))
        if errors:
            raise ValidationError.from_exception_data("items", errors)
        return tuple(out)

    return Rule(check, {"type": "array", "minItems": 1, "items": item.schema})


def printable(value: Any) -> bool:
    if not isinstance(value, str) or not value or len(value) > 256 or not value.isprintable():
        fail(f"expected a non-empty printable string of at most 256 characters, got {shown(value)}")
    if any(c in value for c in "\"'\\`$;{}#\n"):
        fail(f"quotes, backslashes and ` $ ; {{ }} # are not accepted here, got {shown(value)}")
    return True


STRING = {"type": "string"}
Text = Rule.of(lambda v: isinstance(v, str), "expected a string", STRING)
Token = Matching(TOKEN, "a header or parameter name (letters, digits, -_.)")
Env = Matching(ENV_NAME, "an environment variable name such as API_TOKEN")
Any_ = Annotated[Any, Anything()]
Str_ = Annotated[Any, Anything(STRING)]

# -- mappings ----------------------------------------------------------------------------------


class Section(BaseModel):
    """A mapping of the plan. Its problems, in the order people read them: the mapping itself
    (not a mapping), its unknown keys (with the closest known one), a key it needs and lacks
    (worded by the key's own rule, as for null), its values, and the keys it needs exactly one
    of."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, defer_build=True
    )
    one_of: ClassVar[tuple[str, ...]] = ()
    one_of_message: ClassVar[str] = ""
    empty_is_none: ClassVar[bool] = False
    """An empty mapping is read as nothing given (no exactly-one-of to say)."""
    credentials: ClassVar[bool] = False
    """Its keys that name a credential are refused with their reason (``_checks``), not as
    unknown."""
    elsewhere: ClassVar[dict[str, str]] = {}
    """Unknown keys people put here that belong in another place, with where (said instead
    of the closest known key, which would send them the wrong way)."""
    missing: ClassVar[str] = ""
    """A required key's absence said of the mapping itself (``{key}``); by default, of the key,
    in its rule's words for null."""

    @classmethod
    def key_names(cls) -> list[str]:
        return [f.alias or name for name, f in cls.model_fields.items()]

    @classmethod
    def title(cls) -> str:
        return str(cls.model_config.get("title") or cls.__name__)

    @classmethod
    def unknown(cls, data: dict[Any, Any]) -> list[InitErrorDetails]:
        known, out = cls.key_names(), []
        skip = is_credential_key if cls.credentials else lambda key: False
        for key in (k for k in data if str(k) not in cls.key_names() and not skip(k)):
            hint = difflib.get_close_matches(str(key), known, n=1)
            said = f"did you mean {hint[0]!r}?" if hint else f"expected one of: {', '.join(known)}"
            said = cls.elsewhere.get(str(key), said)
            out.append(_error((key,), f"unknown key {key!r} in {cls.title()}; {said}"))
        return out

    @classmethod
    def absent(cls, data: dict[Any, Any]) -> list[InitErrorDetails]:
        out = []
        for name, field in cls.model_fields.items():
            key = field.alias or name
            if not field.is_required() or key in data:
                continue
            if cls.missing:
                out.append(_error((), cls.missing.format(key=key)))
                continue
            rule = next((m for m in field.metadata if isinstance(m, Rule)), None)
            try:
                message = f"{name!r} is required" if rule is None else rule.check(None)
            except PydanticCustomError as exc:
                message = exc.message()
            out.append(_error((key,), message))
        return out

    @model_validator(mode="wrap")
    @classmethod
    def _read(cls, data: Any, handler: Any) -> Any:
        if not isinstance(data, dict):
            fail(f"{cls.title()} must be a mapping, got {kind(data)}")
        errors, value = cls.unknown(data) + cls.absent(data), None
        try:
            value = handler(data)
        except ValidationError as exc:
            skip = ("missing", "extra_forbidden")
            errors += [_again(e) for e in exc.errors() if e["type"] not in skip]
        given = data or not cls.empty_is_none
        if cls.one_of and given and sum(k in data for k in cls.one_of) != 1:
            errors.append(_error((), cls.one_of_message))
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return value


def _error(loc: tuple[Any, ...], message: str) -> InitErrorDetails:
    found = PydanticCustomError("plan", "{message}", {"message": message})
    return InitErrorDetails(type=found, loc=loc, input=None)


def _again(e: Any) -> InitErrorDetails:
    found = PydanticCustomError("plan", "{message}", e["ctx"]) if e["type"] == "plan" else e["type"]
    return InitErrorDetails(type=found, loc=tuple(e["loc"]), input=e["input"], ctx=e.get("ctx", {}))


def problems_of(
    exc: Any, where: Sequence[str | int], base: str, source: str | None
) -> list[Problem]:
    """The located problems of a failed read."""
    if isinstance(exc, PydanticCustomError):
        return [Problem(base + pointer(*where), exc.message(), source=source)]
    out = []
    for e in exc.errors():
        message = e["msg"] if e["type"] == "plan" else f"{e['msg']}, got {shown(e['input'])}"
        out.append(Problem(base + pointer(*where, *e["loc"]), message, source=source))
    return out


@cache
def _adapter(model: type[Section], name: str) -> TypeAdapter[Any]:
    field = model.model_fields[name]
    metadata = tuple(field.metadata)
    return TypeAdapter(Annotated[(field.annotation, *metadata)] if metadata else field.annotation)  # type: ignore[arg-type]


class Reading:
    """One plan being read: its problems, located below ``base`` in ``source``."""

    def __init__(self, base: str, source: str | None) -> None:
        self.base, self.source = base, source
        self.problems: list[Problem] = []

    def error(self, where: Sequence[str | int], message: str) -> None:
        self.problems.append(Problem(self.base + pointer(*where), message, source=self.source))

    def warn(self, where: Sequence[str | int], message: str) -> None:
        found = Problem(self.base + pointer(*where), message, "warning", source=self.source)
        self.problems.append(found)

    def _failed(self, exc: Any, where: Sequence[str | int]) -> None:
        self.problems.extend(problems_of(exc, where, self.base, self.source))

    def keys(self, model: type[Section], data: Any, where: Sequence[str | int]) -> dict[Any, Any]:
        """``data`` when it is a mapping, its unknown keys reported (else ``{}``)."""
        if not isinstance(data, dict):
            self.error(where, f"{model.title()} must be a mapping, got {kind(data)}")
            return {}
        found = model.unknown(data)
        if found:
            self._failed(ValidationError.from_exception_data(model.__name__, found), where)
        return data

    def value(
        self,
        model: type[Section],
        name: str,
        data: dict[Any, Any],
        where: Sequence[str | int],
        default: Any = None,
    ) -> Any:
        """``model``'s key ``name`` in ``data``, read by its rule; ``default`` when it is
        absent or fails (its problems reported)."""
        key = model.model_fields[name].alias or name
        if key not in data:
            return default
        try:
            return _adapter(model, name).validate_python(data[key])
        except ValidationError as exc:
            self._failed(exc, [*where, key])
            return default

    def whole(self, model: type[Section], data: Any, where: Sequence[str | int]) -> Any:
        """``data`` read whole by ``model`` (None, its problems reported, when it fails)."""
        try:
            return model.model_validate(data)
        except (ValidationError, PydanticCustomError) as exc:
            self._failed(exc, where)
            return None

    def checked(self, rule: Rule, value: Any, where: Sequence[str | int]) -> Any:
        """``value`` read by ``rule`` (None, the problem reported, when it fails)."""
        try:
            return rule.check(value)
        except PydanticCustomError as exc:
            self._failed(exc, where)
            return None


_CREDENTIAL_WORDS = re.compile(
    r"(credential|secret|password|passwd|private[_-]?key|access[_-]?key|key[_-]?file|"
    r"service[_-]?account[_-]?key|api[_-]?key|token|auth[_-]?key)",
    re.IGNORECASE,
)


def is_credential_key(key: Any) -> bool:
    """A key that names a credential (refused at the top and in ``infrastructure``)."""
    return bool(_CREDENTIAL_WORDS.search(str(key)))


# -- the rules of the plan's values ---------------------------------------------------------------

BOOL = Annotated[bool, Flag()]
Seconds = Annotated[float, Duration()]
Seconds0 = Annotated[float, Duration(zero=True)]
OptSeconds = Annotated[float | None, Duration()]
OptSeconds0 = Annotated[float | None, Duration(zero=True)]
OptSize = Annotated[int | None, Size()]
USERS = Count(1, MAX_USERS)
Users = Annotated[int | None, USERS]


def _concurrent(value: Any) -> int:
    if isinstance(value, dict):  # concurrent: {users: 50, duration: 30s}, as k6 writes it
        fail(
            f"expected a whole number of users from 1 to {MAX_USERS:,}, got a mapping; the "
            "bound goes beside it: injection: {concurrent: 50, duration: 30s} (or requests: N)"
        )
    found: int = USERS.check(value)
    return found


Requests = Annotated[int | None, Count(1, MAX_REQUESTS)]
Machine = Annotated[
    str, Matching(r"^[a-z0-9]+(-[a-z0-9]+)+$", "a machine type such as 'n2-standard-2'")
]
Cores = Annotated[
    tuple[int, ...] | None,
    Items(Count(0, MAX_CPU), "expected a non-empty list of core numbers such as [0], got {v}"),
]
TokenName = Annotated[str | None, Token]
Printable = Annotated[str | None, Rule.of(printable, "", STRING)]


def _alternatives(*schemas: dict[str, Any]) -> Rule:
    """A value read later (by ``_build``), whose schema is one of ``schemas``."""
    return Anything({"anyOf": list(schemas)})


def ref(name: str) -> dict[str, str]:
    return {"x-ref": name}


def _url(value: Any) -> str:
    if not isinstance(value, str) or not value:
        fail(f"backend.url must be a non-empty string, got {shown(value)}")
    if re.search(r"//[^/]*@", value):
        fail("credentials in the URL are never accepted; use auth: {...} with an env variable")
    shape = r"https?://[A-Za-z0-9.\-\[\]:]+(:\d+)?(/[^\s]*)?"
    if not re.fullmatch(shape, value) or server_authority_problem(value):
        fail(f"expected an http:// or https:// URL, got {value!r}")
    rest = re.sub(r"^https?://[^/?#]*", "", value)
    if rest not in ("", "/"):
        # every gateway forwards the description's paths unchanged (renderers.RenderTarget)
        fail(
            f"expected the origin of your service, http(s)://host:port, got {value!r}: the "
            "gateways and the baseline send it the description's paths as they are, so a "
            "path, query or fragment here is never sent (a base path belongs in the "
            "description's servers)"
        )
    return value


URL = Rule(_url, STRING)
BUILTIN = Choice(
    BUILTIN_BACKENDS, f"unknown builtin backend {{v}}; available: {', '.join(BUILTIN_BACKENDS)}"
)
FAULT = Choice(("kill_replica",), "expected 'kill_replica' (the only fault), got {v}")
PROJECT = Matching(
    r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$",
    "a Google Cloud project id (6-30 lower-case letters, digits, hyphens)",
)
REGION = Matching(r"^[a-z]+-[a-z]+[0-9]+$", "a region such as 'europe-central2'")
ZONE = Matching(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$", "a zone such as 'europe-central2-a'")
NETWORK = Matching(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", "a VPC network name")
PROFILE = Choice(("paper", "robust"), "expected 'paper' (AGE, the default) or 'robust', got {v}")
GROWTH = Number(
    lambda v: 1 < v <= MAX_GROWTH,
    f"expected a factor above 1 and at most {MAX_GROWTH:g} (such as 2), got {{v}}",
    {"exclusiveMinimum": 1, "maximum": MAX_GROWTH},
)
CONNECTIONS = Choice(
    ("keep-alive", "new"),
    "expected 'keep-alive' (a pool of kept-alive connections) or 'new' (a new connection per "
    "request), got {v}",
)
ORDER = Choice(("sequential", "random"), "expected 'sequential' or 'random', got {v}")
VALUES = Rule.of(
    lambda v: isinstance(v, list) and bool(v),
    "expected a non-empty list of values",
    {"type": "array", "minItems": 1},
)
FILENAME = Rule.of(
    lambda v: isinstance(v, str) and not re.search(r'["\r\n\\/\x00]', v),
    "a file name may not contain quotes, slashes or line breaks",
    STRING,
)
MEDIA = Rule.of(
    lambda v: isinstance(v, str) and is_media_type(v),
    "expected a media type such as 'application/json' (type/subtype; RFC 9110 8.3.1), got {v}",
    STRING,
)
KEYS_FILE = Matching(
    BUNDLE_PATH, "a relative path inside the bundle (letters, digits, ._/-, no '..')"
)
KEYS_ENV = Matching(ENV_NAME, "an environment variable name such as API_KEYS")
WORKLOAD_NAME = Rule.of(
    lambda v: isinstance(v, str) and bool(re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", v)),
    "a workload needs a 'name' of letters, digits, '.', '_' or '-' (at most 64)",
    {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
)
PARAMS = {
    "type": "object",
    "additionalProperties": {
        "anyOf": [{"type": ["string", "number", "boolean", "null"]}, ref("ParameterDoc")]
    },
}
HEADERS = {"type": "object", "additionalProperties": {"type": ["string", "number"]}}


def _statuses(value: Any) -> tuple[int, ...]:
    codes = [value] if _int(value) else value
    if not isinstance(codes, list) or not all(_int(c) and 100 <= c <= 599 for c in codes):
        fail("expected a list of HTTP status codes such as [200, 201]")
    return tuple(sorted(set(codes)))


EXPECT = Rule(
    _statuses,
    {"type": ["array", "integer"], "items": {"type": "integer", "minimum": 100, "maximum": 599}},
)
PLAN_ORDER = Choice(("shuffled", "fixed"), "expected 'shuffled' or 'fixed', got {v}")


# -- the plan's parts ------------------------------------------------------------------------


class WarmupDoc(Section, title="warmup"):
    """Load before the measured phases, excluded from the statistics: a duration, {duration},
    {requests}, or false."""

    duration: OptSeconds0 = None
    """A duration: 500ms, 3s, 1m; a bare number is seconds."""
    requests: Annotated[int | None, Count(0, MAX_REQUESTS)] = None
    """A number of requests."""


class AnswersDoc(Section, title="answers"):
    """How the engines check the answers of the measured phases against the requests they
    answer (docs/trust.md, "Right answers under load")."""

    every: Annotated[int, Count(1, MAX_ANSWERS_EVERY)] = 1
    """Check one answer in this many (1: every answer): the requests between go unnamed and
    unchecked, for a probe the check would make tester-bound."""


class MockDoc(Section, title="backend.mock"):
    """A mock backend rendered from the description: true, or its options."""

    latency: Seconds0 = 0.0
    """A fixed delay before every response (at most 60s)."""
    response_size: OptSize = None
    """Pad or cut response bodies to this size (1kB, 8.6MB decimal; 16MiB binary; a bare number
    is bytes)."""
    workers: Annotated[int | None, Count(1, MAX_WORKERS)] = None
    """Serve at most this many requests at once, each held for `latency`; the others wait their
    turn in arrival order: a known capacity of workers / latency requests per second
    (docs/capacity.md, ground truth)."""


def _mock(value: Any) -> Any:
    if value is False:
        fail("mock: false is not a backend; give 'url' or 'builtin' instead")
    return MockDoc.model_construct() if value is True else MockDoc.model_validate(value)


class BackendDoc(Section, title="backend"):
    """What the gateways forward to: exactly one of url, mock, builtin; mock and builtin
    backends may run as several replicas."""

    url: Annotated[str | None, URL] = None
    """Your service, http:// or https:// (never credentials in the URL)."""
    mock: Annotated[Any, Rule(_mock, {"anyOf": [{"type": "boolean"}, ref("MockDoc")]})] = None
    builtin: Annotated[str | None, BUILTIN] = None
    """One of gatebench's own backends."""
    replicas: Annotated[int, Count(1, MAX_REPLICAS)] = 1
    """Copies of the backend gatebench starts (mock or builtin); every gateway spreads its
    requests over them with its own upstream pool."""
    balance: Annotated[str, Choice(BALANCES)] = "round_robin"
    """How the gateways pick a replica (least_conn: the fewest requests in flight)."""


class TlsDoc(Section, title="tls"):
    """TLS at every gateway and at the baseline, with a throwaway CA and server certificate
    made per run (gatebench.core.tls; docs/input.md), the load engine trusting that CA only."""

    key: Annotated[TlsKey, Choice(TLS_KEYS)] = "ecdsa-p256"
    """The server key type."""
    http2: BOOL = False
    """Offer HTTP/2 by ALPN; the load engine then speaks it (false: HTTP/1.1)."""
    resumption: BOOL = True
    """Let clients resume TLS sessions (false: a full handshake on every new connection)."""


class FaultDoc(Section, title="fault"):
    """A backend replica killed during the measured phases of one workload, for every gateway
    (docs/input.md)."""

    type: Annotated[str, FAULT] = "kill_replica"
    """What happens: the replica's process is killed, its port refuses connections."""
    replica: Annotated[
        Any, Anything({"type": "integer", "minimum": 1, "maximum": MAX_REPLICAS})
    ] = None
    """Which replica dies, 1 to backend.replicas (default 1)."""
    workload: Str_ = None
    """The workload whose measured phases carry the fault (default: the first)."""
    at: Annotated[Any, Anything({"type": ["string", "number"]})] = "50%"
    """When: a percentage of the phase (50%) or a duration from its start (5s)."""


class InfrastructureDoc(Section, title="infrastructure"):
    """Where the cloud path runs; never credentials (infra/README.md)."""

    provider: Annotated[str, Matching(r"^gcp$", "'gcp' (the only provider)")] = "gcp"
    """gcp (the only provider)."""
    project: Annotated[str | None, PROJECT] = None
    """A Google Cloud project id."""
    region: Annotated[str | None, REGION] = None
    """A region such as europe-central2."""
    zone: Annotated[str | None, ZONE] = None
    """A zone such as europe-central2-a (the region is derived from it)."""
    gateway_machine: Machine = "n2-standard-2"
    """The gateways' machine type."""
    tester_machine: Machine = "n2-standard-2"
    """The load generators' machine type."""
    backend_machine: Machine = "n2-standard-2"
    """The backend's machine type."""
    network: Annotated[str | None, NETWORK] = None
    """A VPC network name."""
    testers: Annotated[int, Count(1, MAX_TESTERS, "a whole number of load generators")] = 1
    """Load generators per phase: each phase is split across them and their logs merged
    (docs/engine.md)."""
    credentials = True


class _Weights(Section, title="scoring.weights"):
    """Metric weights of the robust profile (>= 0). req_per_cpu_s (requests per gateway
    CPU-second) and gateway_rss_mb (peak resident memory) are scored only when given a weight
    above 0 (docs/scoring.md)."""


_WEIGHT = Number(lambda v: v >= 0, "expected a weight >= 0, got {v}", {"minimum": 0})
WeightsDoc = create_model(  # one key per metric the score knows
    "WeightsDoc",
    __base__=_Weights,
    **dict.fromkeys([*METRICS, *COST_METRICS], (Annotated[float | None, _WEIGHT], None)),  # type: ignore[call-overload]
)


def _weights(value: Any) -> tuple[tuple[str, float], ...]:
    read = WeightsDoc.model_validate(value)
    return tuple(sorted((k, getattr(read, k)) for k in read.model_fields_set))


class ScoringDoc(Section, title="scoring"):
    """How scores are computed (docs/scoring.md)."""

    profile: Annotated[Literal["paper", "robust"], PROFILE] = "paper"
    """paper (the AGE equations) or robust."""
    weights: Annotated[tuple[tuple[str, float], ...], Rule(_weights, ref("WeightsDoc"))] = ()


class _Variables(Section):
    """A mapping that names the environment variables holding a credential."""

    missing = "{key!r} (an environment variable name) is required"


class EnvDoc(_Variables, title="a variable"):
    env: Annotated[str, Env]
    """The variable that holds it (never the value)."""


class BasicDoc(_Variables, title="a variable"):
    username_env: Annotated[str, Env]
    """The variable that holds the user name."""
    password_env: Annotated[str, Env]
    """The variable that holds the password."""


class JwtSignerDoc(_Variables, title="auth.jwt"):
    """Sign the requests' bearer tokens during the run (with policies.auth.jwt: its issuer,
    audience and first algorithm)."""

    private_key_env: Annotated[str, Env]
    """The variable that holds the PEM private key."""
    subjects: Annotated[int, Count(1, 100_000)] = 1
    """Subjects: simulated user i carries the token of subject i mod this."""
    lifetime: OptSeconds = None
    """From iat to exp (default: the run's estimated length plus a margin)."""


SECRETS = ("token", "value", "key", "password", "username", "secret")
"""Keys that would hold a credential's value where the name of its variable belongs."""


def _variables(name: str, model: type[Section]) -> Rule:
    """``auth.NAME``: the variables that hold the credential, never its value."""
    write = f"auth: {{{name}: {{{model.key_names()[0]}: NAME}}}}"

    def check(value: Any) -> Any:
        if isinstance(value, str):
            fail(
                f"write {write} with the name of an environment variable; a literal token is "
                "never accepted"
            )
        if not isinstance(value, dict):
            fail(f"expected a mapping such as {write}, got {kind(value)}")
        what = "a password" if name == "basic" else "a token"
        said = f"{what} is never written in the description; name the environment variable "
        said += f"that holds it: {write}"
        found = [_error((key,), said) for key in value if key in SECRETS]
        if found:
            raise ValidationError.from_exception_data(name, found)
        return model.model_validate(value)

    return Rule(check, ref(model.__name__))


class AuthDoc(Section, title="auth"):
    """Where request credentials come from: environment variable names, never values."""

    bearer: Annotated[EnvDoc | None, _variables("bearer", EnvDoc)] = None
    """A bearer token."""
    api_key: Annotated[EnvDoc | None, _variables("api_key", EnvDoc)] = None
    """An API key."""
    basic: Annotated[BasicDoc | None, _variables("basic", BasicDoc)] = None
    """Basic authentication."""
    jwt: Annotated[JwtSignerDoc | None, Model(JwtSignerDoc)] = None


class CpusDoc(Section, title="cpus"):
    """Which cores the gateway, the load engine and the backend run on (docs/input.md):
    'unpinned' (the default: wherever the scheduler puts them), 'pinned' (the gateway on a
    core of its own, the engine and the backend on the others), or core numbers per role (as
    os.sched_setaffinity takes them; a role left out is not pinned)."""

    gateway: Cores = None
    """Cores for the gateway under test (and the ceiling server)."""
    engine: Cores = None
    """Cores for the load engine."""
    backend: Cores = None
    """Cores for the backend gatebench starts."""


# -- capacity ------------------------------------------------------------------------------------


def _objective(metric: str) -> Rule:
    """A bound of a capacity objective: ``bound_of``'s reading of ``metric``, a latency above
    0 ms. A rule of its own key, so an unknown key beside it hides none of its problems."""

    def check(value: Any) -> Any:
        found = bound_of(metric, value)
        if isinstance(found, str):
            fail(found)
        if metric != "error_pct" and found[0] <= 0:
            fail(f"a latency objective must be above 0 ms, got {shown(value)}")
        return value

    return Rule(check, STRING)


class ObjectiveDoc(Section, title="capacity.objective"):
    """What carrying the load means: latency bounds from each request's intended start, and an
    error rate (default {p99: 50ms, error_pct: 0.1%})."""

    p50: Annotated[Any, _objective("p50")] = None
    """The highest p50 latency: 50ms, 0.5s."""
    p90: Annotated[Any, _objective("p90")] = None
    """The highest p90 latency: 50ms, 0.5s."""
    p95: Annotated[Any, _objective("p95")] = None
    """The highest p95 latency: 50ms, 0.5s."""
    p99: Annotated[Any, _objective("p99")] = None
    """The highest p99 latency: 50ms, 0.5s."""
    mean: Annotated[Any, _objective("mean")] = None
    """The highest mean latency: 20ms."""
    max: Annotated[Any, _objective("max")] = None
    """The highest latency of any request."""
    error_pct: Annotated[Any, _objective("error_pct")] = None
    """The highest error rate: 0.1% (default)."""

    @model_validator(mode="after")
    def _bounds(self) -> ObjectiveDoc:
        if not self.model_fields_set:
            said = "an objective needs at least one bound, such as {p99: 50ms}"
            raise ValidationError.from_exception_data("ObjectiveDoc", [_error((), said)])
        return self


def _precision(value: Any) -> float:
    found = bound_of("error_pct", value) if isinstance(value, str) else None
    if found is None or isinstance(found, str) or not 0.1 <= found[0] <= 50:
        unit = " (the unit % is needed)" if isinstance(value, int | float) else ""
        text = shown(value) if not isinstance(value, dict | list) else kind(value)
        fail(f"expected a precision from 0.1% to 50% such as '5%'{unit}, got {text}")
    return found[0] / 100.0


class CapacityDoc(Section, title="capacity"):
    """The capacity search (gatebench capacity, docs/capacity.md): true for the defaults, a
    mapping of settings, or (in a workload) false to leave the workload out."""

    objective: Annotated[ObjectiveDoc | None, Model(ObjectiveDoc)] = None
    start_rate: Annotated[float, Rate()] = 100.0
    """The first probe's arrival rate: 100/s or a number of requests per second."""
    max_rate: Annotated[float, Rate()] = 100_000.0
    """The highest rate the search offers."""
    growth: Annotated[float, GROWTH] = 2.0
    """Each growth probe offers this many times the last."""
    precision: Annotated[float, Rule(_precision, STRING)] = 0.05
    """Bisection stops when high / low − 1 is at most this: '5%'."""
    warmup: Seconds0 = 1.0
    """Load at the probe's rate before it is measured, excluded."""
    probe: Seconds = 2.0
    """The measured part of each probe."""
    confirm: Seconds0 = 5.0
    """The confirmation run at the rate found (0: none)."""
    repetitions: Annotated[int, Count(1, 100)] = 5
    """Searches per target, in a shuffled target order (stops early when every pair's order is
    decided)."""
    budget: Seconds = 1800.0
    """Time for the whole capacity run (at the top only)."""
    connections: Annotated[str, CONNECTIONS] = "keep-alive"
    """keep-alive: arrivals ride a pool of kept-alive connections; new: a new connection per
    request."""


# -- workloads -----------------------------------------------------------------------------------


class RampDoc(Section, title="ramp"):
    """N users arriving evenly over a duration, one request each."""

    users: Annotated[int, Count(1, MAX_USERS)]
    duration: Seconds
    """A duration."""


class ConstantRateDoc(Section, title="constant_rate"):
    """Requests per second for a duration."""

    rate: Annotated[float, Rate()]
    """Requests per second: 100/s, 100 req/s or a number."""
    duration: Seconds
    """A duration."""


ARRIVALS = Items(
    Rule.of(
        lambda v: _int(v) and v >= 0,
        "expected a whole number of arrivals, got {v}",
        {"type": "integer", "minimum": 0},
    ),
    "expected a non-empty list of arrivals per step such as [3, 5, 4], got {k}",
)


def _arrival_counts(value: Any) -> tuple[int, ...]:
    if isinstance(value, list) and len(value) > MAX_STEPS:
        fail(f"at most {MAX_STEPS:,} steps, got {len(value):,}; use a longer step")
    found: tuple[int, ...] = ARRIVALS.check(value)
    return found


FACTOR = Number(
    lambda v: 0 < v <= MAX_SCALE,
    f"expected a number above 0 and at most {MAX_SCALE:g}, got {{v}}",
    {"exclusiveMinimum": 0, "maximum": MAX_SCALE},
)


class ArrivalsDoc(Section, title="arrivals"):
    """A recorded arrival curve (``gatebench import`` writes it): ``counts[i]`` users arrive,
    evenly spaced, during step ``i`` (gatebench.core.plan._traffic)."""

    counts: Annotated[tuple[int, ...], Rule(_arrival_counts, ARRIVALS.schema)]
    """Users arriving in each step."""
    step: Seconds = 1.0
    """The length of one step (default 1s)."""
    scale: Annotated[float, FACTOR] = 1.0
    """Every count multiplied (the curve's shape and total kept to one request)."""
    speed: Annotated[float, FACTOR] = 1.0
    """Each step lasts step / speed: the same requests in less time."""


class InjectionDoc(Section, title="injection"):
    """How requests arrive: exactly one of at_once, ramp, constant_rate, arrivals, concurrent,
    sequential."""

    at_once: Users = None
    """N users, one request each, all at once."""
    ramp: Annotated[RampDoc | None, Model(RampDoc)] = None
    constant_rate: Annotated[ConstantRateDoc | None, Model(ConstantRateDoc)] = None
    arrivals: Annotated[ArrivalsDoc | None, Model(ArrivalsDoc)] = None
    concurrent: Annotated[int | None, Rule(_concurrent, USERS.schema)] = None
    """N users looping on kept-alive connections (give duration and/or requests)."""
    sequential: Requests = None
    """One user, N requests back to back."""
    duration: OptSeconds = None
    """With concurrent: how long the users loop."""
    requests: Requests = None
    """With concurrent: the total number of requests."""
    one_of = INJECTIONS
    one_of_message = (
        "give exactly one of at_once, ramp, constant_rate, arrivals, concurrent, sequential"
    )
    empty_is_none = True


def _whole(nonzero: bool = False) -> Rule:
    test: Callable[[Any], bool] = lambda v: _int(v) and (v != 0 or not nonzero)  # noqa: E731
    other = " other than 0" if nonzero else ""
    return Rule.of(test, f"expected a whole number{other}, got {{v}}", {"type": "integer"})


class CounterDoc(Section, title="counter"):
    """start, start + step, ... never repeating."""

    start: Annotated[int, _whole()] = 1
    step: Annotated[int, _whole(nonzero=True)] = 1


def _counter(value: Any) -> CounterDoc:
    return CounterDoc.model_validate({} if value in (None, True) else value)


def _bounds(value: Any) -> tuple[int, int]:
    bounds: Any = [value.get("min"), value.get("max")] if isinstance(value, dict) else value
    ok = isinstance(bounds, list) and len(bounds) == 2 and all(map(_int, bounds))
    if not ok or bounds[0] > bounds[1]:
        missing = [k for k in ("min", "max") if isinstance(value, dict) and k not in value]
        lacks = f": {missing[0]!r} is missing" if missing else ""
        fail(
            "expected [low, high] (or {min, max}) whole numbers with low <= high, got "
            f"{shown(value)}{lacks}"
        )
    low, high = bounds
    return int(low), int(high)


BOUNDS = Rule(_bounds, {"type": ["array", "object"], "items": {"type": "integer"}})
COUNTER = Rule(_counter, {"anyOf": [{"type": ["boolean", "null"]}, ref("CounterDoc")]})


LIST_WEIGHTS = Items(
    Rule.of(
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 1e15,
        "expected a number from 0, got {v}",
        {"type": "number", "minimum": 0},
    ),
    "expected a list of weights, one per value, got {v}",
)
OTHERS_PREFIX = r"^[A-Za-z0-9._~:@!$'()*+,;=-]{0,64}$"
"""What an ``others`` prefix may hold: it goes into URLs as written."""
PREFIX = Matching(
    OTHERS_PREFIX,
    "at most 64 letters, digits or URL-safe punctuation (no '/', '%', '?', '#', '&' or space)",
)


class OthersDoc(Section, title="others"):
    """``count`` more values of a weighted list, together drawn ``weight`` times as often as a
    value of weight 1: start, start + 1, ... or, with a prefix or a width, text."""

    count: Annotated[int, Count(1, MAX_OTHER_VALUES)]
    weight: Annotated[
        float,
        Number(
            lambda v: 0 < v < 1e15, "expected a number above 0, got {v}", {"exclusiveMinimum": 0}
        ),
    ]
    start: Annotated[int, Count(0, 2**53 - 1)] = 1
    prefix: Annotated[str | None, PREFIX] = None
    width: Annotated[int, Count(0, 32)] = 0
    """Digits the number is padded to with zeros."""

    def value(self, index: int) -> Any:
        """The ``index``-th of these values (0-based): a whole number, or with a prefix or a
        width, the prefix then the number padded with zeros to ``width`` digits."""
        return numbered_value(self.start + index, self.prefix, self.width)


class ParameterDoc(Section, title="a parameter"):
    """A constant value, or exactly one of value, list, range, random, counter."""

    value: Any_ = None
    """A constant."""
    list_: Annotated[Any, VALUES] = Field(None, alias="list")
    """Values in turn (order: random picks at random)."""
    order: Annotated[str, ORDER] = "sequential"
    weights: Annotated[tuple[float, ...] | None, LIST_WEIGHTS] = None
    """With list: how often each value is drawn (one weight per value; a recorded
    distribution, drawn at random)."""
    others: Annotated[OthersDoc | None, Model(OthersDoc)] = None
    """With weights: more values beyond the list, drawn uniformly among themselves."""
    range: Annotated[tuple[int, int] | None, BOUNDS] = None
    """[low, high] or {min, max}: cycles low..high."""
    random: Annotated[tuple[int, int] | None, BOUNDS] = None
    """[low, high] or {min, max}: uniform integers."""
    counter: Annotated[CounterDoc | None, COUNTER] = None
    one_of = ("value", "list", "range", "random", "counter")
    one_of_message = "give exactly one of value, list, range, random, counter"


class BinaryDoc(Section, title="binary"):
    """Generated binary content."""

    size: Annotated[int, Size()]
    """Its size (1kB, 8.6MB decimal; 16MiB binary; a bare number is bytes)."""
    content_type: Annotated[str | None, MEDIA] = None


class PartDoc(Section, title="a multipart part"):
    """Generated file content (size) or a text value."""

    size: OptSize = None
    """Generated file content of this size."""
    value: Any_ = None
    """A text value (may hold ${placeholders}); a list is one part per item, an object its
    JSON (application/json), a number or boolean its JSON text."""
    filename: Annotated[str | None, FILENAME] = None
    content_type: Annotated[str | None, MEDIA] = None


def _parts(value: Any) -> dict[str, PartDoc]:
    if not isinstance(value, dict) or not value:
        fail("expected a mapping of part name to {size: ...} or {value: ...}")
    return TypeAdapter(dict[str, PartDoc]).validate_python(value)


PARTS = Rule(_parts, {"type": "object", "additionalProperties": ref("PartDoc")})


class BodyDoc(Section, title="body"):
    """The request body: example, synthesized or none, or exactly one of example, synthesized,
    binary, multipart, json, text (with media_type)."""

    example: Annotated[Any, Anything({"type": ["string", "boolean"]})] = None
    """The description's example (optionally by name)."""
    synthesized: Annotated[Any, Anything({"type": "boolean"})] = None
    """Generated from the request body's schema."""
    binary: Annotated[BinaryDoc | None, Model(BinaryDoc)] = None
    multipart: Annotated[dict[str, PartDoc] | None, PARTS] = None
    """Part name to {size} (a file) or {value} (text)."""
    json_: Any_ = Field(None, alias="json")
    """A JSON value; ${name} takes a parameter's value."""
    text: Annotated[str | None, Text] = None
    media_type: Annotated[str | None, MEDIA] = None
    none: Annotated[Any, Anything({"type": "boolean"})] = None
    one_of = BODIES
    one_of_message = "give exactly one of example, synthesized, binary, multipart, json, text, none"


class WorkloadDoc(Section, title="a workload"):
    """One operation under one injection profile (read key by key by ``_build``)."""

    name: Annotated[str, WORKLOAD_NAME]
    """Letters, digits, '.', '_' or '-' (at most 64)."""
    operation: Str_
    """An operationId, or 'METHOD /path'."""
    injection: Annotated[Any, Anything(ref("InjectionDoc"))]
    params: Annotated[Any, Anything(PARAMS)] = None
    """Values per parameter or ${placeholder}."""
    headers: Annotated[Any, Anything(HEADERS)] = None
    """Extra request headers (never Authorization or Cookie: use auth)."""
    body: Annotated[
        Any, _alternatives({"enum": ["example", "synthesized", "none"]}, ref("BodyDoc"))
    ] = None
    expect: Annotated[tuple[int, ...] | None, EXPECT] = None
    """Statuses that count as OK; default any 2xx or 3xx."""
    timeout: Seconds = 60.0
    """Request timeout."""
    capacity: Annotated[Any, _alternatives({"type": "boolean"}, ref("CapacityDoc"))] = None
    elsewhere = dict.fromkeys(
        (*INJECTIONS, *_LOAD_WORDS), "how requests arrive goes in 'injection', " + _LOAD_EXAMPLE
    )


# -- policies ------------------------------------------------------------------------------------


class JwtDoc(Section, title="policies.auth.jwt"):
    issuer: Printable = None
    """The required 'iss' claim."""
    audience: Printable = None
    """The required 'aud' claim."""
    algorithms: Annotated[tuple[str, ...] | None, Listed(JWT_ALGORITHMS)] = None
    """Accepted signing algorithms (default: RS256 for an RSA key, ES256 for an EC key)."""
    keys: Annotated[str | None, KEYS_FILE] = None
    """The verification keys: a JWKS (.json) or PEM public key file inside the bundle, relative
    to the description."""


class ApiKeyDoc(Section, title="policies.auth.api_key"):
    header: TokenName = None
    """The header that carries the key (default: the description's apiKey scheme)."""
    query: TokenName = None
    """The query parameter that carries the key (default: the description's apiKey scheme)."""
    keys_env: Annotated[str, KEYS_ENV] = "GATEBENCH_API_KEYS"
    """The environment variable holding the valid keys, comma-separated; never the keys."""


def _or_empty(model: type[Section]) -> Rule:
    """The mapping, or null for an empty one."""
    schema = {"anyOf": [{"type": "null"}, ref(model.__name__)]}
    return Rule(lambda v: model.model_validate({} if v is None else v), schema)


class PolicyAuthDoc(Section, title="policies.auth"):
    """The gateway authenticates requests: give exactly one of jwt or api_key; what the
    description's securitySchemes say is used for what is left out."""

    jwt: Annotated[JwtDoc | None, _or_empty(JwtDoc)] = None
    api_key: Annotated[ApiKeyDoc | None, _or_empty(ApiKeyDoc)] = None
    one_of = ("jwt", "api_key")
    one_of_message = "give exactly one of 'jwt' or 'api_key'"


def _rate_key(value: Any) -> str:
    if value in ("address", "subject"):
        return str(value)
    if isinstance(value, str) and value.startswith("header:"):
        return "header:" + str(Token.check(value[len("header:") :]))
    fail(f"expected address, subject or header:NAME, got {shown(value)}")


class RateLimitDoc(Section, title="policies.rate_limit"):
    requests: Annotated[int, Count(1, 1_000_000_000)]
    """Requests allowed per window, per operation and per key (a limit for all operations
    applies to each operation separately); the next one gets 429."""
    window: Seconds = 1.0
    key: Annotated[str, Rule(_rate_key, STRING)] = "address"
    """What is counted: address, subject (the token's 'sub'), or header:NAME."""
    missing = "{key!r} (requests allowed per window) is required"


def _vary(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        fail(f"expected path, query or header:NAME, got {shown(value)}")
    parts, errors = [], []
    for i, part in enumerate(value):
        if part in ("path", "query"):
            parts.append(part)
        elif isinstance(part, str) and part.startswith("header:") and re.match(TOKEN, part[7:]):
            parts.append("header:" + part[7:].lower())
        else:
            errors.append(_error((i,), f"expected path, query or header:NAME, got {shown(part)}"))
    if errors:
        raise ValidationError.from_exception_data("vary", errors)
    if "path" not in parts:
        fail("the key always varies on 'path'; add it")
    return tuple(dict.fromkeys(parts))


class CacheDoc(Section, title="policies.cache"):
    ttl: Seconds
    """How long a response is served by the gateway."""
    methods: Annotated[tuple[str, ...], Listed(("GET", "HEAD"))] = ("GET",)
    """Cached methods."""
    vary: Annotated[tuple[str, ...], Rule(_vary, {"type": "array", "items": STRING})] = (
        "path",
        "query",
    )
    """Request parts the key varies on: path, query, header:NAME."""
    missing = "{key!r} (how long a response is served by the gateway) is required"


def _off(model: type[Section]) -> Rule:
    """``false`` turns a policy off; else the policy's mapping."""
    schema = {"anyOf": [{"const": False}, ref(model.__name__)]}
    return Rule(lambda v: False if v is False else model.model_validate(v), schema)


class OperationPoliciesDoc(Section, title="operation policies"):
    auth: Annotated[Any, _off(PolicyAuthDoc)] = None
    rate_limit: Annotated[Any, _off(RateLimitDoc)] = None
    cache: Annotated[Any, _off(CacheDoc)] = None


def _operations(value: Any) -> dict[str, OperationPoliciesDoc]:
    if not isinstance(value, dict):
        fail(f"expected a mapping of operationId → policies, got {kind(value)}")
    return TypeAdapter(dict[str, OperationPoliciesDoc]).validate_python(value)


OPERATIONS = Rule(
    _operations, {"type": "object", "additionalProperties": ref("OperationPoliciesDoc")}
)


class PoliciesDoc(OperationPoliciesDoc, title="policies"):
    """What every gateway must enforce in front of the API (docs/input.md, Policies):
    authentication, rate limiting, caching; for all operations, overridden per operationId
    under 'operations'."""

    operations: Annotated[dict[str, OperationPoliciesDoc], OPERATIONS] = Field(default_factory=dict)
    """operationId → that operation's policies (false turns one off)."""


# -- the plan --------------------------------------------------------------------------------------


def _warmup(value: Any) -> WarmupDoc:
    if value is False or value is None:
        return WarmupDoc.model_construct(duration=None, requests=None)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        # ``warmup: 3s`` is its duration, and a problem is the warm-up's own
        return WarmupDoc.model_construct(duration=Duration(zero=True).check(value), requests=None)
    return WarmupDoc.model_validate(value)


def _tls(value: Any) -> TlsDoc | None:
    if value is False or value is None:
        return None
    if not isinstance(value, dict) and value is not True:
        fail(f"expected true, false or a mapping {{key, http2, resumption}}, got {kind(value)}")
    return TlsDoc.model_validate({} if value is True else value)


WARMUP = Rule(
    _warmup, {"anyOf": [{"type": ["string", "number", "boolean", "null"]}, ref("WarmupDoc")]}
)
TLS = Rule(_tls, {"anyOf": [{"type": "boolean"}, ref("TlsDoc")]})
CAPACITY = _alternatives({"type": "boolean"}, ref("CapacityDoc"))
CPUS = _alternatives({"enum": ["pinned", "unpinned"]}, ref("CpusDoc"))


UTC_TIME = Matching(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", "a UTC time such as 2026-01-31T12:00:00Z"
)
FILES = Rule.of(
    lambda v: (
        isinstance(v, list)
        and bool(v)
        and all(isinstance(f, str) and f and len(f) <= 255 for f in v)
    ),
    "expected a list of file names, got {v}",
    {"type": "array", "minItems": 1, "items": {"type": "string", "maxLength": 255}},
)


class TrafficDoc(Section, title="traffic"):
    """The recorded traffic the workloads were imported from (``gatebench import`` writes it;
    the report names it)."""

    files: Annotated[tuple[str, ...], FILES]
    """The files read (names only)."""
    format: Annotated[
        str,
        Rule.of(
            lambda v: isinstance(v, str) and bool(v),
            "expected a format name such as 'combined', got {v}",
            STRING,
        ),
    ]
    requests: Annotated[int, Count(0, 2**62)]
    """Requests read."""
    matched: Annotated[int, Count(0, 2**62)]
    """Of those, requests matched to an operation of the description."""
    start: Annotated[str | None, UTC_TIME] = None
    """The first request's time (ISO 8601, UTC), when the files carry times."""
    end: Annotated[str | None, UTC_TIME] = None
    """The last request's time."""

    @property
    def matched_pct(self) -> float:
        return 100.0 * self.matched / self.requests if self.requests else 0.0


class PlanDoc(Section, title="x-gatebench"):
    """The benchmark plan: what to run, against which gateways, with which load
    (docs/input.md)."""

    spec: Str_ = None
    """In a benchmark file: the API description it measures (a path inside the same folder or
    zip)."""
    gateways: Annotated[Any, Anything({"type": ["array", "string"], "items": STRING})] = None
    """Gateways to measure (names or aliases; gatebench render --help lists them). Default: the
    gateways that run here."""
    baseline: BOOL = True
    """Also measure the backend without a gateway."""
    repetitions: Annotated[int, Count(1, MAX_REPETITIONS)] = 3
    """Repetitions of every target."""
    warmup: Annotated[WarmupDoc | None, WARMUP] = None
    """Load before the measured phases, excluded from the statistics: a duration, {duration},
    {requests}, or false (default 3s)."""
    order: Annotated[str, PLAN_ORDER] = "shuffled"
    """Target order per repetition."""
    seed: Annotated[int | None, Count(0, 2**63 - 1)] = None
    """Fixes the shuffle; recorded with the run when random."""
    backend: Annotated[BackendDoc | None, Model(BackendDoc)] = None
    tls: Annotated[TlsDoc | None, TLS] = None
    infrastructure: Annotated[InfrastructureDoc | None, Model(InfrastructureDoc)] = None
    auth: Annotated[Any, Anything(ref("AuthDoc"))] = None
    scoring: Annotated[ScoringDoc | None, Model(ScoringDoc)] = None
    workloads: Annotated[
        Any, Anything({"type": "array", "minItems": 1, "items": ref("WorkloadDoc")})
    ] = None
    """What to send: an operation and an injection profile each."""
    policies: Annotated[PoliciesDoc | None, Model(PoliciesDoc)] = None
    capacity: Annotated[Any, CAPACITY] = None
    engine: Annotated[
        str, Choice(ENGINES, f"unknown engine {{v}}; available: {', '.join(ENGINES)}")
    ] = "gatling"
    """The load engine (wrk: closed-model load only)."""
    answers: Annotated[AnswersDoc | None, Model(AnswersDoc)] = None
    fault: Annotated[FaultDoc | None, Model(FaultDoc)] = None
    cpus: Annotated[Any, CPUS] = None
    thresholds: Annotated[Any, Anything({"type": "array", "items": ref("ThresholdDoc")})] = None
    """Budgets a run must meet for `gatebench run --fail-on-threshold` and `gatebench report
    --format junit` (docs/ci.md)."""
    traffic: Annotated[TrafficDoc | None, Model(TrafficDoc)] = None
    credentials = True
    elsewhere = dict.fromkeys(
        (*INJECTIONS, *_LOAD_WORDS),
        "how requests arrive is each workload's 'injection', " + _LOAD_EXAMPLE,
    )


class ThresholdDoc(Section, title="a threshold"):
    """Read by gatebench.core.thresholds, which words its problems."""

    metric: str
    """p50, p90, p95, p99, min, mean, max, stddev, error_pct, throughput, overhead.<latency>,
    score."""
    max: str | float | None = None
    """Upper bound with its unit: 50ms, 1%, 500/s, 5ms or 20% for an overhead; a plain number
    for a score."""
    min: str | float | None = None
    """Lower bound with its unit (as max)."""
    gateway: str | None = None
    """The gateway (or baseline) it applies to; default every gateway."""
    workload: str | None = None
    """The workload it applies to; default every workload."""


# -- the published schema ------------------------------------------------------------------------

SCHEMA_NOTE = (
    "Generated from the plan's models (src/gatebench/core/plan/_document.py) by `make schema`; do "
    "not edit. gatebench reads every plan with those models, and editors complete plans from "
    "this file (docs/input.md)."
)


class _Schema(GenerateJsonSchema):
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _models(base: type[Section] = Section) -> list[type[Section]]:
    found = [m for sub in base.__subclasses__() for m in (sub, *_models(sub))]
    return [m for m in found if not m.__name__.startswith("_")]


def json_schema() -> dict[str, Any]:
    """The published schema: a document whose ``x-gatebench`` property is the plan."""
    defs = {
        m.__name__: m.model_json_schema(schema_generator=_Schema, by_alias=True) for m in _models()
    }
    return {
        "$comment": SCHEMA_NOTE,
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gatebench: an API description or benchmark file with its x-gatebench plan",
        "type": "object",
        "properties": {"x-gatebench": {"$ref": "#/$defs/PlanDoc"}},
        "$defs": {name: _tidy(defs[name]) for name in sorted(defs)},
    }


def schema_text() -> str:
    """The published file's text (``make schema`` writes it to :data:`SCHEMA_PATH`)."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def _tidy(node: Any) -> Any:
    """A model a rule names by ``x-ref`` becomes a ``$ref``; absent is no ``default: null``."""
    if isinstance(node, dict):
        if "x-ref" in node:
            return {"$ref": f"#/$defs/{node['x-ref']}"}
        return {k: _tidy(v) for k, v in node.items() if not (k == "default" and v is None)}
    return [_tidy(v) for v in node] if isinstance(node, list) else node


__all__ = [
    "BODIES",
    "INJECTIONS",
    "SCHEMA_PATH",
    "PlanDoc",
    "Reading",
    "Section",
    "WorkloadDoc",
    "is_credential_key",
    "json_schema",
    "schema_text",
]
