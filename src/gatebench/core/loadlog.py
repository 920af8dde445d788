"""Our reader of the open-model load engine's records (``loadgen/``, ``gatebench-loadgen``), and
the merge of several testers' schedules.

The engine sends each arrival of a constant-rate phase when the schedule says it is due and
measures its latency from that due time (no coordinated omission), recording beside it how late
it really left (its schedule lag). Its records are binary frames, each batch of requests a set of
columns (the layout is in ``loadgen/records.go``), so each column is taken in one copy
(``array.frombytes``) and a probe of a few hundred thousand requests reads in tens of
milliseconds. This module turns them into what the rest of gatebench reads:

* a :class:`~gatebench.core.measure.PhaseResult` per phase, whose sample holds every request's
  latency from its intended start, in milliseconds with microsecond resolution, OK and KO as
  Gatling's are counted (an arrival refused because the target held ``max-in-flight`` requests
  is a KO entered at the request timeout, a lower bound, as wrk's timeouts are);
* a :class:`ScheduleSample` per phase: how well the engine kept the schedule (arrivals due,
  sent, dropped by the engine itself, each one's lag, the CPU the engine used, connections it
  opened) — what decides whether a probe measured the target or the tester
  (``gatebench.kinds.capacity``).

Pure: bytes in, data out (the cloud path's tester and the local engine read the same way).
"""

from __future__ import annotations

import math
import operator
import os
import struct
import sys
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from gatebench.core.answers import wrong_answer_kind
from gatebench.core.errors import RunError
from gatebench.core.measure import PhaseResult
from gatebench.core.stats import PhaseSample, nearest_rank

FORMAT = "gatebench-loadgen/2"


@dataclass
class ScheduleSample:
    """How the engine kept one phase's arrival schedule."""

    scheduled: int = 0
    """Arrivals the schedule had."""
    sent: int = 0
    """Arrivals handed to the network."""
    dropped: int = 0
    """Arrivals the engine could not send: its own failure (it fell behind by more than the
    request timeout, the system refused a socket), never the target's."""
    lags_ms: list[float] = field(default_factory=list)
    """Per sent or refused arrival: from its due time to the moment it was handed over."""
    from_send_ms: list[float] = field(default_factory=list)
    """Per sent or refused arrival: its latency without the lag (from the moment it left):
    what the target alone took, had the engine been on time."""
    engine_cpu_s: float = 0.0
    """CPU the engine used while dispatching the phase (user + system)."""
    window_s: float = 0.0
    """The schedule's length: what the CPU share is over."""
    cores: int = 1
    """Cores the engine could run on (its GOMAXPROCS)."""
    connections: int = 0
    """Connections opened during the phase (the rest rode the pool)."""
    drop_reasons: Counter[str] = field(default_factory=Counter)
    testers: int = 1
    busiest_cpu_pct: float | None = None
    """Several testers merged: the CPU share of the busiest one (the sum of their CPU seconds
    would hide one that ran out)."""

    @property
    def refused(self) -> int:
        """Arrivals not sent because the target already held the engine's in-flight limit."""
        return max(0, self.scheduled - self.sent - self.dropped)

    def lag_ms(self, pct: float) -> float:
        return nearest_rank(sorted(self.lags_ms), pct)

    @property
    def engine_cpu_pct(self) -> float:
        """The engine's CPU over the phase, % of the cores it could use (100: saturated); of
        the busiest tester when several shared the phase."""
        if self.busiest_cpu_pct is not None:
            return self.busiest_cpu_pct
        capacity = self.window_s * max(1, self.cores)
        return 100.0 * self.engine_cpu_s / capacity if capacity > 0 else 0.0


@dataclass(frozen=True)
class OpenPhase:
    """One phase as the engine recorded it."""

    result: PhaseResult
    schedule: ScheduleSample
    control_failure: str | None = None


@dataclass(frozen=True)
class LoadLog:
    start_epoch_ms: float
    cores: int
    phases: dict[int, OpenPhase]


def read_loadlog(path: str | os.PathLike[str]) -> LoadLog:
    """Every phase of a finished records file (RunError when it is not one)."""
    with open(path, "rb") as fh:
        return parse_loadlog(fh.read(), str(path))


_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("phase", "i", 4),
    ("intended", "q", 8),
    ("lag", "I", 4),
    ("latency", "I", 4),
    ("status", "H", 2),
    ("message", "H", 2),
    ("flags", "B", 1),
)
"""A batch's columns in the order loadgen/records.go writes them: name, array type code, bytes."""
_ROW_BYTES = sum(size for _, _, size in _COLUMNS)
DROPPED = 2
"""A record's flag: the arrival was never sent (the engine's failure)."""


