"""Thresholds: the budgets a run must meet for a CI job to pass (as k6 thresholds and Gatling
assertions do), read from ``x-gatebench`` and checked against a run's summary.

::

    thresholds:
      - {metric: p95, max: 50ms}                          # every gateway, every workload
      - {metric: error_pct, max: 1%, gateway: nginx}
      - {metric: throughput, min: 500/s, workload: list}
      - {metric: overhead.p95, max: 5ms}                  # gateway p95 − the baseline's p95
      - {metric: overhead.mean, max: 20%}                 # ... relative to the baseline's
      - {metric: score, min: 70}                          # the gateway's score, 0–100
      - {metric: capacity, min: 2000/s, workload: bid}    # a capacity run's knee (req/s)
      - {metric: wrong_answers, max: 0}                   # answers checked wrong (a count)

Every run is also held to ``wrong_answers <= 0`` on every gateway and workload whose answers
were checked (:data:`DEFAULT_THRESHOLDS`), unless the plan states its own ``wrong_answers``
threshold: a gateway that answered wrongly under load fails a CI gate that says nothing more
(docs/trust.md, "Right answers under load"). A cell whose answers were not checked (wrk) is
not held to the default; a threshold the plan writes fails it, as any value not measured.

A threshold applies to the gateway it names (or the baseline, for measured metrics), else to
every gateway of the plan; to the workload it names, else to every workload (``score``
without a workload is the gateway's overall score). Each bound carries its unit — a latency
in ``ms``/``s``/``us``, an error rate in ``%``, a throughput in ``/s`` (or ``req/s``), an
overhead in a latency unit or ``%``, a score as a plain number — so that ``max: 50`` is an
error rather than a guess. Every problem is located (JSON pointer) and all are reported at
once, like the rest of the plan.

Evaluation is pure: a :class:`~gatebench.core.aggregate.RunSummary` in, one
:class:`ThresholdResult` per threshold × target × workload out. A value that was not
measured (a gateway that failed to start, no baseline for an overhead) fails: a CI gate
that passes on missing data would hide the failure it exists to catch.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gatebench.core.aggregate import RunSummary
from gatebench.core.errors import Problem, pointer
from gatebench.core.metrics import LATENCY_METRICS
from gatebench.core.model import BASELINE

MEASURED_METRICS = (*LATENCY_METRICS, "error_pct", "throughput")
WRONG_ANSWERS = "wrong_answers"
"""Answers checked wrong, summed over a cell's repetitions (gatebench.core.answers): a count."""
OVERHEAD_METRICS = tuple(f"overhead.{m}" for m in LATENCY_METRICS)
CAPACITY_METRICS = ("capacity",)
"""Thresholds a capacity run gates on (``gatebench capacity``: the rate each target carries
within the objective, gatebench.kinds.capacity.evaluate_capacity); a fixed-workload run leaves them
out, and a capacity run leaves the others out."""
METRIC_NAMES = (
    *MEASURED_METRICS,
    *OVERHEAD_METRICS,
    "score",
    *CAPACITY_METRICS,
    WRONG_ANSWERS,
)
"""Every metric a threshold may name, in the order error messages list them."""
KEYS = ("metric", "max", "min", "gateway", "workload")

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_LATENCY = re.compile(rf"^\s*{_NUMBER}\s*(us|µs|ms|s)\s*$")
_PERCENT = re.compile(rf"^\s*{_NUMBER}\s*%\s*$")
_RATE = re.compile(rf"^\s*{_NUMBER}\s*(?:req/s|/s)\s*$")
_TO_MS = {"us": 0.001, "µs": 0.001, "ms": 1.0, "s": 1000.0}


@dataclass(frozen=True)
class Threshold:
    """One budget. Bounds are in the metric's unit: ms (latencies, absolute overheads),
    % (error rate, relative overheads), req/s (throughput), points (score)."""

    metric: str
    max: float | None = None
    min: float | None = None
    relative: bool = False
    """An overhead bound in % of the baseline's value (else in ms)."""
    gateway: str | None = None
    workload: str | None = None
    pointer: str = ""
    """Where it was written: ``/x-gatebench/thresholds/0``."""

    @property
    def unit(self) -> str:
        if self.metric in ("score", WRONG_ANSWERS):
            return ""
        if self.metric == "error_pct" or self.relative:
            return "%"
        if self.metric in ("throughput", *CAPACITY_METRICS):
            return "req/s"
        return "ms"

    def label(self) -> str:
        """``p95 <= 50 ms``, ``throughput >= 500 req/s``, ``score >= 70 and <= 100``."""
        parts = []
        if self.min is not None:
            parts.append(f">= {fmt(self.min, self.unit)}")
        if self.max is not None:
            parts.append(f"<= {fmt(self.max, self.unit)}")
        return f"{self.metric} {' and '.join(parts)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Threshold:
        """A threshold as stored with a run's plan (:meth:`to_dict`)."""
        fields = {k: data.get(k) for k in ("metric", "max", "min", "gateway", "workload")}
        return cls(
            metric=str(fields["metric"]),
            max=_float_or_none(fields["max"]),
            min=_float_or_none(fields["min"]),
            relative=bool(data.get("relative", False)),
            gateway=None if fields["gateway"] is None else str(fields["gateway"]),
            workload=None if fields["workload"] is None else str(fields["workload"]),
            pointer=str(data.get("pointer", "")),
        )


