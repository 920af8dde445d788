"""Reading access logs: files (plain or gzip, read incrementally), chunks of whole lines, and
each chunk cut into the columns an import needs (gatebench.core.traffic._formats says how).

Bounded in memory and time whatever the input: a file is read in chunks of
:data:`CHUNK_BYTES`; a line longer than :data:`MAX_LINE_BYTES` is skipped (counted, its line
number kept) without being held; every pattern is linear. A line that does not fit the format
is a counted skip, the first few located; a gzip stream that ends early keeps what it held,
with a warning; a corrupt one stops with a located error. Nothing a line says is ever fetched
or run.
"""

from __future__ import annotations

import calendar
import contextlib
import gzip
import io
import json
import math
import operator
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import repeat
from operator import itemgetter, methodcaller
from pathlib import Path
from typing import Any, BinaryIO

from gatebench.core.traffic._formats import (
    DURATION_VARIABLES,
    START_TIMES,
    TIME_VARIABLES,
    LogFormat,
    Slot,
)

CHUNK_BYTES = 4 * 1024 * 1024
MAX_LINE_BYTES = 65_536
SHOWN_SKIPS = 5
"""How many skipped lines are named with their place (all are counted)."""
GZIP_MAGIC = b"\x1f\x8b"
MAX_EPOCH = 253402300800.0
"""10000-01-01T00:00:00Z: the first time past what a plan (ISO 8601) can say."""
OUT_OF_RANGE = "time out of range"
OTHER_HOST = "a request to another host"
"""Why a HAR entry to another host than the API's is left out (a count, not a misfit)."""
_MONTHS = {
    m.encode(): i + 1
    for i, m in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    )
}
_CLF = re.compile(rb"^(\d\d)/([A-Z][a-z]{2})/(\d{4}):(\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)$")
_PARTITION_NEWLINE = methodcaller("partition", b"\n")
_FIRST = itemgetter(0)
_cut: Callable[[bytes, slice], bytes] = operator.getitem  # type: ignore[assignment]
"""``text[a:b]`` as a function (C-level) for ``map``."""
_THIRD = itemgetter(2)


@dataclass
class Columns:
    """One chunk's requests, one list per field, in line order."""

    request: list[bytes]
    """``METHOD TARGET`` or ``METHOD TARGET PROTOCOL`` (a request line as logged; the target
    is the path and query as the client sent them). Lines repeat, so they are resolved once
    each (gatebench.core.traffic._match)."""
    arrival: list[float]
    """Epoch seconds of each request's arrival (for a log written at the end of a request,
    its time minus its duration when logged; a time logged to the second is taken as the
    middle of that second)."""
    status: list[bytes]
    size: list[bytes] | None = None
    precise: bool = False
    """Whether the arrival times have a fraction of a second."""

    def __len__(self) -> int:
        return len(self.request)


@dataclass
class Skips:
    """Lines left out, counted by reason, the first few with their place."""

    count: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    shown: list[tuple[str, int, str]] = field(default_factory=list)
    """(file, line, reason) of the first :data:`SHOWN_SKIPS`."""

    def add(self, source: str, line: int, reason: str, key: str | None = None) -> None:
        self.count += 1
        key = key or reason
        self.by_reason[key] = self.by_reason.get(key, 0) + 1
        if len(self.shown) < SHOWN_SKIPS:
            self.shown.append((source, line, reason))


class TrafficFileError(Exception):
    """A file that cannot be read on (a corrupt gzip stream): where, and why."""

    def __init__(self, source: str, line: int | None, message: str) -> None:
        super().__init__(message)
        self.source = source
        self.line = line
        self.message = message


def open_binary(path: Path) -> BinaryIO:
    """The file's bytes, decompressed when it is a gzip stream (by its first bytes, not its
    name), read incrementally."""
    raw = path.open("rb")
    if raw.read(2) == GZIP_MAGIC:
        raw.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    raw.seek(0)
    return raw


@dataclass
class Chunk:
    first_line: int
    """The number of the chunk's first line in its file (1-based)."""
    data: bytes
    """Whole lines, each ending with a newline."""
    lines: int = -1
    """How many lines ``data`` holds (-1: not counted yet)."""

    @property
    def count(self) -> int:
        if self.lines < 0:
            self.lines = self.data.count(b"\n")
        return self.lines


