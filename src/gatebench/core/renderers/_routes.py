"""The routing semantics every renderer implements, computed once from the IR.

A renderer never reads ``Operation.path_template`` itself: it asks :func:`routes_for` for
the routes, already validated, ordered by priority and split into segments, and builds its
matcher from :meth:`Route.regex` (or from the segments when its language is not a regex).

The rules, spelled out once (docs/gateways.md repeats them for users):

- A request is forwarded when some operation has its method and its path template matches
  the request path; anything else gets 404. The method is part of the match: with
  ``GET /users/me`` and ``DELETE /users/{id}``, ``DELETE /users/me`` is forwarded (it is
  ``DELETE /users/{id}`` with ``id = me``), ``PATCH /users/me`` is not.
- The client's path is ``base path + template`` (the base path comes from the effective
  server URL) and the backend receives exactly the same path: nothing is stripped or added.
- A path parameter matches one non-empty segment: any characters but ``/`` (and ``?``).
  A segment may mix literal text and parameters (``/files/{name}.json``).
- Trailing slashes count as written: ``/pets`` and ``/pets/`` are different routes.
- Literal text is compared with the request path as a client sends it: characters outside
  RFC 3986 ``pchar`` are percent-encoded (UTF-8, upper-case hex), ``%XX`` escapes written in
  the description stay as written. Gateways that only see the decoded path match the
  decoded literal instead (:meth:`Route.regex` with ``decoded=True``).
- Priority (for gateways whose matched route carries a name or its own settings): at the
  first segment where two routes differ, a literal segment wins over a partial template,
  which wins over a whole-segment parameter; then the longer path wins. Because every route
  forwards to the same backend unchanged, priority never changes what the backend receives.

Regular expressions are written with every non-alphanumeric literal character as a
``\\xHH`` escape (PCRE, RE2, Go and Java all read it the same way), so a spec string can
never add a metacharacter, a quote, a comment or a directive to a configuration.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from gatebench.core.errors import Problem, UnsupportedFeature, join_pointer
from gatebench.core.ir import Api, Operation, method_rank

_TEMPLATE_VAR = re.compile(r"\{([^{}/]*)\}")
_PCHAR_SAFE = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@"
)
_HEX = frozenset("0123456789ABCDEFabcdef")
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")

# Priority of a segment's shape: lower sorts first (wins).
_LITERAL, _PARTIAL, _PARAM = 0, 1, 2


@dataclass(frozen=True)
class Piece:
    """Part of one path segment: literal text, or a parameter (``text`` is its name)."""

    text: str
    is_param: bool


@dataclass(frozen=True)
class Segment:
    pieces: tuple[Piece, ...]

    @property
    def is_literal(self) -> bool:
        return not any(p.is_param for p in self.pieces)

    @property
    def is_whole_param(self) -> bool:
        return len(self.pieces) == 1 and self.pieces[0].is_param

    @property
    def shape(self) -> int:
        if self.is_literal:
            return _LITERAL
        return _PARAM if self.is_whole_param else _PARTIAL

    @property
    def literal(self) -> str:
        return "".join(p.text for p in self.pieces if not p.is_param)


@dataclass(frozen=True)
class Route:
    """One IR operation as a gateway sees it: a method and a path pattern."""

    operation: Operation
    method: str
    path: str
    """The full template the client requests: ``/v1/pets/{petId}`` (base path included)."""
    segments: tuple[Segment, ...]
    """The path split at ``/`` after the leading one; ``/`` alone is one empty segment."""
    index: int
    """Position in priority order (0 = highest priority)."""

    @property
    def operation_id(self) -> str:
        return self.operation.operation_id

    @property
    def pointer(self) -> str:
        return self.operation.pointer

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.text for s in self.segments for p in s.pieces if p.is_param)

    @property
    def is_literal(self) -> bool:
        return all(s.is_literal for s in self.segments)

    @property
    def has_partial_segments(self) -> bool:
        return any(not s.is_literal and not s.is_whole_param for s in self.segments)

    @property
    def encoded_path(self) -> str:
        """The literal route as a client sends it (only for :attr:`is_literal` routes)."""
        return "/" + "/".join(encode_literal(s.literal) for s in self.segments)

    def priority_key(self) -> tuple[object, ...]:
        return priority_key(self.segments, self.method)

    def regex(
        self,
        *,
        param: str = "[^/]+",
        named: Callable[[str], str] | None = None,
        either: bool = False,
        escape: Callable[[str], str] | None = None,
        names: Sequence[str] | None = None,
        anchor_start: str = "^",
        anchor_end: str = "$",
    ) -> str:
        """An anchored regular expression for this route's path.

        ``param`` is the pattern of one parameter; ``named`` turns a parameter name into a
        group name (:func:`named_group_pcre`), else groups are not captured; ``names``
        replaces the parameter names (same order as :attr:`param_names`). ``either``
        accepts each percent-encoded character also in decoded form (for gateways that match
        a decoded path, or when it is unknown which one they see); decoded non-ASCII
        characters are written as themselves. ``escape`` turns one literal ASCII character
        into regex syntax (default ``\\xHH`` for anything not alphanumeric, which every
        engine reads the same way).
        """
        esc = escape or escape_regex_char
        renamed = iter(names) if names is not None else None
        parts: list[str] = []
        for segment in self.segments:
            out = ""
            for piece in segment.pieces:
                if piece.is_param:
                    name = next(renamed) if renamed is not None else piece.text
                    out += f"({named(name)}{param})" if named else f"(?:{param})"
                elif either:
                    out += _either_regex(encode_literal(piece.text), esc)
                else:
                    out += _encoded_regex(encode_literal(piece.text), esc)
            parts.append(out)
        return anchor_start + "/" + "/".join(parts) + anchor_end

    def sample_path(self, values: dict[str, str] | None = None) -> str:
        """A concrete path a client would send; parameters get ``values`` or a sample."""
        values = values or {}
        out = []
        for i, segment in enumerate(self.segments):
            text = ""
            for piece in segment.pieces:
                if piece.is_param:
                    text += values.get(piece.text, f"p{i}x")
                else:
                    text += encode_literal(piece.text)
            out.append(text)
        return "/" + "/".join(out)


@functools.lru_cache(maxsize=65536)
def _encoded_regex(text: str, esc: Callable[[str], str]) -> str:
    """Regex for percent-encoded text; hex digits of ``%XX`` match either case (RFC 3986)."""
    out = ""
    i = 0
    while i < len(text):
        if text[i] == "%" and _is_hex2(text, i + 1):
            out += esc("%")
            for digit in text[i + 1 : i + 3]:
                out += f"[{digit.upper()}{digit.lower()}]" if digit.isalpha() else digit
            i += 3
        else:
            out += esc(text[i])
            i += 1
    return out


@functools.lru_cache(maxsize=65536)
def _either_regex(text: str, esc: Callable[[str], str]) -> str:
    """Like :func:`_encoded_regex`, but each escaped character may also arrive decoded."""
    out = ""
    i = 0
    while i < len(text):
        if text[i] == "%" and _is_hex2(text, i + 1):
            # One UTF-8 character: its lead byte says how many escapes it spans.
            lead = int(text[i + 1 : i + 3], 16)
            width = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4
            chunk = text[i : i + 3 * width]
            try:
                char = unquote_to_bytes(chunk).decode("utf-8")
            except UnicodeDecodeError:
                char = ""
            if len(char) != 1 or not all(
                chunk[k] == "%" and _is_hex2(chunk, k + 1) for k in range(0, len(chunk), 3)
            ):
                out += _encoded_regex(text[i : i + 3], esc)
                i += 3
                continue
            decoded = esc(char) if char.isascii() else char
            out += f"(?:{_encoded_regex(chunk, esc)}|{decoded})"
            i += len(chunk)
        else:
            out += esc(text[i])
            i += 1
    return out


def escape_regex_char(ch: str) -> str:
    """One literal character in regex syntax that PCRE, RE2, Go and Java agree on."""
    if ch.isascii() and ch.isalnum():
        return ch
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\x{{{code:x}}}"


@functools.lru_cache(maxsize=65536)
def encode_literal(text: str) -> str:
    """Percent-encode what a client must encode; keep ``pchar`` and existing ``%XX``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "%" and _is_hex2(text, i + 1):
            out.append(text[i : i + 3].upper())
            i += 3
            continue
        if ch in _PCHAR_SAFE:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def _is_hex2(text: str, start: int) -> bool:
    return len(text) >= start + 2 and text[start] in _HEX and text[start + 1] in _HEX


