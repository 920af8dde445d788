"""A passive look at the loopback interface: TLS handshakes a server answered (new or
resumed), and connection attempts to a port (a killed replica's).

Neither the load engine nor the gateways say how many of their TLS handshakes were resumed,
or when a gateway stopped trying a dead replica, in a way that is the same for all of them;
the packets do. A packet socket on ``lo`` with a classic BPF filter hands this process only

- TCP segments *from* the watched server ports whose payload starts a TLS ServerHello
  (record type 22, handshake type 2): one per handshake. TLS 1.3 marks a resumed session
  with the ``pre_shared_key`` extension in the ServerHello; TLS 1.2 with an abbreviated
  handshake (no Certificate message after the ServerHello). A HelloRetryRequest is not a
  handshake of its own;
- TCP segments *to* the watched attempt ports with SYN set and ACK clear: one per
  connection attempt (a refused one included).

The kernel filters, so the cost is a few packets per handshake, never the traffic. A packet
socket needs CAP_NET_RAW (root; a container needs ``--cap-add NET_RAW``); without it
:func:`open_observer` raises :class:`WireUnavailable` and the caller reports what it could not
observe. The local path watches the loopback interface (every packet counted once, as it goes
out); a VM of the cloud path watches what arrives on any of its interfaces (``interface=None``:
the tester sees the targets' ServerHellos, the backend VM the connection attempts to its
replicas).
"""

from __future__ import annotations

import ctypes
import select
import socket
import struct
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

ETH_P_ALL = 0x0003
SO_ATTACH_FILTER = 26
PACKET_HOST = 0
PACKET_OUTGOING = 4
_HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
_EXT_PRE_SHARED_KEY = 41
_EXT_SUPPORTED_VERSIONS = 43

# Classic BPF opcodes (linux/filter.h).
_LD_H_ABS, _LD_B_ABS, _LD_B_IND, _LDX_B_MSH = 0x28, 0x30, 0x50, 0xB1
_JEQ_K, _JSET_K = 0x15, 0x45
_ALU_RSH_K, _ALU_MUL_K, _ALU_ADD_X, _ALU_AND_K = 0x74, 0x24, 0x0C, 0x54
_TAX, _RET_K = 0x07, 0x06


class WireUnavailable(RuntimeError):
    """The packet socket cannot be opened here (no CAP_NET_RAW, no ``lo``)."""


@dataclass(frozen=True)
class Handshake:
    time: float
    """Epoch seconds the ServerHello was seen."""
    port: int
    """The server port that answered."""
    resumed: bool
    version: str
    """``TLSv1.3`` or ``TLSv1.2``."""


@dataclass(frozen=True)
class Attempt:
    time: float
    port: int


