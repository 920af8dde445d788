"""The ``capacity`` settings: ``x-gatebench.kinds.capacity`` (the defaults of every workload) and
``workloads[i].capacity`` (one workload's overrides, or ``false`` to leave it out of the
search), read with located messages into a :class:`CapacityPlan`.

::

    capacity:
      objective: {p99: 50ms, error_pct: 0.1%}   # what "carried" means
      start_rate: 100/s                         # the first probe's arrival rate
      max_rate: 100000/s                        # the search never offers more
      growth: 2                                 # each growth probe offers this many times more
      precision: 5%                             # bisection stops at high / low − 1 ≤ 5 %
      warmup: 1s                                # each probe, at its rate, excluded
      probe: 2s                                 # measured part of a probe
      confirm: 5s                               # the confirmation run at the rate found (0: none)
      repetitions: 5                            # searches per target, shuffled order
      budget: 30m                               # the whole capacity run
      connections: keep-alive                   # or new: a new connection per request

An objective that names no latency keeps the default ``p99 ≤ 50 ms``; one that does not name
``error_pct`` keeps ``errors ≤ 0.1 %`` (a gateway answering errors fast must not carry more).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gatebench.core.plan._model import (
    MAX_RATE,
    OBJECTIVE_LATENCY_METRICS,
    Capacity,
    CapacityPlan,
    Objective,
)
from gatebench.core.plan._reader import Reader, _kind, _show
from gatebench.core.thresholds import bound_of

MAX_CAPACITY_REPETITIONS = 100
MAX_GROWTH = 10.0
MIN_PRECISION_PCT = 0.1
MAX_PRECISION_PCT = 50.0
_DEFAULTS = Capacity()


def read_capacity(section: dict[str, Any], workloads: Any, r: Reader) -> CapacityPlan | None:
    """The plan's capacity settings, or None when neither the plan nor a workload gives any."""
    default = _DEFAULTS
    given = "capacity" in section
    if given:
        value = section["capacity"]
        if value is False:
            r.error(
                ["capacity"],
                "capacity: false at the top leaves nothing out; remove it, or write "
                "capacity: false in a workload to leave that workload out of the search",
            )
        elif value is not True:
            default = _settings(value, ["capacity"], _DEFAULTS, r)
    overrides: list[tuple[str, Capacity | None]] = []
    if isinstance(workloads, list):
        for i, raw in enumerate(workloads):
            if not isinstance(raw, dict) or "capacity" not in raw:
                continue
            given = True
            name = raw.get("name")
            value = raw["capacity"]
            if value is False:
                overrides.append((str(name), None))
            elif value is not True:
                overrides.append(
                    (str(name), _settings(value, ["workloads", i, "capacity"], default, r))
                )
    if not given:
        return None
    return CapacityPlan(default=default, workloads=tuple(overrides))