def parse_loadlog(data: bytes, name: str = "records") -> LoadLog:
    """The phases of a records file's bytes (RunError, located, when they are not one)."""
    start_epoch_ms: float | None = None
    cores = 1
    messages: dict[int, str] = {0: ""}
    samples: dict[int, PhaseSample] = {}
    schedules: dict[int, ScheduleSample] = {}
    controls: dict[int, str] = {}
    ends: dict[int, tuple[int, int]] = {}
    for pos, kind, payload in _frames(data, name):
        try:
            if kind == "H":
                start_epoch_ms = int.from_bytes(payload[:8], "little", signed=True) / 1000.0
                cores = int.from_bytes(payload[8:12], "little")
            elif kind == "M":
                messages[int.from_bytes(payload[:2], "little")] = bytes(payload[2:]).decode()
            elif kind == "R":
                _requests(payload, messages, samples, schedules)
            elif kind == "C":
                controls[_int32(payload)] = bytes(payload[4:]).decode()
            elif kind == "E":
                phase = _int32(payload)
                start_us, end_us, scheduled, sent, cpu_us, connections = struct.unpack_from(
                    "<6q", payload, 4
                )
                schedule = schedules.setdefault(phase, ScheduleSample())
                schedule.scheduled = scheduled
                schedule.sent = sent
                schedule.engine_cpu_s = cpu_us / 1e6
                schedule.connections = connections
                schedule.window_s = (end_us - start_us) / 1e6
                ends[phase] = (start_us, end_us)
            else:
                raise ValueError(f"unknown frame kind {kind!r}")
        except (KeyError, ValueError, struct.error, UnicodeDecodeError) as exc:
            raise RunError(f"{name}: byte {pos}: unreadable {kind!r} frame ({exc})") from None
    if start_epoch_ms is None:
        raise RunError(f"{name}: no header frame (did the engine start?)")
    phases = {}
    for index, (start_us, end_us) in sorted(ends.items()):
        sample = samples.get(index, PhaseSample())
        schedule = schedules.setdefault(index, ScheduleSample())
        schedule.cores = cores
        last_end_ms = (sample.last_end or 0) / 1000.0
        phases[index] = OpenPhase(
            PhaseResult(
                index,
                _in_ms(sample),
                start_epoch_ms + start_us / 1000.0,
                start_epoch_ms + max(end_us / 1000.0, last_end_ms),
                None,
            ),
            schedule,
            controls.get(index),
        )
    return LoadLog(start_epoch_ms, cores, phases)


def _frames(data: bytes, name: str) -> Iterator[tuple[int, str, memoryview]]:
    """Each frame of a records file: (its byte offset, its kind, its payload); RunError when
    the file is not one or a frame is cut short."""
    magic = FORMAT.encode() + b"\n"
    if not data.startswith(magic):
        first = data.split(b"\n", 1)[0][:60].decode("utf-8", "replace")
        raise RunError(f"{name}: not a {FORMAT} file (first line: {first!r})")
    view = memoryview(data)
    pos = len(magic)
    while pos < len(data):
        if pos + 5 > len(data):
            raise RunError(f"{name}: a frame cut short at byte {pos} (did the engine stop?)")
        kind = chr(data[pos])
        size = int.from_bytes(view[pos + 1 : pos + 5], "little")
        payload = view[pos + 5 : pos + 5 + size]
        if len(payload) != size:
            raise RunError(
                f"{name}: a {kind!r} frame cut short at byte {pos} (did the engine stop?)"
            )
        yield pos, kind, payload
        pos += 5 + size


@dataclass(frozen=True)
class SentRequest:
    """One request of a records file as the engine recorded it (an arrival it sent, or refused
    at its in-flight limit; one it never sent is not a request)."""

    phase: int
    due_ms: float
    """When the schedule meant it to start, epoch milliseconds."""
    latency_ms: float
    """From that moment to its answer (or its failure)."""
    status: int
    message: str
    """Empty for an answer the phase counts OK; else its status or error, as recorded."""


def sent_requests(data: bytes, name: str = "records") -> list[SentRequest]:
    """Every request of a records file's bytes, in the order recorded (RunError, located, when
    they are not one): what a load that needs each request (route scale, a change under load)
    reads, where :func:`parse_loadlog` keeps each phase's figures."""
    start_epoch_ms: float | None = None
    messages: dict[int, str] = {0: ""}
    out: list[SentRequest] = []
    for pos, kind, payload in _frames(data, name):
        try:
            if kind == "H":
                start_epoch_ms = int.from_bytes(payload[:8], "little", signed=True) / 1000.0
            elif kind == "M":
                messages[int.from_bytes(payload[:2], "little")] = bytes(payload[2:]).decode()
            elif kind == "R":
                if start_epoch_ms is None:
                    raise ValueError("requests before the header frame")
                columns = _batch(payload)
                for i, flags in enumerate(columns["flags"]):
                    if flags & DROPPED:
                        continue
                    out.append(
                        SentRequest(
                            columns["phase"][i],
                            start_epoch_ms + columns["intended"][i] / 1000.0,
                            columns["latency"][i] / 1000.0,
                            columns["status"][i],
                            messages[columns["message"][i]],
                        )
                    )
        except (KeyError, ValueError, struct.error, UnicodeDecodeError) as exc:
            raise RunError(f"{name}: byte {pos}: unreadable {kind!r} frame ({exc})") from None
    return out