def _program(
    server_ports: Iterable[int], attempt_ports: Iterable[int]
) -> list[tuple[int, int, int, int]]:
    """The BPF program: accept ServerHellos from ``server_ports`` and SYNs to
    ``attempt_ports`` (IPv4 over the loopback's Ethernet-style header)."""
    servers, attempts = sorted(set(server_ports)), sorted(set(attempt_ports))
    prog: list[tuple[int, int, int, int]] = []
    drop = "drop"
    jumps: list[tuple[int, str, str]] = []  # (index, true label, false label)

    def add(code: int, k: int = 0) -> int:
        prog.append((code, 0, 0, k))
        return len(prog) - 1

    def jump(code: int, k: int, true: str, false: str) -> None:
        jumps.append((len(prog), true, false))
        prog.append((code, 0, 0, k))

    labels: dict[str, int] = {}
    add(_LD_H_ABS, 12)  # ethertype
    jump(_JEQ_K, 0x0800, "ip", drop)
    labels["ip"] = len(prog)
    add(_LD_B_ABS, 23)  # IP protocol
    jump(_JEQ_K, 6, "tcp", drop)
    labels["tcp"] = len(prog)
    add(_LD_H_ABS, 20)  # fragment offset
    jump(_JSET_K, 0x1FFF, drop, "whole")
    labels["whole"] = len(prog)
    add(_LDX_B_MSH, 14)  # X = IP header length
    add(0x48, 14)  # ldh [x+14]: source port
    for n, port in enumerate(servers):
        jump(_JEQ_K, port, "hello", f"s{n + 1}")
        labels[f"s{n + 1}"] = len(prog)
    add(0x48, 16)  # ldh [x+16]: destination port
    for n, port in enumerate(attempts):
        jump(_JEQ_K, port, "syn", f"d{n + 1}")
        labels[f"d{n + 1}"] = len(prog)
    jump(_JEQ_K, 0x10000, drop, drop)  # nothing matched
    labels["syn"] = len(prog)
    add(_LD_B_IND, 27)  # TCP flags
    add(_ALU_AND_K, 0x12)  # SYN | ACK
    jump(_JEQ_K, 0x02, "accept", drop)
    labels["hello"] = len(prog)
    add(_LD_B_IND, 26)  # TCP data offset (high nibble)
    add(_ALU_RSH_K, 4)
    add(_ALU_MUL_K, 4)
    add(_ALU_ADD_X)  # A = IP header + TCP header
    add(_TAX)
    add(_LD_B_IND, 14)  # first payload byte: TLS record type
    jump(_JEQ_K, 22, "record", drop)
    labels["record"] = len(prog)
    add(_LD_B_IND, 19)  # handshake type
    jump(_JEQ_K, 2, "accept", drop)
    labels["accept"] = len(prog)
    add(_RET_K, 0x40000)
    labels[drop] = len(prog)
    add(_RET_K, 0)
    out = list(prog)
    for index, true, false in jumps:
        code, _, _, k = out[index]
        jt, jf = labels[true] - index - 1, labels[false] - index - 1
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError("too many ports for one filter")
        out[index] = (code, jt, jf, k)
    return out


def parse_server_hello(payload: bytes) -> tuple[bool, str] | None:
    """(resumed, version) from the start of a server's first TLS flight; None for a
    HelloRetryRequest or what is not a whole ServerHello."""
    if len(payload) < 9 or payload[0] != 22 or payload[5] != 2:
        return None
    length = int.from_bytes(payload[6:9], "big")
    body = payload[9 : 9 + length]
    if len(body) < length or len(body) < 38:
        return None
    random = body[2:34]
    if random == _HRR_RANDOM:
        return None
    at = 34
    session_len = body[at]
    at += 1 + session_len + 3  # session id, cipher suite, compression
    extensions: dict[int, bytes] = {}
    if at + 2 <= len(body):
        end = at + 2 + int.from_bytes(body[at : at + 2], "big")
        at += 2
        while at + 4 <= min(end, len(body)):
            kind = int.from_bytes(body[at : at + 2], "big")
            size = int.from_bytes(body[at + 2 : at + 4], "big")
            extensions[kind] = body[at + 4 : at + 4 + size]
            at += 4 + size
    if extensions.get(_EXT_SUPPORTED_VERSIONS) == b"\x03\x04":
        return _EXT_PRE_SHARED_KEY in extensions, "TLSv1.3"
    # TLS 1.2: a full handshake sends its Certificate next; an abbreviated (resumed) one
    # goes on to ChangeCipherSpec without one (a NewSessionTicket may come first). What follows
    # ChangeCipherSpec is encrypted (its first byte may be 11 as often as anything): not read.
    # Unknown (the flight continues in a later segment): counted as new.
    rest = payload
    while len(rest) >= 5:
        kind, size = rest[0], int.from_bytes(rest[3:5], "big")
        if kind == 20:
            return True, "TLSv1.2"
        if kind == 22:
            record, at = rest[5 : 5 + size], 0
            while at + 4 <= len(record):
                if record[at] == 11:
                    return False, "TLSv1.2"
                at += 4 + int.from_bytes(record[at + 1 : at + 4], "big")
        rest = rest[5 + size :]
    return False, "TLSv1.2"