def identifier(text: str, *, taken: set[str] | None = None, prefix: str = "v") -> str:
    """A name made of ``[A-Za-z0-9_]`` only, starting with a letter, unique within ``taken``.

    Used for regex group names, config object names and variables, which a spec string must
    never reach as is. ``taken`` is updated.
    """
    base = _NOT_IDENT.sub("_", text).strip("_") or prefix
    if not base[0].isalpha():
        base = prefix + "_" + base
    base = base[:64]
    name = base
    n = 2
    while taken is not None and name in taken:
        name = f"{base}_{n}"
        n += 1
    if taken is not None:
        taken.add(name)
    return name


@functools.lru_cache(maxsize=16384)
def split_template(path: str) -> tuple[Segment, ...]:
    """``/files/{name}.json`` → segments of literal and parameter pieces."""
    segments: list[Segment] = []
    for raw in path[1:].split("/"):
        pieces: list[Piece] = []
        pos = 0
        for match in _TEMPLATE_VAR.finditer(raw):
            if match.start() > pos:
                pieces.append(Piece(raw[pos : match.start()], False))
            pieces.append(Piece(match.group(1), True))
            pos = match.end()
        if pos < len(raw) or not pieces:
            pieces.append(Piece(raw[pos:], False))
        segments.append(Segment(tuple(pieces)))
    return tuple(segments)


