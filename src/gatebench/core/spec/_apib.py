"""API Blueprint (``FORMAT: 1A``) to the IR, read by Drafter through Node.js.

API Blueprint is Markdown, not YAML: without this it would be reported as a YAML syntax error.
Drafter, Apiary's reference parser, is maintained as the npm package ``drafter.js`` (compiled
to JavaScript); ``apib.js`` beside this module runs it and flattens its result, and this module
turns that into operations. When Node.js or the package is missing (the Cloud Functions have
neither), the description is refused with what to install, or how to convert it to OpenAPI.

A blueprint has no JSON pointers: an operation's ``pointer`` names its place in the parse
result (``/resources/0/actions/1``) and every problem carries the line and column in the file.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Protocol

from gatebench.core._locations import checkout_root
from gatebench.core.errors import Problem, Severity
from gatebench.core.ir import (
    Api,
    MediaType,
    Operation,
    Parameter,
    RequestBody,
    Response,
    host_as_path,
    method_rank,
    server_authority_problem,
    token_problem,
    url_path,
)
from gatebench.core.spec._ids import unique_ids


class Document(Protocol):
    """What a blueprint is read from: ``_reader.Document`` (named by shape, because the
    reader imports this module)."""

    @property
    def name(self) -> str: ...

    @property
    def text(self) -> str: ...


DRAFTER = "drafter.js@3.2.0"
CONVERT_HINT = (
    "or convert it to OpenAPI with apib2swagger (npx apib2swagger -i api.apib -o swagger.json "
    "--open-api-3)"
)
_HELPER = Path(__file__).with_name("apib.js")
_TIMEOUT = 60.0
_BLUEPRINT_HEAD = re.compile(r"^\ufeff?\s*FORMAT:\s*1A\b", re.IGNORECASE)
_BLUEPRINT_RESOURCE = re.compile(r"^#{1,3} [^\n]*\[(?:[A-Z]+ )?/[^\]]*\]\s*$", re.MULTILINE)
_QUERY_EXPRESSION = re.compile(r"\{[?&]([^}]*)\}")
_EXPRESSION = re.compile(r"\{[+#./;]?([^}]*)\}")
_ANY_EXPRESSION = re.compile(r"\{[+#./;?&]?([^}]*)\}")
_METHODS = {"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"}


def looks_like_blueprint(name: str, text: str) -> bool:
    """``FORMAT: 1A`` first, an ``.apib`` name, or Markdown headings naming ``[/resources]``."""
    if name.lower().endswith(".apib") or _BLUEPRINT_HEAD.match(text):
        return True
    head = text.lstrip("\ufeff").lstrip()
    return head.startswith("#") and bool(_BLUEPRINT_RESOURCE.search(text))


def read_blueprint(doc: Document) -> tuple[Api | None, list[Problem]]:
    problems: list[Problem] = []
    parsed = _run_drafter(doc, problems)
    if parsed is None:
        return None, problems
    positions = _Positions(doc.text)
    for note in parsed.get("annotations", []):
        line, column = positions.at(note.get("offset"))
        severity: Severity = "error" if note.get("severity") == "error" else "warning"
        problems.append(
            Problem(
                "", f"API Blueprint: {note.get('message', '')}", severity, line, column, doc.name
            )
        )
    if any(p.severity == "error" for p in problems):
        return None, problems
    base_url = str(parsed.get("host") or "")
    wrong = server_authority_problem(base_url)
    found = re.search(r"^HOST:", doc.text, re.MULTILINE)
    line = doc.text.count("\n", 0, found.start()) + 1 if found else None
    if wrong:
        problems.append(
            Problem(
                "", f"HOST {base_url!r} cannot be a server: {wrong}", "error", line, 1, doc.name
            )
        )
        base_url = ""
    said = host_as_path(base_url, "HOST")
    if said:
        problems.append(Problem("", said, "warning", line, 1, doc.name))
    template = re.search(r"\{[^{}]*\}", url_path(base_url))
    if template:
        problems.append(
            Problem(
                "",
                f"HOST {base_url!r} holds {template[0]}, which API Blueprint never expands (its "
                "HOST is a URL, not a template): every route takes it as a path parameter of "
                "that name; write the value instead",
                "warning",
                line,
                1,
                doc.name,
            )
        )
    operations: list[Operation] = []
    with_query: dict[str, tuple[int | None, int | None]] = {}
    for i, resource in enumerate(parsed.get("resources", [])):
        for j, action in enumerate(resource.get("actions", [])):
            op = _operation(resource, action, f"/resources/{i}/actions/{j}", base_url)
            line, column = positions.at(action.get("offset"))
            href = str(action.get("href") or resource.get("href") or "")
            if op is not None and split_query(href)[1]:
                with_query.setdefault(href, (line, column))
            if op is None:
                problems.append(
                    Problem(
                        f"/resources/{i}/actions/{j}",
                        f"action {action.get('title') or ''!r} has no usable method or URI "
                        f"(method {action.get('method')!r}, URI {action.get('href') or resource.get('href')!r}); "
                        "it is left out",
                        "warning",
                        line,
                        column,
                        doc.name,
                    )
                )
                continue
            operations.append(op)
    if with_query:
        first, (line, column) = next(iter(with_query.items()))
        problems.append(
            Problem(
                "",
                (
                    f"1 URI template carries a query part after '?' ({first!r}): it is"
                    if len(with_query) == 1
                    else f"{len(with_query):,} URI templates carry a query part after '?' (e.g. "
                    f"{first!r}): they are"
                )
                + " routed on the part before it and its variables are sent as query parameters",
                "note",
                line,
                column,
                doc.name,
            )
        )
    operations = unique_ids(operations)
    operations.sort(key=lambda op: (op.route_path, method_rank(op.method), op.operation_id))
    if not operations:
        problems.append(
            Problem("", "the blueprint has no actions to benchmark", "warning", source=doc.name)
        )
    api = Api(
        title=str(parsed.get("title") or ""),
        version="",
        source_format="apib-1A",
        operations=tuple(operations),
    )
    return api, problems


def _run_drafter(doc: Document, problems: list[Problem]) -> dict[str, Any] | None:
    def refuse(why: str) -> None:
        problems.append(
            Problem(
                "",
                f"API Blueprint is read with Node.js and the npm package {DRAFTER}: {why} "
                f"(scripts/setup.sh node installs it; NODE_PATH may name its node_modules), "
                f"{CONVERT_HINT}",
                source=doc.name,
            )
        )

    node = os.environ.get("GATEBENCH_NODE_BIN") or shutil.which("node")
    if not node or not Path(node).is_file():
        refuse("'node' is not installed here")
        return None
    paths = [p for p in os.environ.get("NODE_PATH", "").split(os.pathsep) if p]
    root = checkout_root()
    tools = root / "tools" / "node" / "node_modules" if root is not None else None
    if tools is not None and tools.is_dir():
        paths.append(str(tools))
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env["NODE_PATH"] = os.pathsep.join(paths)
    try:
        done = subprocess.run(
            [node, str(_HELPER)],
            input=doc.text.encode("utf-8"),
            capture_output=True,
            timeout=_TIMEOUT,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        refuse(f"the parser did not finish ({type(exc).__name__})")
        return None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace")
        if "Cannot find module 'drafter.js'" in err:
            refuse("the package is not installed")
        else:
            last = err.strip().splitlines()[-1] if err.strip() else f"exit code {done.returncode}"
            refuse(f"the parser failed ({last[:200]})")
        return None
    try:
        parsed = json.loads(done.stdout)
    except ValueError:
        refuse("the parser's output is not JSON")
        return None
    return parsed if isinstance(parsed, dict) else None


def _operation(
    resource: dict[str, Any], action: dict[str, Any], pointer: str, base_url: str
) -> Operation | None:
    method = str(action.get("method") or "").upper()
    href = str(action.get("href") or resource.get("href") or "")
    if method not in _METHODS or not href.startswith("/"):
        return None
    href, query = split_query(href)
    exploded = set(re.findall(r"([^{},*?&]+)\*", href + query))  # {?ids*}: ids=1&ids=2
    described = {
        v["name"]: v for v in [*resource.get("variables", []), *action.get("variables", [])]
    }
    query_params: list[Parameter] = []
    for name, variable, fixed in [
        *((name, name, None) for name in _expression_names(_QUERY_EXPRESSION, href)),
        *_query_part(query),
    ]:
        if any(p.name == name for p in query_params):
            continue
        if fixed is not None:
            schema = {"type": "string", "enum": [fixed]}
            query_params.append(Parameter(name, "query", True, schema, examples=(fixed,)))
            continue
        decl = described.get(variable)
        required = bool((decl or {}).get("required"))
        query_params.append(_parameter(name, "query", required, decl, variable in exploded))
    path = _EXPRESSION.sub(
        lambda m: "{" + m.group(1).split(",")[0].rstrip("*") + "}", _QUERY_EXPRESSION.sub("", href)
    )
    path_names = re.findall(r"\{([^{}]+)\}", path)
    path_params = tuple(_parameter(name, "path", True, described.get(name)) for name in path_names)
    body = None
    contents = [
        _media(r.get("contentType"), r.get("body"))
        for r in action.get("requests", [])
        if r.get("body") is not None
    ]
    if contents:
        body = RequestBody(
            required=True, content=tuple({m.media_type: m for m in contents}.values())
        )
    responses: dict[str, Response] = {}
    header_params = _request_headers(action.get("requests", []))
    for r in action.get("responses", []):
        status = str(r.get("status") or "200")
        if status in responses:
            continue
        content = (
            (_media(r.get("contentType"), r.get("body")),) if r.get("body") is not None else ()
        )
        responses[status] = Response(status, "", content)
    return Operation(
        operation_id="",
        operation_id_generated=True,
        method=method,
        path_template=path,
        base_url=base_url,
        path_params=path_params,
        query_params=tuple(query_params),
        header_params=header_params,
        request_body=body,
        responses=tuple(responses.values()),
        summary=str(action.get("title") or ""),
        pointer=pointer,
    )


_NOT_HEADER_PARAMS = ("authorization", "content-type", "accept")
"""Headers a request's ``+ Headers`` show that are not parameters (as OpenAPI ignores header
parameters of these names): credentials come from the plan's ``auth``, never a description."""


