"""Access log formats as templates: nginx's ``log_format`` language (``$name`` and literal
text), the built-in formats written in it, and what each variable means to an import.

A template compiles to two readers of the same lines (gatebench.core.traffic._logs):

- a per-line regular expression (linear: every variable is a character class bounded by the
  literal that follows it), used to locate a line that does not fit, and for any template;
- a columnar layout, used whenever the template allows it: a chunk of lines is split at its
  double quotes once (nginx escapes a quote inside a variable as ``\\x22``, so every line of a
  format has as many quotes as its template), and each variable is then a whole quoted
  segment, or a whitespace-separated token of an unquoted one. Every column is then cut by
  C-level ``map`` calls, never a Python statement per line: what reaches 500,000 lines a
  second on one core (docs/benchmarks.md).

Only what a replay needs is read: the time, the request (method and target), the status, the
request's size and duration. Nothing else of a line (addresses, users, referrers, agents,
headers) is ever kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")

TIME_VARIABLES = {
    "time_local": "clf",
    "time_iso8601": "iso",
    "msec": "epoch",
    "start_time": "iso",
}
"""Variables that carry the time, and how it is written (``clf``: ``10/Oct/2000:13:55:36
-0700``; ``iso``: ISO 8601; ``epoch``: seconds since 1970 with a fraction)."""
START_TIMES = frozenset({"start_time"})
"""Time variables written when the request arrived (the others when it ended: its duration,
when logged, is taken off)."""
SIZE_VARIABLES = {
    "request_length": "request bytes (line, headers and body)",
    "content_length": "request body bytes (Content-Length)",
    "bytes_received": "request body bytes",
}
DURATION_VARIABLES = {"request_time": 1.0, "duration": 0.001, "request_time_us": 0.000001}
"""Variables that carry the request's duration, and their unit in seconds."""
WHITESPACE_FREE = frozenset(
    {
        "remote_addr",
        "remote_user",
        "ident",
        "status",
        "body_bytes_sent",
        "bytes_sent",
        "bytes_received",
        "request_length",
        "content_length",
        "request_time",
        "request_time_us",
        "upstream_response_time",
        "upstream_connect_time",
        "upstream_header_time",
        "upstream_addr",
        "upstream_status",
        "msec",
        "time_iso8601",
        "start_time",
        "duration",
        "response_flags",
        "upstream_service_time",
        "connection",
        "connection_requests",
        "pipe",
        "request_method",
        "request_uri",
        "uri",
        "args",
        "query_string",
        "server_port",
        "scheme",
        "host",
        "request_id",
        "server_protocol",
        "request_completion",
        "ssl_protocol",
        "remote_port",
    }
)
"""Variables whose values never hold a space (the columnar reader may split on whitespace
around them)."""
TOKENS_OF = {"time_local": 2}
"""Variables whose value is always this many whitespace-separated tokens (others: one)."""


@dataclass(frozen=True)
class Piece:
    """Literal text, or a variable (``text`` is its name)."""

    text: str
    variable: bool


FIXED_WIDTH = {"time_local": 26, "time_iso8601": 25, "msec": 14, "start_time": 24, "status": 3}
"""Variables whose value always has this many characters (nginx pads days and writes three
decimals; Envoy's start time has milliseconds)."""


@dataclass(frozen=True)
class Slot:
    """Where the columnar reader finds one variable in quoted segment ``segment``: the whole
    segment (``token`` None and no ``cut``); a fixed slice of it (``cut``: start and end,
    negative from the segment's end, with the literal characters expected just outside,
    checked on every line); or tokens ``token`` .. ``token + count - 1`` of the segment split
    at whitespace, with ``strip`` literal characters cut off before and after."""

    segment: int
    token: int | None = None
    count: int = 1
    strip: tuple[int, int] = (0, 0)
    cut: tuple[int, int] | None = None
    edges: tuple[tuple[int, int], ...] = ()
    """(position in the segment, byte) pairs every line must hold beside a ``cut`` (the
    literal character before it, or after it when cut from the end)."""


