"""The frontend's files: its configuration (``config.json``), its export as a static site,
and the one rule that decides which file a URL path names.

The same files serve both paths; only ``config.json`` differs::

    local  {"mode": "local", "api": "api/", "upload": {"endpoint": "api/", "method": "direct"}}
    GCP    {"mode": "gcp", "api": "https://REGION-PROJECT.cloudfunctions.net/gatebench-read/",
            "upload": {"endpoint": "https://.../gatebench-upload/", "method": "signed-url"}}

``api`` is the read API's base, ``upload.endpoint`` the upload API's; both may be relative
to the page. ``gatebench serve`` answers ``/config.json`` itself (from its options, or the
file given with ``--site-config``); ``gatebench serve --export DIR`` writes the site with a
config for the bucket (docs/frontend.md).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from gatebench.core.errors import Problem, ProblemsError
from gatebench.core.spec import DEFAULT_LIMITS

SITE_FORMAT = "gatebench-site/1"
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
Mode = Literal["local", "gcp"]
UploadMethod = Literal["direct", "signed-url"]


class SiteConfigError(ProblemsError):
    """A ``config.json`` that the frontend could not use."""


@dataclass(frozen=True)
class SiteConfig:
    mode: Mode = "local"
    """Where runs happen: the page says "on this machine" or "on Google Cloud"."""
    api: str = "api/"
    upload_endpoint: str = "api/"
    upload_method: UploadMethod = "direct"
    max_bytes: int = DEFAULT_LIMITS.max_bytes
    """The page refuses a larger file before sending it (the server enforces it too)."""
    poll_ms: int = 1000

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SITE_FORMAT,
            "mode": self.mode,
            "api": self.api,
            "upload": {"endpoint": self.upload_endpoint, "method": self.upload_method},
            "max_bytes": self.max_bytes,
            "poll_ms": self.poll_ms,
        }

    def origins(self) -> list[str]:
        """Origins of absolute endpoints (the local server allows them in connect-src)."""
        out = []
        for url in (self.api, self.upload_endpoint):
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") and parts.netloc:
                out.append(f"{parts.scheme}://{parts.netloc}")
        return sorted(set(out))

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> SiteConfig:
        """Check every field; :class:`SiteConfigError` lists each problem with its pointer."""
        problems: list[Problem] = []

        def bad(where: str, message: str) -> None:
            problems.append(Problem(where, message, source=source))

        if not isinstance(data, dict):
            raise SiteConfigError([Problem("", "expected a JSON object", source=source)])
        known = {"format", "mode", "api", "upload", "max_bytes", "poll_ms"}
        for key in sorted(set(data) - known):
            bad(f"/{key}", f"unknown key; known: {', '.join(sorted(known))}")
        if data.get("format", SITE_FORMAT) != SITE_FORMAT:
            bad("/format", f"expected {SITE_FORMAT!r}, got {data.get('format')!r}")
        mode = data.get("mode", "local")
        if mode not in ("local", "gcp"):
            bad("/mode", f"expected 'local' or 'gcp', got {mode!r}")
        api = data.get("api", "api/")
        if not _is_endpoint(api):
            bad("/api", f"expected a relative path or an http(s) URL ending in '/', got {api!r}")
        upload = data.get("upload", {})
        if not isinstance(upload, dict):
            bad("/upload", "expected an object with 'endpoint' and 'method'")
            upload = {}
        for key in sorted(set(upload) - {"endpoint", "method"}):
            bad(f"/upload/{key}", "unknown key; known: endpoint, method")
        endpoint = upload.get("endpoint", "api/")
        if not _is_endpoint(endpoint):
            bad(
                "/upload/endpoint",
                f"expected a relative path or an http(s) URL ending in '/', got {endpoint!r}",
            )
        method = upload.get("method", "direct")
        if method not in ("direct", "signed-url"):
            bad("/upload/method", f"expected 'direct' or 'signed-url', got {method!r}")
        max_bytes = data.get("max_bytes", DEFAULT_LIMITS.max_bytes)
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
            bad("/max_bytes", f"expected a positive whole number of bytes, got {max_bytes!r}")
        poll_ms = data.get("poll_ms", 1000)
        if not isinstance(poll_ms, int) or isinstance(poll_ms, bool) or not 200 <= poll_ms <= 60000:
            bad("/poll_ms", f"expected milliseconds from 200 to 60000, got {poll_ms!r}")
        if problems:
            raise SiteConfigError(problems)
        return cls(mode, api, endpoint, method, max_bytes, poll_ms)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> SiteConfig:
        name = os.fspath(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise SiteConfigError(
                [Problem("", f"cannot read: {exc.strerror}", source=name)]
            ) from None
        except ValueError as exc:
            raise SiteConfigError([Problem("", f"not JSON: {exc}", source=name)]) from None
        return cls.from_dict(data, source=name)


def _is_endpoint(value: Any) -> bool:
    if not isinstance(value, str) or not value.endswith("/") or any(c in value for c in "\"'<> "):
        return False
    parts = urlsplit(value)
    if parts.scheme:
        return parts.scheme in ("http", "https") and bool(parts.netloc)
    return not value.startswith("//")


def resolve_static(root: Path, url_path: str) -> Path | None:
    """The file the raw ``url_path`` names inside ``root``, or None (answered 404, whichever
    rule refused it). The path is decoded once and must then be plain relative segments: no
    ``..`` or ``.``, no empty segment (``//etc/passwd``), no backslash, NUL, drive letter or
    hidden file, no symbolic link anywhere on the way (even one pointing inside), a known file
    type, and the resolved file inside the resolved root."""
    raw = url_path.split("?", 1)[0].split("#", 1)[0]
    try:
        decoded = unquote(raw, errors="strict") if "%" in raw else raw
    except UnicodeDecodeError:
        return None
    # a '%' left after one decoding was double-encoded (%252e): never decode twice
    if not raw.startswith("/") or any(c in decoded for c in "\x00\\%"):
        return None
    parts = (decoded[1:] or "index.html").split("/")
    if any(p in ("", ".", "..") or p.startswith(".") or ":" in p for p in parts):
        return None
    if os.path.splitext(parts[-1])[1].lower() not in CONTENT_TYPES:
        return None
    base = current = root.resolve()
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
    resolved = current.resolve()
    return resolved if resolved.is_relative_to(base) else None


def default_frontend_dir() -> Path:
    """The page's files: packaged with gatebench, or ``frontend/`` of the checkout."""
    from gatebench.local._resources import source_dir

    return source_dir("frontend")


SITE_CONNECT_SRC = "connect-src 'self' https:;"
"""The page's own connect-src (frontend/index.html): its origin and https, which covers the
functions and Cloud Storage on Google Cloud."""
SITE_FRAME_SRC = "frame-src 'self' https:;"
"""The page's own frame-src: a route scale or change run's report, served by the API."""


def _allow_endpoints(index: Path, config: SiteConfig) -> None:
    """Add the configured endpoints that speak plain http (functions on a test machine, a
    local server) to the exported page's connect-src and frame-src, by exact origin; https
    ones are already allowed. Nothing else in the policy changes."""
    extra = [o for o in config.origins() if o.startswith("http://")]
    if not extra:
        return
    html = index.read_text(encoding="utf-8")
    for directive in (SITE_CONNECT_SRC, SITE_FRAME_SRC):
        if html.count(directive) != 1:
            raise SiteConfigError(
                [
                    Problem(
                        "",
                        f"expected the page's policy to hold {directive!r} once, to add "
                        f"{', '.join(extra)} to it",
                        source=str(index),
                    )
                ]
            )
        allowed = directive.removesuffix(";") + " " + " ".join(extra) + ";"
        html = html.replace(directive, allowed)
    index.write_text(html, encoding="utf-8")


def export_site(frontend: Path, dest: Path, config: SiteConfig) -> list[Path]:
    """Copy the site's files (the types the server would serve; no hidden files, no
    symlinks) into ``dest`` and write ``config.json``. Returns the files written."""
    source = frontend.resolve()
    written: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for filename in sorted(filenames):
            path = Path(dirpath) / filename
            rel = path.relative_to(source)
            if (
                filename.startswith(".")
                or rel.as_posix() == "config.json"
                or path.suffix.lower() not in CONTENT_TYPES
                or stat.S_ISLNK(os.lstat(path).st_mode)
            ):
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            written.append(target)
    dest.mkdir(parents=True, exist_ok=True)
    index = dest / "index.html"
    if index in written:
        _allow_endpoints(index, config)
    config_path = dest / "config.json"
    config_path.write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
    written.append(config_path)
    return sorted(written)


__all__ = [
    "CONTENT_TYPES",
    "SITE_FORMAT",
    "SiteConfig",
    "SiteConfigError",
    "default_frontend_dir",
    "export_site",
    "resolve_static",
]
