"""A Gatling 3.15 binary simulation.log, written byte by byte in the layout
gatebench.core.simlog reads (FACTS.md: big-endian, cached strings): for tests that need a
raw log without running Gatling."""

from __future__ import annotations

import struct


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
