"""HAR 1.2 files (what browsers' developer tools and proxies export): each entry's start time,
method, URL, response status and request body size, as columns for the aggregator.

A HAR file is one JSON document; it is read whole, so its size is bounded
(:data:`MAX_HAR_BYTES`: export without response bodies to stay under it). Only the fields
above are read: headers, cookies, query strings' values outside the URL, bodies and
responses' contents are never looked at, let alone kept. A URL is data: nothing is fetched.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gatebench.core.traffic._logs import (
    OTHER_HOST,
    OUT_OF_RANGE,
    Columns,
    Skips,
    in_range,
    open_binary,
    out_of_range,
    parse_iso_time,
)

MAX_HAR_BYTES = 256 * 1024 * 1024


class HarError(ValueError):
    """A file that is not a HAR document: ``pointer`` says where (a JSON pointer)."""

    def __init__(self, pointer: str, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.message = message
        self.line = line


def read_har(path: Path, source: str, skips: Skips) -> Columns:
    """Every entry of a HAR file as columns; an entry without a start time, method or URL is
    a located skip; a file that is not HAR raises :class:`HarError`."""
    with open_binary(path) as stream:
        data = stream.read(MAX_HAR_BYTES + 1)
    if len(data) > MAX_HAR_BYTES:
        raise HarError(
            "",
            f"the file holds more than {MAX_HAR_BYTES // 2**20} MB; gatebench reads HAR files "
            "up to that size (export the HAR without response bodies, or in parts)",
        )
    try:
        document = json.loads(data)
    except UnicodeDecodeError:
        raise HarError("", "not UTF-8 text: a HAR file is JSON") from None
    except json.JSONDecodeError as exc:
        raise HarError("", f"not JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(document, dict) or not isinstance(document.get("log"), dict):
        raise HarError("", "not a HAR document: expected an object with a 'log' object")
    log = document["log"]
    version = log.get("version")
    if version is not None and not str(version).startswith("1."):
        raise HarError("/log/version", f"HAR version {version!r}; gatebench reads HAR 1.x")
    entries = log.get("entries")
    if not isinstance(entries, list):
        raise HarError("/log/entries", "expected a list of entries")
    out = Columns([], [], [], [], precise=True)
    assert out.size is not None
    read = [_entry(entry) for entry in entries]
    hosts = Counter(found[4] for found in read if not isinstance(found, str) and found[4])
    api_host = hosts.most_common(1)[0][0] if hosts else ""
    for i, found in enumerate(read):
        where = f"/log/entries/{i}"
        if isinstance(found, str):
            key = OUT_OF_RANGE if found.startswith("a time out of range") else found
            skips.add(source, 0, f"{where}: {found}", key)
            continue
        request, arrival, status, size, host = found
        if host and host != api_host:
            # a page's HAR holds its CDN, fonts and analytics too: the API is the host most
            # requests went to
            skips.add(
                source,
                0,
                f"{where}: a request to {host}, not to {api_host} (the host most requests went to)",
                OTHER_HOST,
            )
            continue
        out.request.append(request)
        out.arrival.append(arrival)
        out.status.append(status)
        out.size.append(size)
    return out


def _entry(entry: Any) -> tuple[bytes, float, bytes, bytes, str] | str:
    if not isinstance(entry, dict):
        return "an entry is not an object"
    started = entry.get("startedDateTime")
    parsed = (
        parse_iso_time(started.encode("utf-8", "replace")) if isinstance(started, str) else None
    )
    if parsed is None:
        return "no startedDateTime (ISO 8601)"
    if not in_range(parsed[0]):
        return out_of_range(str(started))
    request = entry.get("request")
    if not isinstance(request, dict):
        return "no request"
    method, url = request.get("method"), request.get("url")
    if not isinstance(method, str) or not method or not isinstance(url, str) or not url:
        return "no request method or URL"
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https", ""):
        return f"not an HTTP request ({parts.scheme[:20]}: URL)"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    response = entry.get("response")
    status = response.get("status") if isinstance(response, dict) else None
    code = str(status).encode() if isinstance(status, int) and status > 0 else b"-"
    size = request.get("bodySize")
    if not isinstance(size, int) or size < 0:
        post = request.get("postData")
        text = post.get("text") if isinstance(post, dict) else None
        size = len(text.encode("utf-8")) if isinstance(text, str) else -1
    return (
        f"{method.upper()} {target}".encode("utf-8", "replace"),
        parsed[0],
        code,
        str(size).encode() if size >= 0 else b"-",
        parts.netloc.lower(),
    )


__all__ = ["MAX_HAR_BYTES", "HarError", "read_har"]