def _request_headers(requests: list[Any]) -> tuple[Parameter, ...]:
    """The headers an action's ``+ Request`` sections show (``X-Client: web-app``), as header
    parameters: required when every request shows one, its first value the example."""
    shown: dict[str, list[str]] = {}
    for r in requests:
        for pair in r.get("headers") or ():
            if not (isinstance(pair, list) and len(pair) == 2):
                continue
            name, value = str(pair[0]), str(pair[1])
            bad = token_problem("header", name) or re.search(r"[\x00-\x1f\x7f]", value)
            if bad or name.lower() in _NOT_HEADER_PARAMS:
                continue
            shown.setdefault(name, []).append(value)
    everywhere = {
        n
        for n in shown
        if all(any(str(p[0]) == n for p in r.get("headers") or ()) for r in requests)
    }
    return tuple(
        Parameter(name, "header", name in everywhere, {"type": "string"}, examples=(values[0],))
        for name, values in shown.items()
    )


def split_query(href: str) -> tuple[str, str]:
    """``/devices?{key}&{limit}`` → (``/devices``, ``?{key}&{limit}``): a ``?`` or ``#`` outside
    the template's expressions starts its query or fragment (RFC 6570: expressions expand in
    place, literals stay), which no request routes on."""
    depth = 0
    for i, ch in enumerate(href):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch in "?#" and depth == 0:
            return href[:i], href[i:]
    return href, ""


