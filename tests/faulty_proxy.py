"""A deliberately faulty HTTP/1.1 proxy on loopback: the proof that the engines catch wrong
answers under load (docs/trust.md, "Right answers under load").

It forwards each client connection to the backend over a connection of its own, and injects
four faults, each a fixed number of times, counting what it really did:

- ``swaps``: the answers of two requests in flight on two client connections are exchanged
  (each swap makes two crossed answers);
- ``body_swaps``: the same, but only the bodies are exchanged, each answer keeping its own
  head (status, headers, the signature), its ``Content-Length`` fitted to the new body;
- ``stripped_swaps``: the same as ``swaps``, and both answers lose their signature header;
- ``stripped``: an answer loses its signature header (``X-Gatebench-Answer``) on the way back;
- ``truncations``: an answer whose body is longer than ``truncate_above`` bytes is cut to that
  length, its ``Content-Length`` cut with it (a proxy whose buffer filled);
- ``dropped``: the request header ``drop_header`` is removed on the way to the backend;
- ``repeats``: a POST is sent to the backend twice and the second answer is returned (a retry
  of a request that is not idempotent);
- ``wrong_keys``: a GET is answered with the answer to an earlier GET of another request
  target, without reaching the backend (a cache keyed on too little);
- ``cache_hits``: a GET is answered with the answer to an earlier GET of the same request
  target (a cache working as it should: not a wrong answer where the phase is ``cached``).
  Both keep the first answer to each target, and only serve one to a request the engine
  numbered later (``X-Gatebench-Request``), as a cache can only hold what came before.

A request gets at most one fault, so each wrong answer has exactly one cause and the counts
the engine reports can be compared with :attr:`FaultyProxy.injected` exactly. A test helper:
nothing in the product imports it. Request bodies must carry a ``Content-Length`` (every
workload the tests send here does); an answer to a HEAD or with a 1xx, 204 or 304 status has no
body.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from dataclasses import dataclass, field

SIGNATURE = "x-gatebench-answer"
"""The backend's signature header (backend/sign.go), which ``stripped`` faults remove."""
SWAPS = ("swaps", "body_swaps", "stripped_swaps")
"""The kinds of swap, injected in this order (both answers of a pair, one kind)."""
SWAP_WAIT_S = 2.0
"""How long an answer waits for another connection's answer to swap with; after that it goes
out unswapped (the budget is kept for a later pair)."""


@dataclass
class Faults:
    swaps: int = 0
    body_swaps: int = 0
    stripped_swaps: int = 0
    stripped: int = 0
    truncations: int = 0
    truncate_above: int = 1024
    dropped: int = 0
    drop_header: str = "x-tenant"
    repeats: int = 0
    wrong_keys: int = 0
    cache_hits: int = 0


@dataclass
class _Message:
    head: bytes
    body: bytes

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.encode():
                return value.strip().decode("latin-1")
        return None

    def without(self, name: str) -> _Message:
        lines = self.head.split(b"\r\n")
        kept = [lines[0]] + [
            line for line in lines[1:] if line.partition(b":")[0].strip().lower() != name.encode()
        ]
        return _Message(b"\r\n".join(kept), self.body)

    def cut(self, size: int) -> _Message:
        return self.with_body(self.body[:size])

    def with_body(self, body: bytes) -> _Message:
        """This head with another body, its ``Content-Length`` fitted to it."""
        head = self.without("content-length")
        lines = head.head.split(b"\r\n")
        lines.insert(1, f"Content-Length: {len(body)}".encode())
        return _Message(b"\r\n".join(lines), body)

    def raw(self) -> bytes:
        return self.head + b"\r\n\r\n" + self.body


async def _read(reader: asyncio.StreamReader, *, request: bool, method: str = "GET") -> _Message:
    head = (await reader.readuntil(b"\r\n\r\n"))[:-4]
    message = _Message(head, b"")
    if message.header("transfer-encoding"):
        raise ValueError("the faulty proxy reads Content-Length bodies only")
    status = 0 if request else int(head.split(b" ", 2)[1])
    no_body = not request and (method == "HEAD" or status < 200 or status in (204, 304))
    length = int(message.header("content-length") or 0)
    if length and not no_body:
        message.body = await reader.readexactly(length)
    return message


@dataclass
class _Pending:
    """An answer waiting for a partner to swap with."""

    answer: _Message
    swapped: asyncio.Future[_Message]
    kind: str