@dataclass(frozen=True)
class ThresholdResult:
    threshold: Threshold
    target: str
    workload: str | None
    value: float | None
    """The measured value in the threshold's unit; None when it was not measured."""

    @property
    def passed(self) -> bool:
        t, v = self.threshold, self.value
        if v is None:
            return False
        return (t.max is None or v <= t.max) and (t.min is None or v >= t.min)

    @property
    def subject(self) -> str:
        """``nginx/list`` (a target on a workload), or ``nginx`` (overall score)."""
        return f"{self.target}/{self.workload}" if self.workload else self.target

    def line(self) -> str:
        """One line saying what was measured against the bound, and where the threshold is."""
        t = self.threshold
        where = f" ({t.pointer})" if t.pointer else ""
        if self.value is None:
            return f"{self.subject}: {t.metric} was not measured; needs {t.label()}{where}"
        shown = fmt(self.value, t.unit)
        if t.max is not None and self.value > t.max:
            return f"{self.subject}: {t.metric} {shown} is above the maximum {fmt(t.max, t.unit)}{where}"
        if t.min is not None and self.value < t.min:
            return f"{self.subject}: {t.metric} {shown} is below the minimum {fmt(t.min, t.unit)}{where}"
        return f"{self.subject}: {t.metric} {shown} meets {t.label()}{where}"


def fmt(value: float, unit: str) -> str:
    """``63 ms``, ``2.35 ms``, ``1,200 req/s``, ``0.5%``, ``71.2``."""
    text = f"{value:,.2f}".rstrip("0").rstrip(".")
    if unit == "%":
        return f"{text}%"
    return f"{text} {unit}" if unit else text


# -- reading ------------------------------------------------------------------------------


def parse_thresholds(
    value: Any,
    *,
    gateways: Sequence[str],
    baseline: bool,
    workloads: Sequence[str],
    aliases: Mapping[str, str] | None = None,
    base: str = "/x-gatebench",
    source: str | None = None,
) -> tuple[tuple[Threshold, ...], list[Problem]]:
    """The ``thresholds`` list checked against the plan's gateways and workloads: every
    threshold that is valid, and one located problem per mistake."""
    problems: list[Problem] = []

    def error(tokens: Sequence[str | int], message: str) -> None:
        problems.append(Problem(base + pointer("thresholds", *tokens), message, source=source))

    if value is None:
        return (), problems
    if not isinstance(value, list):
        error([], f"thresholds must be a list of thresholds, got {_kind(value)}")
        return (), problems
    out = []
    for i, item in enumerate(value):
        before = len(problems)
        threshold = _threshold(item, i, error, gateways, baseline, workloads, aliases or {})
        if threshold is not None and len(problems) == before:
            out.append(
                Threshold(**{**threshold.to_dict(), "pointer": base + pointer("thresholds", i)})
            )
    return tuple(out), problems