READ_BYTES = 256 * 1024
"""One read from a file: a gzip stream that ends early loses at most this much of its end."""


def read_chunks(
    stream: BinaryIO,
    source: str,
    skips: Skips,
    warnings: list[tuple[str, int | None, str]],
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_line: int = MAX_LINE_BYTES,
) -> Iterator[Chunk]:
    """Chunks of about ``chunk_bytes`` of whole lines. A line still without its newline after
    ``max_line`` bytes is skipped (counted) without being held; a last line without a
    newline gets one."""
    line = 1
    parts: list[bytes] = []  # whole lines, not yet a chunk
    held = 0  # their bytes
    pending = b""  # the start of a line whose newline has not come
    skipping = False
    truncated = False
    # a gzip stream that ends early loses the read it ended in: small reads; a plain file
    # is read a chunk at a time
    size = READ_BYTES if isinstance(getattr(stream, "fileobj", None), io.IOBase) else chunk_bytes
    while True:
        try:
            block = stream.read(size)
        except EOFError:
            truncated = True
            block = b""
        except (OSError, zlib.error) as exc:
            raise TrafficFileError(
                source, line, f"the gzip stream is corrupt after line {line - 1:,} ({exc})"
            ) from None
        if not block:
            break
        if skipping:
            cut = block.find(b"\n")
            if cut < 0:
                continue
            block = block[cut + 1 :]
            line += 1
            skipping = False
        end = block.rfind(b"\n")
        if end < 0:
            pending += block
        else:
            parts.append(pending + block[: end + 1] if pending else block[: end + 1])
            held += len(parts[-1])
            pending = block[end + 1 :]
        if len(pending) > max_line:
            if parts:
                chunk = Chunk(line, b"".join(parts))
                yield chunk
                line += chunk.count
                parts, held = [], 0
            skips.add(source, line, f"a line longer than {max_line:,} bytes", "too long")
            pending, skipping = b"", True
            continue
        if held >= chunk_bytes:
            chunk = Chunk(line, parts[0] if len(parts) == 1 else b"".join(parts))
            yield chunk
            line += chunk.count
            parts, held = [], 0
    if not skipping and pending:
        parts.append(pending + b"\n")
    if parts:
        chunk = Chunk(line, b"".join(parts))
        yield chunk
        line += chunk.count
    if truncated:
        warnings.append(
            (
                source,
                line,
                f"the gzip stream ends before its end marker, after line {line - 1:,} (a "
                "truncated file?): the lines before are read, the rest is missing",
            )
        )


# -- times ------------------------------------------------------------------------------------


def parse_clf_time(text: bytes) -> float | None:
    """``10/Oct/2000:13:55:36 -0700`` → epoch seconds (None: not such a time)."""
    m = _CLF.match(text.strip(b"[]"))
    if m is None or m.group(2) not in _MONTHS:
        return None
    day, year = int(m.group(1)), int(m.group(3))
    hour, minute, second = int(m.group(4)), int(m.group(5)), int(m.group(6))
    offset = (int(m.group(8)) * 60 + int(m.group(9))) * 60
    if m.group(7) == b"-":
        offset = -offset
    try:
        return float(
            calendar.timegm((year, _MONTHS[m.group(2)], day, hour, minute, second)) - offset
        )
    except (ValueError, OverflowError):
        return None