def _settings(value: Any, where: list[str | int], base: Capacity, r: Reader) -> Capacity:
    """``base`` with the keys of one ``capacity`` mapping applied."""
    data = r.mapping(value, where, "capacity")
    out: dict[str, Any] = {}
    if "objective" in data:
        objective = _objective(data["objective"], [*where, "objective"], r)
        if objective is not None:
            out["objective"] = objective
    for key in ("start_rate", "max_rate"):
        if key in data:
            rate = _rate(data[key], [*where, key], r)
            if rate is not None:
                out[key] = rate
    if "growth" in data:
        growth = data["growth"]
        if (
            isinstance(growth, bool)
            or not isinstance(growth, int | float)
            or not 1 < growth <= MAX_GROWTH
        ):
            r.error(
                [*where, "growth"],
                f"expected a factor above 1 and at most {MAX_GROWTH:g} (such as 2), "
                f"got {_show(growth)}",
            )
        else:
            out["growth"] = float(growth)
    if "precision" in data:
        precision = _percent(data["precision"], [*where, "precision"], r)
        if precision is not None:
            out["precision"] = precision / 100.0
    for key, zero in (("warmup", True), ("probe", False), ("confirm", True)):
        if key in data:
            seconds = r.duration(data[key], [*where, key], allow_zero=zero)
            if seconds is not None:
                out[key] = seconds
    if "repetitions" in data:
        reps = r.integer(data["repetitions"], [*where, "repetitions"], 1, MAX_CAPACITY_REPETITIONS)
        if reps is not None:
            out["repetitions"] = reps
    if "budget" in data and where[0] == "workloads":
        r.error(
            [*where, "budget"],
            "the budget is the whole capacity run's: give it in x-gatebench.kinds.capacity",
        )
    elif "budget" in data:
        budget = r.duration(data["budget"], [*where, "budget"])
        if budget is not None:
            out["budget"] = budget
    if "connections" in data:
        connections = data["connections"]
        if connections not in ("keep-alive", "new"):
            r.error(
                [*where, "connections"],
                "expected 'keep-alive' (a pool of kept-alive connections) or 'new' "
                f"(a new connection per request), got {_show(connections)}",
            )
        else:
            out["connections"] = connections
    settings = replace(base, **out)
    if settings.max_rate < settings.start_rate:
        key = "max_rate" if "max_rate" in out else "start_rate"
        r.error(
            [*where, key],
            f"max_rate ({settings.max_rate:g}/s) is below start_rate ({settings.start_rate:g}/s)",
        )
    return settings


def _objective(value: Any, where: list[str | int], r: Reader) -> Objective | None:
    data = r.mapping(value, where, "objective")
    if not data:
        if isinstance(value, dict):
            r.error(where, "an objective needs at least one bound, such as {p99: 50ms}")
        return None
    latency: list[tuple[str, float]] = []
    error_pct = Objective().error_pct
    ok = True
    for metric, raw in data.items():
        if metric not in (*OBJECTIVE_LATENCY_METRICS, "error_pct"):
            continue  # the schema refused it: reported by r.mapping
        found = bound_of(str(metric), raw)
        if isinstance(found, str):
            r.error([*where, metric], found)
            ok = False
            continue
        if metric == "error_pct":
            error_pct = found[0]
        elif found[0] <= 0:
            r.error([*where, metric], f"a latency objective must be above 0 ms, got {_show(raw)}")
            ok = False
        else:
            latency.append((str(metric), found[0]))
    if not ok:
        return None
    return Objective(latency=tuple(latency) or Objective().latency, error_pct=error_pct)


def _rate(value: Any, where: list[str | int], r: Reader) -> float | None:
    """Requests per second: a number, or ``500/s`` / ``500 req/s``."""
    rate: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        rate = float(value)
    elif isinstance(value, str):
        found = bound_of("throughput", value)
        rate = None if isinstance(found, str) else found[0]
    if rate is None or not 0 < rate <= MAX_RATE:
        r.error(
            where,
            f"expected an arrival rate above 0 and at most {MAX_RATE:,.0f}/s, such as 100/s, "
            f"got {_show(value)}",
        )
        return None
    return rate


def _percent(value: Any, where: list[str | int], r: Reader) -> float | None:
    found = bound_of("error_pct", value) if isinstance(value, str) else None
    if (
        found is None
        or isinstance(found, str)
        or not (MIN_PRECISION_PCT <= found[0] <= MAX_PRECISION_PCT)
    ):
        unit = " (the unit % is needed)" if isinstance(value, int | float) else ""
        r.error(
            where,
            f"expected a precision from {MIN_PRECISION_PCT:g}% to {MAX_PRECISION_PCT:g}% such as "
            f"'5%'{unit}, got {_show(value) if not isinstance(value, dict | list) else _kind(value)}",
        )
        return None
    return found[0]


__all__ = ["MAX_CAPACITY_REPETITIONS", "read_capacity"]
