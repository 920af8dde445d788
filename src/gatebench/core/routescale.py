"""An API as it grows: the user's routes replicated to a route count, and what to probe.

Two kinds of run ask how a gateway copes with more routes and with a new configuration while
it serves traffic (docs/scale.md). Both start from the user's own description and make it
bigger the same way, decided here, once:

- **Replication.** The description's routes (operations that share a method and a path shape
  count once, as every gateway routes them once: ``renderers._routes.routes_for``) are copied
  in their order under distinct literal prefixes until the table holds exactly the size asked
  for: copy 0 is the description itself, copy *k* puts one segment ``/<stem><k>`` in front of
  every path template (``/pets/{id}`` → ``/r3/pets/{id}``; a server's base path stays in
  front: ``/v1/r3/pets/{id}``). The stem is ``r`` unless a route of the description already
  starts with ``r`` and digits, then ``rr``, and so on: a copy can never collide with a route
  of the description. Everything else of an operation (method, parameters, security, the
  path as written, escapes included) is kept as is, so each renderer escapes a copy exactly as
  it escapes the original; operation ids get ``__<stem><k>`` (made unique when needed).
- **Positions.** Gateways that try routes in order (nginx's regex map, HAProxy's ACLs,
  Varnish's ``if`` chain) pay more for a route late in the table: latency is measured for the
  routes at the start, the middle and the end of the table in priority order
  (:func:`table_positions`).
- **A correct answer.** A probe of a route sends the route's sample path
  (``Route.sample_path``: parameters filled with a plain value) to the gateway; the answer is
  correct when it is 2xx and comes from the echo backend that the configuration names, with
  the method and the path the client sent (:func:`answer_problem`).

Pure: nothing here opens a socket, a file or a process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gatebench.core.errors import PlanError, Problem
from gatebench.core.ir import Api, Operation
from gatebench.core.plan import Backend, Injection, Plan, Warmup, Workload
from gatebench.core.renderers._routes import Route, routes_for

MAX_ROUTES = 100_000
"""The largest table a scale run builds (rendering is linear, checkers are not always)."""
DEFAULT_SIZES = (10, 100, 1000, 10000)
POSITIONS = ("start", "middle", "end")
INSTANCE_HEADER = "x-gatebench-instance"
"""The echo backend's answer header naming its instance (``backend -instance NAME``): a
change of upstream is seen in the answers."""

_STEM_TAKEN = re.compile(r"([a-z]+)[0-9]+")
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def parse_sizes(text: str, where: str = "--routes") -> tuple[int, ...]:
    """``10,100,1000`` → (10, 100, 1000): positive, increasing, at most :data:`MAX_ROUTES`."""
    sizes: list[int] = []
    problems: list[str] = []
    for i, part in enumerate(text.split(",")):
        item = part.strip()
        if not item.isdigit() or int(item) < 1:
            problems.append(
                f"item {i + 1}: expected a positive whole number of routes; got {item!r}"
            )
            continue
        n = int(item)
        if n > MAX_ROUTES:
            problems.append(f"item {i + 1}: at most {MAX_ROUTES} routes; got {n}")
        elif sizes and n <= sizes[-1]:
            problems.append(f"item {i + 1}: sizes must increase; got {n} after {sizes[-1]}")
        else:
            sizes.append(n)
    if problems:
        raise PlanError([Problem(where, p) for p in problems])
    return tuple(sizes)


def distinct_routes(api: Api) -> tuple[Operation, ...]:
    """The description's operations that route separately, in the description's order."""
    firsts = {id(r.operation) for r in routes_for(api)}
    return tuple(op for op in api.operations if id(op) in firsts)


def prefix_stem(api: Api) -> str:
    """``r``, or a longer run of ``r`` when a route of ``api`` starts with that and digits."""
    firsts = set()
    for op in api.operations:
        first = op.path_template.lstrip("/").split("/", 1)[0]
        match = _STEM_TAKEN.fullmatch(first)
        if match:
            firsts.add(match.group(1))
    stem = "r"
    while stem in firsts:
        stem += "r"
    return stem


def replicate(api: Api, routes: int) -> Api:
    """``api`` with exactly ``routes`` routes: its own, then prefixed copies (module docstring).

    Deterministic: the same description and size give the same operations in the same order.
    Fewer routes than the description has keeps its first ``routes`` routes.
    """
    if not isinstance(routes, int) or isinstance(routes, bool) or not 0 < routes <= MAX_ROUTES:
        raise PlanError(f"expected 1 to {MAX_ROUTES} routes; got {routes!r}", pointer="routes")
    base = distinct_routes(api)
    if not base:
        raise PlanError("the description has no operation to replicate", pointer="/paths")
    stem = prefix_stem(api)
    taken = {op.operation_id for op in base}
    out: list[Operation] = []
    copy = 0
    while len(out) < routes:
        for op in base:
            if len(out) == routes:
                break
            out.append(op if copy == 0 else _copy(op, f"{stem}{copy}", taken))
        copy += 1
    return replace(api, operations=tuple(out))


def _copy(op: Operation, prefix: str, taken: set[str]) -> Operation:
    op_id = f"{op.operation_id}__{prefix}"
    n = 2
    while op_id in taken:
        op_id = f"{op.operation_id}__{prefix}_{n}"
        n += 1
    taken.add(op_id)
    return replace(op, operation_id=op_id, path_template=f"/{prefix}{op.path_template}")


def added_routes(before: Api, after: Api) -> tuple[Operation, ...]:
    """Operations of ``after`` that ``before`` does not route (by method and route path)."""
    old = {(op.method, op.route_path) for op in before.operations}
    return tuple(op for op in after.operations if (op.method, op.route_path) not in old)


def table_positions(count: int) -> dict[str, int]:
    """Index in priority order of the route at the start, the middle and the end."""
    if count < 1:
        raise PlanError(f"a route table needs at least one route; got {count}", pointer="routes")
    return {"start": 0, "middle": count // 2, "end": count - 1}


def routes_at_positions(api: Api) -> dict[str, Route]:
    """The routes at :func:`table_positions` of ``api``'s table (priority order)."""
    table = routes_for(api)
    return {name: table[i] for name, i in table_positions(len(table)).items()}