def parse_iso_time(text: bytes) -> tuple[float, bool] | None:
    """ISO 8601 → (epoch seconds, whether it carries a fraction of a second); a time without
    a zone is UTC."""
    try:
        stamp = datetime.fromisoformat(text.strip(b"[]").decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp(), b"." in text


def parse_epoch_time(text: bytes) -> tuple[float, bool] | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    # a JSON log's ``ts`` in ms, µs or ns since 1970: seconds that large would be past 5000 AD
    if value > 1e17:
        value /= 1e9
    elif value > 1e14:
        value /= 1e6
    elif value > 1e11:
        value /= 1000.0
    return value, True


def in_range(arrival: float) -> bool:
    """Whether an arrival is a time gatebench can write (1970 to 9999, UTC)."""
    return 0.0 <= arrival < MAX_EPOCH


def out_of_range(text: bytes | str) -> str:
    """Why a line whose time is outside :func:`in_range` is skipped."""
    shown = text.decode("latin-1") if isinstance(text, bytes) else text
    return f"a time out of range ({shown[:40]}): before 1970 or after 9999"


def time_value(kind: str, text: bytes) -> tuple[float, bool] | None:
    """(epoch seconds, precise): a time as a log variable of ``kind`` writes it."""
    if kind == "clf":
        found = parse_clf_time(text)
        return None if found is None else (found, False)
    if kind == "iso":
        return parse_iso_time(text)
    return parse_epoch_time(text)


# -- one chunk, by columns --------------------------------------------------------------------


class NotColumnar(Exception):
    """The chunk does not fit the columnar layout: read it line by line instead."""


class _Segments:
    """A chunk split at its double quotes: each line's quoted segments, cut lazily."""

    def __init__(self, fmt: LogFormat, data: bytes, lines: int = -1) -> None:
        self.lines = data.count(b"\n") if lines < 0 else lines
        self.q = q = fmt.quotes
        if q == 0:
            self.pieces = data.split(b"\n")[:-1]
            self.bounds: list[bytes] = []
            return
        self.pieces = pieces = data.split(b'"')
        if len(pieces) != self.lines * q + 1:
            raise NotColumnar
        # piece q*i (i >= 1): the end of line i - 1, its newline, the start of line i
        self.bounds = pieces[q::q]
        counts = set(map(bytes.count, self.bounds, repeat(b"\n")))
        if counts != {1}:
            raise NotColumnar
        self._split: list[tuple[bytes, bytes, bytes]] | None = None

    def raw(self, segment: int) -> list[bytes]:
        """The pieces holding ``segment`` of every line: whole for a middle segment; for the
        first (last) segment, the piece that ends (starts) with it."""
        if self.q == 0:
            return self.pieces
        if segment == 0:
            return [self.pieces[0], *self.bounds[:-1]]
        if segment == self.q:
            return self.bounds
        return self.pieces[segment :: self.q][: self.lines]

    def exact(self, segment: int) -> list[bytes]:
        """Each line's ``segment``, exactly."""
        if self.q == 0 or 0 < segment < self.q:
            return self.raw(segment)
        if self._split is None:
            self._split = list(map(_PARTITION_NEWLINE, self.bounds))
        if segment == 0:
            return [self.pieces[0], *map(_THIRD, self._split[:-1])]
        return list(map(_FIRST, self._split))


def _slot_column(
    fmt: LogFormat, slot: Slot, segments: _Segments, tokens: dict[int, list[list[bytes]]]
) -> list[Any]:
    if slot.cut is not None:
        raw = segments.raw(slot.segment)
        for position, byte in slot.edges:
            if set(map(operator.getitem, raw, repeat(position))) != {byte}:
                raise NotColumnar
        return list(map(operator.getitem, raw, repeat(slice(*slot.cut))))
    if slot.token is None:
        return segments.exact(slot.segment)
    if slot.segment == segments.q and slot.count == 1 and segments.q:
        # a token of the last segment: split the piece that starts with it, no further
        raw = segments.raw(slot.segment)
        words = map(bytes.split, raw, repeat(None), repeat(slot.token + 1))
        values = list(map(itemgetter(slot.token), words))
    else:
        split = tokens.get(slot.segment)
        if split is None:
            split = list(map(bytes.split, segments.exact(slot.segment)))
            if set(map(len, split)) != {fmt.tokens.get(slot.segment, 0)}:
                raise NotColumnar
            tokens[slot.segment] = split
        if slot.count == 1:
            values = list(map(itemgetter(slot.token), split))
        else:
            picks = itemgetter(*range(slot.token, slot.token + slot.count))
            values = list(map(b" ".join, map(picks, split)))
    head, tail = slot.strip
    if head or tail:
        values = list(map(operator.getitem, values, repeat(slice(head, -tail if tail else None))))
    return values


def columns_of(fmt: LogFormat, data: bytes, lines: int = -1) -> Columns:
    """A chunk's columns by the columnar layout; NotColumnar when it does not fit."""
    segments = _Segments(fmt, data, lines)
    tokens: dict[int, list[list[bytes]]] = {}
    slot = fmt.slots

    def get(name: str) -> list[Any]:
        return _slot_column(fmt, slot[name], segments, tokens)

    if "request" in slot:
        request = get("request")
    elif "request_method" in slot and "request_uri" in slot:
        request = list(map(b" ".join, zip(get("request_method"), get("request_uri"), strict=True)))
    else:
        raise NotColumnar
    time_name = fmt.time_variable
    if time_name is None or time_name not in slot:
        raise NotColumnar
    times, precise = _arrival_times(TIME_VARIABLES[time_name], get(time_name))
    duration_name = fmt.duration_variable
    if duration_name is not None and duration_name in slot and time_name not in START_TIMES:
        try:
            durations = list(map(float, get(duration_name)))
        except ValueError:
            raise NotColumnar from None
        unit = DURATION_VARIABLES[duration_name]
        if unit != 1.0:
            durations = list(map(operator.mul, durations, repeat(unit)))
        times = list(map(operator.sub, times, durations))
    status = get("status") if "status" in slot else [b"-"] * len(request)
    size_name = fmt.size_variable
    size = get(size_name) if size_name is not None and size_name in slot else None
    return Columns(request, times, status, size, precise)


_TIME_CACHE: dict[tuple[str, bytes], float] = {}


def _arrival_times(kind: str, texts: list[bytes]) -> tuple[list[float], bool]:
    """Each text as epoch seconds (a time to the second: its middle) and whether they carry
    fractions; NotColumnar when one is not such a time. Texts to the second repeat (one per
    second), so each distinct one is read once."""
    if kind == "epoch":
        try:
            return list(map(float, texts)), True
        except ValueError:
            raise NotColumnar from None
    if kind == "iso" and texts and texts[0][19:20] == b".":
        return _fractional_iso(texts), True
    found: dict[bytes, float] = {}
    for text in set(texts):
        value = _TIME_CACHE.get((kind, text))
        if value is None:
            parsed = time_value(kind, text)
            if parsed is None:
                raise NotColumnar
            value = parsed[0] + (0.0 if parsed[1] else 0.5)
            if len(_TIME_CACHE) > 100_000:
                _TIME_CACHE.clear()
            _TIME_CACHE[(kind, text)] = value
        found[text] = value
    return list(map(found.__getitem__, texts)), False


def _fractional_iso(texts: list[bytes]) -> list[float]:
    """``2026-01-31T12:00:00.123Z`` (Envoy's start time): the second read once per distinct
    second, the fraction as a number."""
    seconds: list[bytes] = list(map(_cut, texts, repeat(slice(0, 19))))
    zones = set(map(operator.getitem, texts, repeat(slice(-1, None))))
    if zones != {b"Z"}:
        raise NotColumnar
    found: dict[bytes, float] = {}
    for text in set(seconds):
        parsed = parse_iso_time(text + b"Z")
        if parsed is None:
            raise NotColumnar
        found[text] = parsed[0]
    try:
        fractions = list(map(float, map(_cut, texts, repeat(slice(19, -1)))))
    except ValueError:
        raise NotColumnar from None
    return list(map(operator.add, map(found.__getitem__, seconds), fractions))


# -- one chunk, line by line ------------------------------------------------------------------


def lines_of(chunk: Chunk, source: str, skips: Skips) -> Iterator[tuple[int, bytes]]:
    """The chunk's lines that hold something, each with its line number; a line longer than
    ``MAX_LINE_BYTES`` is a located, counted skip."""
    for i, line in enumerate(chunk.data.split(b"\n")[:-1]):
        if not line.strip():
            continue
        where = chunk.first_line + i
        if len(line) > MAX_LINE_BYTES:
            skips.add(source, where, f"a line longer than {MAX_LINE_BYTES:,} bytes", "too long")
            continue
        yield where, line


def columns_by_line(fmt: LogFormat, chunk: Chunk, source: str, skips: Skips) -> Columns:
    """The chunk read line by line with the format's regular expression: every line that
    does not fit is a located, counted skip."""
    out = Columns([], [], [], [] if fmt.size_variable else None)
    time_name = fmt.time_variable
    assert time_name is not None
    kind = TIME_VARIABLES[time_name]
    duration_name = fmt.duration_variable
    unit = DURATION_VARIABLES.get(duration_name or "", 1.0)
    start = time_name in START_TIMES
    for where, line in lines_of(chunk, source, skips):
        match = fmt.regex.match(line.rstrip(b"\r"))
        if match is None:
            skips.add(source, where, f"not in the {fmt.name} format", "not in the format")
            continue
        groups = match.groupdict()
        parsed = time_value(kind, groups["time"])
        if parsed is None:
            skips.add(source, where, f"no time in its {time_name} field", "no time")
            continue
        arrival = parsed[0] + (0.0 if parsed[1] else 0.5)
        if duration_name and not start and groups.get("duration") not in (None, b"-", b""):
            with contextlib.suppress(ValueError):
                arrival -= float(groups["duration"]) * unit
        if not in_range(arrival):
            skips.add(source, where, out_of_range(groups["time"]), OUT_OF_RANGE)
            continue
        out.precise = out.precise or parsed[1]
        request = _request_of(groups)
        if request is None:
            skips.add(source, where, "no request line (method, target, protocol)", "no request")
            continue
        out.request.append(request)
        out.arrival.append(arrival)
        out.status.append(groups.get("status") or b"-")
        if out.size is not None:
            out.size.append(groups.get("size") or b"-")
    return out


def _request_of(groups: dict[str, Any]) -> bytes | None:
    request: bytes | None = groups.get("request")
    if request is not None:
        # a line that is no request (a TLS handshake on the HTTP port) is still a request
        # the server received: the matcher counts it apart
        return request or None
    method = groups.get("method")
    target = groups.get("target")
    if target is None and groups.get("path") is not None:
        query = groups.get("query")
        target = groups["path"] + (b"?" + query if query and query != b"-" else b"")
    if not method or not target:
        return None
    line: bytes = method + b" " + target
    return line


def read_columns(fmt: LogFormat, chunk: Chunk, source: str, skips: Skips) -> Columns:
    """A chunk's columns: by the columnar layout when it fits, else line by line."""
    if fmt.columnar:
        try:
            cols = columns_of(fmt, chunk.data, chunk.count)
        except (NotColumnar, IndexError):
            pass
        else:
            if _clean(cols):
                return cols
    return columns_by_line(fmt, chunk, source, skips)


def _clean(cols: Columns) -> bool:
    """Whether every request line and time of a columnar read is there (else the chunk is read
    again line by line, which locates the lines that have none, or a time out of range)."""
    if cols.arrival and not (in_range(min(cols.arrival)) and in_range(max(cols.arrival))):
        return False
    return all(cols.request)


# -- JSON lines -------------------------------------------------------------------------------

JSON_FIELDS: dict[str, tuple[str, ...]] = {
    "time": (
        "time",
        "timestamp",
        "@timestamp",
        "ts",
        "time_iso8601",
        "time_local",
        "msec",
        "start_time",
        "StartUTC",
        "startTime",
        "date",
    ),
    "request": ("request", "request_line"),
    "method": (
        "method",
        "request_method",
        "RequestMethod",
        "request.method",
        "http.method",
        "httpRequest.requestMethod",
        "req.method",
    ),
    "target": (
        "request_uri",
        "uri",
        "path",
        "RequestPath",
        "request.uri",
        "request.path",
        "url",
        "http.url",
        "httpRequest.requestUrl",
        "req.url",
    ),
    "status": (
        "status",
        "response_code",
        "status_code",
        "DownstreamStatus",
        "response.status",
        "http.status_code",
        "httpRequest.status",
        "res.statusCode",
    ),
    "size": (
        "content_length",
        "bytes_received",
        "request_length",
        "RequestContentSize",
        "bytes_read",
        "request.size",
        "httpRequest.requestSize",
    ),
    "duration": (
        "request_time",
        "duration",
        "Duration",
        "latency",
        "httpRequest.latency",
        "responseTime",
    ),
}
"""The keys a JSON access log may use for each field, first found wins (a dotted key is a
nested one). They cover nginx ``escape=json`` formats written with nginx's variable names,
Envoy's and Caddy's JSON logs, Traefik's, and Google Cloud's ``httpRequest``."""
_START_KEYS = frozenset({"start_time", "StartUTC", "startTime"})


def _lookup(record: dict[str, Any], key: str) -> Any:
    if key in record:
        return record[key]
    node: Any = record
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _json_time(value: Any) -> tuple[float, bool] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return parse_epoch_time(str(value).encode())
    if isinstance(value, str):
        text = value.encode("utf-8", "replace")
        return (
            parse_iso_time(text)
            or parse_epoch_time(text)
            or (None if (t := parse_clf_time(text)) is None else (t, False))
        )
    return None


def _json_seconds(key: str, value: Any) -> float | None:
    """A duration field in seconds: nginx's ``request_time`` in seconds, Envoy's and Caddy's
    ``duration`` as the log writes it (ms for Envoy, s for Caddy: a whole number is taken as
    ms), Traefik's ``Duration`` in ns, Google's ``latency`` as ``"0.12s"``."""
    if isinstance(value, str):
        text = value.strip()
        factor = 1.0
        for suffix, f in (("ms", 0.001), ("us", 1e-6), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)):
            if text.endswith(suffix):
                text, factor = text[: -len(suffix)], f
                break
        try:
            return float(text) * factor
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if key == "Duration":
        return value / 1e9
    if key in ("request_time", "responseTime") or isinstance(value, float):
        return float(value)
    return value / 1000.0


