"""A Gatling 3.15 binary simulation.log, written byte by byte in the layout
gatebench.core.simlog reads (FACTS.md: big-endian, cached strings): for tests that need a
raw log without running Gatling."""

from __future__ import annotations

import io
import struct
from typing import Any


class SimLogWriter:
    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.out = bytearray(b"\x00")
        self.cache: dict[str, int] = {}
        for text in ("3.15.1", "gatebench.GenericSimulation"):
            self._string(text)
        self.out += struct.pack(">q", start_ms)
        self._string("")
        self.out += struct.pack(">i", 1)
        self._string("s0")
        self.out += struct.pack(">i", 0)  # no assertions

    def _string(self, text: str) -> None:
        raw = text.encode("latin-1")
        self.out += struct.pack(">i", len(raw)) + raw + (b"\x00" if raw else b"")

    def _cached(self, text: str) -> None:
        if text in self.cache:
            self.out += struct.pack(">i", -self.cache[text])
            return
        self.cache[text] = len(self.cache) + 1
        self.out += struct.pack(">i", self.cache[text])
        self._string(text)

    def request(
        self, name: str, start: int, end: int, ok: bool = True, message: str = ""
    ) -> SimLogWriter:
        self.out += b"\x01" + struct.pack(">i", 0)
        self._cached(name)
        self.out += struct.pack(">ii", start, end) + (b"\x01" if ok else b"\x00")
        self._cached(message)
        return self

    def bytes(self) -> bytes:
        return bytes(self.out)


class RequestStream(io.RawIOBase):
    """A simulation.log of ``requests`` records of one request name, made as it is read (never
    whole in memory): request i starts at i ms and takes ``i % spread`` ms, OK. Its records
    take the layout Gatling writes once its strings are cached (no group, the name and the
    empty message as back-references)."""

    RECORD = struct.Struct(">BiiiiBi")

    def __init__(self, name: str, requests: int, spread: int = 997) -> None:
        head = SimLogWriter().request(name, 0, 0)  # defines the name (1) and "" (2)
        self._head = head.bytes()
        self.requests, self.spread = requests, spread
        self._next = 1  # the head holds request 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            size = len(self._head)
            buffer[:size] = self._head
            self._head = b""
            return size
        count = min(self.requests - self._next, len(buffer) // self.RECORD.size)
        if count <= 0:
            return 0
        pack, spread, first = self.RECORD.pack, self.spread, self._next
        chunk = b"".join(
            pack(1, 0, -1, i, i + i % spread, 1, -2) for i in range(first, first + count)
        )
        self._next += count
        buffer[: len(chunk)] = chunk
        return len(chunk)
