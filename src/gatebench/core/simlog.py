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
from typing import BinaryIO

from gatebench.core.errors import RunError


@dataclass(frozen=True)
class RunHeader:
    gatling_version: str
    simulation: str
    start_ms: int
    description: str
    scenarios: tuple[str, ...]


@dataclass(frozen=True)
class RequestRecord:
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


class SimLogReader:
    """Incremental reader: :meth:`feed` bytes as they arrive, get the complete records back."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._pos = 0
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
        out: list[Record] = []
        while self._buffer:
            self._pos = 0
            new_cache: dict[int, str] = {}
            try:
                record = self._record(new_cache)
            except _Incomplete:
                break
            self._cache.update(new_cache)
            del self._buffer[: self._pos]
            self.offset += self._pos
            if isinstance(record, RunHeader):
                self.header = record
            out.append(record)
        return out

    # -- primitives ----------------------------------------------------------------------------

    def _take(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._buffer):
            raise _Incomplete()
        chunk = bytes(self._buffer[self._pos : end])
        self._pos = end
        return chunk

    def _int(self) -> int:
        value: int = struct.unpack(">i", self._take(4))[0]
        return value

    def _long(self) -> int:
        value: int = struct.unpack(">q", self._take(8))[0]
        return value

    def _byte(self) -> int:
        return self._take(1)[0]

    def _string(self) -> str:
        length = self._int()
        if length == 0:
            return ""
        if length < 0:
            raise RunError(
                f"simulation.log: negative string length {length} at byte {self.offset + self._pos - 4}"
            )
        raw = self._take(length)
        coder = self._byte()
        if coder == 0:
            return raw.decode("latin-1")
        if coder == 1:
            return raw.decode("utf-16-le")
        raise RunError(
            f"simulation.log: unknown string coder {coder} at byte {self.offset + self._pos - 1}"
        )

    def _cached(self, new_cache: dict[int, str]) -> str:
        index = self._int()
        if index > 0:
            value = self._string()
            new_cache[index] = value
            return value
        key = -index
        if key in new_cache:
            return new_cache[key]
        if key not in self._cache:
            raise RunError(
                f"simulation.log: string index {key} used before it was defined "
                f"(byte {self.offset + self._pos - 4})"
            )
        return self._cache[key]

    def _groups(self, new_cache: dict[int, str]) -> tuple[str, ...]:
        count = self._int()
        if count < 0 or count > 1000:
            raise RunError(f"simulation.log: implausible group count {count}")
        return tuple(self._cached(new_cache) for _ in range(count))

    def _record(self, new_cache: dict[int, str]) -> Record:
        kind = self._byte()
        if kind == 0:
            version = self._string()
            simulation = self._string()
            start = self._long()
            description = self._string()
            scenarios = tuple(self._string() for _ in range(self._int()))
            for _ in range(self._int()):
                self._take(self._int())
            return RunHeader(version, simulation, start, description, scenarios)
        if self.header is None:
            raise RunError("simulation.log: the first record is not the run record")
        if kind == 1:
            groups = self._groups(new_cache)
            name = self._cached(new_cache)
            start, end = self._int(), self._int()
            ok = self._byte() == 1
            message = self._cached(new_cache)
            return RequestRecord(groups, name, start, end, ok, message)
        if kind == 2:
            scenario = self._int()
            started = self._byte() == 1
            return UserRecord(scenario, started, self._int())
        if kind == 3:
            groups = self._groups(new_cache)
            start, end, cumulated = self._int(), self._int(), self._int()
            return GroupRecord(groups, start, end, cumulated, self._byte() == 1)
        if kind == 4:
            message = self._cached(new_cache)
            return ErrorRecord(message, self._int())
        raise RunError(
            f"simulation.log: unknown record type {kind} at byte {self.offset}; "
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
