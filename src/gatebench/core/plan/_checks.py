"""The semantic cross-checks a schema cannot express: the plan against the API description
(operations, parameters and placeholders, authentication), against the engines' capabilities,
and credentials refused wherever they hide. Each reports located problems on the reader.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from gatebench.core.errors import shown
from gatebench.core.ir import Api, Operation, engine_header, left_out_message
from gatebench.core.plan._document import PlanDoc, Reading, is_credential_key
from gatebench.core.plan._model import Auth, BodySpec, EngineName, Generator, Warmup, Workload

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def _engine(
    value: Any, r: Reading, workloads: list[Workload], warmup: Warmup, api: Api | None = None
) -> EngineName:
    """The load engine, and whether it can run every workload (wrk: the closed model only;
    Gatling: a path it sends as another, :func:`gatling_path`, is warned about)."""
    from gatebench.core.capabilities import injection_problem

    engine: EngineName = value
    if engine == "gatling" and api is not None:
        _sent_as_another(api, workloads, r)
    for w in workloads:
        inj = w.injection
        reason = injection_problem(engine, inj.kind, inj.duration, inj.requests)
        if reason is not None:
            r.error([*_split(w.pointer.removeprefix(r.base)), "injection"], reason)
    if warmup.requests and injection_problem(engine, "concurrent", 1.0, warmup.requests):
        r.error(
            ["warmup"],
            f"engine {engine} warms up for a duration only; give warmup: {{duration: ...}}",
        )
    return engine


def _sent_as_another(api: Api, workloads: list[Workload], r: Reading) -> None:
    """Each workload whose path Gatling sends as another (:func:`gatling_path`), warned about
    at its ``operation``: every request of it asks for a route that is not the one measured."""
    for w in workloads:
        op = api.operation(w.operation_id)
        sent = gatling_path(op.route_path)
        if sent != op.route_path:
            r.warn(
                [*_split(w.pointer.removeprefix(r.base)), "operation"],
                f"engine gatling sends the path of {op.method} {op.path_template} "
                f"({op.route_path!r}) as {sent!r}: it merges repeated '/' and resolves '.' and "
                "'..' segments, so every request would ask for another route; give engine: wrk, "
                "which sends the path as written, or write the path without them",
            )


def gatling_path(path: str) -> str:
    """The path Gatling sends for ``path``. Its URI parser (``io.gatling.http.client.uri.
    UriParser``, 3.15) normalises every URL, with no setting to keep it as written: ``/./``
    becomes ``/``, each ``/../`` takes away the segment before it until the path starts with
    ``/../`` (``/a/../../x`` is ``/../x``), a trailing ``/..`` or ``/.`` likewise, then every
    run of ``/`` is one. wrk sends the path as written."""
    if "." in path:
        path = path.replace("/./", "/")
        i = 0
        while (i := path.find("/../", i)) >= 0:
            if i == 0:
                i = 3
                continue
            end = path.rfind("/", 0, i)
            if end < 0 or (end == 0 and path.startswith("/../")):
                break
            path, i = path[:end] + path[i + 3 :], 0
        while path.endswith("/..") and (end := path.rfind("/", 0, len(path) - 3)) >= 0:
            path = path[: end + 1]
        if path.startswith("./") and len(path) > 2:
            path = path[2:]
        if path.endswith("/."):
            path = path[:-1]
    return re.sub(r"//+", "/", path)


def _split(pointer_text: str) -> list[str | int]:
    """A pointer relative to the section (a workload's) back into tokens."""
    from gatebench.core.errors import split_pointer

    return [int(t) if t.isdigit() else t for t in split_pointer(pointer_text)]


def _refuse_credentials(data: dict[str, Any], r: Reading) -> None:
    """Credentials are refused by name at the top and in ``infrastructure``, and by shape
    (a private key, a service-account JSON) anywhere in the section."""
    message = (
        "{key!r} looks like a credential; credentials are never accepted in the benchmark "
        "description (the cloud path runs as its own service accounts, and request tokens "
        "come from environment variables: auth: {{bearer: {{env: NAME}}}})"
    )
    for key in data:
        if key not in PlanDoc.key_names() and is_credential_key(key):
            r.error([key], message.format(key=str(key)))
    infra = data.get("infrastructure")
    if isinstance(infra, dict):
        for key in infra:
            if is_credential_key(key):
                r.error(["infrastructure", key], message.format(key=str(key)))
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, [*where, k]) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, [*where, i]) for i, v in enumerate(item))
        elif isinstance(item, str) and (
            ("-----BEGIN" in item and "PRIVATE KEY" in item) or '"private_key"' in item
        ):
            r.error(
                where,
                "this value holds a private key; credentials are never accepted in the benchmark description",
            )