@dataclass(frozen=True)
class Probe:
    """One request that proves a route is served: what to send and what must come back."""

    operation_id: str
    method: str
    path: str
    """The request target as the client sends it (percent-encoded)."""

    @classmethod
    def for_route(cls, route: Route) -> Probe:
        return cls(route.operation_id, route.method, route.sample_path())


def probes_for(api: Api, operations: Sequence[Operation] | None = None) -> tuple[Probe, ...]:
    """A probe per route of ``api`` (only the routes of ``operations`` when given), in
    ``api``'s table order."""
    wanted = None if operations is None else {id(op) for op in operations}
    return tuple(
        Probe.for_route(r) for r in routes_for(api) if wanted is None or id(r.operation) in wanted
    )


def normal_path(path: str) -> str:
    """``path`` in RFC 3986's syntax-based normal form (escapes of unreserved characters
    decoded, the others upper-cased): how a gateway that normalizes forwards it."""

    def one(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if _UNRESERVED.fullmatch(char) else match.group(0).upper()

    return _ESCAPE.sub(one, path)


def answer_problem(
    probe: Probe,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    instance: str | None = None,
    normalizes_path: bool = False,
) -> str | None:
    """Why an answer to ``probe`` is not the correct one, or None when it is.

    Correct: a 2xx from the echo backend (``instance``: that instance of it), which saw the
    probe's method and path (in normal form for a gateway that normalizes; a HEAD answer has
    no body to compare). ``headers`` have lower-case names.
    """
    if not 200 <= status < 300:
        return f"status {status}"
    if instance is not None and headers.get(INSTANCE_HEADER) != instance:
        got = headers.get(INSTANCE_HEADER)
        return f"answered by backend {got!r}, not {instance!r}" if got else "not from the backend"
    if probe.method == "HEAD":
        return None
    try:
        echo = json.loads(body)
    except ValueError:
        return "the answer is not the echo backend's JSON"
    if not isinstance(echo, dict):
        return "the answer is not the echo backend's JSON"
    if echo.get("method") != probe.method:
        return f"the backend saw method {echo.get('method')!r}"
    seen = echo.get("path")
    if seen != probe.path and not (normalizes_path and seen == normal_path(probe.path)):
        return f"the backend saw path {seen!r}"
    return None


OK_STATUSES = tuple(range(200, 300))
LOAD_TARGET = "gateway"
"""The one target of a constant-rate load plan (:func:`rate_plan`)."""
WARMUP_WORKLOAD = "__warmup__"
"""The warm-up of a constant-rate load plan: the first route at the same rate, not measured."""


def rate_plan(
    routes: Mapping[str, str],
    *,
    rate: float,
    duration_s: float,
    warmup_s: float,
) -> Plan:
    """A plan that loads each route of ``routes`` (label → operation id) in turn at a
    constant ``rate`` (requests per second) for ``duration_s``, after a warm-up of
    ``warmup_s`` seconds on the first route at the same rate (the workload
    :data:`WARMUP_WORKLOAD`: the load engine's own first seconds are slow, and the arrivals of
    an open model take another path through it than a closed warm-up's); only a 2xx counts as
    OK. One target (:data:`LOAD_TARGET`), in front of gatebench's echo backends (which sign
    every answer, in its header and in its body), no baseline, one repetition, fixed order."""
    items = list(routes.items())
    if warmup_s > 0 and items:
        items.insert(0, (WARMUP_WORKLOAD, items[0][1]))
    workloads = tuple(
        Workload(
            label,
            op_id,
            Injection(
                "constant_rate",
                rate=float(rate),
                duration=float(warmup_s if label == WARMUP_WORKLOAD else duration_s),
            ),
            expect=OK_STATUSES,
        )
        for label, op_id in items
    )
    return Plan(
        gateways=(LOAD_TARGET,),
        baseline=False,
        repetitions=1,
        warmup=Warmup(duration=None),
        order="fixed",
        seed=0,
        backend=Backend("builtin", builtin="echo"),
        workloads=workloads,
    )


def sizes_problem(sizes: Sequence[int], available: int) -> Problem | None:
    """A located problem when a size is below the description's own route count."""
    small = [n for n in sizes if n < available]
    if not small:
        return None
    return Problem(
        "/paths",
        f"the description has {available} routes; a table of {small[0]} keeps only its first "
        f"{small[0]}",
    )


__all__ = [
    "DEFAULT_SIZES",
    "INSTANCE_HEADER",
    "LOAD_TARGET",
    "MAX_ROUTES",
    "POSITIONS",
    "WARMUP_WORKLOAD",
    "Probe",
    "added_routes",
    "answer_problem",
    "distinct_routes",
    "normal_path",
    "parse_sizes",
    "prefix_stem",
    "probes_for",
    "rate_plan",
    "replicate",
    "routes_at_positions",
    "sizes_problem",
    "table_positions",
]
