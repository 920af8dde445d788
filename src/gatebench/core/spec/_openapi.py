"""OpenAPI 3.0 / 3.1 / 3.2 and Swagger 2.0 documents to the IR.

Precedence rules, spelled out once:

* **Servers**: operation ``servers`` > path item ``servers`` > document ``servers`` > ``/``.
  The first server of the winning list is used; its ``{variables}`` take their defaults.
  Swagger 2.0: ``schemes[0]`` (``http`` when absent) + ``host`` + ``basePath``; without a
  ``host`` the base URL is the bare ``basePath`` (relative).
* **Parameters**: path-item parameters apply to every operation of the path; an operation
  parameter with the same ``name`` and ``in`` replaces it.
* **Security**: the operation's ``security`` replaces the document's; ``[]`` means none;
  ``{}`` inside the list is the "no authentication" alternative.
* **Bodies** (Swagger 2.0): an ``in: body`` parameter becomes a request body for each media
  type of the operation's ``consumes`` (else the document's, else ``application/json``);
  ``in: formData`` parameters become one object schema, multipart when a file is among them.

What blocks benchmarking is an error; what does not is a warning, and the operation is kept.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

from gatebench.core.errors import (
    Problem,
    Severity,
    SpecSyntaxError,
    escape_pointer_token,
    shown,
)
from gatebench.core.ir import (
    HTTP_METHODS,
    Api,
    LeftOut,
    MediaType,
    Operation,
    Parameter,
    ParamLocation,
    RequestBody,
    Response,
    SecurityRequirement,
    SecurityScheme,
    UnknownPart,
    host_as_path,
    is_media_type,
    method_rank,
    server_authority_problem,
    token_problem,
    url_path,
)
from gatebench.core.spec._ids import unique_ids
from gatebench.core.spec._reader import Document, Reader
from gatebench.core.spec._refs import Loc, RefError, Refs, remote_refs
from gatebench.core.spec._walk import SCHEMA_NAME_MAPS, is_data
from gatebench.core.stats import counted

V3_PATH_ITEM_KEYS = {"$ref", "summary", "description", "servers", "parameters"}
V2_PATH_ITEM_KEYS = {"$ref", "parameters"}
MAX_PATH_LENGTH = 8192
_TEMPLATE_VAR = re.compile(r"\{([^{}/]*)\}")
_BAD_PATH_CHARS = re.compile(r"[\t\n\r\f\v\x00-\x1f\x7f\x85\u2028\u2029?#]")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_IGNORED_HEADERS = {"accept", "content-type", "authorization"}
_RESOURCE_KEYWORDS = ("$id", "$anchor", "$dynamicAnchor")


class _HiddenRoute(Exception):
    """An operation's or a path item's server cannot be known: the route is hidden."""

    def __init__(self, where: Loc, reason: str) -> None:
        super().__init__(reason)
        self.where = where
        self.reason = reason


@dataclass
class _Ctx:
    """What an operation inherits: where it is, its path and path-item settings."""

    path: str
    path_loc: Loc
    path_params: list[tuple[Parameter, Loc]]
    servers: Any
    servers_loc: Loc | None
    suffix: str = ""
    """A ``?...`` or ``#...`` tail of the path key, which is not part of the route."""
    unknown: tuple[UnknownPart, ...] = ()
    """Parts hidden by a problem in the path item (its parameters), shared by its operations."""
    fixed_query: tuple[tuple[str, str], ...] = ()
    """The fixed query of an ``x-ms-paths`` key (``/p?op=x``): sent by every request."""


