"""The internal representation (IR): one record per operation, whatever the input format.

Renderers, the workload planner and the mock backend read only this. It is built after
local ``$ref``s are resolved, path-level parameters merged, servers chosen by precedence and
security made effective, so consumers never re-interpret the source document.

Schemas stay JSON Schema objects. Every ``$ref`` inside them is rewritten to
``#/schemas/<name>``, a key of :attr:`Api.schemas`, so recursive schemas stay finite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from gatebench.core.records import fields, find

HTTP_METHODS = ("GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE")
ParamLocation = Literal["path", "query", "header", "cookie"]
SecurityKind = Literal["apiKey", "http", "oauth2", "openIdConnect", "mutualTLS"]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Control characters, C0 and C1 (a title is shown on one line)."""


@dataclass(frozen=True)
class Parameter:
    name: str
    location: ParamLocation
    required: bool
    schema: dict[str, Any]
    examples: tuple[Any, ...] = ()
    style: str | None = None
    explode: bool | None = None
    pointer: str = ""
    content: str | None = None
    """The media type of a parameter described by ``content`` instead of a schema (OpenAPI 3):
    its value is that media type's text (JSON), not a style's."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "in": self.location,
            "required": self.required,
            "schema": self.schema,
        }
        if self.examples:
            out["examples"] = list(self.examples)
        if self.style is not None:
            out["style"] = self.style
        if self.explode is not None:
            out["explode"] = self.explode
        if self.content is not None:
            out["content"] = self.content
        return out


@dataclass(frozen=True)
class MediaType:
    media_type: str
    schema: dict[str, Any] | None = None
    examples: tuple[tuple[str, Any], ...] = ()
    """``(name, value)`` pairs; a single ``example`` is named ``default``."""
    encoding: tuple[Parameter, ...] = ()
    """How properties of a form body (``application/x-www-form-urlencoded``) are written, each
    as a query parameter of its name (OpenAPI 3's Encoding Object: ``style`` and ``explode``;
    Swagger 2.0's ``collectionFormat`` of a ``formData`` parameter). A property not listed is
    written as ``form``, exploded (gatebench.core.styles.form_body). An Encoding Object's
    ``contentType`` is the entry's ``content``: a form property's text in that media type
    (JSON), a multipart part's ``Content-Type`` (gatebench.core.workload)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"media_type": self.media_type}
        if self.schema is not None:
            out["schema"] = self.schema
        if self.examples:
            out["examples"] = dict(self.examples)
        if self.encoding:
            out["encoding"] = {p.name: _style_of(p) for p in self.encoding}
        return out


def _style_of(p: Parameter) -> dict[str, Any]:
    given = (("style", p.style), ("explode", p.explode), ("content_type", p.content))
    return {k: v for k, v in given if v is not None}


@dataclass(frozen=True)
class RequestBody:
    required: bool
    content: tuple[MediaType, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"required": self.required, "content": [m.to_dict() for m in self.content]}


@dataclass(frozen=True)
class Response:
    status: str
    """``"200"``, ``"2XX"`` or ``"default"``."""
    description: str = ""
    content: tuple[MediaType, ...] = ()
    headers: tuple[tuple[str, dict[str, Any]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "description": self.description}
        if self.content:
            out["content"] = [m.to_dict() for m in self.content]
        if self.headers:
            out["headers"] = dict(self.headers)
        return out


@dataclass(frozen=True)
class SecurityScheme:
    name: str
    kind: SecurityKind
    scheme: str | None = None
    """For ``http``: ``bearer``, ``basic``, ... (lower case)."""
    location: Literal["header", "query", "cookie"] | None = None
    """For ``apiKey``: where the key travels."""
    param_name: str | None = None
    """For ``apiKey``: the header, query or cookie name."""
    bearer_format: str | None = None
    """For ``http`` ``bearer``: the description's ``bearerFormat`` (``JWT``), a hint only."""

    @property
    def label(self) -> str:
        """The effective requirement in one word: bearer, basic, apiKey-header, oauth2, ..."""
        if self.kind == "http":
            return self.scheme or "http"
        if self.kind == "apiKey":
            return f"apiKey-{self.location}"
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.kind, "label": self.label}
        if self.scheme is not None:
            out["scheme"] = self.scheme
        if self.location is not None:
            out["in"] = self.location
        if self.param_name is not None:
            out["param_name"] = self.param_name
        if self.bearer_format is not None:
            out["bearer_format"] = self.bearer_format
        return out


@dataclass(frozen=True)
class SecurityRequirement:
    """One alternative: every scheme listed must be satisfied (``{a: [], b: []}``)."""

    schemes: tuple[SecurityScheme, ...]
    scopes: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "schemes": [s.name for s in self.schemes],
            "scopes": {k: list(v) for k, v in self.scopes},
        }


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    """Upper case: ``GET``."""
    path_template: str
    """As written in the description: ``/bid/{auctionId}``."""
    base_url: str
    """Effective server: ``https://biwi.com/v2``, ``/v2`` (relative) or ``""``."""
    path_params: tuple[Parameter, ...] = ()
    query_params: tuple[Parameter, ...] = ()
    header_params: tuple[Parameter, ...] = ()
    cookie_params: tuple[Parameter, ...] = ()
    request_body: RequestBody | None = None
    responses: tuple[Response, ...] = ()
    security: tuple[SecurityRequirement, ...] = ()
    """Alternatives; empty means no authentication."""
    operation_id_generated: bool = False
    summary: str = ""
    tags: tuple[str, ...] = ()
    deprecated: bool = False
    pointer: str = ""
    source: str = ""
    unknown: tuple[UnknownPart, ...] = ()
    """Parts the description makes unknowable (a dangling ``$ref``): the route stays."""

    @property
    def body_unknown(self) -> UnknownPart | None:
        """Why the request body cannot be known, when it cannot."""
        return next((u for u in self.unknown if u.part == "the request body"), None)

    @property
    def base_path(self) -> str:
        """The path part of the server URL, without a trailing slash (``/v2`` or ``""``)."""
        path = url_path(self.base_url)
        if path and not path.startswith("/"):
            path = "/" + path
        return path.rstrip("/")

    @property
    def route_path(self) -> str:
        """The path a client requests, and the backend receives: base path + template."""
        return self.base_path + self.path_template

    @property
    def sent_security(self) -> SecurityRequirement | None:
        """The alternative whose credentials a request sends: the first that names schemes.
        An alternative without schemes (OpenAPI's ``{}``, RAML's ``null``), wherever it
        stands, makes authentication optional (:attr:`auth_optional`), not absent."""
        return next((r for r in self.security if r.schemes), None)

    @property
    def auth_optional(self) -> bool:
        """Whether a request without credentials is one the description allows."""
        return not self.security or any(not r.schemes for r in self.security)

    @property
    def security_label(self) -> str:
        """``none``, or :attr:`sent_security`'s schemes joined with ``+`` (``bearer``)."""
        sent = self.sent_security
        return "+".join(s.label for s in sent.schemes) if sent else "none"

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return self.path_params + self.query_params + self.header_params + self.cookie_params

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            **fields(
                self, "operation_id operation_id_generated method path_template route_path base_url"
            ),
            "path_params": {p.name: p.to_dict() for p in self.path_params},
            "query_params": {p.name: p.to_dict() for p in self.query_params},
            "header_params": {p.name: p.to_dict() for p in self.header_params},
            "cookie_params": {p.name: p.to_dict() for p in self.cookie_params},
            "request_body": self.request_body.to_dict() if self.request_body else None,
            "responses": [r.to_dict() for r in self.responses],
            "security": self.security_label,
            "security_requirements": [r.to_dict() for r in self.security],
            "pointer": self.pointer,
        }
        if self.source:
            out["source"] = self.source
        if self.summary:
            out["summary"] = self.summary
        if self.tags:
            out["tags"] = list(self.tags)
        if self.deprecated:
            out["deprecated"] = True
        if self.unknown:
            out["unknown"] = [u.to_dict() for u in self.unknown]
        return out