def priority_key(segments: Sequence[Segment], method: str) -> tuple[object, ...]:
    """The order in which routes are tried (the module's rules): at the first segment where
    two differ, a literal segment before a partial one before a whole parameter; then the
    longer path, the literal text, the method."""
    shapes = tuple(s.shape for s in segments)
    literals = tuple(encode_literal(s.literal) for s in segments)
    return (shapes, -len(segments), literals, method_rank(method), method)


_LAST_ROUTES: list[tuple[tuple[Operation, ...], tuple[Route, ...]]] = []


def routes_for(api: Api) -> tuple[Route, ...]:
    """Every operation as a :class:`Route`, highest priority first.

    Operations that share a method and a path shape (only variable names differ, or the
    same path once the base path is added) share one route: the first operation's.

    Raises :class:`UnsupportedFeature` (every problem, located at the operation) for what no
    gateway can route: a base path with template braces or a bad ``%``, or a parameter right
    after another one in the same segment.

    The last result is kept: rendering one description for every gateway asks for the same
    routes a dozen times (the cache is keyed by the very tuple of operations, immutable).
    """
    last = _LAST_ROUTES[-1] if _LAST_ROUTES else None  # one read: threads may render too
    if last is not None and last[0] is api.operations:
        return last[1]
    found = _routes_for(api)
    _LAST_ROUTES[:] = [(api.operations, found)]
    return found


def _routes_for(api: Api) -> tuple[Route, ...]:
    problems: list[Problem] = []
    routes: list[Route] = []
    seen: dict[tuple[str, str], Operation] = {}
    for op in api.operations:
        path = op.route_path or "/"
        where = op.pointer
        base = op.base_path
        if "{" in base or "}" in base:
            problems.append(
                _problem(
                    op,
                    where,
                    f"the server URL's path {base!r} contains '{{' or '}}'; a base path must be literal",
                )
            )
            continue
        if re.search(r"%(?![0-9A-Fa-f]{2})", path):
            problems.append(
                _problem(op, where, f"'%' in the path {path!r} must start a %XX escape")
            )
            continue
        if re.search(r"[\t\n\r\f\v\x00-\x1f\x7f?#]", path):
            problems.append(
                _problem(
                    op,
                    where,
                    f"the path {path!r} contains a control character, '?' or '#'",
                )
            )
            continue
        segments = split_template(path)
        adjacent = next(
            (
                s
                for s in segments
                for a, b in zip(s.pieces, s.pieces[1:], strict=False)
                if a.is_param and b.is_param
            ),
            None,
        )
        if adjacent is not None:
            names = [p.text for p in adjacent.pieces if p.is_param]
            problems.append(
                _problem(
                    op,
                    where,
                    f"parameters {names[0]!r} and {names[1]!r} follow each other in one path "
                    "segment with nothing between them; no gateway can tell where one ends",
                )
            )
            continue
        shape = (op.method, _TEMPLATE_VAR.sub("{}", path))
        if shape in seen:
            # Several operations on one route (``/v1/{parent}`` and ``/v1/{name}``, or AWS's
            # ``/#Action=...`` keys): the gateway forwards them alike and the backend tells
            # them apart, so the first one's route serves all of them.
            continue
        seen[shape] = op
        routes.append(Route(op, op.method, path, segments, 0))
    if problems:
        raise UnsupportedFeature(problems)
    routes.sort(key=Route.priority_key)
    return tuple(Route(r.operation, r.method, r.path, r.segments, i) for i, r in enumerate(routes))


