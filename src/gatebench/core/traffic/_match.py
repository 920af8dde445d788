"""Matching a logged request to an operation of the description, by method and path template,
with the routing every gateway is proven against (gatebench.core.renderers._routes: the same
routes, the same priority, the same regular expressions): the operation a request reaches
through a gateway is the one it is counted for here.

A request line (``GET /v1/pets/42?x=1 HTTP/1.1``) resolves once (lines repeat; the reader
keeps a bounded cache): the protocol is dropped, an absolute URL keeps its path, the query is
cut off, and the path is tried against the routes of its method, highest priority first, in
one regular expression per method. A path another method would match is unmatched too (the
gateways answer it 404 or 405), and says so.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gatebench.core.ir import Api, Operation
from gatebench.core.renderers._routes import Route, encode_literal, routes_for

_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*")
_METHODS = frozenset({"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"})
_NUMBER = re.compile(r"^\d+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_TOKEN = re.compile(r"^(?=.*\d)[A-Za-z0-9_\-=.~%]{16,}$")
_WORD = re.compile(r"^(?:v\d{1,2}|[a-z]{1,16}(?:[._-][a-z]{1,16}){0,2})$")
"""A short plain lower-case word (``static``, ``app.js``, ``health-check``) or a version
(``v2``): a path's own, not a value sent in it."""
_NON_ASCII = re.compile("[\x80-\xff]+")


def path_shape(path: str, literals: frozenset[str] = frozenset()) -> str:
    """A path as the import shows it without a value the user did not keep: matrix
    parameters (``;jsessionid=...``) cut, identifier-like segments replaced (``/users/123`` →
    ``/users/{n}``, ``{uuid}``, ``{id}``), and every other segment that is neither one of the
    description's (``literals``) nor a short plain word replaced by ``{x}`` (an email, a
    ``user:password``, a name with capitals)."""
    out = []
    for whole in path.split("/"):
        segment = whole.partition(";")[0]
        if not segment or segment in literals or _WORD.match(segment):
            out.append(segment)
        elif _NUMBER.match(segment):
            out.append("{n}")
        elif _UUID.match(segment):
            out.append("{uuid}")
        elif _TOKEN.match(segment):
            out.append("{id}")
        else:
            out.append("{x}")
    return "/".join(out)


def _percent_encoded(text: str) -> str:
    """A request target read as Latin-1 with its bytes past ASCII percent-encoded: a HAR
    file's or a JSON log's URL (UTF-8, ``/café``) as the client sent it (``/caf%C3%A9``), which
    is how the routes are written."""
    return _NON_ASCII.sub(lambda m: "".join(f"%{ord(c):02X}" for c in m[0]), text)


class Matched(NamedTuple):
    """A request that reaches operation number ``operation`` (the matcher's ``operations``). Tuples:
    one is made per distinct request line of a log, and a tuple is made fastest."""

    operation: int
    params: tuple[str, ...]
    """The path parameters' values as sent (percent-encoded), in the route's order."""
    query: str
    """The query string as sent (without ``?``), "" when there is none."""


class Unmatched(NamedTuple):
    """A request no operation takes: ``reason`` says why (``method``: another method's route
    matches the path; ``path``: no route does; ``request``: not a request line)."""

    method: str
    path: str
    reason: str


Resolution = Matched | Unmatched


class Matcher:
    """The description's routes as one regular expression per method."""

    def __init__(self, api: Api) -> None:
        self.routes: tuple[Route, ...] = routes_for(api)
        ops: list[Operation] = []
        seen: dict[str, int] = {}
        for route in self.routes:
            if route.operation_id not in seen:
                seen[route.operation_id] = len(ops)
                ops.append(route.operation)
        self.operations: tuple[Operation, ...] = tuple(ops)
        self.param_names: tuple[tuple[str, ...], ...] = tuple(
            next(r.param_names for r in self.routes if r.operation_id == op.operation_id)
            for op in ops
        )
        self._by_method: dict[str, tuple[re.Pattern[str], dict[int, tuple[int, list[int]]]]] = {}
        for method in sorted({r.method for r in self.routes}):
            self._by_method[method] = self._compile(
                [r for r in self.routes if r.method == method], seen
            )
        self._any = self._compile(list(self.routes), seen)
        self.literals: frozenset[str] = frozenset(
            text
            for r in self.routes
            for seg in r.segments
            if seg.is_literal
            for text in (seg.literal, encode_literal(seg.literal))
        )
        """Every path segment the description writes as it is (``v1``, ``pets``)."""

    @staticmethod
    def _compile(
        routes: list[Route], index_of: dict[str, int]
    ) -> tuple[re.Pattern[str], dict[int, tuple[int, list[int]]]]:
        """One alternation, in priority order; each alternative ends with an empty group whose
        number says which route matched (the last group a match closes)."""
        parts = []
        ends: dict[int, tuple[int, list[int]]] = {}
        group = 0
        for route in routes:
            params = []
            pattern = route.regex(
                param="[^/?#]+",
                named=lambda _name: "",
                either=True,
                anchor_start="",
                anchor_end="",
            )
            captured = pattern.count("([^/?#]+)")
            params = list(range(group + 1, group + 1 + captured))
            group += captured + 1
            ends[group] = (index_of[route.operation_id], params)
            parts.append(pattern + "()")
        return re.compile("(?:" + "|".join(parts) + ")") if parts else re.compile("(?!)"), ends

    def resolve(self, line: bytes) -> Resolution:
        """The operation a request line reaches, or why none does."""
        text = line.decode("latin-1")
        if not text.isascii():
            text = _percent_encoded(text)
        method, _, target = text.partition(" ")
        head, _, protocol = target.rpartition(" ")
        if protocol[:5].upper() == "HTTP/":
            target = head
        target = target.strip()
        method = method.upper()
        if not target or method not in _METHODS:
            return Unmatched(method[:16], target[:200], "request")
        if target[0] != "/":
            absolute = _ABSOLUTE.match(target)
            if absolute:
                target = target[absolute.end() :] or "/"
        path, _, query = target.partition("?")
        if "#" in path:
            path = path.partition("#")[0]
        compiled = self._by_method.get(method)
        if compiled is not None:
            found = _match(compiled, path)
            if found is not None:
                index, params = found
                return Matched(index, params, query)
        reason = "method" if _match(self._any, path) is not None else "path"
        return Unmatched(method, path, reason)


def _match(
    compiled: tuple[re.Pattern[str], dict[int, tuple[int, list[int]]]], path: str
) -> tuple[int, tuple[str, ...]] | None:
    pattern, ends = compiled
    m = pattern.fullmatch(path)
    if m is None or m.lastindex is None:
        return None
    index, groups = ends[m.lastindex]
    if not groups:
        return index, ()
    if len(groups) == 1:
        return index, (m.group(groups[0]),)
    return index, m.group(*groups)


__all__ = ["Matched", "Matcher", "Resolution", "Unmatched", "path_shape"]