def find_operation(api: Api, ref: str) -> tuple[Operation | None, list[str]]:
    """An operation by id or ``METHOD /path`` (template or full route path); else close matches.
    An id comes first: a workload whose reference is both is refused (:func:`_operation`)."""
    for op in api.operations:
        if op.operation_id == ref:
            return op, []
    by_route = _by_route(api, ref)
    if by_route is not None:
        return by_route, []
    options = [op.operation_id for op in api.operations] + [
        f"{op.method} {op.path_template}" for op in api.operations
    ]
    return None, difflib.get_close_matches(ref, options, n=3, cutoff=0.6)


def _by_route(api: Api, ref: str) -> Operation | None:
    """The operation a ``METHOD /path`` reference names (template or full route path)."""
    match = re.match(r"^\s*([A-Za-z]+)\s+(\S+)\s*$", ref)
    if match is None:
        return None
    method, path = match.group(1).upper(), match.group(2)
    return next(
        (
            o
            for o in api.operations
            if o.method == method and path in (o.path_template, o.route_path)
        ),
        None,
    )


def _operation(value: Any, r: Reading, where: list[str | int], api: Api) -> Operation | None:
    if not isinstance(value, str) or not value.strip():
        r.error(where, f"expected an operationId or 'METHOD /path', got {shown(value)}")
        return None
    op, close = find_operation(api, value)
    by_route = _by_route(api, value) if op is not None else None
    if op is not None and by_route is not None and by_route is not op:
        r.error(
            where,
            f"{value!r} is ambiguous: it is the operationId of {op.method} {op.path_template} "
            f"and the route of {by_route.method} {by_route.path_template}; write "
            f"'{op.method} {op.path_template}' or {by_route.operation_id!r}",
        )
        return None
    left_out = next((x for x in api.left_out if x.matches(value)), None)
    if op is None and left_out is not None:
        r.error(where, left_out_message(value, left_out))
    elif op is None:
        hint = (
            f"; did you mean {', '.join(repr(c) for c in close)}?"
            if close
            else (
                f"; the description has {len(api.operations)} operations (gatebench parse SPEC lists them)"
            )
        )
        r.error(where, f"no operation {value!r} in the description{hint}")
    return op


