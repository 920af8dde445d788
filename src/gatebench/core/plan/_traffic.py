"""The plan's keys for replaying recorded traffic (what ``gatebench import`` writes, and what a
user may write by hand): the ``arrivals`` injection profile (a recorded arrival curve, scaled
or compressed in time), ``weights`` and ``others`` on a ``list`` of values (a recorded value
distribution: the most frequent values and how many more there were), and ``traffic`` (where
the workloads came from, for the report).

``arrivals`` reads ``counts`` (users arriving in each ``step``, default 1 s), ``scale`` (every
count multiplied, rounded so that the running total stays within one request of the exact
one: the curve's shape and its total are kept) and ``speed`` (each step lasts ``step /
speed``: the same requests in less time). The :class:`Injection` holds the curve as it runs.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gatebench.core.plan._model import (
    MAX_DURATION_S,
    MAX_REQUESTS,
    MAX_STEPS,
    Injection,
    OtherValues,
    TrafficSource,
)
from gatebench.core.plan._reader import Reader, _kind, _show

MAX_SCALE = 1000.0
"""The largest ``scale`` or ``speed`` an arrival curve accepts."""
MIN_STEP_S = 0.001
"""The shortest step an arrival curve may run (the engines time arrivals to the millisecond)."""
MAX_OTHER_VALUES = 1_000_000_000
_PREFIX = re.compile(r"^[A-Za-z0-9._~:@!$'()*+,;=-]{0,64}$")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def scaled_counts(counts: tuple[int, ...], scale: float) -> tuple[int, ...]:
    """``counts`` times ``scale``, each step rounded so that the running total stays the
    rounded exact one: 0.5 × [1, 1, 1, 1] is [1, 0, 1, 0] (2 requests), not [0, 0, 0, 0]."""
    if scale == 1:
        return counts
    out = []
    total = 0
    done = 0
    for count in counts:
        total += count
        target = math.floor(total * scale + 0.5)
        out.append(target - done)
        done = target
    return tuple(out)


def read_arrivals(raw: Any, r: Reader, where: list[str | int]) -> Injection | None:
    """``injection.arrivals: {counts: [...], step: 1s, scale: 1, speed: 1}``."""
    data = r.mapping(raw, where, "arrivals")
    if not data:
        return None
    step = 1.0
    if "step" in data:
        read = r.duration(data["step"], [*where, "step"])
        if read is None:
            return None
        step = read
    factors = {}
    for key in ("scale", "speed"):
        value = data.get(key, 1)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 < value <= MAX_SCALE
        ):
            r.error(
                [*where, key], f"expected a number above 0 and at most 1000, got {_show(value)}"
            )
            return None
        factors[key] = float(value)
    raw_counts = data.get("counts")
    if not isinstance(raw_counts, list) or not raw_counts:
        r.error(
            [*where, "counts"],
            f"expected a non-empty list of arrivals per step such as [3, 5, 4], got {_kind(raw_counts)}",
        )
        return None
    if len(raw_counts) > MAX_STEPS:
        r.error(
            [*where, "counts"],
            f"at most {MAX_STEPS:,} steps, got {len(raw_counts):,}; use a longer step",
        )
        return None
    counts: list[int] = []
    for i, count in enumerate(raw_counts):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            r.error(
                [*where, "counts", i], f"expected a whole number of arrivals, got {_show(count)}"
            )
            return None
        counts.append(count)
    effective = scaled_counts(tuple(counts), factors["scale"])
    step_s = step / factors["speed"]
    if step_s < MIN_STEP_S:
        r.error(
            [*where, "speed"],
            f"each step would last {step_s * 1000:g} ms; the engines time arrivals to the "
            "millisecond: a step must last at least 1 ms",
        )
        return None
    total = sum(effective)
    if total == 0:
        r.error([*where, "counts"], "no arrival in any step: nothing would be sent")
        return None
    if total > MAX_REQUESTS:
        r.error(where, f"{total:,} requests is above the limit of {MAX_REQUESTS:,}")
        return None
    duration = step_s * len(effective)
    if duration > MAX_DURATION_S:
        r.error(where, f"the curve lasts {duration / 3600:.1f} h; at most 24h")
        return None
    return Injection("arrivals", duration=duration, counts=effective, step=step_s)


def read_weights(
    data: dict[str, Any], values: tuple[Any, ...], r: Reader, where: list[str | int]
) -> tuple[tuple[float, ...], OtherValues | None] | None:
    """A list's ``weights`` (one per value) and ``others``; None after a problem."""
    raw = data.get("weights")
    if "others" in data and raw is None:
        r.error([*where, "others"], "'others' needs the list's 'weights'")
        return None
    if raw is None:
        return (), None
    if "order" in data:
        r.error([*where, "order"], "a weighted list draws its values at random; leave 'order' out")
        return None
    if not isinstance(raw, list) or len(raw) != len(values):
        r.error(
            [*where, "weights"],
            f"expected one weight per value ({len(values)}), got {_show(raw)}",
        )
        return None
    weights: list[float] = []
    for i, weight in enumerate(raw):
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not 0 <= weight < 1e15
            or not math.isfinite(weight)
        ):
            r.error([*where, "weights", i], f"expected a number from 0, got {_show(weight)}")
            return None
        weights.append(float(weight))
    others = None
    if "others" in data:
        others = _others(data["others"], r, [*where, "others"])
        if others is None:
            return None
    if sum(weights) + (others.weight if others else 0) <= 0:
        r.error([*where, "weights"], "at least one weight must be above 0")
        return None
    return tuple(weights), others