@dataclass(frozen=True)
class UnknownPart:
    """A part of an operation that a problem in the description hides (``request body``,
    ``response 200``, ``parameter 'q'``), where, and why."""

    part: str
    pointer: str
    reason: str
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {"part": self.part, "pointer": self.pointer, "reason": self.reason}
        if self.source:
            out["source"] = self.source
        return out


@dataclass(frozen=True)
class LeftOut:
    """An operation the description hides (its path, method or path parameters cannot be
    known): it is not in :attr:`Api.operations`; a workload naming it is an error."""

    method: str
    """Upper case, or ``*`` when a whole path item is unreadable."""
    path: str
    pointer: str
    reason: str
    source: str = ""
    operation_id: str = ""
    """As written, when the operation could be read that far."""

    def matches(self, ref: str) -> bool:
        """Whether a workload's ``operation`` (an operationId or ``METHOD /path``) names it."""
        if self.operation_id and ref.strip() == self.operation_id:
            return True
        parts = ref.split()
        if len(parts) == 2:
            return parts[1] == self.path and self.method in ("*", parts[0].upper())
        return False

    def to_dict(self) -> dict[str, Any]:
        out = fields(self, "method path pointer reason")
        if self.source:
            out["source"] = self.source
        if self.operation_id:
            out["operation_id"] = self.operation_id
        return out