@dataclass(frozen=True)
class LogFormat:
    """One access log format: its name, its template, and what it reads."""

    name: str
    template: str
    pieces: tuple[Piece, ...]
    regex: re.Pattern[bytes]
    """The whole line (no newline), a named group per variable the import reads."""
    quotes: int
    """How many double quotes each line holds."""
    slots: dict[str, Slot] = field(default_factory=dict)
    """Variable → where the columnar reader finds it; empty: no columnar reader."""
    tokens: dict[int, int] = field(default_factory=dict)
    """Quoted segment → how many whitespace-separated tokens it holds (segments read by
    token only)."""

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.pieces if p.variable)

    @property
    def time_variable(self) -> str | None:
        return next((v for v in TIME_PREFERENCE if v in self.variables), None)

    @property
    def size_variable(self) -> str | None:
        return next((v for v in self.variables if v in SIZE_VARIABLES), None)

    @property
    def duration_variable(self) -> str | None:
        return next((v for v in self.variables if v in DURATION_VARIABLES), None)

    @property
    def columnar(self) -> bool:
        return bool(self.slots)


class FormatError(ValueError):
    """A template the import cannot read (the message says why)."""


def parse_template(template: str) -> tuple[Piece, ...]:
    pieces: list[Piece] = []
    pos = 0
    for match in _VARIABLE.finditer(template):
        if match.start() > pos:
            pieces.append(Piece(template[pos : match.start()], False))
        pieces.append(Piece(match.group(1) or match.group(2), True))
        pos = match.end()
    if pos < len(template):
        pieces.append(Piece(template[pos:], False))
    return tuple(pieces)


READ = ("time", "request", "method", "target", "path", "query", "status", "size", "duration")


TIME_PREFERENCE = ("msec", "start_time", "time_iso8601", "time_local")
"""When a format writes the time twice, the most precise is read."""


def _role(name: str, time: str | None = None) -> str | None:
    """The group name a variable is captured under (None: matched, not captured); ``time``
    is the time variable read when the format has several."""
    if name in TIME_VARIABLES:
        return "time" if time in (None, name) else None
    if name == "request":
        return "request"
    if name == "request_method":
        return "method"
    if name == "request_uri":
        return "target"
    if name == "uri":
        return "path"
    if name in ("args", "query_string"):
        return "query"
    if name == "status":
        return "status"
    if name in SIZE_VARIABLES:
        return "size"
    if name in DURATION_VARIABLES:
        return "duration"
    return None


def compile_format(name: str, template: str) -> LogFormat:
    """A template as a :class:`LogFormat`; :class:`FormatError` when it lacks what a replay
    needs (a time and a request) or repeats a variable the import reads."""
    template = template.strip("\r\n")
    if not template.strip():
        raise FormatError("the log format is empty")
    if len(template) > 4096:
        raise FormatError("the log format is longer than 4,096 characters")
    pieces = parse_template(template)
    variables = [p.text for p in pieces if p.variable]
    time = next((v for v in TIME_PREFERENCE if v in variables), None)
    roles = [r for r in (_role(v, time) for v in variables) if r is not None]
    for role in set(roles):
        if roles.count(role) > 1:
            raise FormatError(f"the log format holds two variables for the {role}")
    if "time" not in roles:
        raise FormatError(
            "the log format has no time ($time_local, $time_iso8601 or $msec): arrivals "
            "cannot be placed in time"
        )
    if "request" not in roles and not (
        "method" in roles and ("target" in roles or "path" in roles)
    ):
        raise FormatError(
            "the log format has no request ($request, or $request_method with $request_uri "
            "or $uri): requests cannot be matched to operations"
        )
    return LogFormat(
        name=name,
        template=template,
        pieces=pieces,
        regex=_line_regex(pieces, time),
        quotes=template.count('"'),
        slots=_slots(pieces, time),
        tokens=_segment_tokens(pieces),
    )


