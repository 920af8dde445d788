"""What an import derives from the requests it reads, in memory bounded whatever their number:
the operation mix, the arrival curve per operation (requests per step), the inter-arrival
times when the log has them, per operation the status mix, the request sizes where logged,
and each path and query parameter's value distribution (how many distinct values, the most
frequent ones).

Chunks arrive as columns (gatebench.core.traffic._logs.Columns); everything done per request is a
C-level ``map`` or ``Counter`` call, and Python code runs once per distinct request line, per
distinct second and per distinct value. The bounds:

- request lines are resolved through a cache of at most :data:`MAX_CACHED` lines (its older half
  dropped when full: a log of ever-new lines costs one resolution per new line);
- a parameter keeps exact counts of at most :data:`MAX_VALUES` values; past that, the least
  frequent half is dropped (the most frequent survive, their counts may be a little low) and
  the number of distinct values is estimated (HyperLogLog, :data:`HLL_BITS` bits, about 1.6 %
  typical error);
- the curve holds at most :data:`MAX_CURVE` (step, operation) counts and spans at most
  :data:`MAX_CURVE` steps (what reads it walks every step from the first to the last: one
  stray line of 1970 in a log of today would be 1.7 billion); past that its step doubles (the
  span stays, the resolution halves);
- unmatched paths keep at most :data:`MAX_VALUES` distinct ones (the most frequent).
"""

from __future__ import annotations

import hashlib
import math
import operator
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import compress, islice, repeat
from typing import Any
from urllib.parse import unquote_plus

from gatebench.core.traffic._logs import Columns
from gatebench.core.traffic._match import Matched, Matcher, Unmatched

MAX_CACHED = 200_000
MAX_VALUES = 20_000
MAX_CURVE = 2_000_000
HLL_BITS = 12
_HLL_M = 1 << HLL_BITS
_HLL_ALPHA = 0.7213 / (1 + 1.079 / _HLL_M)
_UNMATCHED = -1
_NOT_A_REQUEST = -2
_SHIFT = 2
"""Operation indexes are stored plus this (so the two kinds of miss stay non-negative)."""


class Cardinality:
    """HyperLogLog: the number of distinct values of a parameter once its table was pruned."""

    def __init__(self) -> None:
        self.registers = bytearray(_HLL_M)

    def add(self, value: str) -> None:
        h = int.from_bytes(
            hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
        )
        index = h >> (64 - HLL_BITS)
        rest = h & ((1 << (64 - HLL_BITS)) - 1)
        rank = (64 - HLL_BITS) - rest.bit_length() + 1
        if rank > self.registers[index]:
            self.registers[index] = rank

    def estimate(self) -> int:
        estimate = _HLL_ALPHA * _HLL_M * _HLL_M / sum(2.0**-r for r in self.registers)
        zeros = self.registers.count(0)
        if estimate <= 2.5 * _HLL_M and zeros:
            estimate = _HLL_M * math.log(_HLL_M / zeros)
        return round(estimate)


@dataclass(frozen=True)
class ValueCounts:
    """How often each value of one parameter was seen (the most frequent ones when the table
    was pruned), and how many distinct values there were."""

    counts: dict[str, int]
    total: int
    distinct: int
    exact: bool
    """Whether ``distinct`` and every count are exact (no value was ever dropped)."""

    def top(self, k: int) -> list[tuple[str, int]]:
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


@dataclass
class OperationStats:
    """What one operation's requests looked like."""

    requests: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    sizes: Counter[int] = field(default_factory=Counter)
    path_values: dict[str, ValueCounts] = field(default_factory=dict)
    query_values: dict[str, ValueCounts] = field(default_factory=dict)
    query_seen: dict[str, int] = field(default_factory=dict)
    """Requests that carried each query parameter (also those whose values are not kept)."""
    secret_queries: set[str] = field(default_factory=set)
    """Query parameters named like secrets: counted, their values never kept."""


_SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pass",
        "secret",
        "token",
        "key",
        "apikey",
        "auth",
        "authorization",
        "session",
        "sessionid",
        "sid",
        "jsessionid",
        "phpsessid",
        "signature",
        "sig",
        "jwt",
        "bearer",
        "credential",
        "credentials",
        "otp",
        "hmac",
        "cookie",
        "code",
    }
)


def is_secret_name(name: str) -> bool:
    """A parameter whose name says it holds a credential (``api_key``, ``accessToken``,
    ``X-Amz-Signature``, ``session``, ``password``, ``code`` ...): its values are never kept."""
    words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)
    lowered = {w.lower() for w in words} | {re.sub(r"[^a-z0-9]", "", name.lower())}
    return bool(lowered & _SECRET_WORDS)


_SECRET_VALUE = "\x00"
"""What a value named like a secret is counted as (its presence, never its value)."""