def _threshold(
    item: Any,
    i: int,
    error: Any,
    gateways: Sequence[str],
    baseline: bool,
    workloads: Sequence[str],
    aliases: Mapping[str, str],
) -> Threshold | None:
    if not isinstance(item, dict):
        error(
            [i],
            f"a threshold must be a mapping such as {{metric: p95, max: 50ms}}, got {_kind(item)}",
        )
        return None
    named = [k for k in item if k not in KEYS and str(k) in METRIC_NAMES]
    for key in item:
        if key in named and "metric" not in item:
            shown = _show(item[key]) if isinstance(item[key], str | int | float) else "..."
            error(
                [i, str(key)],
                f"a threshold names its metric: write {{metric: {key}, max: {shown}}} (or min:)",
            )
        elif key not in KEYS:
            error([i, str(key)], f"unknown key {str(key)!r} in a threshold; {_suggest(key, KEYS)}")
    metric = item.get("metric")
    if "metric" not in item and named:
        return None
    if "metric" not in item:
        error([i], "a threshold needs 'metric' (" + ", ".join(METRIC_NAMES) + ")")
        return None
    if not isinstance(metric, str) or metric not in METRIC_NAMES:
        error([i, "metric"], f"unknown metric {_show(metric)}; {_suggest(metric, METRIC_NAMES)}")
        return None
    if "max" not in item and "min" not in item:
        error([i], f"a threshold on {metric} needs 'max' or 'min' (or both)")
        return None
    bounds: dict[str, float] = {}
    relative: set[bool] = set()
    for key in ("max", "min"):
        if key in item:
            parsed = _bound(metric, item[key])
            if isinstance(parsed, str):
                error([i, key], parsed)
            else:
                bounds[key] = parsed[0]
                relative.add(parsed[1])
    if len(relative) > 1:
        error([i], f"'max' and 'min' of {metric} must both be in % or both in a latency unit")
    if "max" in bounds and "min" in bounds and bounds["min"] > bounds["max"]:
        error([i, "min"], f"the minimum {item['min']} is above the maximum {item['max']}")
    gateway = _gateway(item, i, error, metric, gateways, baseline, aliases)
    workload = item.get("workload")
    if workload is not None and (not isinstance(workload, str) or workload not in workloads):
        error(
            [i, "workload"],
            f"{_show(workload)} is not a workload of the plan ({', '.join(workloads)})",
        )
        workload = None
    return Threshold(
        metric=metric,
        max=bounds.get("max"),
        min=bounds.get("min"),
        relative=relative == {True},
        gateway=gateway,
        workload=workload,
    )


def _gateway(
    item: dict[str, Any],
    i: int,
    error: Any,
    metric: str,
    gateways: Sequence[str],
    baseline: bool,
    aliases: Mapping[str, str],
) -> str | None:
    if "gateway" not in item:
        return None
    raw = item["gateway"]
    name = aliases.get(raw.lower(), raw.lower()) if isinstance(raw, str) else None
    if name == BASELINE and baseline:
        if metric == "score" or metric.startswith("overhead."):
            error([i, "gateway"], f"the baseline has no {metric.split('.')[0]}: name a gateway")
            return None
        return BASELINE
    if name is None or name not in gateways:
        measured = [*gateways, *([BASELINE] if baseline else [])]
        error(
            [i, "gateway"],
            f"{_show(raw)} is not in the plan's gateways ({', '.join(measured) or 'none'}); "
            "a threshold applies to what the plan measures",
        )
        return None
    return name


def _bound(metric: str, value: Any) -> tuple[float, bool] | str:
    """(value in the metric's unit, relative?) or the message saying what was expected."""
    if metric == WRONG_ANSWERS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"expected a count of wrong answers (a whole number from 0), got {_show(value)}"
        return float(value), False
    if metric == "score":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            return f"expected a score from 0 to 100 (a plain number), got {_show(value)}"
        return float(value), False
    text = value if isinstance(value, str) else None
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if metric in LATENCY_METRICS or metric.startswith("overhead."):
        overhead = metric.startswith("overhead.")
        example = "'5ms' or '10%'" if overhead else "'50ms' or '0.5s'"
        if numeric:
            return f"the unit is missing: expected a latency such as {example}, got {value}"
        if text is not None and (m := _LATENCY.match(text)):
            ms = float(m.group(1)) * _TO_MS[m.group(2)]
            if ms < 0 and not overhead:
                return f"a latency cannot be negative, got {_show(value)}"
            return ms, False
        if overhead and text is not None and (m := _PERCENT.match(text)):
            return float(m.group(1)), True
        return f"expected a latency such as {example}, got {_show(value)}"
    if metric == "error_pct":
        if numeric:
            return f"the unit is missing: expected an error rate such as '1%', got {value}"
        if text is not None and (m := _PERCENT.match(text)) and 0 <= float(m.group(1)) <= 100:
            return float(m.group(1)), False
        return f"expected an error rate from 0% to 100% such as '1%', got {_show(value)}"
    # throughput, capacity
    if numeric:
        return f"the unit is missing: expected a throughput such as '500/s', got {value}"
    if text is not None and (m := _RATE.match(text)) and float(m.group(1)) >= 0:
        return float(m.group(1)), False
    return f"expected a throughput such as '500/s' or '500 req/s', got {_show(value)}"