def json_columns(chunk: Chunk, source: str, skips: Skips, keys: dict[str, str]) -> Columns:
    """A chunk of JSON lines (one object a line); ``keys`` remembers, per field, the key the
    first lines used."""
    out = Columns([], [], [], [])
    assert out.size is not None
    for where, line in lines_of(chunk, source, skips):
        try:
            record = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            skips.add(source, where, f"not a JSON object ({str(exc).split(':')[0]})", "not JSON")
            continue
        except RecursionError:
            skips.add(source, where, "a JSON value nested too deep", "not JSON")
            continue
        if not isinstance(record, dict):
            skips.add(source, where, "not a JSON object", "not JSON")
            continue
        found = {name: _field(record, name, keys) for name in JSON_FIELDS}
        fields = {name: value for name, (_, value) in found.items()}
        parsed = _json_time(fields["time"])
        if parsed is None:
            skips.add(
                source, where, f"no time (looked for {', '.join(JSON_FIELDS['time'])})", "no time"
            )
            continue
        arrival = parsed[0] + (0.0 if parsed[1] else 0.5)
        duration = (
            _json_seconds(found["duration"][0], fields["duration"])
            if fields["duration"] is not None
            else None
        )
        if duration is not None and found["time"][0] not in _START_KEYS:
            arrival -= duration
        if not in_range(arrival):
            skips.add(source, where, out_of_range(str(fields["time"])), OUT_OF_RANGE)
            continue
        out.precise = out.precise or parsed[1]
        request = _json_request(fields)
        if request is None:
            skips.add(
                source,
                where,
                "no request (looked for a method and a path or URL, or a request line)",
                "no request",
            )
            continue
        out.request.append(request)
        out.arrival.append(arrival)
        status = fields["status"]
        out.status.append(str(status).encode("utf-8", "replace") if status is not None else b"-")
        size = fields["size"]
        out.size.append(
            str(size).encode("utf-8", "replace") if isinstance(size, int | str) else b"-"
        )
    return out