def _expression_names(pattern: re.Pattern[str], text: str) -> list[str]:
    """Variable names of the expressions ``pattern`` finds (``{?a,b*,c:3}`` → a, b, c)."""
    return [
        name.strip().rstrip("*").split(":")[0]
        for group in pattern.findall(text)
        for name in group.split(",")
        if name.strip()
    ]


def _query_part(query: str) -> list[tuple[str, str, str | None]]:
    """The query parameters a URI template's query part names: (name, the variable giving its
    value, or the fixed value). ``{a}`` and ``{?a}`` name ``a``; ``b={v}`` names ``b`` with the
    value of ``v``; ``c=1`` is ``c`` fixed to ``1``; the fragment is never sent."""
    out: list[tuple[str, str, str | None]] = []
    text = query.partition("#")[0]
    # {?a} and {&a} expand to whole pairs wherever they stand (?type=phone{&since})
    pieces = [p for i, p in enumerate(re.split(r"(\{[?&][^}]*\})", text)) if i % 2 or p]
    for piece in (q for p in pieces for q in ([p] if p[:2] in ("{?", "{&") else p.split("&"))):
        if piece.startswith(("{?", "{&")):
            out.extend((n, n, None) for n in _expression_names(_QUERY_EXPRESSION, piece))
            continue
        name, equals, value = piece.lstrip("?").partition("=")
        if not equals:
            out.extend((n, n, None) for n in _expression_names(_ANY_EXPRESSION, name))
            continue
        variables = _expression_names(_ANY_EXPRESSION, value)
        if name and "{" not in name:
            out.append((name, variables[0], None) if variables else (name, name, value))
    return out