class OpenApiBuilder:
    def __init__(self, reader: Reader, doc: Document) -> None:
        self.reader = reader
        self.doc = doc
        self.refs = Refs(reader)
        self.problems: list[Problem] = []
        self.schemas: dict[str, Any] = {}
        self._schema_names: dict[Loc, str] = {}
        self._schema_queue: list[tuple[Loc, str, Loc]] = []
        self.version = ""
        self.v2 = False
        self.root: dict[str, Any] = {}
        self.security_schemes: dict[str, SecurityScheme] = {}
        self.declared_schemes: set[str] = set()
        """Every scheme name the document declares, those it could not read too."""
        self._servers: dict[Loc, str] = {}
        self._bad_servers: dict[Loc, Problem] = {}
        self.left_out: list[LeftOut] = []
        self._unknown: list[UnknownPart] | None = None
        """Collects what the operation being read cannot know (see :meth:`deref`)."""

    # -- problems ---------------------------------------------------------------------------

    def problem(self, loc: Loc, message: str, severity: Severity = "error") -> None:
        self.problems.append(Problem(loc.pointer, message, severity, source=loc.doc))

    def warn(self, loc: Loc, message: str) -> None:
        self.problem(loc, message, "warning")

    def note(self, loc: Loc, message: str) -> None:
        self.problem(loc, message, "note")

    # -- references -------------------------------------------------------------------------

    def deref(self, value: Any, loc: Loc, part: str = "") -> tuple[Any, Loc] | None:
        """Resolve a Reference Object chain. A failure is a warning at the ``$ref`` saying
        that ``part`` (``the request body``, ``response 404``, ...) is unknown; the operation
        being read records it, and keeps its route."""
        try:
            return self._deref(value, loc)
        except RefError as exc:
            where = loc
            if isinstance(value, dict) and "$ref" in value:
                where = loc.child("$ref")
            reason = str(exc)
        except SpecSyntaxError as exc:
            self.problems.extend(replace(p, severity="warning") for p in exc.problems)
            where = loc.child("$ref")
            reason = "the referenced file cannot be read (see above)"
        self.unknown(part, where, reason)
        return None

    def _deref(self, value: Any, loc: Loc) -> tuple[Any, Loc]:
        """:meth:`Refs.deref`, refusing a reference to the description itself (``#``, ``""``):
        no object of it is the whole document."""
        found, at = self.refs.deref(value, loc)
        if at == Loc(self.doc.name, "") and at != loc:
            raise RefError(
                f"{value['$ref']!r} points at the whole document, not at an object in it"
            )
        return found, at

    def unknown(self, part: str, where: Loc, reason: str) -> None:
        """``part`` cannot be known because of ``reason``: a located warning; the operation
        being read keeps its route and records the gap."""
        if not part:
            self.warn(where, reason)
            return
        self.warn(where, f"{reason}; {part} is unknown")
        if self._unknown is not None:
            self._unknown.append(UnknownPart(part, where.pointer, reason, _source(where, self.doc)))

    def leave_out(self, method: str, path: str, where: Loc, reason: str, op_id: str = "") -> None:
        """An operation whose route cannot be known: a located warning, and it is left out."""
        what = "the operation is" if method != "*" else "the operations of this path are"
        self.warn(where, f"{reason}; {what} left out")
        self.left_out.append(
            LeftOut(method, path, where.pointer, reason, _source(where, self.doc), op_id)
        )

    # -- entry point ------------------------------------------------------------------------

    def build(self) -> Api | None:
        root_loc = Loc(self.doc.name, "")
        data = self.doc.data
        if not isinstance(data, dict):
            self.problem(
                root_loc,
                "expected an OpenAPI or Swagger document (a mapping with 'openapi' or "
                f"'swagger'), got {_kind(data)}",
            )
            return None
        self.root = data
        if not self._detect_version(root_loc):
            return None
        self.refs.json_schema_2020 = not self.v2 and not self.version.startswith("3.0")
        info = data.get("info")
        title, version = "", ""
        if isinstance(info, dict):
            raw_title = info.get("title")
            title = raw_title if isinstance(raw_title, str) else ""
            raw_version = info.get("version")
            version = str(raw_version) if raw_version is not None else ""
            if not title:
                self.warn(root_loc.child("info"), "info.title is missing")
        else:
            self.warn(root_loc, "the 'info' object is missing")
        self._read_security_schemes(root_loc)
        default_security = self._security(data.get("security"), root_loc.child("security"), None)
        operations = self._read_paths(root_loc, default_security)
        if self.version.startswith("3.1") or self.version.startswith("3.2"):
            hooks = data.get("webhooks")
            if isinstance(hooks, dict) and hooks:
                self.note(
                    root_loc.child("webhooks"),
                    f"{counted(len(hooks), 'webhook')} skipped: webhooks are calls the API makes, not routes",
                )
        self._drain_schema_queue()
        self._unused_remote_refs()
        if operations is None:
            return None
        operations = self._unique_ids(operations)
        operations.sort(key=lambda op: (op.route_path, method_rank(op.method), op.operation_id))
        if not operations and self.left_out:
            self.problem(
                root_loc.child("paths"),
                f"every operation is left out ({counted(len(self.left_out), 'problem')} above); "
                "there is nothing to benchmark",
            )
        elif not operations and not any(p.severity == "error" for p in self.problems):
            self.warn(root_loc.child("paths"), "the description has no operations to benchmark")
        return Api(
            title=title,
            version=version,
            source_format=("swagger-" if self.v2 else "openapi-") + self.version,
            operations=tuple(operations),
            schemas=self.schemas,
            security_schemes=tuple(self.security_schemes[k] for k in sorted(self.security_schemes)),
            left_out=tuple(sorted(self.left_out, key=lambda x: (x.path, method_rank(x.method)))),
        )

    def _unused_remote_refs(self) -> None:
        """Remote references nothing read: never fetched, reported where they stand."""
        reported = {(p.source, p.pointer) for p in self.problems}
        for holder, ref in remote_refs(self.doc.text, self.root, self.doc.name):
            where = holder.child("$ref")
            if (where.doc, where.pointer) in reported:
                continue
            try:
                self.refs.target(ref, holder)
            except RefError as exc:
                self.warn(where, str(exc))

    def _detect_version(self, root: Loc) -> bool:
        data = self.root
        if "swagger" in data:
            value = data["swagger"]
            if str(value) != "2.0":
                self.problem(
                    root.child("swagger"),
                    f"unsupported version {value!r}; gatebench reads Swagger '2.0', "
                    "OpenAPI 3.0, 3.1 and 3.2",
                )
                return False
            if not isinstance(value, str):
                self.warn(root.child("swagger"), "the version should be the string '2.0'")
            self.version, self.v2 = "2.0", True
            return True
        if "openapi" in data:
            value = data["openapi"]
            text = str(value)
            if not isinstance(value, str):
                self.warn(root.child("openapi"), f"the version should be a string ('{text}')")
            if not re.match(r"^3\.[0-2](\.\d+)?(-[\w.]+)?$", text):
                self.problem(
                    root.child("openapi"),
                    f"unsupported version {value!r}; gatebench reads OpenAPI 3.0, 3.1, 3.2 "
                    "and Swagger '2.0'",
                )
                return False
            self.version = text
            return True
        self.problem(
            root,
            "not an OpenAPI or Swagger document: neither 'openapi' nor 'swagger' is present",
        )
        return False

    # -- security ---------------------------------------------------------------------------

    def _read_security_schemes(self, root: Loc) -> None:
        if self.v2:
            loc = root.child("securityDefinitions")
            table = self.root.get("securityDefinitions")
        else:
            components = self.root.get("components")
            table = components.get("securitySchemes") if isinstance(components, dict) else None
            loc = root.child("components", "securitySchemes")
        if table is None:
            return
        if not isinstance(table, dict):
            self.warn(loc, f"expected a mapping of security schemes, got {_kind(table)}")
            return
        for name, raw in table.items():
            self.declared_schemes.add(str(name))
            resolved = self.deref(raw, loc.child(name), f"security scheme {str(name)!r}")
            if resolved is None:
                continue
            value, vloc = resolved
            scheme = self._security_scheme(str(name), value, vloc)
            if scheme is not None:
                self.security_schemes[str(name)] = scheme

    def _security_scheme(self, name: str, value: Any, loc: Loc) -> SecurityScheme | None:
        if not isinstance(value, dict):
            self.warn(loc, f"expected a security scheme object, got {_kind(value)}")
            return None
        kind = value.get("type")
        if self.v2 and kind == "basic":
            return SecurityScheme(name, "http", scheme="basic")
        if kind == "apiKey":
            where = value.get("in")
            if where not in ("header", "query", "cookie"):
                self.warn(
                    loc.child("in"),
                    f"apiKey 'in' must be header, query or cookie; got {shown(where)}",
                )
                return None
            param = value.get("name")
            if not isinstance(param, str) or not param:
                self.warn(
                    loc.child("name"), "apiKey needs the 'name' of its header, query or cookie"
                )
                return None
            wrong = token_problem(f"apiKey {where} name", param) if where != "query" else ""
            if wrong:
                # Like any scheme that cannot be used: ignored, with the reason.
                self.warn(loc.child("name"), f"{wrong}; the scheme is ignored")
                return None
            return SecurityScheme(name, "apiKey", location=where, param_name=param)
        if kind == "http" and not self.v2:
            scheme = value.get("scheme")
            if not isinstance(scheme, str):
                self.warn(
                    loc.child("scheme"),
                    "an http security scheme needs 'scheme' (bearer, basic, ...)",
                )
                return None
            bearer_format = value.get("bearerFormat")
            return SecurityScheme(
                name,
                "http",
                scheme=scheme.lower(),
                bearer_format=bearer_format if isinstance(bearer_format, str) else None,
            )
        if kind in ("oauth2", "openIdConnect", "mutualTLS"):
            return SecurityScheme(name, kind)
        self.warn(loc.child("type"), f"unknown security scheme type {kind!r}")
        return None

    def _security(
        self, value: Any, loc: Loc, default: tuple[SecurityRequirement, ...] | None
    ) -> tuple[SecurityRequirement, ...]:
        if value is None:
            return default or ()
        if not isinstance(value, list):
            self.warn(loc, f"security must be a list of requirements, got {_kind(value)}")
            return default or ()
        out: list[SecurityRequirement] = []
        for i, req in enumerate(value):
            if not isinstance(req, dict):
                self.warn(
                    loc.child(i), f"a security requirement must be a mapping, got {_kind(req)}"
                )
                continue
            schemes: list[SecurityScheme] = []
            scopes: list[tuple[str, tuple[str, ...]]] = []
            for name, scope_list in req.items():
                scheme = self.security_schemes.get(str(name))
                if scheme is None and str(name) in self.declared_schemes:
                    self.warn(
                        loc.child(i, name),
                        f"security scheme {name!r} ignored: its declaration could not be read "
                        "(its problems are above)",
                    )
                    continue
                if scheme is None:
                    known = ", ".join(sorted(self.security_schemes)) or "none defined"
                    self.warn(
                        loc.child(i, name),
                        f"unknown security scheme {name!r} ignored (known: {known})",
                    )
                    continue
                schemes.append(scheme)
                if isinstance(scope_list, list):
                    scopes.append((str(name), tuple(str(s) for s in scope_list)))
            if schemes or not req:
                out.append(SecurityRequirement(tuple(schemes), tuple(scopes)))
        # An alternative without schemes ({}) makes authentication optional, wherever it
        # stands (Operation.auth_optional); the others are kept, for a plan that sends them.
        return tuple(out)

    # -- servers ----------------------------------------------------------------------------

    def _base_url(self, ctx: _Ctx, op: dict[str, Any], op_loc: Loc) -> str:
        if self.v2:
            return self._v2_base_url()
        for servers, loc in (
            (op.get("servers"), op_loc.child("servers")),
            (ctx.servers, ctx.servers_loc),
            (self.root.get("servers"), Loc(self.doc.name, "/servers")),
        ):
            if servers is None or loc is None:
                continue
            if not isinstance(servers, list):
                self.warn(loc, f"servers must be a list, got {_kind(servers)}")
                continue
            if not servers:
                continue
            return self._server_url(servers[0], loc.child(0))
        return ""

    def _server_url(self, server: Any, loc: Loc) -> str:
        """The URL of one Server Object, resolved (and its problems reported) once.

        A problem in the document's servers is an error (every route is unknown); in an
        operation's or a path item's, it hides only those routes: they are left out."""
        if loc not in self._servers:
            before = len(self.problems)
            self._servers[loc] = self._resolve_server_url(server, loc)
            if not loc.pointer.startswith("/servers/"):
                errors = [p for p in self.problems[before:] if p.severity == "error"]
                if errors:
                    self.problems[before:] = [
                        p for p in self.problems[before:] if p.severity != "error"
                    ]
                    self._bad_servers[loc] = errors[0]
        bad = self._bad_servers.get(loc)
        if bad is not None:
            raise _HiddenRoute(Loc(bad.source or self.doc.name, bad.pointer), bad.message)
        return self._servers[loc]

    def _resolve_server_url(self, server: Any, loc: Loc) -> str:
        if not isinstance(server, dict) or not isinstance(server.get("url"), str):
            self.problem(loc, "a server needs a 'url' string")
            return ""
        url: str = server["url"]
        variables = server.get("variables") or {}
        if not isinstance(variables, dict):
            self.warn(loc.child("variables"), "server variables must be a mapping")
            variables = {}

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            var = variables.get(name)
            if not isinstance(var, dict):
                self.problem(
                    loc.child("url"), f"server variable {name!r} is not defined in 'variables'"
                )
                return ""
            default = var.get("default")
            if default is None:
                self.problem(
                    loc.child("variables", name), f"server variable {name!r} has no default"
                )
                return ""
            return str(default)

        resolved = _TEMPLATE_VAR.sub(substitute, url)
        wrong = server_authority_problem(resolved)
        if wrong:
            self.problem(loc.child("url"), f"server URL {resolved!r} cannot be a server: {wrong}")
            return ""
        try:
            urlsplit(resolved)
        except ValueError as exc:
            self.problem(loc.child("url"), f"server URL {resolved!r} is not a valid URL ({exc})")
            return ""
        wrong = _base_path_problem(url_path(resolved))
        if wrong:
            self.problem(
                loc.child("url"), f"server URL {resolved!r} cannot be a URL: its path {wrong}"
            )
            return ""
        said = host_as_path(resolved, "server URL")
        if said:
            self.warn(loc.child("url"), said)
        return resolved

    def _v2_base_url(self) -> str:
        host = self.root.get("host")
        base_path = self.root.get("basePath")
        base_path = base_path if isinstance(base_path, str) else ""
        if base_path and not base_path.startswith("/"):
            base_path = "/" + base_path
            self.warn(
                Loc(self.doc.name, "/basePath"),
                f"basePath must start with '/'; read as {base_path!r}",
            )
        wrong = _base_path_problem(base_path)
        if wrong:
            self.problem(
                Loc(self.doc.name, "/basePath"),
                f"basePath {base_path!r} cannot be a URL path: it {wrong}",
            )
            base_path = ""
        if not isinstance(host, str) or not host:
            return base_path
        if "://" in host:  # a URL where a host name goes: its path would have become the route's
            written, host = host, host.split("://", 1)[1].split("/", 1)[0]
            self.warn(
                Loc(self.doc.name, "/host"),
                f"host {written!r} is a URL; Swagger 2.0's host is a name and an optional port "
                f"(the scheme goes in 'schemes', the path in 'basePath'): read as {host!r}",
            )
            if not host:
                return base_path
        wrong = server_authority_problem("//" + host)
        if wrong:
            self.problem(Loc(self.doc.name, "/host"), f"host {host!r} cannot be a server: {wrong}")
            return base_path
        schemes = self.root.get("schemes")
        scheme = "http"
        if isinstance(schemes, list) and schemes and isinstance(schemes[0], str):
            scheme = schemes[0].lower()
        return f"{scheme}://{host}{base_path}"

    # -- paths ------------------------------------------------------------------------------

    def _read_paths(
        self, root: Loc, default_security: tuple[SecurityRequirement, ...]
    ) -> list[Operation] | None:
        paths = self.root.get("paths")
        loc = root.child("paths")
        if paths is None:
            if self.v2 or self.version.startswith("3.0"):
                self.problem(loc, "the 'paths' object is missing")
                return None
            return []
        if not isinstance(paths, dict):
            self.problem(loc, f"'paths' must be a mapping of path templates, got {_kind(paths)}")
            return None
        operations: list[Operation] = []
        seen_routes: dict[tuple[str, str], tuple[str, Loc]] = {}
        suffixed: list[str] = []
        for key, raw_item, item_loc, fixed in self._path_items(paths, loc):
            # Some descriptions (AWS in APIs.guru) tell operations on one path apart with a
            # "#Action=..." or "?action=..." suffix. Clients never send a fragment and send a
            # query separately, so the route is the part before it.
            path, suffix = _split_suffix(key)
            if suffix and fixed is None:
                suffixed.append(key)
            bad_template = self._check_template(path)
            if bad_template:
                for method in _methods_of(raw_item) or ["*"]:
                    self.leave_out(method, key, item_loc, bad_template)
                continue
            try:
                item, real_loc = self._deref(raw_item, item_loc)
            except (RefError, SpecSyntaxError) as exc:
                reason = (
                    str(exc)
                    if isinstance(exc, RefError)
                    else "the referenced file cannot be read: "
                    + "; ".join(p.message for p in exc.problems[:1])
                )
                self.leave_out("*", path, item_loc.child("$ref"), reason)
                continue
            self._template_warnings(path, item_loc)
            if item is None:
                self.warn(item_loc, "empty path item")
                continue
            if not isinstance(item, dict):
                self.leave_out(
                    "*", path, item_loc, f"a path item must be a mapping, got {_kind(item)}"
                )
                continue
            self._unknown = []
            path_params = self._parameters(item.get("parameters"), real_loc.child("parameters"))
            ctx = _Ctx(
                path=path,
                path_loc=real_loc,
                path_params=path_params,
                servers=item.get("servers"),
                servers_loc=real_loc.child("servers") if "servers" in item else None,
                suffix=suffix,
                unknown=tuple(self._unknown),
                fixed_query=fixed or (),
            )
            self._unknown = None
            allowed = V2_PATH_ITEM_KEYS if self.v2 else V3_PATH_ITEM_KEYS
            for key, raw_op in item.items():
                key = str(key)
                if key.startswith("x-") or key in allowed:
                    continue
                if self.version.startswith("3.2") and key in ("query", "additionalOperations"):
                    self.warn(
                        real_loc.child(key), f"'{key}' operations are not benchmarked yet; skipped"
                    )
                    continue
                method = key.upper()
                op_loc = real_loc.child(key)
                if key not in {m.lower() for m in HTTP_METHODS} or (self.v2 and method == "TRACE"):
                    hint = (
                        "; methods are written in lower case"
                        if key.lower() in {m.lower() for m in HTTP_METHODS}
                        else ""
                    )
                    expected = ", ".join(
                        m.lower() for m in HTTP_METHODS if not (self.v2 and m == "TRACE")
                    )
                    self.leave_out(
                        key,
                        path,
                        op_loc,
                        f"unknown method {key!r}; expected one of {expected}{hint}",
                    )
                    continue
                op = self._operation(method, raw_op, op_loc, ctx, default_security)
                if op is None:
                    continue
                shape = (_normalise(path), method)
                if shape in seen_routes and seen_routes[shape][0] != path:
                    first_path, _first_loc = seen_routes[shape]
                    self.warn(
                        op_loc,
                        f"{method} {path} has the same route as {method} {first_path} (only "
                        "variable names differ): gateways route both alike and the backend "
                        "tells them apart",
                    )
                seen_routes.setdefault(shape, (path, op_loc))
                operations.append(op)
        if suffixed:
            self.note(
                loc,
                (
                    f"1 path carries a '#...' or '?...' suffix ({suffixed[0]!r}); requests never "
                    "send it, so its operations are routed on the part before it"
                    if len(suffixed) == 1
                    else f"{len(suffixed):,} paths carry a '#...' or '?...' suffix (e.g. "
                    f"{suffixed[0]!r}); requests never send it, so those operations are routed "
                    "on the part before it"
                ),
            )
        return operations

    def _path_items(
        self, paths: dict[str, Any], loc: Loc
    ) -> list[tuple[str, Any, Loc, tuple[tuple[str, str], ...] | None]]:
        """Path items of ``paths``, then those of AutoRest's ``x-ms-paths``: paths that differ
        only by a fixed query string (``/p?op=restart``), each with that query (``None`` for
        ``paths``, whose ``?...`` tail is not sent)."""
        out: list[tuple[str, Any, Loc, tuple[tuple[str, str], ...] | None]] = [
            (str(k), v, loc.child(str(k)), None)
            for k, v in paths.items()
            if not str(k).startswith("x-")
        ]
        extra = self.root.get("x-ms-paths")
        extra_loc = Loc(self.doc.name, "/x-ms-paths")
        if extra is None:
            return out
        if not isinstance(extra, dict):
            self.warn(
                extra_loc, f"'x-ms-paths' must be a mapping of path templates, got {_kind(extra)}"
            )
            return out
        for key, item in extra.items():
            key = str(key)
            if key.startswith("x-"):
                continue
            query = key.partition("?")[2].partition("#")[0]
            fixed = tuple(parse_qsl(query, keep_blank_values=True))
            out.append((key, item, extra_loc.child(key), fixed))
        return out

    def _check_template(self, path: str) -> str:
        """Why the path template cannot be a route ("" when it can)."""
        if len(path) > MAX_PATH_LENGTH:
            return f"the path is {len(path)} characters long; the limit is {MAX_PATH_LENGTH}"
        if not path.startswith("/"):
            return f"a path must start with '/'; got {path!r}"
        bad = _BAD_PATH_CHARS.search(path)
        if bad:
            ch = bad.group()
            what = {"?": "'?'", "#": "'#'"}.get(
                ch, f"U+{ord(ch):04X} (a control or line-break character)"
            )
            hint = (
                "; put query parameters in 'parameters'"
                if ch == "?"
                else ("; write it percent-encoded" if ch not in "#" else "")
            )
            return f"a path may not contain {what}{hint}"
        if _PERCENT.search(path):
            return "'%' in a path must start a %XX escape"
        stripped = _TEMPLATE_VAR.sub("", path)
        if "{" in stripped or "}" in stripped:
            return f"unbalanced '{{' or '}}' in the path template {path!r}"
        names = _TEMPLATE_VAR.findall(path)
        if any(not n for n in names):
            return "empty variable '{}' in the path template"
        return ""

    def _template_warnings(self, path: str, loc: Loc) -> None:
        if " " in path:
            self.warn(
                loc,
                "the path contains spaces; clients send them percent-encoded (%20), which is "
                "how the route is matched",
            )
        names = _TEMPLATE_VAR.findall(path)
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            self.warn(
                loc,
                f"path variable {dupes[0]!r} appears twice in the template; both places take the same value",
            )

    # -- parameters -------------------------------------------------------------------------

    def _parameters(self, value: Any, loc: Loc) -> list[tuple[Parameter, Loc]]:
        """Raw parameters of a path item or operation, with the body/formData ones of v2."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.unknown(
                "the parameter list", loc, f"parameters must be a list, got {_kind(value)}"
            )
            return []
        out: list[tuple[Parameter, Loc]] = []
        for i, raw in enumerate(value):
            at = loc.child(i)
            resolved = self.deref(raw, at, "the parameter")
            if resolved is None:
                continue
            param_value, param_loc = resolved
            param = self._parameter(param_value, at, param_loc)
            if param is not None:
                out.append((param, at))
        return out

    def _parameter(self, value: Any, loc: Loc, real: Loc) -> Parameter | None:
        if not isinstance(value, dict):
            self.unknown("the parameter", loc, f"a parameter must be a mapping, got {_kind(value)}")
            return None
        name = value.get("name")
        where = value.get("in")
        if not isinstance(name, str) or not name:
            self.warn(loc, "a parameter without a 'name' cannot be sent; ignored")
            return None
        allowed = (
            ("path", "query", "header", "cookie")
            if not self.v2
            else ("path", "query", "header", "body", "formData")
        )
        if where not in allowed:
            self.warn(
                loc.child("in"),
                f"parameter {name!r}: 'in' must be one of {', '.join(allowed)}; got {shown(where)} "
                "(the parameter is ignored)",
            )
            return None
        wrong = (
            token_problem(f"{where} parameter name", name) if where in ("header", "cookie") else ""
        )
        if wrong:
            self.problem(real.child("name"), wrong)
            return None
        required = bool(value.get("required", False))
        if where == "path" and not required:
            self.warn(loc, f"path parameter {name!r} must be required: true (treated as required)")
            required = True
        examples: list[Any] = []
        if "example" in value:
            examples.append(value["example"])
        if "x-example" in value:
            examples.append(value["x-example"])
        if isinstance(value.get("examples"), dict):
            for ex_name, ex in value["examples"].items():
                got = self.deref(ex, real.child("examples", ex_name), "the example")
                if got is not None and isinstance(got[0], dict) and "value" in got[0]:
                    examples.append(got[0]["value"])
        content = None
        if self.v2:
            if where == "body":
                schema = self.schema(value.get("schema", {}), real.child("schema"))
            else:
                schema = self.schema(_v2_inline_schema(value), real)
        elif "schema" in value:
            schema = self.schema(value["schema"], real.child("schema"))
        elif isinstance(value.get("content"), dict) and value["content"]:
            media, media_value = next(iter(value["content"].items()))
            content = str(media)
            schema = {}
            if isinstance(media_value, dict):
                schema = self.schema(
                    media_value.get("schema", {}), real.child("content", media, "schema")
                )
                # the media type's own example(s), after the parameter's (as a body's are read)
                if "example" in media_value:
                    examples.append(media_value["example"])
                if isinstance(media_value.get("examples"), dict):
                    for ex_name, ex in media_value["examples"].items():
                        at = real.child("content", media, "examples", ex_name)
                        got = self.deref(ex, at, "the example")
                        if got is not None and isinstance(got[0], dict) and "value" in got[0]:
                            examples.append(got[0]["value"])
        else:
            self.warn(
                loc, f"parameter {name!r} has neither 'schema' nor 'content'; treated as a string"
            )
            schema = {"type": "string"}
        style, explode = _style(value)
        if self.v2 and schema.get("type") == "array":  # collectionFormat, csv by default
            style, explode = _V2_FORMATS.get(value.get("collectionFormat"), (None, False))
        return Parameter(
            name=name,
            # body/formData (Swagger 2.0) ride along here and are split off before the IR.
            location=cast(ParamLocation, where),
            required=required,
            schema=schema,
            examples=tuple(examples),
            style=style,
            explode=explode,
            pointer=loc.pointer,
            content=content,
        )

    # -- operations -------------------------------------------------------------------------

    def _operation(
        self,
        method: str,
        raw: Any,
        loc: Loc,
        ctx: _Ctx,
        default_security: tuple[SecurityRequirement, ...],
    ) -> Operation | None:
        if not isinstance(raw, dict):
            self.leave_out(
                method, ctx.path, loc, f"an operation must be a mapping, got {_kind(raw)}"
            )
            return None
        self._unknown = list(ctx.unknown)
        try:
            return self._read_operation(method, raw, loc, ctx, default_security)
        finally:
            self._unknown = None

    def _read_operation(
        self,
        method: str,
        raw: dict[str, Any],
        loc: Loc,
        ctx: _Ctx,
        default_security: tuple[SecurityRequirement, ...],
    ) -> Operation | None:
        op_id = raw.get("operationId")
        if op_id is not None and (not isinstance(op_id, str) or not op_id.strip()):
            self.warn(
                loc.child("operationId"), "operationId must be a non-empty string; one is generated"
            )
            op_id = None
        merged: dict[tuple[str, str], tuple[Parameter, Loc]] = {}
        for param, ploc in ctx.path_params:
            merged[(param.name, param.location)] = (param, ploc)
        own = self._parameters(raw.get("parameters"), loc.child("parameters"))
        seen: set[tuple[str, str]] = set()
        for param, ploc in own:
            key = (param.name, param.location)
            if key in seen:
                self.warn(
                    ploc,
                    f"parameter {param.name!r} in {param.location} is listed twice; the later one wins",
                )
            seen.add(key)
            merged[key] = (param, ploc)
        checked = self._check_path_params(ctx, list(merged.values()))
        if isinstance(checked, tuple):
            where, reason = checked
            written = op_id.strip() if isinstance(op_id, str) else ""
            self.leave_out(method, ctx.path, where, reason, written)
            return None
        params = checked
        body: RequestBody | None
        if self.v2:
            body = self._v2_body(raw, params, loc)
        else:
            body = self._request_body(raw.get("requestBody"), loc.child("requestBody"))
        kept: dict[str, list[Parameter]] = {"path": [], "query": [], "header": [], "cookie": []}
        for param, ploc in params:
            if str(param.location) in ("body", "formData"):
                continue
            if param.location == "header" and param.name.lower() in _IGNORED_HEADERS:
                self.note(
                    ploc,
                    f"header parameter {param.name!r} is ignored (OpenAPI describes it elsewhere)",
                )
                continue
            kept[param.location].append(param)
        declared_query = {p.name for p in kept["query"]}
        for name, fixed_value in ctx.fixed_query:
            if name not in declared_query:
                kept["query"].append(
                    Parameter(
                        name,
                        "query",
                        True,
                        {"type": "string", "enum": [fixed_value]},
                        examples=(fixed_value,),
                        pointer=ctx.path_loc.pointer,
                    )
                )
        template_vars = list(dict.fromkeys(_TEMPLATE_VAR.findall(ctx.path)))
        declared = {p.name for p in kept["path"]}
        for var in template_vars:
            if var not in declared:
                self.warn(
                    loc,
                    f"path template variable {var!r} has no path parameter; "
                    "treated as a required string",
                )
                kept["path"].append(
                    Parameter(var, "path", True, {"type": "string"}, pointer=loc.pointer)
                )
        order = {name: i for i, name in enumerate(template_vars)}
        kept["path"].sort(key=lambda p: order.get(p.name, len(order)))
        if "callbacks" in raw and isinstance(raw["callbacks"], dict) and raw["callbacks"]:
            self.note(
                loc.child("callbacks"),
                f"{counted(len(raw['callbacks']), 'callback')} skipped: callbacks are calls the API makes, not routes",
            )
        summary = raw.get("summary")
        tags = raw.get("tags")
        try:
            base_url = self._base_url(ctx, raw, loc)
        except _HiddenRoute as hidden:
            written = op_id.strip() if isinstance(op_id, str) else ""
            self.leave_out(method, ctx.path, hidden.where, hidden.reason, written)
            return None
        responses = self._responses(raw.get("responses"), loc.child("responses"), raw)
        return Operation(
            operation_id=op_id.strip() if isinstance(op_id, str) else "",
            operation_id_generated=op_id is None,
            method=method,
            path_template=ctx.path,
            base_url=base_url,
            path_params=tuple(kept["path"]),
            query_params=tuple(kept["query"]),
            header_params=tuple(kept["header"]),
            cookie_params=tuple(kept["cookie"]),
            request_body=body,
            responses=responses,
            security=self._security(raw.get("security"), loc.child("security"), default_security),
            summary=summary if isinstance(summary, str) else "",
            tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
            deprecated=raw.get("deprecated") is True,
            pointer=loc.pointer,
            source=loc.doc if loc.doc != self.doc.name else "",
            unknown=tuple(dict.fromkeys(self._unknown or ())),
        )

    def _check_path_params(
        self, ctx: _Ctx, params: list[tuple[Parameter, Loc]]
    ) -> list[tuple[Parameter, Loc]] | tuple[Loc, str]:
        """Declared path parameters must be in the template. One that only appears in the
        key's ``?...`` tail is sent as a query parameter; in a ``#...`` tail, never sent."""
        names = set(_TEMPLATE_VAR.findall(ctx.path))
        in_suffix = set(_TEMPLATE_VAR.findall(ctx.suffix))
        out: list[tuple[Parameter, Loc]] = []
        failure: tuple[Loc, str] | None = None
        for param, ploc in params:
            if param.location != "path" or param.name in names:
                out.append((param, ploc))
            elif param.name in in_suffix and ctx.suffix.startswith("?"):
                self.warn(
                    ploc,
                    f"path parameter {param.name!r} is in the query part of the path key "
                    f"({ctx.suffix!r}); it is sent as a query parameter",
                )
                out.append((replace(param, location="query"), ploc))
            elif param.name in in_suffix:
                self.warn(
                    ploc,
                    f"path parameter {param.name!r} only appears after '#' in the path key "
                    f"({ctx.suffix!r}), which requests never carry; it is ignored",
                )
            elif failure is None:
                template = ", ".join(sorted(names)) or "none"
                failure = (
                    ploc,
                    f"path parameter {param.name!r} is not in the path template {ctx.path!r} "
                    f"(its variables: {template})",
                )
        return out if failure is None else failure

    # -- bodies -----------------------------------------------------------------------------

    def _request_body(self, value: Any, loc: Loc) -> RequestBody | None:
        if value is None:
            return None
        resolved = self.deref(value, loc, "the request body")
        if resolved is None:
            return None
        body, real = resolved
        if not isinstance(body, dict):
            self.unknown(
                "the request body", loc, f"requestBody must be a mapping, got {_kind(body)}"
            )
            return None
        content = self._content(body.get("content"), real.child("content"))
        if not content:
            self.warn(loc, "requestBody has no media types; no body is sent")
            return None
        return RequestBody(required=bool(body.get("required", False)), content=content)

    def _content(self, value: Any, loc: Loc) -> tuple[MediaType, ...]:
        if value is None:
            return ()
        if not isinstance(value, dict):
            self.warn(loc, f"content must be a mapping of media types, got {_kind(value)}")
            return ()
        out = []
        for media, raw in value.items():
            media = str(media)
            mloc = loc.child(media)
            if not isinstance(raw, dict):
                raw = {}
            schema = self.schema(raw["schema"], mloc.child("schema")) if "schema" in raw else None
            examples: list[tuple[str, Any]] = []
            if "example" in raw:
                examples.append(("default", raw["example"]))
            if isinstance(raw.get("examples"), dict):
                for name, ex in raw["examples"].items():
                    got = self.deref(ex, mloc.child("examples", name), "the example")
                    if got is None or not isinstance(got[0], dict):
                        continue
                    if "value" in got[0]:
                        examples.append((str(name), got[0]["value"]))
                    elif "externalValue" in got[0]:
                        self.note(
                            mloc.child("examples", name),
                            "externalValue examples are not fetched; the schema is used instead",
                        )
            encoding = self._encoding(raw.get("encoding"), mloc.child("encoding"))
            out.append(MediaType(media, schema, tuple(examples), encoding))
        return tuple(out)

    def _encoding(self, value: Any, loc: Loc) -> tuple[Parameter, ...]:
        """A media type's Encoding Object: the ``style`` and ``explode`` of its properties, and
        their ``contentType`` (the first media type it lists that is not a wildcard, as
        :attr:`Parameter.content`: ``image/png, image/*`` is ``image/png``; ``image/*`` alone
        names none, so the part keeps its default). Its ``headers`` are not read."""
        if value is None:
            return ()
        if not isinstance(value, dict):
            self.warn(loc, f"encoding must be a mapping of property names, got {_kind(value)}")
            return ()
        out = []
        for name, raw in value.items():
            if not isinstance(raw, dict):
                continue
            style, explode = _style(raw)
            content = self._part_type(raw.get("contentType"), loc.child(str(name), "contentType"))
            if style is not None or explode is not None or content is not None:
                out.append(
                    Parameter(
                        str(name), "query", False, {}, style=style, explode=explode, content=content
                    )
                )
        return tuple(out)

    def _part_type(self, value: Any, loc: Loc) -> str | None:
        """An Encoding Object's ``contentType``: the first concrete media type it lists."""
        if value is None:
            return None
        listed = [t.strip() for t in str(value).split(",")] if isinstance(value, str) else []
        concrete = [t for t in listed if is_media_type(t) and "*" not in t]
        if concrete:
            return concrete[0]
        if not all(is_media_type(t) for t in listed) or not listed:
            self.warn(
                loc,
                "expected a media type, or a comma-separated list of them (image/png, "
                f"image/*), got {value!r}; the part is sent with its default type",
            )
        return None

    def _v2_body(
        self, raw: dict[str, Any], params: list[tuple[Parameter, Loc]], loc: Loc
    ) -> RequestBody | None:
        consumes = raw.get("consumes", self.root.get("consumes"))
        media_types = [str(m) for m in consumes] if isinstance(consumes, list) and consumes else []
        body_params = [(p, ploc) for p, ploc in params if str(p.location) == "body"]
        form_params = [(p, ploc) for p, ploc in params if str(p.location) == "formData"]
        if body_params and form_params:
            self.unknown(
                "the request body",
                loc,
                "an operation cannot have both 'body' and 'formData' parameters",
            )
            return None
        if len(body_params) > 1:
            self.unknown(
                "the request body",
                body_params[1][1],
                "an operation can have only one 'body' parameter",
            )
            return None
        if body_params:
            param = body_params[0][0]
            media_types = media_types or ["application/json"]
            return RequestBody(
                required=param.required,
                content=tuple(
                    MediaType(m, param.schema, tuple(("default", e) for e in param.examples[:1]))
                    for m in media_types
                ),
            )
        if form_params:
            has_file = any(p.schema.get("format") == "binary" for p, _ in form_params)
            form_types = [
                m
                for m in media_types
                if m in ("multipart/form-data", "application/x-www-form-urlencoded")
            ]
            if not form_types:
                form_types = [
                    "multipart/form-data" if has_file else "application/x-www-form-urlencoded"
                ]
            schema = {
                "type": "object",
                "properties": {p.name: _with_example(p) for p, _ in form_params},
                "required": [p.name for p, _ in form_params if p.required],
            }
            if not schema["required"]:
                del schema["required"]
            encoding = tuple(
                replace(p, location="query") for p, _ in form_params if p.explode is not None
            )
            return RequestBody(
                required=any(p.required for p, _ in form_params),
                content=tuple(MediaType(m, schema, (), encoding) for m in form_types),
            )
        return None

    # -- responses --------------------------------------------------------------------------

    def _responses(self, value: Any, loc: Loc, op: dict[str, Any]) -> tuple[Response, ...]:
        if value is None:
            self.warn(loc, "the operation has no responses")
            return ()
        if not isinstance(value, dict):
            self.warn(loc, f"responses must be a mapping, got {_kind(value)}")
            return ()
        out = []
        produces = op.get("produces", self.root.get("produces"))
        for status, raw in value.items():
            status = str(status)
            if status.startswith("x-"):
                continue
            rloc = loc.child(status)
            if not re.match(r"^([1-5]\d\d|[1-5]XX|default)$", status):
                self.warn(
                    rloc, f"odd response code {status!r} (expected 100-599, 1XX-5XX or default)"
                )
                continue
            resolved = self.deref(raw, rloc, f"response {status}")
            if resolved is None:
                continue
            response, real = resolved
            if not isinstance(response, dict):
                self.warn(rloc, f"a response must be a mapping, got {_kind(response)}")
                continue
            description = response.get("description")
            if not isinstance(description, str):
                self.warn(rloc, "the response has no description")
                description = ""
            if self.v2:
                content = self._v2_response_content(response, real, produces)
            else:
                content = self._content(response.get("content"), real.child("content"))
            headers = self._response_headers(response.get("headers"), real.child("headers"))
            out.append(Response(status, description, content, headers))
        return tuple(out)

    def _v2_response_content(
        self, response: dict[str, Any], loc: Loc, produces: Any
    ) -> tuple[MediaType, ...]:
        media_types = [str(m) for m in produces] if isinstance(produces, list) and produces else []
        raw_examples = response.get("examples")
        examples: dict[str, Any] = raw_examples if isinstance(raw_examples, dict) else {}
        schema = (
            self.schema(response["schema"], loc.child("schema")) if "schema" in response else None
        )
        if schema is None and not examples:
            return ()
        for media in examples:
            if str(media) not in media_types:
                media_types.append(str(media))
        media_types = media_types or ["application/json"]
        return tuple(
            MediaType(m, schema, (("default", examples[m]),) if m in examples else ())
            for m in media_types
        )

    def _response_headers(self, value: Any, loc: Loc) -> tuple[tuple[str, dict[str, Any]], ...]:
        if not isinstance(value, dict):
            return ()
        out = []
        for name, raw in value.items():
            resolved = self.deref(raw, loc.child(name), f"response header {str(name)!r}")
            if resolved is None or not isinstance(resolved[0], dict):
                continue
            header, real = resolved
            if self.v2:
                schema = self.schema(_v2_inline_schema(header), real)
            else:
                schema = self.schema(header.get("schema", {}), real.child("schema"))
            out.append((str(name), schema))
        return tuple(out)

    # -- schemas ----------------------------------------------------------------------------

    def schema(self, value: Any, loc: Loc) -> dict[str, Any]:
        """A JSON Schema for the IR, with every ``$ref`` rewritten to ``#/schemas/<name>``."""
        out = self._copy_schema(value, loc, 0)
        if isinstance(out, bool):
            return {} if out else {"not": {}}
        return out if isinstance(out, dict) else {}

    def _copy_schema(self, value: Any, loc: Loc, depth: int, names: bool = False) -> Any:
        """A copy with references rewritten. Example values, ``default``, ``enum``, ``const``
        and extensions are data, copied as they are (a ``$ref`` there is not a reference);
        under ``properties`` and the like (``names``) every key is a name."""
        if depth > self.reader.limits.max_depth:
            self.warn(loc, "schema nested too deeply; truncated")
            return {}
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if names:
                    out[key] = self._copy_schema(item, loc.child(key), depth + 1)
                elif key == "$ref" and isinstance(item, str):
                    ref = self._schema_ref(item, loc)
                    if ref:
                        out[key] = ref
                elif key == "$dynamicRef" and isinstance(item, str) and self.refs.json_schema_2020:
                    # Resolved statically (its initial target), like the IR's every reference.
                    if "$ref" not in value:
                        ref = self._schema_ref(item, loc, "$dynamicRef")
                        if ref:
                            out["$ref"] = ref
                elif key in _RESOURCE_KEYWORDS and self.refs.json_schema_2020:
                    continue  # the IR's references are rewritten; a base URI would mislead
                elif key == "examples" or is_data(key):
                    out[key] = item
                else:
                    out[key] = self._copy_schema(
                        item, loc.child(key), depth + 1, key in SCHEMA_NAME_MAPS
                    )
            return out
        if isinstance(value, list):
            return [
                self._copy_schema(item, loc.child(i), depth + 1) for i, item in enumerate(value)
            ]
        return value

    def _schema_ref(self, ref: str, at: Loc, keyword: str = "$ref") -> str:
        """``#/schemas/<name>`` for a reference; "" when it cannot be followed (the schema
        is unknown there: any value)."""
        try:
            target = self.refs.target(ref, at)
        except RefError as exc:
            self.unknown("the schema", at.child(keyword), str(exc))
            return ""
        name = self._schema_names.get(target)
        if name is None:
            name = self._new_schema_name(target)
            self._schema_names[target] = name
            self.schemas[name] = {}
            self._schema_queue.append((target, ref, at))
        return f"#/schemas/{name}"

    def _new_schema_name(self, target: Loc) -> str:
        tokens = [t for t in target.pointer.split("/") if t]
        base = tokens[-1] if tokens else target.doc.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        base = (
            re.sub(r"[^A-Za-z0-9._-]", "_", base.replace("~1", "/").replace("~0", "~")) or "schema"
        )
        name, n = base, 1
        while name in self.schemas:
            n += 1
            name = f"{base}_{n}"
        return name

    def _drain_schema_queue(self) -> None:
        while self._schema_queue:
            target, ref, at = self._schema_queue.pop(0)
            name = self._schema_names[target]
            try:
                value = self.refs.get(target, ref)
            except RefError as exc:
                self.unknown("the schema", at.child("$ref"), str(exc))
                continue
            except SpecSyntaxError as exc:
                self.problems.extend(replace(p, severity="warning") for p in exc.problems)
                self.unknown(
                    "the schema", at.child("$ref"), "the referenced file cannot be read (see above)"
                )
                continue
            copied = self._copy_schema(value, target, 0)
            self.schemas[name] = copied if isinstance(copied, dict | bool) else {}

    # -- operation ids ----------------------------------------------------------------------

    def _unique_ids(self, operations: list[Operation]) -> list[Operation]:
        out = unique_ids(operations)
        for op, renamed in zip(operations, out, strict=True):
            if not op.operation_id_generated and renamed.operation_id != op.operation_id:
                self.warn(
                    Loc(op.source or self.doc.name, op.pointer + "/operationId"),
                    f"operationId {op.operation_id!r} is used twice; this one is renamed "
                    f"{renamed.operation_id!r}",
                )
        return out