@dataclass
class LoopbackObserver:
    """The packet socket and its reader thread; :meth:`close` stops both."""

    server_ports: tuple[int, ...]
    attempt_ports: tuple[int, ...]
    interface: str | None = "lo"
    """``lo``: the loopback interface, each packet counted as it goes out; None: every
    interface, each packet counted as it arrives for this host."""
    handshakes: list[Handshake] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    _sock: socket.socket | None = None
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except (PermissionError, OSError, AttributeError) as exc:
            raise WireUnavailable(f"no packet socket here ({exc}); needs CAP_NET_RAW") from None
        try:
            program = _program(self.server_ports, self.attempt_ports)
            buffer = ctypes.create_string_buffer(
                b"".join(struct.pack("HBBI", *ins) for ins in program)
            )
            fprog = struct.pack("HL", len(program), ctypes.addressof(buffer))
            sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
            if self.interface is not None:
                sock.bind((self.interface, 0))
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            where = self.interface or "this host's interfaces"
            raise WireUnavailable(f"cannot watch {where}: {exc}") from None
        self._filter = buffer  # kept alive while attached
        self._counted = PACKET_OUTGOING if self.interface == "lo" else PACKET_HOST
        self._sock = sock
        self._thread = threading.Thread(target=self._read, name="gatebench-wire", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        sock = self._sock
        assert sock is not None
        while not self._stop.is_set():
            ready, _, _ = select.select([sock], [], [], 0.1)
            if not ready:
                continue
            while True:
                try:
                    packet, address = sock.recvfrom(65535)
                except BlockingIOError:
                    break
                except OSError:
                    return
                if address[2] != self._counted:
                    continue  # loopback shows each packet twice: count it once
                self._take(packet, time.time())

    def _take(self, packet: bytes, now: float) -> None:
        if len(packet) < 34:
            return
        ip_len = (packet[14] & 0x0F) * 4
        tcp = 14 + ip_len
        if len(packet) < tcp + 20:
            return
        src, dst = struct.unpack("!HH", packet[tcp : tcp + 4])
        flags = packet[tcp + 13]
        with self._lock:
            if dst in self.attempt_ports and flags & 0x12 == 0x02:
                self.attempts.append(Attempt(now, dst))
                return
            if src in self.server_ports:
                payload = packet[tcp + (packet[tcp + 12] >> 4) * 4 :]
                found = parse_server_hello(payload)
                if found is not None:
                    self.handshakes.append(Handshake(now, src, found[0], found[1]))

    def handshakes_between(
        self, start: float, end: float, port: int | None = None
    ) -> tuple[int, int]:
        """(new, resumed) handshakes seen in [start, end] (epoch seconds), of one port or all."""
        with self._lock:
            seen = [h for h in self.handshakes if start <= h.time <= end and port in (None, h.port)]
        resumed = sum(1 for h in seen if h.resumed)
        return len(seen) - resumed, resumed

    def attempts_to(self, port: int, since: float) -> list[float]:
        """Times of the connection attempts to ``port`` from ``since`` on."""
        with self._lock:
            return [a.time for a in self.attempts if a.port == port and a.time >= since]

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def open_observer(
    server_ports: Iterable[int] = (),
    attempt_ports: Iterable[int] = (),
    interface: str | None = "lo",
) -> LoopbackObserver:
    """A started observer (close it when done); :class:`WireUnavailable` when it cannot run.
    ``interface``: ``lo``, or None for every interface of the host (a VM's arrivals)."""
    observer = LoopbackObserver(tuple(server_ports), tuple(attempt_ports), interface)
    observer.start()
    return observer


__all__ = [
    "Attempt",
    "Handshake",
    "LoopbackObserver",
    "WireUnavailable",
    "open_observer",
    "parse_server_hello",
]