@dataclass(frozen=True)
class Api:
    title: str
    version: str
    source_format: str
    """``openapi-3.0.3``, ``openapi-3.1.0``, ``swagger-2.0``, ``raml-1.0``, ``raml-0.8``."""
    operations: tuple[Operation, ...]
    schemas: dict[str, Any] = field(default_factory=dict)
    security_schemes: tuple[SecurityScheme, ...] = ()
    left_out: tuple[LeftOut, ...] = ()
    """Operations the description hides, with the reason (see :class:`LeftOut`)."""

    def __post_init__(self) -> None:
        # The title heads consoles, reports and pages: one line, whatever the description
        # wrote (a RAML title with a line break spilled onto a line of its own).
        for name in ("title", "version"):
            text = getattr(self, name)
            one_line = " ".join(_CONTROL.sub(" ", text).split())
            if one_line != text:
                object.__setattr__(self, name, one_line)

    def operation(self, operation_id: str) -> Operation:
        return find(self.operations, "operation_id", operation_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields(self, "title version source_format"),
            "operations": [op.to_dict() for op in self.operations],
            "schemas": self.schemas,
            "security_schemes": [s.to_dict() for s in self.security_schemes],
            **({"left_out": [x.to_dict() for x in self.left_out]} if self.left_out else {}),
        }


def left_out_message(ref: str, left_out: LeftOut) -> str:
    """What a workload naming an operation the description hides is told."""
    where = (left_out.source + "#" if left_out.source else "") + left_out.pointer
    return (
        f"operation {ref!r} is left out of the description: {where}: {left_out.reason}; "
        "fix the description to benchmark it"
    )


def unknown_body_message(op: Operation) -> str:
    """What a workload asking to synthesize a body the description hides is told."""
    unknown = op.body_unknown
    assert unknown is not None
    where = (unknown.source + "#" if unknown.source else "") + unknown.pointer
    return (
        f"operation {op.operation_id!r} has an unknown request body ({where}: {unknown.reason}); "
        "give the body (json, text, binary or none), or fix the description"
    )


def method_rank(method: str) -> int:
    try:
        return HTTP_METHODS.index(method)
    except ValueError:
        return len(HTTP_METHODS)


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
TOKEN_CHARACTERS = "letters, digits and !#$%&'*+-.^_`|~"
"""What an HTTP token may hold (RFC 9110, section 5.6.2), said in a message."""
_HOST_NAME = re.compile(r"(?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})+")
_IP_LITERAL = re.compile(r"\[[0-9A-Fa-f:.]+(?:%25(?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})+)?\]")
_PORT = re.compile(r"[0-9]{1,5}")


ENGINE_HEADERS = frozenset(
    {
        "connection",
        "content-length",
        "transfer-encoding",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
    }
)
"""Headers the load engine sets itself, as HTTP/1.1 frames the request and keeps the
connection alive: a value from a description or a plan would break the framing (a
``Content-Length`` on a GET, a ``Connection: close`` that ends every kept-alive connection),
so none is ever sent from there."""


def engine_header(name: str) -> bool:
    """Whether the header ``name`` is one the load engine sets itself (:data:`ENGINE_HEADERS`)."""
    return name.lower() in ENGINE_HEADERS


def is_http_token(name: str) -> bool:
    """Whether ``name`` can be a header or cookie name: an HTTP token (RFC 9110 5.6.2).

    A name from a description travels into gateway configurations and into every request
    the load engine sends; one with a space, a colon or a line break would be another header.
    """
    return _TOKEN.fullmatch(name) is not None