def _variable_pattern(name: str, following: str | None) -> str:
    """A variable's pattern, bounded by the character that follows it (linear: no
    backtracking across a line)."""
    if name in WHITESPACE_FREE and following in (None, " ", '"', "]", "\t", ","):
        return r"[^\s\"]*" if following != "]" else r"[^\s\]]*"
    if following is None:
        return r".*"
    return "[^" + re.escape(following) + r"\n]*"


def _line_regex(pieces: tuple[Piece, ...], time: str | None) -> re.Pattern[bytes]:
    out = []
    for i, piece in enumerate(pieces):
        if not piece.variable:
            out.append(re.escape(piece.text))
            continue
        after = pieces[i + 1] if i + 1 < len(pieces) else None
        following = after.text[0] if after is not None and not after.variable else None
        pattern = _variable_pattern(piece.text, following)
        role = _role(piece.text, time)
        out.append(f"(?P<{role}>{pattern})" if role is not None else f"(?:{pattern})")
    # a line may carry more after the format's end (a field appended later): tolerated
    return re.compile(("^" + "".join(out) + r"(?:[ \t].*)?$").encode("utf-8"))


def _segments(pieces: tuple[Piece, ...]) -> list[list[Piece]]:
    """The template split at its double quotes: segment 0 before the first quote, ..."""
    segments: list[list[Piece]] = [[]]
    for piece in pieces:
        if piece.variable:
            segments[-1].append(piece)
            continue
        parts = piece.text.split('"')
        for k, part in enumerate(parts):
            if k:
                segments.append([])
            if part:
                segments[-1].append(Piece(part, False))
    return segments


def _slots(pieces: tuple[Piece, ...], time: str | None) -> dict[str, Slot]:
    """Where the columnar reader finds each variable it reads; {} when the template does not
    allow columns (a variable that may hold spaces outside quotes, two variables in one
    token)."""
    slots: dict[str, Slot] = {}
    segments = _segments(pieces)
    last_segment = len(segments) - 1
    for index, segment in enumerate(segments):
        if not any(p.variable for p in segment):
            continue
        if len(segment) == 1:
            slots[segment[0].text] = Slot(index)
            continue
        tokens = _probe(segment).split()
        for k, piece in enumerate(segment):
            if not piece.variable:
                continue
            if piece.text not in WHITESPACE_FREE and piece.text not in TOKENS_OF:
                return {}
            mark = f"\x00{k}\x01"
            where = [i for i, t in enumerate(tokens) if mark in t]
            if not where or any(t.count("\x00") > 1 for t in (tokens[i] for i in where)):
                return {}
            first, last = tokens[where[0]], tokens[where[-1]]
            strip = (first.index(mark), len(last) - last.rindex("\x01") - 1)
            cut = _fixed_cut(segment, k, from_end=index == 0) or (
                _fixed_cut(segment, k, from_end=True) if 0 < index < last_segment else None
            )
            slots[piece.text] = cut or Slot(index, where[0], len(where), strip)
            slots[piece.text] = _with_segment(slots[piece.text], index)
    return {name: slot for name, slot in slots.items() if _role(name, time) is not None}


def _width(piece: Piece) -> int | None:
    return len(piece.text.encode("utf-8")) if not piece.variable else FIXED_WIDTH.get(piece.text)