def _methods_of(item: Any) -> list[str]:
    """The methods a path item names, before anything else about it is known."""
    if not isinstance(item, dict):
        return []
    return [str(k).upper() for k in item if str(k).lower() in {m.lower() for m in HTTP_METHODS}]


def _source(loc: Loc, doc: Document) -> str:
    return loc.doc if loc.doc != doc.name else ""


def _base_path_problem(path: str) -> str:
    """Why a server URL's path (or a ``basePath``) cannot start every route as written ("" when
    it can): what it holds that a request line cannot carry, and how to write it."""
    bad = re.search(r"[\s\x00-\x1f\x7f{}]", path)
    if bad is not None:
        ch = bad.group()
        what = {" ": "a space", "{": "'{'", "}": "'}'"}.get(
            ch, f"U+{ord(ch):04X} (whitespace or a control character)"
        )
        encoded = f"%{ord(ch):02X}" if ord(ch) < 128 else "percent-encoded"
        return f"holds {what}; write it {encoded}"
    if _PERCENT.search(path):
        return "holds a '%' that does not start a %XX escape; write it %25"
    return ""


def _split_suffix(key: str) -> tuple[str, str]:
    """``/tags/{arn}#tagKeys`` → (``/tags/{arn}``, ``#tagKeys``); a suffix starts at '?' or '#'."""
    cut = min((i for i in (key.find("?"), key.find("#")) if i > 0), default=-1)
    if cut < 0:
        return key, ""
    return key[:cut], key[cut:]


