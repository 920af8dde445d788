"""The plan's keys for replaying recorded traffic (what ``gatebench import`` writes, and what a
user may write by hand): the ``arrivals`` injection profile (a recorded arrival curve, scaled
or compressed in time), ``weights`` and ``others`` on a ``list`` of values (a recorded value
distribution: the most frequent values and how many more there were), and ``traffic`` (where
the workloads came from, for the report).

``arrivals`` reads ``counts`` (users arriving in each ``step``, default 1 s), ``scale`` (every
count multiplied, rounded so that the running total stays within one request of the exact
one: the curve's shape and its total are kept) and ``speed`` (each step lasts ``step /
speed``: the same requests in less time). The :class:`Injection` holds the curve as it runs.

Each key's own value is read by the plan's models (``gatebench.core.plan._document``:
``ArrivalsDoc``, ``ParameterDoc.weights``/``OthersDoc``, ``TrafficDoc``); what holds between
keys is checked here.
"""

from __future__ import annotations

import math

from gatebench.core.plan._document import ArrivalsDoc, ParameterDoc, Reading, TrafficDoc
from gatebench.core.plan._model import (
    MAX_DURATION_S,
    MAX_REQUESTS,
    Generator,
    Injection,
)

MIN_STEP_S = 0.001
"""The shortest step an arrival curve may run (the engines time arrivals to the millisecond)."""


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


def arrivals_injection(doc: ArrivalsDoc, r: Reading, where: list[str | int]) -> Injection | None:
    """``injection.arrivals: {counts: [...], step: 1s, scale: 1, speed: 1}`` as it runs."""
    effective = scaled_counts(doc.counts, doc.scale)
    step_s = doc.step / doc.speed
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


def weighted_list(doc: ParameterDoc, r: Reading, where: list[str | int]) -> Generator | None:
    """A ``list`` parameter, with its ``weights`` (one per value) and ``others`` when it has
    them; None after a problem."""
    values = tuple(doc.list_)
    given = doc.model_fields_set
    if doc.weights is None:
        if "others" in given:
            r.error([*where, "others"], "'others' needs the list's 'weights'")
            return None
        return Generator("list", values=values, random_order=doc.order == "random")
    if "order" in given:
        r.error([*where, "order"], "a weighted list draws its values at random; leave 'order' out")
        return None
    if len(doc.weights) != len(values):
        r.error(
            [*where, "weights"],
            f"expected one weight per value ({len(values)}), got {list(doc.weights)!r}",
        )
        return None
    others = doc.others
    if others is not None and others.start + others.count >= 2**53:
        r.error([*where, "others", "count"], "start + count must stay below 2^53")
        return None
    if sum(doc.weights) + (others.weight if others else 0) <= 0:
        r.error([*where, "weights"], "at least one weight must be above 0")
        return None
    return Generator("list", values=values, random_order=True, weights=doc.weights, others=others)


def traffic_source(doc: TrafficDoc | None, r: Reading) -> TrafficDoc | None:
    """``traffic: {files, format, requests, matched, start, end}`` (written by ``gatebench
    import``; the report names it)."""
    if doc is None:
        return None
    if doc.matched > doc.requests:
        r.error(
            ["traffic", "matched"], f"{doc.matched:,} matched of {doc.requests:,} requests read"
        )
        return None
    return doc


__all__ = ["arrivals_injection", "scaled_counts", "traffic_source", "weighted_list"]