def bound_of(metric: str, value: Any) -> tuple[float, bool] | str:
    """A bound as a threshold reads it (``50ms``, ``0.1%``, ``500/s``): (value in the metric's
    unit, relative?), or the message saying what was expected (the capacity objective reads
    its bounds the same way)."""
    return _bound(metric, value)


def thresholds_from_plan(plan: Mapping[str, Any] | None) -> tuple[Threshold, ...]:
    """The thresholds stored with a run's plan (``Plan.to_dict()``); none for older runs."""
    if not plan:
        return ()
    items = plan.get("thresholds") or ()
    return tuple(Threshold.from_dict(t) for t in items if isinstance(t, Mapping))


# -- evaluation ----------------------------------------------------------------------------

DEFAULT_POINTER = "default"
"""The ``pointer`` of a default threshold: no plan wrote it."""
DEFAULT_THRESHOLDS = (Threshold(WRONG_ANSWERS, max=0.0, pointer=DEFAULT_POINTER),)
"""What every run is held to unless its plan says otherwise: no wrong answer anywhere."""


def with_defaults(thresholds: Sequence[Threshold]) -> tuple[Threshold, ...]:
    """The plan's thresholds, and each default whose metric the plan does not gate itself."""
    stated = {t.metric for t in thresholds}
    return (*thresholds, *(d for d in DEFAULT_THRESHOLDS if d.metric not in stated))


def evaluate(thresholds: Sequence[Threshold], summary: RunSummary) -> list[ThresholdResult]:
    """One result per threshold × target × workload (× target only for an overall score),
    the defaults (:data:`DEFAULT_THRESHOLDS`) included."""
    results = []
    for t in with_defaults(thresholds):
        if t.metric in CAPACITY_METRICS:
            continue  # a capacity run's (gatebench.kinds.capacity.evaluate_capacity)
        targets = [t.gateway] if t.gateway else list(summary.gateways)
        if t.metric == "score" and t.workload is None:
            workloads: list[str | None] = [None]
        else:
            workloads = [t.workload] if t.workload else list(summary.workloads)
        for target in targets:
            for workload in workloads:
                if t.pointer == DEFAULT_POINTER and not _checked(summary, target, workload):
                    continue  # a default asks nothing the engine could not check
                results.append(
                    ThresholdResult(t, target, workload, _value(t, summary, target, workload))
                )
    return results


def _checked(summary: RunSummary, target: str, workload: str | None) -> bool:
    """Whether every repetition of the cell had its answers checked."""
    cell = summary.cell(workload, target) if workload is not None else None
    return cell is not None and cell.unchecked == 0


def failures(results: Sequence[ThresholdResult]) -> list[ThresholdResult]:
    return [r for r in results if not r.passed]


def _value(t: Threshold, summary: RunSummary, target: str, workload: str | None) -> float | None:
    if t.metric == "score":
        try:
            gateway = summary.scores.gateway(target)
            value = gateway.score if workload is None else gateway.endpoint(workload).score
        except (KeyError, LookupError, ValueError):
            return None
        return _finite(value)
    assert workload is not None
    if t.metric.startswith("overhead."):
        overhead = summary.overhead_for(workload, target, t.metric.removeprefix("overhead."))
        if overhead is None:
            return None
        return _finite(overhead.relative_pct if t.relative else overhead.difference.estimate)
    cell = summary.cell(workload, target)
    if cell is None or cell.requests == 0:
        return None
    if t.metric == WRONG_ANSWERS:
        return None if cell.unchecked else float(cell.wrong_answers)
    if t.metric not in cell.metrics:
        return None
    return _finite(cell.metrics[t.metric].mean)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _suggest(word: Any, options: Sequence[str]) -> str:
    hint = difflib.get_close_matches(str(word), options, n=1)
    listed = ", ".join(options)
    return (
        f"did you mean {hint[0]!r}? expected one of {listed}"
        if hint
        else f"expected one of {listed}"
    )


def _show(value: Any) -> str:
    if value is None:
        return "nothing"  # YAML's null, or a key left out
    return (
        repr(value)
        if isinstance(value, str)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string ({value!r})"
    return _show(value)


__all__ = [
    "CAPACITY_METRICS",
    "DEFAULT_THRESHOLDS",
    "LATENCY_METRICS",
    "METRIC_NAMES",
    "WRONG_ANSWERS",
    "Threshold",
    "ThresholdResult",
    "bound_of",
    "evaluate",
    "failures",
    "fmt",
    "parse_thresholds",
    "thresholds_from_plan",
    "with_defaults",
]