def _field(record: dict[str, Any], name: str, keys: dict[str, str]) -> tuple[str, Any]:
    """(the key found, its value) for one field; ``keys`` remembers the key a file uses."""
    known = keys.get(name)
    if known is not None:
        value = _lookup(record, known)
        if value is not None:
            return known, value
    for key in JSON_FIELDS[name]:
        value = _lookup(record, key)
        if value is not None and value != "":
            keys.setdefault(name, key)
            return key, value
    return "", None


def _json_request(fields: dict[str, Any]) -> bytes | None:
    request = fields["request"]
    if isinstance(request, str) and " " in request.strip():
        return request.encode("utf-8", "replace")
    method, target = fields["method"], fields["target"]
    if not isinstance(method, str) or not isinstance(target, str) or not method or not target:
        return None
    return f"{method} {target}".encode("utf-8", "replace")


ChunkReader = Callable[[Chunk, str, Skips], Columns]
__all__ = [
    "CHUNK_BYTES",
    "JSON_FIELDS",
    "MAX_EPOCH",
    "MAX_LINE_BYTES",
    "OTHER_HOST",
    "OUT_OF_RANGE",
    "Chunk",
    "ChunkReader",
    "Columns",
    "Skips",
    "TrafficFileError",
    "columns_by_line",
    "columns_of",
    "in_range",
    "json_columns",
    "open_binary",
    "out_of_range",
    "parse_clf_time",
    "parse_iso_time",
    "read_chunks",
    "read_columns",
    "time_value",
]