def _int32(payload: memoryview) -> int:
    return int.from_bytes(payload[:4], "little", signed=True)


def _column(payload: memoryview, at: int, code: str, n: int) -> array[int]:
    out = array(code)
    if out.itemsize * n > len(payload) - at:
        raise ValueError(f"{n} records do not fit the frame")
    out.frombytes(payload[at : at + out.itemsize * n])
    if sys.byteorder != "little":
        out.byteswap()
    return out


def _requests(
    payload: memoryview,
    messages: dict[int, str],
    samples: dict[int, PhaseSample],
    schedules: dict[int, ScheduleSample],
) -> None:
    """One batch of requests, column by column, added to its phases."""
    columns = _batch(payload)
    phases = set(columns["phase"])
    for phase in phases:
        if len(phases) == 1:
            rows = columns
        else:
            keep = [i for i, p in enumerate(columns["phase"]) if p == phase]
            rows = {c: array(v.typecode, [v[i] for i in keep]) for c, v in columns.items()}
        _add_rows(
            rows,
            messages,
            samples.setdefault(phase, PhaseSample()),
            schedules.setdefault(phase, ScheduleSample()),
        )


def _batch(payload: memoryview) -> dict[str, array[int]]:
    """A batch of requests' columns (loadgen/records.go), each in one copy."""
    n = int.from_bytes(payload[:4], "little")
    if len(payload) != 4 + n * _ROW_BYTES:
        raise ValueError(f"{len(payload)} bytes for {n} records")
    columns: dict[str, array[int]] = {}
    at = 4
    for column, code, size in _COLUMNS:
        columns[column] = _column(payload, at, code, n)
        at += size * n
    return columns


def _add_rows(
    rows: dict[str, array[int]],
    messages: dict[int, str],
    sample: PhaseSample,
    schedule: ScheduleSample,
) -> None:
    """One phase's requests of a batch: the sent (and refused) ones into its sample and its
    lags, the dropped ones into its drop count (times kept in µs until the phase is complete:
    :func:`_in_ms`)."""
    intended, lag, latency, message = (
        rows["intended"],
        rows["lag"],
        rows["latency"],
        rows["message"],
    )
    if any(f & DROPPED for f in set(rows["flags"])):
        flags = rows["flags"]
        for i in (i for i, f in enumerate(flags) if f & DROPPED):
            schedule.dropped += 1
            schedule.drop_reasons[messages[message[i]]] += 1
        keep = [i for i, f in enumerate(flags) if not f & DROPPED]
        intended = array("q", [intended[i] for i in keep])
        lag = array("I", [lag[i] for i in keep])
        latency = array("I", [latency[i] for i in keep])
        message = array("H", [message[i] for i in keep])
    if not intended:
        return
    sample.counts.update(Counter(v / 1000.0 for v in latency))
    schedule.lags_ms.extend([v / 1000.0 for v in lag])
    schedule.from_send_ms.extend(
        [max(0, a - b) / 1000.0 for a, b in zip(latency, lag, strict=True)]
    )
    for id_, count in Counter(message).items():
        if id_ == 0:
            sample.ok += count
        elif (kind := wrong_answer_kind(text := messages[id_])) is not None:
            sample.add_wrong(kind, text, count)
        else:
            sample.ko += count
            sample.errors[text] += count
    sample.widen(min(intended), max(intended), max(map(operator.add, intended, latency)))


def _in_ms(sample: PhaseSample) -> PhaseSample:
    """The sample's window in whole ms from the engine's start (what PhaseSample holds): the
    first intended start rounded down, the last end rounded up."""
    if sample.first_start is not None:
        sample.first_start = sample.first_start // 1000
    if sample.last_start is not None:
        sample.last_start = sample.last_start // 1000
    if sample.last_end is not None:
        sample.last_end = math.ceil(sample.last_end / 1000)
    return sample


def merge_schedules(parts: Sequence[ScheduleSample]) -> ScheduleSample:
    """Several testers' shares of one phase as one schedule: counts, connections and CPU
    seconds summed, every lag kept, and the busiest tester's CPU share."""
    out = ScheduleSample(testers=len(parts))
    for part in parts:
        out.scheduled += part.scheduled
        out.sent += part.sent
        out.dropped += part.dropped
        out.lags_ms.extend(part.lags_ms)
        out.from_send_ms.extend(part.from_send_ms)
        out.connections += part.connections
        out.engine_cpu_s += part.engine_cpu_s
        out.drop_reasons.update(part.drop_reasons)
        out.window_s = max(out.window_s, part.window_s)
        out.cores = max(out.cores, part.cores)
    out.busiest_cpu_pct = max((p.engine_cpu_pct for p in parts), default=0.0)
    return out


__all__ = [
    "FORMAT",
    "LoadLog",
    "OpenPhase",
    "ScheduleSample",
    "SentRequest",
    "merge_schedules",
    "parse_loadlog",
    "read_loadlog",
    "sent_requests",
]
