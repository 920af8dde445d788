"""Our own reader of Gatling's binary ``simulation.log`` (Gatling 3.13+; checked on 3.15.1).

Gatling stopped writing a text log in 3.13.0 and ``js/stats.json`` in 3.13.5, and its own
percentiles come from a t-digest. Reading the raw per-request records ourselves gives exact
percentiles, and lets the engine read a log *while it grows*: :class:`SimLogReader` accepts
bytes in any chunks and returns the records that are complete so far.

Layout (Gatling's ``LogFileDataWriter.scala``), big-endian throughout:

* string: int32 length, then the bytes, then one coder byte (0 = Latin-1, 1 = UTF-16 in the
  JVM's native order, little-endian on x86 and ARM); length 0 is the empty string, with no
  coder byte.
* cached string: int32 index; > 0 introduces a new string (which follows) under that index,
  < 0 refers back to index −n (indexes start at 1).
* record 0, run (first): gatling version, simulation class, int64 start (epoch ms), run
  description, int32 count + scenario names, int32 count + assertions (int32 length + bytes).
* record 1, request: int32 count + cached group names, cached request name, int32 start,
  int32 end (ms since the run start), byte status (1 = OK), cached message.
* record 2, user: int32 scenario index, byte start (1) / end (0), int32 time.
* record 3, group: int32 count + cached group names, int32 start, int32 end, int32 cumulated
  response time, byte status.
* record 4, error: cached message, int32 time.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from gatebench.core.errors import RunError


@dataclass(frozen=True)
class RunHeader:
    gatling_version: str
    simulation: str
    start_ms: int
    description: str
    scenarios: tuple[str, ...]


class RequestRecord(NamedTuple):
    """One request (a named tuple rather than a dataclass: a log holds millions of them, and
    building a tuple costs a third of a frozen dataclass)."""

    groups: tuple[str, ...]
    name: str
    start: int
    """Milliseconds since the run start."""
    end: int
    ok: bool
    message: str

    @property
    def latency_ms(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class UserRecord:
    scenario: int
    start: bool
    time: int


@dataclass(frozen=True)
class GroupRecord:
    groups: tuple[str, ...]
    start: int
    end: int
    cumulated: int
    ok: bool


@dataclass(frozen=True)
class ErrorRecord:
    message: str
    time: int


Record = RunHeader | RequestRecord | UserRecord | GroupRecord | ErrorRecord


class _Incomplete(Exception):
    """The buffer ends inside a record: wait for more bytes."""


_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_TWO_INTS = struct.Struct(">ii")
_THREE_INTS = struct.Struct(">iii")
_PLAIN_REQUEST = struct.Struct(">iiiiBi")
"""A request record after its type byte: group count, name index, start, end, status,
message index."""


class SimLogReader:
    """Incremental reader: :meth:`feed` bytes as they arrive, get the complete records back.

    Records are read in place from the bytes received (offsets into one buffer, no copy per
    field), and the consumed part is dropped once per :meth:`feed`: a log of 10^7 requests is
    read in tens of seconds, in memory bounded by the chunk size."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._cache: dict[int, str] = {}
        self.header: RunHeader | None = None
        self.offset = 0
        """Bytes consumed so far (complete records)."""

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a complete record."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Record]:
        self._buffer += data
        buffer = self._buffer
        out: list[Record] = []
        pos = 0
        size = len(buffer)
        cache = self._cache
        header = self.header
        while pos < size:
            # The common request first, in one unpack: no group, its name and message both
            # strings seen before (negative indexes into the cache).
            if header is not None and buffer[pos] == 1 and pos + _PLAIN_REQUEST.size < size:
                groups, name_at, start, end, status, message_at = _PLAIN_REQUEST.unpack_from(
                    buffer, pos + 1
                )
                if groups == 0 and name_at < 0 and message_at < 0:
                    name = cache.get(-name_at)
                    message = cache.get(-message_at)
                    if name is not None and message is not None:
                        out.append(RequestRecord((), name, start, end, status == 1, message))
                        pos += 1 + _PLAIN_REQUEST.size
                        continue
            new_cache: dict[int, str] = {}
            try:
                record, end = self._record(buffer, pos, size, new_cache)
            except _Incomplete:
                break
            if new_cache:
                self._cache.update(new_cache)
            if isinstance(record, RunHeader):
                self.header = header = record
            out.append(record)
            pos = end
        if pos:
            del buffer[:pos]
            self.offset += pos
        return out

    # -- primitives: each reads at ``pos`` and returns the value and the position after it ------

    @staticmethod
    def _int(buffer: bytearray, pos: int, size: int) -> tuple[int, int]:
        if pos + 4 > size:
            raise _Incomplete()
        value: int = _INT.unpack_from(buffer, pos)[0]
        return value, pos + 4

    def _string(self, buffer: bytearray, pos: int, size: int) -> tuple[str, int]:
        length, pos = self._int(buffer, pos, size)
        if length == 0:
            return "", pos
        if length < 0:
            raise RunError(
                f"simulation.log: negative string length {length} at byte {self.offset + pos - 4}"
            )
        end = pos + length
        if end + 1 > size:
            raise _Incomplete()
        raw = bytes(buffer[pos:end])
        coder = buffer[end]
        if coder == 0:
            return raw.decode("latin-1"), end + 1
        if coder == 1:
            return raw.decode("utf-16-le"), end + 1
        raise RunError(f"simulation.log: unknown string coder {coder} at byte {self.offset + end}")

    def _cached(
        self, buffer: bytearray, pos: int, size: int, new_cache: dict[int, str]
    ) -> tuple[str, int]:
        index, pos = self._int(buffer, pos, size)
        if index > 0:
            value, pos = self._string(buffer, pos, size)
            new_cache[index] = value
            return value, pos
        key = -index
        found = self._cache.get(key)
        if found is not None:
            return found, pos
        if key in new_cache:
            return new_cache[key], pos
        raise RunError(
            f"simulation.log: string index {key} used before it was defined "
            f"(byte {self.offset + pos - 4})"
        )

    def _groups(
        self, buffer: bytearray, pos: int, size: int, new_cache: dict[int, str]
    ) -> tuple[tuple[str, ...], int]:
        count, pos = self._int(buffer, pos, size)
        if count == 0:
            return (), pos
        if count < 0 or count > 1000:
            raise RunError(f"simulation.log: implausible group count {count}")
        names = []
        for _ in range(count):
            name, pos = self._cached(buffer, pos, size, new_cache)
            names.append(name)
        return tuple(names), pos

    def _record(
        self, buffer: bytearray, pos: int, size: int, new_cache: dict[int, str]
    ) -> tuple[Record, int]:
        start_pos = pos
        kind = buffer[pos]
        pos += 1
        if kind == 1 and self.header is not None:  # a request: by far the most records
            groups, pos = self._groups(buffer, pos, size, new_cache)
            name, pos = self._cached(buffer, pos, size, new_cache)
            if pos + 9 > size:
                raise _Incomplete()
            start, end = _TWO_INTS.unpack_from(buffer, pos)
            ok = buffer[pos + 8] == 1
            message, pos = self._cached(buffer, pos + 9, size, new_cache)
            return RequestRecord(groups, name, start, end, ok, message), pos
        if kind == 0:
            version, pos = self._string(buffer, pos, size)
            simulation, pos = self._string(buffer, pos, size)
            if pos + 8 > size:
                raise _Incomplete()
            start_ms: int = _LONG.unpack_from(buffer, pos)[0]
            description, pos = self._string(buffer, pos + 8, size)
            count, pos = self._int(buffer, pos, size)
            scenarios = []
            for _ in range(count):
                scenario, pos = self._string(buffer, pos, size)
                scenarios.append(scenario)
            assertions, pos = self._int(buffer, pos, size)
            for _ in range(assertions):
                length, pos = self._int(buffer, pos, size)
                if pos + length > size:
                    raise _Incomplete()
                pos += length
            header = RunHeader(version, simulation, start_ms, description, tuple(scenarios))
            return header, pos
        if self.header is None:
            raise RunError("simulation.log: the first record is not the run record")
        if kind == 2:
            if pos + 9 > size:
                raise _Incomplete()
            scenario = _INT.unpack_from(buffer, pos)[0]
            started = buffer[pos + 4] == 1
            time = _INT.unpack_from(buffer, pos + 5)[0]
            return UserRecord(scenario, started, time), pos + 9
        if kind == 3:
            groups, pos = self._groups(buffer, pos, size, new_cache)
            if pos + 13 > size:
                raise _Incomplete()
            start, end, cumulated = _THREE_INTS.unpack_from(buffer, pos)
            return GroupRecord(groups, start, end, cumulated, buffer[pos + 12] == 1), pos + 13
        if kind == 4:
            message, pos = self._cached(buffer, pos, size, new_cache)
            time, pos = self._int(buffer, pos, size)
            return ErrorRecord(message, time), pos
        raise RunError(
            f"simulation.log: unknown record type {kind} at byte {self.offset + start_pos}; "
            "is this a Gatling 3.13+ binary log?"
        )


SimLogSource = str | os.PathLike[str] | BinaryIO
"""A log file's path, or a binary stream of it (read in chunks, closed when done)."""


def read_simlog(source: SimLogSource, chunk_size: int = 1 << 20) -> Iterator[Record]:
    """Every complete record of a log (a truncated last record is ignored), read
    ``chunk_size`` bytes at a time: never the whole log in memory."""
    reader = SimLogReader()
    stream = open(source, "rb") if isinstance(source, (str, os.PathLike)) else source  # noqa: SIM115
    with stream as fh:
        while True:
            chunk = fh.read(chunk_size)
            if not chunk:
                break
            yield from reader.feed(chunk)


__all__ = [
    "ErrorRecord",
    "GroupRecord",
    "Record",
    "RequestRecord",
    "RunHeader",
    "SimLogReader",
    "SimLogSource",
    "UserRecord",
    "read_simlog",
]