def _problem(op: Operation, where: str, message: str) -> Problem:
    return Problem(where, message, source=op.source or None)


def unsupported(route: Route, gateway: str, message: str, *suffix: str | int) -> Problem:
    """A located problem for a route a gateway cannot express: ``gateway: message``."""
    return Problem(
        join_pointer(route.pointer, *suffix),
        f"{gateway} cannot express this route ({route.method} {route.path}): {message}",
        source=route.operation.source or None,
    )


def same_route(route: Route, first: Route, gateway: str) -> Problem:
    """``route`` becomes the same route as ``first`` in ``gateway``'s terms (decoded path)."""
    return unsupported(
        route,
        gateway,
        f"it is the same route as operation {first.operation_id!r} ({first.method} "
        f"{first.path}) once the path is decoded",
    )


def distinct_paths(
    routes: Sequence[Route],
    path_of: Callable[[Route], str | None],
    gateway: str,
    problems: list[Problem],
) -> Iterator[tuple[Route, str]]:
    """Each route with its path in ``gateway``'s own terms (``path_of``; ``None`` when it
    cannot have one, a problem ``path_of`` noted), but the route an earlier one already has
    that method and path is noted in ``problems`` (:func:`same_route`) instead."""
    seen: dict[tuple[str, str], Route] = {}
    for route in routes:
        path = path_of(route)
        if path is None:
            continue
        first = seen.setdefault((route.method, path), route)
        if first is not route:
            problems.append(same_route(route, first, gateway))
            continue
        yield route, path


def methods_by_path(routes: Sequence[Route]) -> dict[str, list[Route]]:
    """Routes grouped by path template, in priority order (first route's position)."""
    out: dict[str, list[Route]] = {}
    for route in routes:
        out.setdefault(route.path, []).append(route)
    return out


def shared_param_names(routes: Sequence[Route]) -> dict[int, tuple[str, ...]]:
    """Parameter names that agree across routes, by route index: identifiers, and the same
    name wherever routes share everything before a parameter.

    Routers built as a tree (KrakenD's gin/httprouter) refuse ``/users/{id}/a`` beside
    ``/users/{userId}/b``; specification formats (Swagger) treat such paths as one. The name
    at each position comes from the highest-priority route there; a clash inside one route
    gets the parameter's position appended.
    """
    chosen: dict[tuple[str, ...], str] = {}
    out: dict[int, tuple[str, ...]] = {}
    for route in routes:
        names: list[str] = []
        prefix: list[str] = []
        for position, segment in enumerate(route.segments):
            for k, piece in enumerate(segment.pieces):
                if piece.is_param:
                    key = (
                        *prefix,
                        "".join("{}" if p.is_param else p.text for p in segment.pieces[:k]),
                    )
                    name = chosen.setdefault(key, identifier(piece.text, prefix="p"))
                    if name in names:
                        name = f"{name}_{position}_{k}"
                    names.append(name)
            prefix.append("/".join("{}" if p.is_param else p.text for p in segment.pieces))
        out[route.index] = tuple(names)
    return out


def route_names(routes: Sequence[Route], separator: str = "_") -> tuple[str, ...]:
    """Each route's name in a configuration, by route index: ``r<index>_<operationId>``, the
    operationId made an :func:`identifier` (unique among the routes'). A gateway's policies
    module finds the routes its renderer named by the same names."""
    taken: set[str] = set()
    return tuple(
        f"r{route.index}{separator}{identifier(route.operation_id, taken=taken)}"
        for route in routes
    )


def named_group_pcre(name: str) -> str:
    """``?<name>`` for PCRE / Go / RE2 / Java named groups (``name`` must be an identifier)."""
    return f"?<{name}>"