def _query_pairs(query: str) -> tuple[tuple[str, str], ...]:
    out = []
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        out.append((unquote_plus(name, encoding="latin-1"), value))
    return tuple(out)


class TrafficStats:
    """The aggregator: feed it columns (:meth:`add`), then read what it derived.

    Each distinct request line resolves once to its operation and to the keys it counts:
    ``(parameter id, value)`` for each path and query parameter it carries (a secret's value
    counted as its presence only), or ``(-1, (method, path, reason))`` when unmatched. Per
    request, the keys of its line go through one C-level ``Counter.update``."""

    def __init__(
        self,
        matcher: Matcher,
        *,
        step: float = 1.0,
        window: tuple[float, float] | None = None,
        secret_names: Iterable[str] = (),
    ) -> None:
        self.matcher = matcher
        self.step = step
        self.window = window
        self.secret_names = {n.lower() for n in secret_names}
        n = len(matcher.operations)
        self._width = n + _SHIFT
        self.curve: Counter[int] = Counter()
        """(step number × width + operation index + shift) → requests."""
        self.statuses: Counter[tuple[int, bytes]] = Counter()
        self.sizes: Counter[tuple[int, bytes]] = Counter()
        self.values: Counter[tuple[int, Any]] = Counter()
        """(parameter id, value) → requests; (-1, (method, path, reason)) for a miss."""
        self.params: list[tuple[int, str, str]] = []
        """Parameter id → (operation index, ``path`` or ``query``, name)."""
        self._param_ids: dict[tuple[int, str, str], int] = {}
        self._pruned: dict[int, Cardinality] = {}
        self.read = 0
        """Requests read (in the window, when one is set)."""
        self.outside = 0
        """Requests read outside the window."""
        self.outside_span: tuple[float, float] | None = None
        """The first and last arrival of the requests outside the window."""
        self.first: float | None = None
        self.last: float | None = None
        self.gaps: Counter[int] = Counter()
        """Inter-arrival times by quarter-octave bucket (2^(b/4) microseconds); only from
        logs with sub-second times."""
        self.zero_gaps = 0
        self._steps: tuple[int, int] | None = None
        """The first and last step number of the curve."""
        self.precise = True
        self._previous: float | None = None
        self._index: dict[bytes, int] = {}
        self._keys: dict[bytes, tuple[tuple[int, Any], ...]] = {}
        self._secret: dict[str, bool] = {}
        self._lines: Counter[bytes] = Counter()
        """Request lines counted since the last fold (:meth:`_fold`)."""
        self._path_ids: dict[int, tuple[int, ...]] = {}
        self._queries: dict[tuple[int, str], tuple[tuple[int, Any], ...]] = {}

    # -- feeding ---------------------------------------------------------------------------

    def add(self, cols: Columns) -> None:
        if not len(cols):
            return
        request, arrival, status, size = cols.request, cols.arrival, cols.status, cols.size
        inverse = 1.0 / self.step
        if inverse == 1.0:
            steps = list(map(math.floor, arrival))
        else:
            steps = list(map(math.floor, map(operator.mul, arrival, repeat(inverse))))
        if self.window is not None:
            low = math.floor(self.window[0] * inverse)
            high = math.floor(self.window[1] * inverse)
            keep = list(
                map(
                    operator.and_,
                    map(operator.ge, steps, repeat(low)),
                    map(operator.lt, steps, repeat(high)),
                )
            )
            if not all(keep):
                self.outside += len(keep) - sum(keep)
                left = list(compress(arrival, map(operator.not_, keep)))
                low_t, high_t = min(left), max(left)
                if self.outside_span is not None:
                    low_t = min(low_t, self.outside_span[0])
                    high_t = max(high_t, self.outside_span[1])
                self.outside_span = (low_t, high_t)
                request = list(compress(request, keep))
                arrival = list(compress(arrival, keep))
                status = list(compress(status, keep))
                steps = list(compress(steps, keep))
                size = list(compress(size, keep)) if size is not None else None
                if not request:
                    return
        self.read += len(request)
        first, last = min(arrival), max(arrival)
        self.first = first if self.first is None else min(self.first, first)
        self.last = last if self.last is None else max(self.last, last)
        index = self._index
        ops: list[int] = list(map(index.get, request))  # type: ignore[arg-type]
        if None in ops:
            for line in set(compress(request, map(operator.is_, ops, repeat(None)))):
                self._resolve(line)
            ops = list(map(index.__getitem__, request))
        width = self._width
        self.curve.update(map(operator.add, map(operator.mul, steps, repeat(width)), ops))
        low, high = min(steps), max(steps)
        if self._steps is not None:
            low, high = min(low, self._steps[0]), max(high, self._steps[1])
        self._steps = (low, high)
        self.statuses.update(zip(ops, status, strict=True))
        if size is not None:
            self.sizes.update(zip(ops, size, strict=True))
        # lines are counted as they are (their hash is cached); their keys are counted once
        # per distinct line, when the lines are folded into the values
        self._lines.update(request)
        if cols.precise:
            self._gaps(arrival)
        else:
            self.precise = False
        while len(self.curve) > MAX_CURVE or self._steps[1] - self._steps[0] >= MAX_CURVE:
            self._coarsen()
        if len(self._index) > MAX_CACHED:
            self._fold()  # before the cache lets lines go: a line counted keeps its keys
        if len(self._index) > MAX_CACHED:
            # the older half goes (a dict keeps the order lines were first seen)
            for line in list(islice(self._index, len(self._index) // 2)):
                del self._index[line]
                del self._keys[line]

    def _fold(self) -> None:
        """The lines counted so far, as counts of the values they carry."""
        values, keys = self.values, self._keys
        for line, count in self._lines.items():
            for key in keys[line]:
                values[key] = values.get(key, 0) + count
        self._lines.clear()
        if len(values) > MAX_VALUES * 10:
            self._prune()

    def _param_id(self, op: int, where: str, name: str) -> int:
        key = (op, where, name)
        found = self._param_ids.get(key)
        if found is None:
            found = self._param_ids[key] = len(self.params)
            self.params.append(key)
        return found

    def _resolve(self, line: bytes) -> None:
        found = self.matcher.resolve(line)
        if isinstance(found, Unmatched):
            code = _NOT_A_REQUEST if found.reason == "request" else _UNMATCHED
            self._index[line] = code + _SHIFT
            self._keys[line] = ((-1, (found.method, found.path, found.reason)),)
            return
        assert isinstance(found, Matched)
        op = found.operation
        ids = self._path_ids.get(op)
        if ids is None:
            names = self.matcher.param_names[op]
            ids = self._path_ids[op] = tuple(self._param_id(op, "path", n) for n in names)
        keys = tuple(zip(ids, found.params, strict=True))
        if found.query:
            keys += self._query_keys(op, found.query)
        self._index[line] = op + _SHIFT
        self._keys[line] = keys

    def _query_keys(self, op: int, query: str) -> tuple[tuple[int, Any], ...]:
        """A query string's keys for one operation (query strings repeat: each read once)."""
        cached = self._queries.get((op, query))
        if cached is not None:
            return cached
        keys = []
        named: set[str] = set()
        for name, value in _query_pairs(query):
            secret = self._secret.get(name)
            if secret is None:
                secret = self._secret[name] = (
                    is_secret_name(name) or name.lower() in self.secret_names
                )
            keys.append((self._param_id(op, "query", name), _SECRET_VALUE if secret else value))
            if name not in named:  # the requests that carry it, once however often it repeats
                named.add(name)
                keys.append((self._param_id(op, "seen", name), ""))
        found = tuple(keys)
        if len(self._queries) > MAX_CACHED:
            self._queries.clear()
        self._queries[(op, query)] = found
        return found

    def _prune(self) -> None:
        """Keep the most frequent values of each parameter (:data:`MAX_VALUES` // 2); every
        value the table held is counted in the parameter's cardinality first."""
        by_param: dict[int, list[tuple[Any, int]]] = {}
        for (pid, value), count in self.values.items():
            by_param.setdefault(pid, []).append((value, count))
        kept: Counter[tuple[int, Any]] = Counter()
        for pid, items in by_param.items():
            if len(items) <= MAX_VALUES:
                kept.update({(pid, v): c for v, c in items})
                continue
            if pid >= 0:
                cardinality = self._pruned.setdefault(pid, Cardinality())
                for value, _ in items:
                    cardinality.add(value)
            items.sort(key=lambda vc: -vc[1])
            kept.update({(pid, v): c for v, c in items[: MAX_VALUES // 2]})
            if pid < 0:
                self._pruned.setdefault(pid, Cardinality())
        self.values = kept

    def _gaps(self, arrival: list[float]) -> None:
        """Inter-arrival times of a chunk (sorted: a log is written as requests end), by
        quarter-octave bucket of microseconds."""
        times = sorted(arrival)
        if self._previous is not None and self._previous <= times[0]:
            times.insert(0, self._previous)
        self._previous = times[-1]
        gaps = list(map(operator.sub, times[1:], times[:-1]))
        micro = list(map(round, map(operator.mul, gaps, repeat(1e6))))
        positive = list(filter(None, micro))
        self.zero_gaps += len(micro) - len(positive)
        buckets = map(math.floor, map(operator.mul, map(math.log2, positive), repeat(4)))
        self.gaps.update(buckets)

    def _coarsen(self) -> None:
        """Halve the curve's resolution (its step doubles), keeping every request."""
        width = self._width
        merged: Counter[int] = Counter()
        for key, count in self.curve.items():
            step, op = divmod(key, width)
            merged[(step // 2) * width + op] += count
        self.curve = merged
        self.step *= 2
        if self._steps is not None:
            self._steps = (self._steps[0] // 2, self._steps[1] // 2)

    # -- reading ---------------------------------------------------------------------------

    def operation_stats(self) -> list[OperationStats]:
        """Per operation (the matcher's order): requests, statuses, sizes, parameter values."""
        self._fold()
        width = self._width
        out = [OperationStats() for _ in self.matcher.operations]
        for key, count in self.curve.items():
            op = key % width - _SHIFT
            if op >= 0:
                out[op].requests += count
        for (op, code), count in self.statuses.items():
            if op >= _SHIFT:
                out[op - _SHIFT].statuses[code.decode("utf-8", "replace")] += count
        for (op, value), count in self.sizes.items():
            if op >= _SHIFT and value.isdigit():
                out[op - _SHIFT].sizes[int(value)] += count
        tables: dict[int, dict[Any, int]] = {}
        for (pid, value), count in self.values.items():
            if pid >= 0:
                tables.setdefault(pid, {})[value] = count
        for pid, (op, where, name) in enumerate(self.params):
            table = tables.get(pid, {})
            stats = out[op]
            if where == "seen":
                stats.query_seen[name] = sum(table.values())
                continue
            if where == "query" and _SECRET_VALUE in table:
                stats.secret_queries.add(name)
                continue
            pruned = self._pruned.get(pid)
            if pruned is not None:
                for value in table:
                    pruned.add(value)
            counts = ValueCounts(
                counts=dict(table),
                total=sum(table.values()),
                distinct=max(len(table), pruned.estimate()) if pruned else len(table),
                exact=pruned is None,
            )
            (stats.query_values if where == "query" else stats.path_values)[name] = counts
        return out

    @property
    def matched(self) -> int:
        width = self._width
        return sum(c for key, c in self.curve.items() if key % width >= _SHIFT)

    def misses(self) -> tuple[int, int, Counter[tuple[str, str, str]]]:
        """(unmatched requests, lines that were no request, the most frequent unmatched
        (method, path, reason))."""
        self._fold()
        width = self._width
        unmatched = sum(c for key, c in self.curve.items() if key % width == _UNMATCHED + _SHIFT)
        broken = sum(c for key, c in self.curve.items() if key % width == _NOT_A_REQUEST + _SHIFT)
        paths: Counter[tuple[str, str, str]] = Counter()
        for (pid, value), count in self.values.items():
            if pid < 0 and value[2] != "request":
                paths[value] += count
        return unmatched, broken, paths

    def operation_curves(self) -> list[dict[int, int]]:
        """Per operation (the matcher's order): step number → its requests."""
        width = self._width
        out: list[dict[int, int]] = [{} for _ in range(width)]
        for key, count in self.curve.items():
            step, op = divmod(key, width)
            out[op][step] = count
        return out[_SHIFT:]

    def operation_curve(self, index: int) -> dict[int, int]:
        """Step number → requests of operation ``index``."""
        return self.operation_curves()[index]

    def total_curve(self) -> dict[int, int]:
        """Step number → every request read (matched or not)."""
        out: dict[int, int] = {}
        for key, count in self.curve.items():
            step = key // self._width
            out[step] = out.get(step, 0) + count
        return out

    def matched_curve(self) -> dict[int, int]:
        """Step number → the requests read that an operation takes (what a plan replays)."""
        out: dict[int, int] = {}
        width = self._width
        for key, count in self.curve.items():
            step, op = divmod(key, width)
            if op >= _SHIFT:
                out[step] = out.get(step, 0) + count
        return out

    def gap_percentiles(self, *quantiles: float) -> list[float] | None:
        """Inter-arrival times (seconds) at each quantile, to the bucket (19 %); None when the
        log has no sub-second times."""
        total = sum(self.gaps.values()) + self.zero_gaps
        if not self.precise or total < 2:
            return None
        out = []
        for q in quantiles:
            rank = q * total
            seen = self.zero_gaps
            if rank <= seen:
                out.append(0.0)
                continue
            value = 0.0
            for bucket in sorted(self.gaps):
                seen += self.gaps[bucket]
                if seen >= rank:
                    value = 2 ** ((bucket + 0.5) / 4) / 1e6
                    break
            out.append(value)
        return out


__all__ = [
    "MAX_CACHED",
    "MAX_CURVE",
    "MAX_VALUES",
    "Cardinality",
    "OperationStats",
    "TrafficStats",
    "ValueCounts",
    "is_secret_name",
]
