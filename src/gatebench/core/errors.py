"""Errors gatebench raises, and the problems they carry.

The core never prints or exits: it raises one of these, and the edges (CLI, Cloud
Functions, the local server) turn them into one line per problem, an exit code or an
HTTP 400 ``{"errors": [{"pointer": ..., "message": ...}]}``::

    GatebenchError
    ├── SpecError                  the API description cannot be used (carries problems)
    │   ├── SpecSyntaxError        bytes, encoding, JSON/YAML/RAML syntax, limits
    │   ├── SpecValidationError    parsed, but something blocks benchmarking
    │   └── UnsupportedFeature     valid, but gatebench or a gateway cannot express it
    ├── PlanError                  the x-gatebench section or benchmark file is wrong
    ├── TrafficError               recorded traffic (a log, a HAR, a .jmx) cannot be imported
    ├── RenderError                a gateway configuration cannot be produced
    │   └── UnknownGateway         no renderer by that name (renderers._registry)
    ├── RunError                   provisioning, load or teardown failed
    │   ├── UnsupportedHere        the gateway only runs on the cloud path
    │   ├── MissingTool            a build tool (go, java, mvn) is not installed (_resources)
    │   ├── ConfigRejected         the gateway's own checker refused its config (provisioners._boot)
    │   └── CheckTimedOut          the checker did not finish in time; ended with all it started
    ├── ScoreError                 measurements cannot be scored (score.py)
    ├── StoreError                 the result store refused an operation
    └── NoSpaceLeft                a write found its filesystem full (gatebench.store._disk)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from gatebench.core.records import fields

Severity = Literal["error", "warning", "note"]


def escape_pointer_token(token: str | int) -> str:
    """RFC 6901: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape_pointer_token(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def pointer(*tokens: str | int) -> str:
    """Build a JSON pointer from raw tokens: ``pointer("paths", "/pets", "get")``."""
    return "".join("/" + escape_pointer_token(t) for t in tokens)


def join_pointer(base: str, *tokens: str | int) -> str:
    return base + pointer(*tokens)


def split_pointer(value: str) -> list[str]:
    if value in ("", "#"):
        return []
    value = value.removeprefix("#")
    if not value.startswith("/"):
        raise ValueError(f"JSON pointer must start with '/': {value!r}")
    return [unescape_pointer_token(t) for t in value[1:].split("/")]


@dataclass(frozen=True, order=True)
class Problem:
    """One finding about an input, located by JSON pointer (and line/column when known).

    ``source`` names the file inside a bundle when the input has more than one.
    """

    pointer: str
    message: str
    severity: Severity = "error"
    line: int | None = None
    column: int | None = None
    source: str | None = None

    def format(self, default_source: str | None = None) -> str:
        """``api.yaml:12:5: error: /paths/~1pets/get: message`` (compiler style)."""
        # A name is data too (a zip member may be called "a\nb.yaml: error: ..."): escaped.
        where = printable(self.source or default_source or "<spec>")
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return (
            f"{where}: {self.severity}: {printable(self.pointer) or '/'}: {printable(self.message)}"
        )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = fields(self, "pointer message severity")
        if self.line is not None:
            out["line"] = self.line
        if self.column is not None:
            out["column"] = self.column
        if self.source is not None:
            out["source"] = self.source
        return out


_CONTROL = {i: f"\\x{i:02x}" for i in (*range(0x20), *range(0x7F, 0xA0))} | {
    # bidirectional overrides and isolates reorder what follows them on a terminal
    **{i: f"\\u{i:04x}" for i in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
    0x0A: "\\n",
    0x09: "\\t",
    0x0D: "\\r",
}


def printable(text: str, limit: int = 300) -> str:
    """One line, of bounded length: control characters (C0, DEL, C1) and bidirectional
    overrides escaped, long runs shortened.

    Spec strings reach messages (a path key with a newline, a 9,000-character path); a
    problem must still print as one readable line. ``to_dict`` keeps the exact text.
    """
    text = text.translate(_CONTROL)
    if len(text) > limit:
        text = text[: limit - 40] + f"…({len(text) - limit + 40} more characters)…" + text[-20:]
    return text


class GatebenchError(Exception):
    """Base of every error gatebench raises on purpose."""


class ProblemsError(GatebenchError):
    """An error that carries every located problem found before giving up."""

    def __init__(self, problems: Iterable[Problem] | str, *, pointer: str = "") -> None:
        if isinstance(problems, str):
            problems = [Problem(pointer, problems)]
        self.problems: list[Problem] = list(problems)
        errors = [p for p in self.problems if p.severity == "error"] or self.problems
        summary = errors[0].format() if errors else "invalid input"
        if len(errors) > 1:
            summary += f" (and {len(errors) - 1} more)"
        super().__init__(summary)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]


class SpecError(ProblemsError):
    """The API description cannot be used."""


class SpecSyntaxError(SpecError):
    """Bytes, encoding, JSON/YAML/RAML syntax, or a safety limit."""


class SpecValidationError(SpecError):
    """The description parsed, but at least one problem blocks benchmarking."""


class UnsupportedFeature(SpecError):
    """Valid input that gatebench, or one gateway, cannot express."""


class PlanError(ProblemsError):
    """The benchmark plan (``x-gatebench`` or a benchmark file) is wrong."""


class TrafficError(ProblemsError):
    """Recorded traffic cannot be imported (gatebench.core.traffic): a file that is not in the
    format it claims, a limit reached, nothing left to replay. Problems are located by file
    and line (``pointer`` holds what is inside the file: a JSON pointer, an XML path)."""


class RenderError(ProblemsError):
    """A gateway configuration cannot be produced."""


class RunError(GatebenchError):
    """Provisioning, load generation or teardown failed."""


class UnsupportedHere(RunError):
    """The gateway cannot run on this machine (it only runs on the cloud path)."""


class MissingTool(RunError):
    """A tool that builds part of gatebench on first use (go, java, mvn) is not on PATH."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(message)
        self.tool = tool


class NoSpaceLeft(GatebenchError):
    """``no space left on DIR while writing …``: the filesystem of a run's folder or of the
    result store is full (gatebench.store._disk)."""


class StoreError(GatebenchError):
    """The result store refused an operation."""


def closest(word: str, options: Iterable[str]) -> str | None:
    """The option a typo most likely meant: same letters ignoring case, else a close spelling."""
    import difflib

    options = list(options)
    lowered = {o.lower(): o for o in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    hits = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return hits[0] if hits else None


def shown(value: object) -> str:
    """A value of an input as it was written, for a message: text quoted, anything else as
    JSON (``true``, ``[1, null]``, ``{"min": 1}``; Python's ``True`` and ``None`` are not what
    anyone wrote), nothing as ``nothing``, cut at 60 characters."""
    import json

    if value is None:
        return "nothing"  # YAML's null, or a key left out
    try:
        text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # a YAML date or another value JSON has no notation for
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
