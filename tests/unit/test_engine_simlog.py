"""The binary simulation.log reader on hand-made bytes (the layout of Gatling 3.15.1's
LogFileDataWriter); tests/integration/test_engine_gatling.py reads logs the real Gatling wrote."""

from __future__ import annotations

import struct

import pytest

from gatebench.core.errors import RunError
from gatebench.core.simlog import (
    ErrorRecord,
    GroupRecord,
    RequestRecord,
    RunHeader,
    SimLogReader,
    UserRecord,
)


class Writer:
    """Writes the format the way Gatling does (string cache from index 1)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.cache: dict[str, int] = {}

    def string(self, s: str) -> None:
        if not s:
            self.out += struct.pack(">i", 0)
            return
        try:
            raw, coder = s.encode("latin-1"), 0
        except UnicodeEncodeError:
            raw, coder = s.encode("utf-16-le"), 1
        self.out += struct.pack(">i", len(raw)) + raw + bytes([coder])

    def cached(self, s: str) -> None:
        if s in self.cache:
            self.out += struct.pack(">i", -self.cache[s])
            return
        index = len(self.cache) + 1
        self.cache[s] = index
        self.out += struct.pack(">i", index)
        self.string(s)

    def run(self, scenarios: list[str]) -> Writer:
        self.out += b"\x00"
        self.string("3.15.1")
        self.string("gatebench.GenericSimulation")
        self.out += struct.pack(">q", 1_700_000_000_000)
        self.string("")
        self.out += struct.pack(">i", len(scenarios))
        for s in scenarios:
            self.string(s)
        self.out += struct.pack(">i", 1) + struct.pack(">i", 3) + b"abc"  # one assertion blob
        return self

    def request(
        self,
        name: str,
        start: int,
        end: int,
        ok: bool,
        message: str = "",
        groups: tuple[str, ...] = (),
    ) -> Writer:
        self.out += b"\x01" + struct.pack(">i", len(groups))
        for g in groups:
            self.cached(g)
        self.cached(name)
        self.out += struct.pack(">ii", start, end) + (b"\x01" if ok else b"\x00")
        self.cached(message)
        return self

    def user(self, scenario: int, start: bool, time: int) -> Writer:
        self.out += b"\x02" + struct.pack(">i", scenario) + (b"\x01" if start else b"\x00")
        self.out += struct.pack(">i", time)
        return self

    def group(self, name: str, start: int, end: int) -> Writer:
        self.out += b"\x03" + struct.pack(">i", 1)
        self.cached(name)
        self.out += struct.pack(">iii", start, end, 0) + b"\x01"
        return self

    def error(self, message: str, time: int) -> Writer:
        self.out += b"\x04"
        self.cached(message)
        self.out += struct.pack(">i", time)
        return self


def sample_log() -> bytes:
    w = Writer().run(["s0", "c1"])
    w.user(0, True, 5)
    w.request("p0000", 10, 12, True)
    w.request("p0000", 11, 20, False, "status.find.in(200), found 409")
    w.request("p0000", 12, 13, False, "status.find.in(200), found 409")
    w.request("p0001", 30, 31, True, "", groups=("grüße €",))
    w.group("__flush__1_xxxx", 40, 40)
    w.error("connection refused", 41)
    w.user(0, False, 50)
    return bytes(w.out)


def test_reads_every_record_kind() -> None:
    records = SimLogReader().feed(sample_log())
    assert records[0] == RunHeader(
        "3.15.1", "gatebench.GenericSimulation", 1_700_000_000_000, "", ("s0", "c1")
    )
    assert records[1] == UserRecord(0, True, 5)
    assert records[2] == RequestRecord((), "p0000", 10, 12, True, "")
    assert records[3].message == records[4].message == "status.find.in(200), found 409"  # type: ignore[union-attr]
    assert records[5] == RequestRecord(("grüße €",), "p0001", 30, 31, True, "")
    assert records[6] == GroupRecord(("__flush__1_xxxx",), 40, 40, 0, True)
    assert records[7] == ErrorRecord("connection refused", 41)
    assert records[8] == UserRecord(0, False, 50)


def test_any_chunking_gives_the_same_records() -> None:
    data = sample_log()
    expected = SimLogReader().feed(data)
    for size in (1, 2, 3, 7, 64):
        reader = SimLogReader()
        got = []
        for i in range(0, len(data), size):
            got.extend(reader.feed(data[i : i + size]))
        assert got == expected
        assert reader.pending == 0
        assert reader.offset == len(data)


def test_truncated_tail_is_held_back() -> None:
    data = sample_log()
    reader = SimLogReader()
    records = reader.feed(data[:-3])
    assert len(records) == 8
    assert reader.pending > 0
    assert reader.feed(data[-3:])[-1] == UserRecord(0, False, 50)


def test_unknown_record_type_names_the_byte() -> None:
    data = bytes(Writer().run([]).out)
    with pytest.raises(
        RunError, match=r"unknown record type 9 at byte 71; is this a Gatling 3.13\+ binary log\?"
    ):
        SimLogReader().feed(data + b"\x09")


def test_first_record_must_be_the_run() -> None:
    with pytest.raises(RunError, match="the first record is not the run record"):
        SimLogReader().feed(b"\x02" + struct.pack(">i", 0) + b"\x01" + struct.pack(">i", 1))