_T = _TOKEN.pattern
_MEDIA_TYPE = re.compile(
    rf'{_T}/{_T}(?:[ \t]*;[ \t]*{_T}=(?:{_T}|"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e]|\\[\t\x20-\x7e])*"))*'
)


def is_media_type(text: str) -> bool:
    """Whether ``text`` is a media type (RFC 9110 8.3.1: ``type/subtype`` and parameters), as
    it goes into a ``Content-Type`` header: a line break or a stray byte in it would be another
    header."""
    return _MEDIA_TYPE.fullmatch(text) is not None


def bare_media_type(media_type: str | None) -> str:
    """A media type without its parameters, in lower case: ``text/plain; charset=utf-8`` is
    ``text/plain``."""
    return (media_type or "").split(";")[0].strip().lower()


def is_json_media(media_type: str | None) -> bool:
    """``application/json`` or a ``+json`` type, whatever its parameters."""
    bare = bare_media_type(media_type)
    return bare == "application/json" or bare.endswith("+json")


def token_problem(what: str, name: str) -> str:
    """``""`` when ``name`` is an HTTP token, else what to say about ``what`` (``header
    parameter name``) with the name escaped."""
    if is_http_token(name):
        return ""
    return f"{what} {name!r} is not an HTTP token ({TOKEN_CHARACTERS})"


_HOST_FIRST = re.compile(
    r"^([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(:\d+)?|[A-Za-z0-9.-]+:\d+)(/|$)"
)
"""A relative URL whose first segment reads like a host name (``api.example.com/v1``,
``localhost:8080/api``)."""


def host_as_path(url: str, what: str) -> str | None:
    """What to say of a server URL (``what``: ``server URL``, ``baseUri``, ``HOST``) with no
    scheme whose first segment reads like a host: it is a path, and routes start with it."""
    if not _HOST_FIRST.match(url):
        return None
    return (
        f"{what} {url!r} has no scheme, so it is a path and routes start at "
        f"'/{url.strip('/')}'; its first segment reads like a host name: if it is one, write "
        f"'https://{url}'"
    )


def server_authority_problem(url: str) -> str:
    """Why the authority of a server URL (``//host:port``) cannot name a server, or ``""``.

    The host must be a host name or an IP address (``[...]`` for IPv6) and a port, when
    written, a number from 1 to 65535: ``http://127.0.0.1:9000;return 200/`` names neither.
    A relative URL (``/v1``) has no authority and nothing to check.
    """
    rest = url.split("#", 1)[0].split("?", 1)[0]
    scheme_end = rest.find("://")
    if scheme_end >= 0:
        after = rest[scheme_end + 3 :]
    elif rest.startswith("//"):
        after = rest[2:]
    else:
        return ""
    host_port = after.split("/", 1)[0].rpartition("@")[2]
    if host_port.startswith("["):
        end = host_port.find("]") + 1
        host, tail = (host_port[:end], host_port[end:]) if end else (host_port, "")
        if tail and not tail.startswith(":"):
            host, tail = host_port, ""
        port = tail[1:]
        ok_host = _IP_LITERAL.fullmatch(host) is not None
    else:
        host, _, port = host_port.partition(":")
        ok_host = _HOST_NAME.fullmatch(host) is not None
    if port and _PORT.fullmatch(port) is None:
        return f"its port {port!r} is not a number"
    if port and not 0 < int(port) < 65536:
        return f"its port {port!r} is not a number from 1 to 65535"
    if not host:
        return "it names no host"
    if not ok_host:
        return f"its host {host!r} is not a host name or an IP address"
    return ""


def url_path(url: str) -> str:
    """The path of an absolute or relative URL, without query or fragment.

    Written out instead of ``urllib.parse.urlsplit``, which raises on malformed hosts
    (``http://[x``): a server URL from a spec must never crash a consumer of the IR.
    """
    rest = url.split("#", 1)[0].split("?", 1)[0]
    scheme_end = rest.find("://")
    if scheme_end >= 0 or rest.startswith("//"):  # also a network-path reference: //host/path
        after = rest[scheme_end + 3 :] if scheme_end >= 0 else rest[2:]
        slash = after.find("/")
        return after[slash:] if slash >= 0 else ""
    return rest