def _fixed_cut(segment: list[Piece], k: int, *, from_end: bool) -> Slot | None:
    """A fixed-width variable at a fixed distance from its segment's start or end (every
    piece on that side of fixed width), with a literal character on each side to check. The
    first segment of a line is cut from its end, the last from its start: a chunk holds them
    joined across the newline (the reader then never splits them)."""
    width = FIXED_WIDTH.get(segment[k].text)
    if width is None:
        return None
    before = [_width(p) for p in segment[:k]]
    after = [_width(p) for p in segment[k + 1 :]]
    literal_before = segment[k - 1].text.encode() if k and not segment[k - 1].variable else b""
    literal_after = (
        segment[k + 1].text.encode()
        if k + 1 < len(segment) and not segment[k + 1].variable
        else b""
    )
    # a time is checked by reading it (strictly); a status by the characters around it
    checked = segment[k].text not in TIME_VARIABLES
    if not from_end and all(w is not None for w in before) and literal_before:
        start = sum(w for w in before if w is not None)
        edges = [(start - 1, literal_before[-1])]
        return Slot(0, cut=(start, start + width), edges=tuple(edges) if checked else ())
    if from_end and all(w is not None for w in after) and literal_after:
        end = -sum(w for w in after if w is not None)
        edges = [(end, literal_after[0])]
        return Slot(0, cut=(end - width, end), edges=tuple(edges) if checked else ())
    return None


def _with_segment(slot: Slot, index: int) -> Slot:
    return Slot(index, slot.token, slot.count, slot.strip, slot.cut, slot.edges)


def _probe(segment: list[Piece]) -> str:
    """A segment with each variable replaced by marked tokens (as many as its value holds)."""
    out = []
    for k, piece in enumerate(segment):
        if piece.variable:
            mark = f"\x00{k}\x01"
            out.append(" ".join([mark] * TOKENS_OF.get(piece.text, 1)))
        else:
            out.append(piece.text)
    return "".join(out)


def _segment_tokens(pieces: tuple[Piece, ...]) -> dict[int, int]:
    """How many whitespace-separated tokens each segment read by token holds."""
    return {
        index: len(_probe(segment).split())
        for index, segment in enumerate(_segments(pieces))
        if len(segment) > 1 and any(p.variable for p in segment)
    }


# -- the formats gatebench knows by name ---------------------------------------------------------

COMBINED = (
    '$remote_addr $ident $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent"'
)
"""nginx's and Apache's ``combined`` (Apache's ``%h %l %u %t "%r" %>s %b "%{Referer}i"
"%{User-agent}i"``; nginx writes ``-`` for the ident)."""
COMMON = '$remote_addr $ident $remote_user [$time_local] "$request" $status $body_bytes_sent'
"""The Common Log Format (Apache's ``common``)."""
ENVOY = (
    '[$start_time] "$request" $status $response_flags $bytes_received $bytes_sent $duration '
    '$upstream_service_time "$x_forwarded_for" "$user_agent" "$request_id" "$authority" '
    '"$upstream_host"'
)
"""Envoy's default format (``[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%
%PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%
%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%"
"%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"``): the start time, the body
bytes received and the duration in milliseconds."""

BUILTIN = {
    "combined": COMBINED,
    "combined+time": COMBINED + " $request_time",
    "combined+time_us": COMBINED + " $request_time_us",
    "common": COMMON,
    "common+time": COMMON + " $request_time",
    "common+time_us": COMMON + " $request_time_us",
    "envoy": ENVOY,
}
"""Built-in templates by name. ``+time``: a request time in seconds appended (nginx's
``$request_time``); ``+time_us``: in microseconds (Apache's ``%D``)."""

DESCRIPTIONS = {
    "combined": "combined",
    "combined+time": "combined, with the request time (s)",
    "combined+time_us": "combined, with the request time (µs)",
    "common": "common",
    "common+time": "common, with the request time (s)",
    "common+time_us": "common, with the request time (µs)",
    "envoy": "Envoy's default",
    "nginx": "nginx log_format",
    "json": "JSON lines",
}


def builtin(name: str) -> LogFormat:
    return compile_format(name, BUILTIN[name])


__all__ = [
    "BUILTIN",
    "DESCRIPTIONS",
    "DURATION_VARIABLES",
    "SIZE_VARIABLES",
    "START_TIMES",
    "TIME_VARIABLES",
    "FormatError",
    "LogFormat",
    "Piece",
    "Slot",
    "builtin",
    "compile_format",
    "parse_template",
]