@dataclass
class FaultyProxy:
    """Serves on 127.0.0.1 (``url``) in a thread of its own until :meth:`close`."""

    backend_port: int
    faults: Faults
    injected: Counter[str] = field(default_factory=Counter)
    """What it really did: ``crossed`` (answers, two per swap of any kind), ``truncated``,
    ``received`` (requests that lost the header), ``repeated``, ``unsigned`` (answers that
    lost their signature)."""
    hits: int = 0
    """Answers served from the cache under their own key (not wrong)."""
    port: int = 0

    def __post_init__(self) -> None:
        self._left = Counter(
            swaps=self.faults.swaps,
            body_swaps=self.faults.body_swaps,
            stripped_swaps=self.faults.stripped_swaps,
            stripped=self.faults.stripped,
            truncations=self.faults.truncations,
            dropped=self.faults.dropped,
            repeats=self.faults.repeats,
            wrong_keys=self.faults.wrong_keys,
            cache_hits=self.faults.cache_hits,
        )
        self._cache: dict[str, tuple[int, _Message]] = {}
        self._waiting: _Pending | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the faulty proxy did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._server = server
        self._ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _shutdown(self) -> None:
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()

    def __enter__(self) -> FaultyProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _take(self, fault: str) -> bool:
        if self._left[fault] > 0:
            self._left[fault] -= 1
            return True
        return False

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.backend_port)
        try:
            while True:
                try:
                    request = await _read(reader, request=True)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                answer = await self._forward(request, up_reader, up_writer)
                writer.write(answer.raw())
                await writer.drain()
        finally:
            up_writer.close()
            writer.close()

    async def _exchange(
        self, request: _Message, up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter
    ) -> _Message:
        up_writer.write(request.raw())
        await up_writer.drain()
        method = request.head.split(b" ", 1)[0].decode()
        return await _read(up_reader, request=False, method=method)

    async def _forward(
        self, request: _Message, up_reader: asyncio.StreamReader, up_writer: asyncio.StreamWriter
    ) -> _Message:
        method = request.head.split(b" ", 1)[0].decode()
        if method == "POST" and self._take("repeats"):
            await self._exchange(request, up_reader, up_writer)
            self.injected["repeated"] += 1
            return await self._exchange(request, up_reader, up_writer)
        if method != "POST" and request.header(self.faults.drop_header) and self._take("dropped"):
            self.injected["received"] += 1
            return await self._exchange(
                request.without(self.faults.drop_header), up_reader, up_writer
            )
        if method == "GET":
            cached = self._cached(request)
            if cached is not None:
                return cached
        answer = await self._exchange(request, up_reader, up_writer)
        if method == "GET" and _number(request) >= 0:
            self._cache.setdefault(_target(request), (_number(request), answer))
        if len(answer.body) > self.faults.truncate_above and self._take("truncations"):
            self.injected["truncated"] += 1
            return answer.cut(self.faults.truncate_above)
        if answer.header(SIGNATURE) is None:
            return answer  # not checked (Gatling's first request, a warm-up): no fault to count
        if self._take("stripped"):
            self.injected["unsigned"] += 1
            return answer.without(SIGNATURE)
        swap = next((s for s in SWAPS if self._left[s] > 0), None)
        if swap is not None:
            return await self._swap(answer, swap)
        return answer

    def _cached(self, request: _Message) -> _Message | None:
        """An earlier answer for this GET, when a cache fault is left to inject on it."""
        target, number = _target(request), _number(request)
        own = self._cache.get(target)
        if own is not None and own[0] < number and self._take("cache_hits"):
            self.hits += 1
            return own[1]
        other = next((a for t, (n, a) in self._cache.items() if t != target and n < number), None)
        if other is not None and self._take("wrong_keys"):
            self.injected["crossed"] += 1
            return other
        return None

    async def _swap(self, answer: _Message, swap: str) -> _Message:
        """This answer's partner's, as the kind of swap says, once another answer comes to
        swap with it (itself after :data:`SWAP_WAIT_S`)."""
        waiting = self._waiting
        if waiting is not None and waiting.kind == swap and not waiting.swapped.done():
            self._waiting = None
            self._left[swap] -= 1
            self.injected["crossed"] += 2
            mine, theirs = answer, waiting.answer
            if swap == "body_swaps":
                mine, theirs = theirs.with_body(answer.body), answer.with_body(theirs.body)
            elif swap == "stripped_swaps":
                mine, theirs = mine.without(SIGNATURE), theirs.without(SIGNATURE)
            waiting.swapped.set_result(mine)
            return theirs
        pending = _Pending(answer, self._loop.create_future(), swap)
        self._waiting = pending
        try:
            return await asyncio.wait_for(asyncio.shield(pending.swapped), SWAP_WAIT_S)
        except TimeoutError:
            if self._waiting is pending:
                self._waiting = None
            if pending.swapped.done():
                return pending.swapped.result()
            return answer


def _target(request: _Message) -> str:
    return request.head.split(b" ", 2)[1].decode("latin-1")


def _number(request: _Message) -> int:
    """The engine's number of the request (the last part of its identity; -1: none)."""
    number = (request.header("x-gatebench-request") or "").rpartition(".")[2]
    return int(number) if number.isdigit() else -1


__all__ = ["Faults", "FaultyProxy"]
