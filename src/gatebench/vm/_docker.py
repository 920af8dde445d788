"""The gateway VM's Docker daemon, asked through its socket: what ``docker kill -s``, ``docker
stop``, ``docker start``, ``docker restart``, ``docker exec`` and ``docker inspect`` send.

The live agent of a scale or change-under-load run (``gatebench cloud live-gateway``,
gatebench.vm._live_agent) runs in a container of the runner image beside the gateway's,
with the host's ``/var/run/docker.sock`` mounted; it changes the gateway's container through
the Docker Engine API, the calls the docker CLI makes. The runner image needs no docker CLI for
it: HTTP over a Unix socket is the standard library's.

The API version is negotiated as the docker CLI does: the daemon's unversioned ``GET /version``
says the newest version it speaks (``ApiVersion``) and the oldest it still accepts
(``MinAPIVersion``); every call then names the lower of that and :data:`CLIENT_API`, the newest
version whose reference these calls were checked against (they are unchanged from 1.41 to 1.52).
A daemon that accepts none of them is named in the error. Docker 29 refuses clients older than
1.44, while Docker 24 (older Container-Optimized OS milestones) speaks at most 1.43: no fixed
version serves both.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import struct
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from gatebench.core.errors import RunError

CLIENT_API = (1, 47)
"""The newest Engine API version gatebench's calls were checked against (Docker 27's)."""
SOCKET = "/var/run/docker.sock"
_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)")


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


@dataclass(frozen=True)
class ContainerState:
    running: bool
    pid: int
    started_at: float | None
    """Epoch seconds the container's process last started (Docker's ``State.StartedAt``)."""


def docker_time(text: str) -> float | None:
    """Docker's RFC 3339 time with nanoseconds (``2026-11-27T10:00:01.123456789Z``) as epoch
    seconds (to the microsecond); None for its zero time (never started)."""
    if not text or text.startswith("0001-"):
        return None
    match = _TIME.fullmatch(text)
    if match is None:
        raise RunError(f"Docker answered a time gatebench cannot read: {text[:60]!r}")
    fraction = (match.group(2) or "")[:6].ljust(6, "0")
    zone = "+00:00" if match.group(3) == "Z" else match.group(3)
    return datetime.fromisoformat(f"{match.group(1)}.{fraction}{zone}").timestamp()


def demultiplex(stream: bytes) -> str:
    """The output of a ``docker exec`` without a terminal: frames of an 8-byte header (stream,
    three zero bytes, big-endian length) and that many bytes, stdout and stderr interleaved."""
    out, pos = [], 0
    while pos + 8 <= len(stream):
        (length,) = struct.unpack(">I", stream[pos + 4 : pos + 8])
        out.append(stream[pos + 8 : pos + 8 + length])
        pos += 8 + length
    return b"".join(out).decode("utf-8", "replace")


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".", 1)
    return int(major), int(minor)


def _text(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


class DockerEngine:
    """A few calls of the Docker Engine API on a Unix socket (module docstring)."""

    def __init__(self, path: str = SOCKET, timeout: float = 120.0) -> None:
        self.path = path
        self.timeout = timeout
        self._version: str | None = None
        """The negotiated API version (``/v1.47``), found at the first call."""
        self.daemon: dict[str, str] = {}
        """What the daemon said of itself: its ``Version``, ``ApiVersion`` and ``MinAPIVersion``."""

    def api_version(self) -> str:
        """The path prefix of every call (``/v1.47``): negotiated once (module docstring)."""
        if self._version is None:
            _, payload = self._call("GET", "/version", versioned=False)
            try:
                info = json.loads(payload)
                newest = _version(str(info["ApiVersion"]))
                oldest = _version(str(info.get("MinAPIVersion") or info["ApiVersion"]))
            except (ValueError, KeyError, TypeError):
                raise RunError(
                    f"the Docker daemon ({self.path}) answered GET /version with "
                    f"{payload[:200]!r}, not its API versions"
                ) from None
            chosen = min(CLIENT_API, newest)
            if chosen < oldest:
                raise RunError(
                    f"the Docker daemon ({self.path}) accepts Engine API {_text(oldest)} to "
                    f"{_text(newest)}; gatebench speaks {_text(CLIENT_API)} at most"
                )
            self.daemon = {
                "Version": str(info.get("Version") or ""),
                "ApiVersion": _text(newest),
                "MinAPIVersion": _text(oldest),
            }
            self._version = f"/v{_text(chosen)}"
        return self._version

    def _call(
        self,
        method: str,
        url: str,
        body: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        ok: tuple[int, ...] = (200, 201, 204),
        versioned: bool = True,
    ) -> tuple[int, bytes]:
        prefix = self.api_version() if versioned else ""
        conn = _UnixConnection(self.path, timeout or self.timeout)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            conn.request(method, prefix + url, body=data, headers=headers)
            response = conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise RunError(f"the Docker daemon ({self.path}): {method} {url}: {exc}") from None
        finally:
            conn.close()
        if response.status not in ok:
            try:
                message = json.loads(payload).get("message") or payload.decode()
            except (ValueError, AttributeError):
                message = payload.decode("utf-8", "replace")
            raise RunError(
                f"the Docker daemon answered {response.status} to {method} {url}: "
                f"{str(message).strip()[:300]}"
            )
        return response.status, payload

    def inspect(self, name: str) -> ContainerState:
        _, payload = self._call("GET", f"/containers/{quote(name)}/json")
        state = json.loads(payload).get("State") or {}
        return ContainerState(
            running=bool(state.get("Running")),
            pid=int(state.get("Pid") or 0),
            started_at=docker_time(str(state.get("StartedAt") or "")),
        )

    def kill(self, name: str, signal: str) -> None:
        """``docker kill -s SIGNAL NAME``: the signal to the container's main process."""
        self._call("POST", f"/containers/{quote(name)}/kill?{urlencode({'signal': signal})}")

    def stop(self, name: str, grace_s: int = 10) -> None:
        """``docker stop -t GRACE NAME`` (an already stopped container answers 304)."""
        self._call(
            "POST",
            f"/containers/{quote(name)}/stop?t={grace_s}",
            timeout=grace_s + self.timeout,
            ok=(204, 304),
        )

    def start(self, name: str) -> None:
        """``docker start NAME`` (an already running container answers 304)."""
        self._call("POST", f"/containers/{quote(name)}/start", ok=(204, 304))

    def restart(self, name: str, grace_s: int = 10) -> None:
        """``docker restart -t GRACE NAME``."""
        self._call(
            "POST", f"/containers/{quote(name)}/restart?t={grace_s}", timeout=grace_s + self.timeout
        )

    def exec(self, name: str, argv: list[str], timeout: float) -> tuple[int, str]:
        """``docker exec NAME ARGV...``: its exit code and its output (stdout and stderr)."""
        _, created = self._call(
            "POST",
            f"/containers/{quote(name)}/exec",
            {"Cmd": argv, "AttachStdout": True, "AttachStderr": True, "Tty": False},
        )
        exec_id = json.loads(created)["Id"]
        _, stream = self._call(
            "POST",
            f"/exec/{quote(exec_id)}/start",
            {"Detach": False, "Tty": False},
            timeout=timeout,
        )
        _, described = self._call("GET", f"/exec/{quote(exec_id)}/json")
        info = json.loads(described)
        code = info.get("ExitCode")
        if info.get("Running") or code is None:
            raise RunError(f"`{' '.join(argv)}` in {name} did not finish within {timeout:g}s")
        return int(code), demultiplex(stream)


__all__ = ["CLIENT_API", "ContainerState", "DockerEngine", "demultiplex", "docker_time"]