_SCALARS = ("number", "boolean", "integer", "string")


def _typed(kind: str, text: str) -> Any:
    """A value the blueprint writes as text, as its type reads it (``5`` of a number: 5)."""
    try:
        if kind == "integer" or (kind == "number" and re.fullmatch(r"-?\d+", text)):
            return int(text)
        if kind == "number":
            number = float(text)
            return number if math.isfinite(number) else text
    except ValueError:
        return text
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def _parameter(
    name: str,
    where: Any,
    required: bool,
    described: dict[str, Any] | None,
    exploded: bool = False,
) -> Parameter:
    """A parameter as ``+ Parameters`` describes it: its type (``array[number]`` an array of
    numbers), ``+ Members`` of an ``enum[T]`` as its enum, ``+ Default:`` as its default, the
    sample value as its example, each typed."""
    decl = described or {}
    kind = str(decl.get("type") or "string")
    array = re.fullmatch(r"array\[(\w+)\]", kind)
    item = array[1] if array else re.sub(r"^enum\[(\w+)\]$", r"\1", kind)
    item = item if item in _SCALARS else "string"
    schema: dict[str, Any] = {"type": item}
    members = [m for m in decl.get("members") or () if isinstance(m, str)]
    if members:
        schema["enum"] = [_typed(item, m) for m in members]
    if decl.get("default"):
        schema["default"] = _typed(item, str(decl["default"]))
    example = decl.get("example")
    value = _typed(item, example) if example else None
    if array:
        schema = {"type": "array", "items": schema}
        value = [value] if value is not None else None
    explode = exploded if array and where == "query" else None
    return Parameter(
        name,
        where,
        required,
        schema,
        examples=(value,) if value is not None else (),
        style="form" if explode is not None else None,
        explode=explode,
    )


def _media(content_type: Any, body: Any) -> MediaType:
    media = str(content_type or "application/octet-stream").split(";")[0].strip()
    value: Any = body
    if "json" in media and isinstance(body, str):
        try:
            value = json.loads(body)
        except ValueError:
            value = body
    return MediaType(media, None, (("default", value),))


class _Positions:
    """Drafter's source maps count UTF-8 bytes; problems want lines and columns."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")

    def at(self, offset: Any) -> tuple[int | None, int | None]:
        if not isinstance(offset, int) or offset < 0:
            return None, None
        head = self.data[:offset]
        line = head.count(b"\n") + 1
        column = len(head[head.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        return line, column


__all__ = ["looks_like_blueprint", "read_blueprint"]