def _normalise(path: str) -> str:
    return _TEMPLATE_VAR.sub("{}", path)


_V2_FORMATS: dict[Any, tuple[str | None, bool]] = {
    "ssv": ("spaceDelimited", False),
    "tsv": ("tabDelimited", False),
    "pipes": ("pipeDelimited", False),
    "multi": ("form", True),
}
"""Swagger 2.0's ``collectionFormat`` as OpenAPI 3's style and explode (``csv``, the default:
the style of the place, not exploded); ``tsv`` has no OpenAPI 3 style, ``gatebench.core.styles``
writes it."""


def _style(value: dict[str, Any]) -> tuple[str | None, bool | None]:
    """``style`` and ``explode`` of a Parameter or an Encoding Object, where they are given."""
    style, explode = value.get("style"), value.get("explode")
    return (
        style if isinstance(style, str) else None,
        explode if isinstance(explode, bool) else None,
    )


def _with_example(p: Parameter) -> dict[str, Any]:
    """A ``formData`` parameter's schema as a property of the form body, with its example
    (``x-example``) when the schema has none."""
    if not p.examples or "example" in p.schema:
        return p.schema
    return {**p.schema, "example": p.examples[0]}


def _v2_inline_schema(param: dict[str, Any]) -> dict[str, Any]:
    """Swagger 2.0 non-body parameters and headers carry their schema inline."""
    keys = (
        "type",
        "format",
        "items",
        "enum",
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "multipleOf",
    )
    schema = {k: param[k] for k in keys if k in param}
    if schema.get("type") == "file":
        schema = {"type": "string", "format": "binary"}
    return schema or {"type": "string"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a number"


def close_matches(word: str, options: Iterable[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(word, list(options), n=n, cutoff=0.6)


__all__ = ["OpenApiBuilder", "close_matches", "escape_pointer_token"]
