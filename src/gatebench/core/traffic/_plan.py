"""From what an import derived to an ordinary plan: one workload per operation the traffic
reached, each replaying its own recorded arrival curve (``injection: {arrivals: ...}``), with
generators that give its parameters the recorded value distribution, and ``traffic:`` naming
where it came from. ``build_plan`` reads the result like any plan (the import checks it does).

Privacy (docs/input.md, "From your traffic"): a value reaches the plan only when the user
allows it (``--keep-values``, for every parameter or the ones named) and never when the
parameter is named like a secret or the value looks like a token (a JWT); values the
description itself enumerates (``enum``, booleans) are its own, not the traffic's. Every other
value is replaced by a synthetic one with the same frequency: the k-th most frequent value
becomes the k-th synthetic value (``1``, ``2``, ..., ``v1``, ``v2``, ... or another numbered
form valid for the parameter's schema: :func:`gatebench.core.synth.numbered`), and the values
past the most frequent :data:`TOP_VALUES` become ``others`` with their count and share, so a
cache in front of the API sees the recorded hit rate. Headers, cookies, bodies, addresses and
user agents are never read into anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, unquote_plus

from gatebench.core.ir import Api, Operation, Parameter
from gatebench.core.plan import MAX_REQUESTS, MAX_STEPS, OTHERS_PREFIX, scaled_counts
from gatebench.core.stats import counted
from gatebench.core.synth import dereferenced, numbered, numbered_value, synthesize
from gatebench.core.traffic._stats import OperationStats, ValueCounts, is_secret_name

TOP_VALUES = 100
"""The most frequent values of a parameter listed one by one (with their weights)."""
_WORKLOAD_NAME = re.compile(r"[^A-Za-z0-9_.-]")
_JWT = re.compile(r"^eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*$")
_INTEGER = re.compile(r"^-?\d{1,15}$")


def misfit(why: str) -> str:
    """Said, in its comment and in a note of the import, of values the plan replays that the
    description refuses."""
    return f" that its schema refuses ({why}): give valid ones in params"


NO_FIT = "no numbered values fit it"
"""Why a parameter's synthetic values refuse its schema: none that fit it were found."""
_ITEMS = re.compile(r"[,| ]")
"""What separates a list parameter's items as it is written (form, pipe- or space-delimited)."""
_BINARY_MEDIA = re.compile(r"^(application/octet-stream|image/|video/|audio/|application/pdf)")


@dataclass(frozen=True)
class KeepValues:
    """Which parameters keep their recorded values: all, or those named."""

    everything: bool = False
    names: frozenset[str] = frozenset()

    def allows(self, name: str) -> bool:
        return self.everything or name in self.names


@dataclass(frozen=True)
class OperationCurve:
    """One operation's share of the replay: its arrival counts per step (trimmed to its first
    and last arrival)."""

    operation: Operation
    stats: OperationStats
    counts: tuple[int, ...]
    start_step: int
    """The step number (since 1970, in steps) of ``counts[0]``."""


@dataclass
class PlanResult:
    section: dict[str, Any]
    comments: dict[str, list[str]] = field(default_factory=dict)
    """Workload name → comment lines written above it."""
    notes: list[str] = field(default_factory=list)
    """What the import decided and the user should know."""
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """(operation id, why) for the operations the traffic reached but the plan leaves out."""


def _schema(param: Parameter | None, api: Api) -> dict[str, Any]:
    return _schema_of(param.schema if param is not None else None, api)


def _schema_of(found: Any, api: Api) -> dict[str, Any]:
    return dereferenced(found, api.schemas)


def _enumerated(schema: dict[str, Any]) -> set[str] | None:
    """The texts a schema enumerates (its enum, or a boolean's), None when it does not."""
    enum = schema.get("enum")
    if isinstance(enum, list):
        return {str(e).lower() if isinstance(e, bool) else str(e) for e in enum}
    return {"true", "false"} if schema.get("type") == "boolean" else None