def _others(raw: Any, r: Reader, where: list[str | int]) -> OtherValues | None:
    data = r.mapping(raw, where, "others")
    if not data:
        return None
    count = r.integer(data.get("count"), [*where, "count"], 1, MAX_OTHER_VALUES)
    weight = data.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight < 1e15:
        r.error([*where, "weight"], f"expected a number above 0, got {_show(weight)}")
        return None
    start = data.get("start", 1)
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < 2**53:
        r.error([*where, "start"], f"expected a whole number from 0, got {_show(start)}")
        return None
    prefix = data.get("prefix")
    if prefix is not None and (not isinstance(prefix, str) or not _PREFIX.match(prefix)):
        r.error(
            [*where, "prefix"],
            "expected at most 64 letters, digits or URL-safe punctuation "
            f"(no '/', '%', '?', '#', '&' or space), got {_show(prefix)}",
        )
        return None
    width = r.integer(data.get("width", 0), [*where, "width"], 0, 32)
    if count is None or width is None:
        return None
    if start + count >= 2**53:
        r.error([*where, "count"], "start + count must stay below 2^53")
        return None
    return OtherValues(count=count, weight=float(weight), start=start, prefix=prefix, width=width)


def read_traffic(raw: Any, r: Reader) -> TrafficSource | None:
    """``traffic: {files, format, requests, matched, start, end}`` (written by ``gatebench
    import``; the report names it)."""
    data = r.mapping(raw, ["traffic"], "traffic")
    if not data:
        return None
    files = data.get("files")
    if (
        not isinstance(files, list)
        or not files
        or not all(isinstance(f, str) and f and len(f) <= 255 for f in files)
    ):
        r.error(["traffic", "files"], f"expected a list of file names, got {_show(files)}")
        return None
    fmt = r.string(data.get("format"), ["traffic", "format"], "traffic.format")
    requests = r.integer(data.get("requests"), ["traffic", "requests"], 0, 2**62)
    matched = r.integer(data.get("matched"), ["traffic", "matched"], 0, 2**62)
    times: dict[str, str | None] = {}
    for key in ("start", "end"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not _TIME.match(value)):
            r.error(
                ["traffic", key],
                f"expected a UTC time such as 2026-01-31T12:00:00Z, got {_show(value)}",
            )
            value = None
        times[key] = value
    if fmt is None or requests is None or matched is None:
        return None
    if matched > requests:
        r.error(["traffic", "matched"], f"{matched:,} matched of {requests:,} requests read")
        return None
    return TrafficSource(
        files=tuple(files),
        format=fmt,
        requests=requests,
        matched=matched,
        start=times["start"],
        end=times["end"],
    )


__all__ = ["MAX_SCALE", "read_arrivals", "read_traffic", "read_weights", "scaled_counts"]
