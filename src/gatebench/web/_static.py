"""Static files of the frontend, and nothing else: no path leaves the site's folder.

A URL path is decoded once and must then be plain relative segments: no ``..`` or ``.``,
no empty segment (``//etc/passwd``), no backslash, NUL or drive letter, no hidden file, no
symbolic link anywhere on the way (even one pointing inside), only known file types, and
the resolved file must lie inside the resolved root. Anything else is "not found": the
answer does not tell which rule refused it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from urllib.parse import unquote

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".webmanifest": "application/manifest+json",
}
INDEX = "index.html"


def resolve_static(root: Path, url_path: str) -> Path | None:
    """The file ``url_path`` names inside ``root``, or None (answered with 404)."""
    raw = url_path.split("?", 1)[0].split("#", 1)[0]
    if not raw.startswith("/"):
        return None
    try:
        decoded = unquote(raw, errors="strict") if "%" in raw else raw
    except UnicodeDecodeError:
        return None
    if any(c in decoded for c in ("\x00", "\\")) or "%" in decoded:
        # A '%' left after one decoding was double-encoded (%252e): never decode twice.
        return None
    rel = decoded[1:]
    if rel == "":
        rel = INDEX
    parts = rel.split("/")
    if any(p in ("", ".", "..") or p.startswith(".") or ":" in p for p in parts):
        return None
    if os.path.splitext(parts[-1])[1].lower() not in CONTENT_TYPES:
        return None
    base = root.resolve()
    current = base
    for part in parts:
        current = current / part
        try:
            info = os.lstat(current)
        except OSError:
            return None
        if stat.S_ISLNK(info.st_mode):
            return None
    if not stat.S_ISREG(info.st_mode):
        return None
    try:
        resolved = current.resolve(strict=True)
    except OSError:
        return None
    if not resolved.is_relative_to(base):
        return None
    return resolved


def content_type(path: Path) -> str:
    return CONTENT_TYPES.get(path.suffix.lower(), "application/octet-stream")


__all__ = ["CONTENT_TYPES", "INDEX", "content_type", "resolve_static"]