def _is_array(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "array" or "array" in (schema.get("type") or ())


def _min_items(schema: dict[str, Any]) -> int:
    found = schema.get("minItems")
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def _typed(text: str, schema: dict[str, Any]) -> Any:
    """A recorded value as the plan writes it: a whole number for an integer parameter."""
    if schema.get("type") in ("integer", "number") and _INTEGER.match(text):
        return int(text)
    if schema.get("type") == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def workload_name(operation_id: str, taken: set[str]) -> str:
    base = _WORKLOAD_NAME.sub("-", operation_id).strip("-._")[:60] or "operation"
    if not base[0].isalnum():
        base = "op-" + base
    name, n = base, 2
    while name in taken:
        name = f"{base}-{n}"
        n += 1
    taken.add(name)
    return name


def value_generator(
    counts: ValueCounts,
    param: Parameter | None,
    api: Api,
    *,
    keep: bool,
    decode: bool,
    query: bool,
) -> tuple[Any, str, str | None]:
    """A parameter's generator from its recorded values, a comment on what it keeps, and why its
    schema refuses them (None when it does not: :func:`misfit`)."""
    schema = _schema(param, api)
    top = counts.top(TOP_VALUES)
    texts = [(unquote_plus(v) if query else unquote(v)) if decode else v for v, _ in top]
    estimated = "" if counts.exact else " (estimated)"
    shown = f"{counts.distinct:,}{estimated} distinct value{'' if counts.distinct == 1 else 's'}"
    allowed = _enumerated(schema)
    items = _enumerated(_schema_of(schema.get("items"), api)) if _is_array(schema) else None
    if allowed is not None or items is not None:
        pairs = [
            (_typed(t, schema), c)
            for t, (_, c) in zip(texts, top, strict=True)
            if t in (allowed or ()) or (items is not None and set(_ITEMS.split(t)) <= items)
        ]
        if not pairs:
            return None, "", None
        comment = f"{shown}, the description's own (enum)"
        return _weighted([v for v, _ in pairs], [c for _, c in pairs], None), comment, None
    kept = keep and not any(_JWT.match(t) for t in texts)
    listed = len(top)
    listed_total = sum(c for _, c in top)
    rest_count = max(0, counts.distinct - listed)
    rest_weight = max(0, counts.total - listed_total)
    integer = schema.get("type") in ("integer", "number")
    if kept:
        values = [_typed(t, schema) for t in texts]
        if integer and all(isinstance(v, int) for v in values):
            start = max([v for v in values if isinstance(v, int)], default=0) + 1
            others = _others(rest_count, rest_weight, start=start)
        else:
            others = _others(rest_count, rest_weight, start=1, prefix="gb-")
        what, refused = "recorded values (--keep-values)", None
    else:
        # an array that may hold one item gets one a request (ids=5: a list of one, valid
        # exploded or not), numbered as its items are
        one_item = _is_array(schema) and _min_items(schema) <= 1
        target = _schema_of(schema.get("items"), api) if one_item else schema
        form = numbered(target, listed + rest_count, OTHERS_PREFIX)
        fits = form is not None
        start, prefix, width = form or (
            (_synthetic_start(schema), None, 0) if integer else (1, "v", 0)
        )
        values = [numbered_value(start + i, prefix, width) for i in range(listed)]
        if not fits and listed + rest_count == 1:  # one value: the schema's own example fits
            values, fits = [synthesize(schema, api.schemas)], True
        others = _others(rest_count, rest_weight, start=start + listed, prefix=prefix, width=width)
        refused = None if fits else NO_FIT
        what = "synthetic values with the recorded frequencies" + ("" if fits else misfit(NO_FIT))
        what += ", one item a request" if one_item and form is not None else ""
    comment = f"{shown}; {what}"
    if counts.distinct == 1 and others is None:
        # a list or mapping (an array's own example) is written by the style: {value: ...}
        one = {"value": values[0]} if isinstance(values[0], list | dict) else values[0]
        return one, comment, refused
    return _weighted(values, [c for _, c in top], others), comment, refused


_DEEP_KEY = re.compile(r"^([^\[\]]+)\[([^\[\]]*)\]$")


def _deep_owner(name: str, declared: dict[str, Parameter]) -> tuple[Parameter, str] | None:
    """The ``deepObject`` query parameter a recorded name such as ``filter[status]`` is a key
    of (OpenAPI's "Style Values"), and the key."""
    match = _DEEP_KEY.match(name)
    param = declared.get(match[1]) if match else None
    if match is None or param is None or param.style != "deepObject":
        return None
    return param, match[2]


def _deep_value(
    param: Parameter, keys: list[str], stats: OperationStats, api: Api, keep: bool
) -> dict[str, Any]:
    """One value of a ``deepObject`` parameter, with the keys the traffic gave it: each the most
    frequent recorded value (``--keep-values``) or one from its property's schema."""
    found = _schema(param, api).get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    out: dict[str, Any] = {}
    for key in keys:
        schema = _schema_of(props.get(key), api)
        recorded = stats.query_values.get(f"{param.name}[{key}]")
        top = recorded.top(1) if recorded is not None and keep else []
        out[key] = (
            _typed(unquote_plus(top[0][0]), schema) if top else synthesize(schema, api.schemas)
        )
    return out


def _synthetic_start(schema: dict[str, Any]) -> int:
    minimum = schema.get("minimum")
    if isinstance(minimum, int | float) and not isinstance(minimum, bool) and minimum > 1:
        return math.ceil(minimum)
    return 1


def _others(
    count: int, weight: int, *, start: int, prefix: str | None = None, width: int = 0
) -> dict[str, Any] | None:
    if count <= 0 or weight <= 0:
        return None
    out: dict[str, Any] = {"count": count, "weight": weight, "start": start}
    if prefix is not None:
        out["prefix"] = prefix
    if width:
        out["width"] = width
    return out


def _weighted(values: list[Any], weights: list[int], others: dict[str, Any] | None) -> Any:
    if len(values) == 1 and others is None:
        return values[0]
    out: dict[str, Any] = {"list": values, "weights": weights}
    if others is not None:
        out["others"] = others
    return out


def format_step(seconds: float) -> str:
    if seconds >= 1 and abs(seconds - round(seconds)) < 1e-9:
        return f"{round(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def coarsen(counts: Sequence[int], factor: int) -> tuple[int, ...]:
    """Every ``factor`` steps summed into one."""
    return tuple(sum(counts[i : i + factor]) for i in range(0, len(counts), factor))


def build_section(
    api: Api,
    curves: Sequence[OperationCurve],
    *,
    step: float,
    keep: KeepValues,
    scale: float = 1.0,
    speed: float = 1.0,
    traffic: dict[str, Any],
    spec_ref: str | None,
    min_requests: int = 1,
) -> PlanResult:
    """The ``x-gatebench`` section replaying ``curves``."""
    section: dict[str, Any] = {}
    if spec_ref is not None:
        section["spec"] = spec_ref
    section["traffic"] = traffic
    result = PlanResult(section)
    taken: set[str] = set()
    workloads: list[dict[str, Any]] = []
    labels: set[str] = set()
    for curve in curves:
        op, stats = curve.operation, curve.stats
        if stats.requests < min_requests:
            result.left_out.append(
                (
                    op.operation_id,
                    f"{counted(stats.requests, 'request')}, fewer than --min-requests {min_requests}",
                )
            )
            continue
        counts = curve.counts
        if not sum(counts):
            result.left_out.append((op.operation_id, "no request in the chosen window"))
            continue
        this_step = step
        if len(counts) > MAX_STEPS:
            factor = math.ceil(len(counts) / MAX_STEPS)
            counts = coarsen(counts, factor)
            this_step = step * factor
            result.notes.append(
                f"{op.operation_id}: its curve spans {len(curve.counts):,} steps; kept at "
                f"{format_step(this_step)} steps (at most {MAX_STEPS:,}): choose a --window "
                "to keep the recorded resolution"
            )
        total = round(sum(counts) * scale)
        if total > MAX_REQUESTS:
            result.left_out.append(
                (
                    op.operation_id,
                    f"replaying it sends {total:,} requests, above {MAX_REQUESTS:,}: choose a "
                    "shorter --window or a smaller --scale",
                )
            )
            continue
        name = workload_name(op.operation_id, taken)
        arrivals: dict[str, Any] = {"step": format_step(this_step), "counts": list(counts)}
        if scale != 1:
            arrivals["scale"] = scale
        if speed != 1:
            arrivals["speed"] = speed
        workload: dict[str, Any] = {"name": name, "operation": op.operation_id}
        params, comments, refusals = _params(op, stats, api, keep)
        if params:
            workload["params"] = params
        body = _body(op, stats)
        if body is not None:
            workload["body"] = body
        workload["injection"] = {"arrivals": arrivals}
        workloads.append(workload)
        replayed = scaled_counts(tuple(counts), scale)  # as the plan reads it back
        result.comments[name] = [*_describe(op, stats, replayed, this_step / speed), *comments]
        result.notes += [f"{name}: {param} takes values{misfit(why)}" for param, why in refusals]
        labels.update(p for p in op.security_label.split("+") if p != "none")
    section["workloads"] = workloads
    auth = _auth(labels)
    if auth:
        section["auth"] = auth
        result.notes.append(
            "the operations need credentials: set "
            + ", ".join(sorted(_env_names(auth)))
            + " in the environment before `gatebench run` (the plan names the variables, "
            "never a value)"
        )
    return result


def _params(
    op: Operation, stats: OperationStats, api: Api, keep: KeepValues
) -> tuple[dict[str, Any], list[str], list[tuple[str, str]]]:
    """The workload's ``params``, a comment on each parameter the traffic had, and each
    parameter whose replayed values its schema refuses, with why."""
    out: dict[str, Any] = {}
    comments: list[str] = []
    refusals: list[tuple[str, str]] = []
    by_name = {p.name: p for p in op.path_params}
    secret_query = {
        s.param_name
        for requirement in op.security
        for s in requirement.schemes
        if s.kind == "apiKey" and s.location == "query" and s.param_name
    }
    for name, counts in stats.path_values.items():
        if is_secret_name(name):
            comments.append(f"{name}: named like a secret, its values are never kept")
            continue
        gen, comment, refused = value_generator(
            counts, by_name.get(name), api, keep=keep.allows(name), decode=True, query=False
        )
        if gen is not None:
            out[name] = gen
            comments.append(f"{name}: {comment}")
            refusals += [(name, refused)] if refused else []
    declared = {p.name: p for p in op.query_params}
    deep: dict[str, list[str]] = {}  # a deepObject parameter → its keys the traffic gave
    deep_seen: dict[str, float] = {}
    for name, seen in sorted(stats.query_seen.items(), key=lambda kv: -kv[1]):
        share = 100.0 * seen / stats.requests if stats.requests else 0.0
        if name in secret_query or name in stats.secret_queries:
            comments.append(
                f"{name}: in {share:.0f} % of requests; named like a secret, never kept"
            )
            continue
        owner = _deep_owner(name, declared) if name not in declared else None
        if owner is not None:
            deep.setdefault(owner[0].name, []).append(owner[1])
            deep_seen[owner[0].name] = max(deep_seen.get(owner[0].name, 0.0), share)
            continue
        if name not in declared:
            comments.append(
                f"{name}: in {share:.0f} % of requests but not a parameter of the description"
            )
            continue
        param = declared[name]
        if share < 50 and not param.required:
            comments.append(
                f"{name}: in {share:.0f} % of requests; left out (a workload sends a parameter "
                "always or never)"
            )
            continue
        recorded = stats.query_values.get(name)
        if recorded is None:
            continue
        gen, comment, refused = value_generator(
            recorded, param, api, keep=keep.allows(name), decode=True, query=True
        )
        if gen is not None:
            out[name] = gen
            if recorded.total > seen:  # tag=a&tag=b: a workload draws one value a request
                comment += (
                    f"; repeated within a request ({recorded.total:,} values in {seen:,} "
                    "requests), replayed one value a request"
                )
                least = _min_items(_schema(param, api))
                if least > 1 and refused is None:
                    refused = f"at least {least} items a request"
                    comment += ", values" + misfit(refused)
            comments.append(f"{name}: in {share:.0f} % of requests; {comment}")
            refusals += [(name, refused)] if refused else []
    for name, keys in deep.items():
        share, param = deep_seen[name], declared[name]
        written = ", ".join(f"{name}[{k}]" for k in keys)
        if share < 50 and not param.required:
            comments.append(
                f"{written}: in {share:.0f} % of requests; left out (a workload sends a "
                "parameter always or never)"
            )
            continue
        kept = keep.allows(name)
        out[name] = {"value": _deep_value(param, keys, stats, api, kept)}
        comments.append(
            f"{written}: in {share:.0f} % of requests, keys of the deepObject parameter {name}; "
            + ("its most frequent recorded value" if kept else "a value from its schema")
            + " for each, the same in every request (an object's values are not drawn)"
        )
    return out, comments, refusals


def _body(op: Operation, stats: OperationStats) -> dict[str, Any] | None:
    """A binary upload of the recorded median size, when the operation takes one and the
    traffic logged sizes; otherwise the description's own body (the plan's default)."""
    if op.request_body is None or not stats.sizes:
        return None
    media = op.request_body.content[0].media_type if op.request_body.content else ""
    if not _BINARY_MEDIA.match(media):
        return None
    median = _quantile(stats.sizes, 0.5)
    return {"binary": {"size": int(median), "content_type": media}}


def _quantile(values: dict[int, int], q: float) -> float:
    total = sum(values.values())
    seen = 0
    for value in sorted(values):
        seen += values[value]
        if seen >= q * total:
            return float(value)
    return 0.0


def _describe(
    op: Operation, stats: OperationStats, counts: Sequence[int], step: float
) -> list[str]:
    lines = [f"{op.method} {op.route_path}: {counted(stats.requests, 'request')} recorded"]
    peak = max(counts, default=0)
    if counts:
        lines[0] += (
            f"; replayed: {sum(counts):,} over {format_step(step * len(counts))}, peak {peak / step:,.4g}/s"
        )
    total = sum(stats.statuses.values())
    if total:
        mix = ", ".join(
            f"{code} {100.0 * n / total:.1f} %" for code, n in stats.statuses.most_common(4)
        )
        lines.append(f"statuses: {mix}")
    largest = max(stats.sizes.keys(), default=0)
    if largest:
        lines.append(
            f"request sizes: median {_quantile(stats.sizes, 0.5):,.0f} B, "
            f"p90 {_quantile(stats.sizes, 0.9):,.0f} B, max {largest:,} B"
        )
    return lines


def _auth(labels: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if labels & {"bearer", "oauth2", "openIdConnect"}:
        out["bearer"] = {"env": "API_TOKEN"}
    if "basic" in labels:
        out["basic"] = {"username_env": "API_USERNAME", "password_env": "API_PASSWORD"}
    if any(label.startswith("apiKey") for label in labels):
        out["api_key"] = {"env": "API_KEY"}
    return out


def _env_names(auth: dict[str, Any]) -> list[str]:
    return [v for section in auth.values() for v in section.values()]


__all__ = [
    "TOP_VALUES",
    "KeepValues",
    "OperationCurve",
    "PlanResult",
    "build_section",
    "coarsen",
    "format_step",
    "value_generator",
    "workload_name",
]