def _placeholders(value: Any) -> set[str]:
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.update(_PLACEHOLDER.findall(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
            stack.extend(k for k in item if isinstance(k, str))
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def _check_params(
    op: Operation,
    params: dict[str, Generator],
    headers: dict[str, str],
    body: BodySpec,
    r: Reading,
    where: list[str | int],
) -> None:
    known = {p.name for p in op.parameters}
    used = (
        _placeholders(body.value)
        | _placeholders([p.value for p in body.parts])
        | _placeholders(list(headers.values()))
    )
    for name in params:
        if name not in known and name not in used:
            listing = ", ".join(sorted(known)) or "none"
            field = next(
                (
                    m.media_type
                    for m in (op.request_body.content if op.request_body else ())
                    if "form" in m.media_type and name in (m.schema or {}).get("properties", {})
                ),
                None,
            )
            given = (
                f"body: {{multipart: {{{name}: {{value: ...}}}}}}"
                if field and "multipart" in field
                else f"body: {{text: '{name}=...', media_type: {field}}}"
            )
            hint = (
                f"; it is a field of the {field} body: give it there, {given} (docs/input.md, "
                "'Bodies')"
                if field
                else ""
            )
            r.error(
                [*where, "params", name],
                f"{name!r} is neither a parameter of {op.operation_id!r} ({listing}) nor a "
                f"${{placeholder}} in the body or headers{hint}",
            )
    for name in sorted(used):
        if name not in params:
            r.error([*where], f"placeholder ${{{name}}} has no value in params")
    for p in op.parameters:
        g = params.get(p.name)
        drawn = () if g is None or g.kind == "constant" else g.values
        if any(isinstance(v, list | dict) for v in drawn):
            r.error(
                [*where, "params", p.name],
                f"a list or mapping among the values of {p.location} parameter {p.name!r} "
                "would be sent as one text, not as its style writes it: give a fixed one "
                "with {value: ...} (written by its style), or each value as the text to send "
                "('3,4')",
            )
    for p in (p for p in op.header_params if engine_header(p.name)):
        said = (
            f"header parameter {p.name!r} of {op.operation_id!r} is never sent: the load "
            "engine sets it (how the request is framed and its connection kept alive)"
        )
        if p.name in params:
            r.error([*where, "params", p.name], said)
        elif p.required:
            r.warn(where, said)
    in_headers = [*(p.name for p in op.header_params), *_placeholders(list(headers.values()))]
    for name in dict.fromkeys(in_headers):
        g = params.get(name)
        values = () if g is None else (g.value,) if g.kind == "constant" else g.values
        if any(isinstance(v, str) and re.search(r"[\r\n\x00]", v) for v in values):
            r.error(
                [*where, "params", name],
                f"a value of {name!r} holds a line break or NUL, and it is sent in a header: a "
                "header value must be a single-line string",
            )
    for p in op.cookie_params:
        g = params.get(p.name)
        values = () if g is None else (g.value,) if g.kind == "constant" else g.values
        # a fixed list or mapping is written by the style, encoded (core.workload._fixed)
        values = tuple(v for v in values if not isinstance(v, list | dict))
        bad = next((v for v in values if re.search(r'[\s",;\\]', str(v))), None)
        if bad is not None:
            r.error(
                [*where, "params", p.name],
                f"the cookie value {bad!r} holds a character a cookie cannot (a space, '\"', ',', "
                "';' or '\\', RFC 6265): the engines send it as written, so write it encoded "
                "(a%20b)",
            )


def _check_auth(op: Operation, auth: Auth, r: Reading, where: list[str | int]) -> None:
    label = op.security_label
    if label == "none" or op.auth_optional:  # credentials are sent when the plan gives them
        return
    bearer = auth.bearer_env or auth.jwt_private_key_env  # a token given, or signed by the run
    needed = {
        "bearer": bearer,
        "basic": auth.basic_username_env,
        "apiKey-header": auth.api_key_env,
        "apiKey-query": auth.api_key_env,
        "apiKey-cookie": auth.api_key_env,
        "oauth2": bearer,
        "openIdConnect": bearer,
    }
    cannot = [part for part in label.split("+") if part not in needed]
    if cannot:
        r.warn(
            where,
            f"operation {op.operation_id!r} requires {' and '.join(cannot)} authentication, "
            "which gatebench does not send: its requests go without it (a backend of your own "
            "that checks it refuses them; gatebench's own backends do not check it)",
        )
    for part in label.split("+"):
        if part in needed and needed[part] is None:
            key = {"basic": "basic: {username_env: U, password_env: P}"}.get(
                part, "api_key: {env: NAME}" if part.startswith("apiKey") else "bearer: {env: NAME}"
            )
            r.warn(
                where,
                f"operation {op.operation_id!r} requires {part} authentication; add auth: {{{key}}} "
                "or requests are sent without credentials",
            )
