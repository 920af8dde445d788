"""RAML 1.0 and 0.8 documents to the IR.

Why not a library: ramlfications 0.3.0 (the maintained Python parser) crashes on valid
RAML 1.0 shorthand such as ``page: integer`` (AttributeError), opens ``!include`` targets
anywhere on disk and resolves JSON ``$ref``s over the network through jsonref; AMF and
raml-1-parser are JavaScript/Java and cannot run inside the Python Cloud Functions. RAML is
YAML plus ``!include``, so it is read with gatebench's safe YAML loader (includes stay inside
the bundle) and interpreted here, covering what routing and workloads need:

* resources nested by path, with inherited ``uriParameters``; ``baseUri`` with ``{version}``
  and ``baseUriParameters`` defaults;
* ``resourceTypes`` (with inheritance and optional ``get?`` methods) and ``traits``, both with
  ``<<parameter>>`` substitution and the RAML transformer functions (``!singularize``, ...);
* libraries (``uses``) for types, traits, resource types and security schemes;
* query parameters, headers, bodies per media type (RAML 1.0 types converted to JSON Schema,
  0.8 JSON schemas kept), responses with examples, ``securedBy`` (``null`` = optional).

Precedence: a resource's or method's own definitions win over its resource type, which wins
over traits; method-level traits win over resource-level traits.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gatebench.core.errors import Problem, Severity, SpecSyntaxError, shown
from gatebench.core.ir import (
    Api,
    LeftOut,
    MediaType,
    Operation,
    Parameter,
    RequestBody,
    Response,
    SecurityRequirement,
    SecurityScheme,
    host_as_path,
    method_rank,
    server_authority_problem,
    token_problem,
)
from gatebench.core.spec._bundle import OutsideBundle, join_inside
from gatebench.core.spec._ids import unique_ids
from gatebench.core.spec._reader import Document, IncludedJson, Reader
from gatebench.core.spec._refs import Loc
from gatebench.core.stats import counted

RAML_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace", "connect")
_SUPPORTED_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
RESOURCE_KEYS = {
    "displayName",
    "description",
    "uriParameters",
    "baseUriParameters",
    "type",
    "is",
    "securedBy",
    "usage",
}
METHOD_KEYS = {
    "displayName",
    "description",
    "queryParameters",
    "headers",
    "queryString",
    "body",
    "responses",
    "securedBy",
    "is",
    "protocols",
    "baseUriParameters",
    "usage",
}
_BUILTIN_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "object": {"type": "object"},
    "array": {"type": "array"},
    "file": {"type": "string", "format": "binary"},
    "date-only": {"type": "string", "format": "date"},
    "time-only": {"type": "string", "format": "time"},
    "datetime-only": {"type": "string", "format": "date-time"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date-time"},
    "nil": {"type": "null"},
    "any": {},
}
_FACETS = (
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "format",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "default",
    "description",
)
_PARAM = re.compile(r"<<\s*([A-Za-z_][\w]*)\s*((?:\|\s*![A-Za-z]+\s*)*)>>")
_TEMPLATE_VAR = re.compile(r"\{([^{}/]*)\}")


def _plural(word: str) -> str:
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    if re.search(r"(s|x|z|ch|sh)$", word):
        return word + "es"
    return word + "s"


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 3:
        return word[:-3] + "y"
    if re.search(r"(s|x|z|ch|sh)es$", word):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(value: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", value)
    return [w for w in re.split(r"[\s_\-]+", spaced) if w]


_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "singularize": _singular,
    "pluralize": _plural,
    "uppercase": str.upper,
    "lowercase": str.lower,
    "lowercamelcase": lambda v: "".join(
        (w.lower() if i == 0 else w.capitalize()) for i, w in enumerate(_words(v))
    ),
    "uppercamelcase": lambda v: "".join(w.capitalize() for w in _words(v)),
    "lowerunderscorecase": lambda v: "_".join(w.lower() for w in _words(v)),
    "upperunderscorecase": lambda v: "_".join(w.upper() for w in _words(v)),
    "lowerhyphencase": lambda v: "-".join(w.lower() for w in _words(v)),
    "upperhyphencase": lambda v: "-".join(w.upper() for w in _words(v)),
}


class RamlBuilder:
    def __init__(self, reader: Reader, doc: Document) -> None:
        self.reader = reader
        self.doc = doc
        self.problems: list[Problem] = []
        self.version = ""
        self.root: dict[str, Any] = {}
        self.types: dict[str, tuple[Any, Loc]] = {}
        self.traits: dict[str, tuple[Any, Loc]] = {}
        self.resource_types: dict[str, tuple[Any, Loc]] = {}
        self.namespaces: dict[Loc, str] = {}
        """Where each library's declarations are (its document, or the mapping it was
        included as) → its ``namespace.``: there, a type is named without it."""
        self.security_schemes: dict[str, SecurityScheme] = {}
        self.schemas: dict[str, Any] = {}
        self.media_types: list[str] = ["application/json"]
        self.base_url = ""
        self.left_out: list[LeftOut] = []
        """Operations the description hides (a URI parameter its path does not have), as
        OpenAPI's reader leaves them out: with a warning, the others read."""

    def problem(self, loc: Loc, message: str, severity: Severity = "error") -> None:
        self.problems.append(Problem(loc.pointer, message, severity, source=loc.doc))

    def warn(self, loc: Loc, message: str) -> None:
        self.problem(loc, message, "warning")

    # -- entry point ------------------------------------------------------------------------

    def build(self) -> Api | None:
        root_loc = Loc(self.doc.name, "")
        header = self.doc.text.lstrip("\ufeff").split("\n", 1)[0].strip()
        match = re.match(r"^#%RAML\s+(1\.0|0\.8)\s*(\S.*)?$", header)
        if not match:
            self.problem(
                root_loc,
                f"unsupported RAML header {header!r}; expected '#%RAML 1.0' or '#%RAML 0.8'",
            )
            return None
        self.version = match.group(1)
        if match.group(2):
            self.problem(
                root_loc,
                f"this is a RAML {match.group(2)} fragment, not an API; give the root file",
            )
            return None
        data = self.doc.data
        if not isinstance(data, dict):
            self.problem(root_loc, f"expected a RAML API (a mapping), got {shown(data)}")
            return None
        self.root = data
        title = data.get("title")
        if not isinstance(title, str) or not title:
            self.warn(root_loc, "title is missing")
            title = ""
        version = data.get("version")
        media = data.get("mediaType")
        if isinstance(media, str):
            self.media_types = [media]
        elif isinstance(media, list) and media:
            self.media_types = [str(m) for m in media]
        self._collect_declarations(data, root_loc, prefix="")
        if isinstance(data.get("uses"), dict):
            self._read_libraries(data["uses"], root_loc.child("uses"))
        self.base_url = self._base_url(data, root_loc, version)
        default_security = self._secured_by(data.get("securedBy"), root_loc.child("securedBy"), ())
        operations: list[Operation] = []
        for key, value in data.items():
            if isinstance(key, str) and key.startswith("/"):
                self._resource(
                    key, value, root_loc.child(key), key, [], default_security, operations
                )
        operations = unique_ids(operations)
        operations.sort(key=lambda op: (op.route_path, method_rank(op.method), op.operation_id))
        if not operations and self.left_out:  # as OpenAPI's reader says it
            self.problem(
                root_loc,
                f"every operation is left out ({counted(len(self.left_out), 'operation')} "
                "above); there is nothing to benchmark",
            )
        elif not operations:
            self.warn(root_loc, "the description has no operations to benchmark")
        return Api(
            title=title,
            version="" if version is None else str(version),
            source_format=f"raml-{self.version}",
            operations=tuple(operations),
            schemas=self.schemas,
            security_schemes=tuple(self.security_schemes[k] for k in sorted(self.security_schemes)),
            left_out=tuple(self.left_out),
        )

    # -- declarations -----------------------------------------------------------------------

    def _collect_declarations(self, data: dict[str, Any], loc: Loc, prefix: str) -> None:
        for key, table in (("types", self.types), ("schemas", self.types)):
            self._collect(data.get(key), loc.child(key), prefix, table)
        self._collect(data.get("traits"), loc.child("traits"), prefix, self.traits)
        self._collect(
            data.get("resourceTypes"), loc.child("resourceTypes"), prefix, self.resource_types
        )
        schemes: dict[str, tuple[Any, Loc]] = {}
        self._collect(data.get("securitySchemes"), loc.child("securitySchemes"), prefix, schemes)
        for name, (value, sloc) in schemes.items():
            scheme = self._security_scheme(name, value, sloc)
            if scheme is not None:
                self.security_schemes[name] = scheme

    def _collect(
        self, value: Any, loc: Loc, prefix: str, table: dict[str, tuple[Any, Loc]]
    ) -> None:
        if value is None:
            return
        # RAML 0.8 writes these as a list of one-key mappings.
        items: list[tuple[str, Any, Loc]] = []
        if isinstance(value, dict):
            items = [(str(k), v, loc.child(k)) for k, v in value.items()]
        elif isinstance(value, list):
            for i, entry in enumerate(value):
                if isinstance(entry, dict):
                    items.extend((str(k), v, loc.child(i, k)) for k, v in entry.items())
        else:
            self.warn(loc, f"expected a mapping of declarations, got {shown(value)}")
            return
        for name, decl, dloc in items:
            table[prefix + name] = (decl, dloc)

    def _read_libraries(self, uses: dict[str, Any], loc: Loc) -> None:
        for namespace, path in uses.items():
            lloc = loc.child(namespace)
            if not isinstance(path, str):
                if isinstance(path, dict):  # already included
                    self.namespaces[lloc] = f"{namespace}."
                    self._collect_declarations(path, lloc, f"{namespace}.")
                continue
            try:
                name = join_inside(self.doc.name, path)
            except OutsideBundle as exc:
                self.problem(lloc, f"library {path!r}: {exc}")
                continue
            try:
                found = self.reader.bundle.exists(name)
            except OutsideBundle as exc:
                self.problem(lloc, f"library {path!r}: {exc}")
                continue
            if not found:
                self.problem(lloc, f"library {path!r}: no such file in the bundle")
                continue
            try:
                lib = self.reader.document(name)
            except SpecSyntaxError as exc:
                self.problems.extend(exc.problems)
                continue
            if isinstance(lib.data, dict):
                self.namespaces[Loc(name, "")] = f"{namespace}."
                self._collect_declarations(lib.data, Loc(name, ""), f"{namespace}.")

    def _security_scheme(self, name: str, value: Any, loc: Loc) -> SecurityScheme | None:
        if not isinstance(value, dict):
            return None
        kind = str(value.get("type", ""))
        described = _mapping(value.get("describedBy"))
        headers = _mapping(described.get("headers"))
        query = _mapping(described.get("queryParameters"))
        if kind == "Basic Authentication":
            return SecurityScheme(name, "http", scheme="basic")
        if kind == "Digest Authentication":
            return SecurityScheme(name, "http", scheme="digest")
        if kind in ("OAuth 2.0", "OAuth 1.0"):
            return SecurityScheme(
                name,
                "oauth2" if kind == "OAuth 2.0" else "http",
                scheme=None if kind == "OAuth 2.0" else "oauth",
            )
        if kind == "Pass Through" or kind.startswith("x-"):
            if any(str(h).lower() == "authorization" for h in headers):
                return SecurityScheme(name, "http", scheme="bearer")
            if headers:
                header = str(next(iter(headers)))
                wrong = token_problem("apiKey header name", header.rstrip("?"))
                if wrong:
                    self.warn(
                        loc.child("describedBy", "headers", header),
                        f"{wrong}; the scheme is ignored",
                    )
                    return None
                return SecurityScheme(
                    name, "apiKey", location="header", param_name=header.rstrip("?")
                )
            if query:
                return SecurityScheme(
                    name, "apiKey", location="query", param_name=str(next(iter(query))).rstrip("?")
                )
            return SecurityScheme(name, "apiKey", location="header", param_name="Authorization")
        self.warn(loc.child("type"), f"unknown security scheme type {kind!r}")
        return None

    def _secured_by(
        self, value: Any, loc: Loc, default: tuple[SecurityRequirement, ...]
    ) -> tuple[SecurityRequirement, ...]:
        if value is None:
            return default
        if not isinstance(value, list):
            value = [value]
        out: list[SecurityRequirement] = []
        for i, item in enumerate(value):
            if item is None or item == "null":  # optional (Operation.auth_optional)
                out.append(SecurityRequirement(()))
                continue
            name = next(iter(item)) if isinstance(item, dict) and item else item
            scheme = self.security_schemes.get(str(name))
            if scheme is None:
                self.warn(loc.child(i), f"unknown security scheme {name!r} ignored")
                continue
            out.append(SecurityRequirement((scheme,)))
        return tuple(out)

    def _base_url(self, data: dict[str, Any], loc: Loc, version: Any) -> str:
        base = data.get("baseUri")
        if base is None:
            return ""
        if not isinstance(base, str):
            self.warn(loc.child("baseUri"), "baseUri must be a string")
            return ""
        params = _mapping(data.get("baseUriParameters"))

        def substitute(match: re.Match[str]) -> str:
            name = match.group(1)
            if name == "version" and version is not None:
                return str(version)
            decl = params.get(name)
            if isinstance(decl, dict):
                for key in ("default", "example"):
                    if decl.get(key) is not None:
                        return str(decl[key])
                if isinstance(decl.get("enum"), list) and decl["enum"]:
                    return str(decl["enum"][0])
            self.warn(
                loc.child("baseUri"), f"baseUri parameter {name!r} has no default; its name is used"
            )
            return name

        url = _TEMPLATE_VAR.sub(substitute, base)
        wrong = server_authority_problem(url)
        if wrong:
            self.problem(loc.child("baseUri"), f"baseUri {url!r} cannot be a server: {wrong}")
            return ""
        if re.search(r"\s", url):
            self.problem(loc.child("baseUri"), f"baseUri {url!r} contains whitespace")
            return ""
        said = host_as_path(url, "baseUri")
        if said:
            self.warn(loc.child("baseUri"), said)
        return url

    # -- resources --------------------------------------------------------------------------

    def _resource(
        self,
        key: str,
        raw: Any,
        loc: Loc,
        path: str,
        inherited_uri_params: list[tuple[str, Any, Loc]],
        default_security: tuple[SecurityRequirement, ...],
        out: list[Operation],
    ) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            self.problem(loc, f"a resource must be a mapping, got {shown(raw)}")
            return
        if not self._check_path(path, loc):
            return
        resource = self._apply_resource_type(raw, loc, path)
        uri_params = list(inherited_uri_params)
        if isinstance(resource.get("uriParameters"), dict):
            for name, decl in resource["uriParameters"].items():
                uri_params.append((str(name), decl, loc.child("uriParameters", name)))
        own_vars = set(_TEMPLATE_VAR.findall(key))
        hidden = ""
        for name, _decl, ploc in uri_params[len(inherited_uri_params) :]:
            if name not in own_vars and name not in set(_TEMPLATE_VAR.findall(path)):
                hidden = f"URI parameter {name!r} is not in the resource path {path!r}"
                self.warn(ploc, f"{hidden}: its methods are left out")
        security = self._secured_by(
            resource.get("securedBy"), loc.child("securedBy"), default_security
        )
        resource_traits = resource.get("is")
        for mkey, mvalue in resource.items():
            mkey = str(mkey)
            if mkey.startswith("/"):
                continue
            if mkey in RESOURCE_KEYS or (mkey.startswith("(") and mkey.endswith(")")):
                continue
            base = mkey.rstrip("?")
            if base not in RAML_METHODS:
                hint = "; methods are written in lower case" if base.lower() in RAML_METHODS else ""
                self.problem(
                    loc.child(mkey),
                    f"unknown method or property {mkey!r}; expected a method "
                    f"({', '.join(RAML_METHODS)}), a nested '/resource' or a resource property{hint}",
                )
                continue
            if mkey.endswith("?"):
                continue  # optional methods only exist in resource types
            if base not in _SUPPORTED_METHODS:
                self.warn(loc.child(mkey), f"{base.upper()} requests are not benchmarked; skipped")
                continue
            if hidden:
                where = loc.child(mkey)
                self.left_out.append(
                    LeftOut(
                        base.upper(),
                        path,
                        where.pointer,
                        hidden,
                        source=where.doc if where.doc != self.doc.name else "",
                    )
                )
                continue
            op = self._method(
                base, mvalue, loc.child(mkey), path, uri_params, security, resource_traits, key
            )
            if op is not None:
                out.append(op)
        for child_key, child in raw.items():
            if isinstance(child_key, str) and child_key.startswith("/"):
                self._resource(
                    child_key,
                    child,
                    loc.child(child_key),
                    path + child_key,
                    uri_params,
                    default_security,
                    out,
                )

    def _check_path(self, path: str, loc: Loc) -> bool:
        if re.search(r"[\s\x00-\x1f\x7f?#]", path):
            self.problem(
                loc, "a resource path may not contain whitespace, control characters, '?' or '#'"
            )
            return False
        if "{" in _TEMPLATE_VAR.sub("", path) or "}" in _TEMPLATE_VAR.sub("", path):
            self.problem(loc, f"unbalanced '{{' or '}}' in the resource path {path!r}")
            return False
        names = _TEMPLATE_VAR.findall(path)
        if len(names) != len(set(names)):
            self.problem(loc, "a URI parameter appears twice in the resource path")
            return False
        return True

    def _apply_resource_type(self, raw: dict[str, Any], loc: Loc, path: str) -> dict[str, Any]:
        ref = raw.get("type")
        if ref is None:
            return raw
        merged = dict(raw)
        seen: list[str] = []
        while ref is not None:
            name, args = _ref_and_args(ref)
            if name in seen:
                self.problem(loc.child("type"), f"resource type {name!r} inherits from itself")
                break
            seen.append(name)
            found = self.resource_types.get(name)
            if found is None:
                known = ", ".join(sorted(self.resource_types))
                listing = f"declared: {known}" if known else "no resource types are declared"
                self.problem(loc.child("type"), f"unknown resource type {name!r} ({listing})")
                break
            decl, _dloc = found
            params = {
                "resourcePath": path,
                "resourcePathName": _path_name(path, self.version),
                **args,
            }
            ours = self._qualified(copy.deepcopy(decl), name, resource=True)
            body = _substitute(ours, params) if isinstance(decl, dict) else {}
            ref = body.pop("type", None) if isinstance(body, dict) else None
            merged = _merge_resource(merged, body)
        return merged

    # -- methods ----------------------------------------------------------------------------

    def _method(
        self,
        method: str,
        raw: Any,
        loc: Loc,
        path: str,
        uri_params: list[tuple[str, Any, Loc]],
        security: tuple[SecurityRequirement, ...],
        resource_traits: Any,
        key: str,
    ) -> Operation | None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            self.problem(loc, f"a method must be a mapping, got {shown(raw)}")
            return None
        for mkey in raw:
            if mkey not in METHOD_KEYS and not (
                str(mkey).startswith("(") or str(mkey).startswith("x-")
            ):
                self.warn(loc.child(mkey), f"unknown method property {mkey!r} ignored")
        method_def = dict(raw)
        traits: list[Any] = []
        for source in (raw.get("is"), resource_traits):
            if source is None:
                continue
            traits.extend(source if isinstance(source, list) else [source])
        for trait_ref in traits:
            name, args = _ref_and_args(trait_ref)
            found = self.traits.get(name)
            if found is None:
                known = ", ".join(sorted(self.traits))
                listing = f"declared: {known}" if known else "no traits are declared"
                self.problem(loc.child("is"), f"unknown trait {name!r} ({listing})")
                return None
            params = {
                "resourcePath": path,
                "resourcePathName": _path_name(path, self.version),
                "methodName": method,
                **args,
            }
            trait = _substitute(self._qualified(copy.deepcopy(found[0]), name), params)
            if isinstance(trait, dict):
                method_def = _deep_merge(trait, method_def)
        template_vars = _TEMPLATE_VAR.findall(path)
        by_name = {name: (decl, ploc) for name, decl, ploc in uri_params}
        path_params = []
        for var in template_vars:
            decl, ploc = by_name.get(var, (None, loc))
            path_params.append(self._param(var, "path", decl, ploc, required_default=True))
        query = self._params(
            method_def.get("queryParameters"), "query", loc.child("queryParameters")
        )
        if "queryString" in method_def:
            named = {p.name for p in query}
            query += [
                p
                for p in self._query_string(method_def["queryString"], loc.child("queryString"))
                if p.name not in named
            ]
        headers = self._params(method_def.get("headers"), "header", loc.child("headers"))
        return Operation(
            operation_id="",
            operation_id_generated=True,
            method=method.upper(),
            path_template=path,
            base_url=self.base_url,
            path_params=tuple(path_params),
            query_params=tuple(query),
            header_params=tuple(
                h
                for h in headers
                if h.name.lower() not in ("authorization", "content-type", "accept")
            ),
            request_body=self._body(method_def.get("body"), loc.child("body")),
            responses=self._responses(method_def.get("responses"), loc.child("responses")),
            security=self._secured_by(
                method_def.get("securedBy"), loc.child("securedBy"), security
            ),
            summary=str(method_def.get("displayName") or ""),
            pointer=loc.pointer,
            source=loc.doc if loc.doc != self.doc.name else "",
        )

    def _params(self, value: Any, where: str, loc: Loc) -> list[Parameter]:
        if not isinstance(value, dict):
            return []
        out = []
        for name, decl in value.items():
            name = str(name)
            optional = name.endswith("?")
            clean = name.rstrip("?")
            wrong = token_problem(f"{where} parameter name", clean) if where == "header" else ""
            if wrong:
                self.problem(loc.child(name), wrong)
                continue
            # RAML 1.0 parameters are required unless marked; RAML 0.8 ones are optional.
            default_required = self.version == "1.0" and not optional
            out.append(
                self._param(clean, where, decl, loc.child(name), required_default=default_required)
            )
        return out

    def _query_string(self, decl: Any, loc: Loc) -> list[Parameter]:
        """RAML 1.0's ``queryString``: an object type whose properties are the query
        parameters (required as the type says), inline or named."""
        props: dict[str, Any] = {}
        required: set[str] = set()
        seen: set[str] = set()
        parts = [self._type(decl, loc)]
        while parts and len(seen) < 32:
            part = parts.pop(0)
            ref = part.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in seen:
                    seen.add(name)
                    parts.append(self.schemas.get(name, {}))
                continue
            parts += [p for p in part.get("allOf", ()) if isinstance(p, dict)]
            if isinstance(part.get("properties"), dict):
                props.update(part["properties"])
                required.update(r for r in part.get("required", ()) if isinstance(r, str))
        if not props:
            self.warn(
                loc,
                "queryString is read as an object type with properties (RAML 1.0, 'The Query "
                "String'); this one has none, so no query parameter is sent for it",
            )
        return [
            Parameter(
                name=str(name),
                location="query",
                required=name in required,
                schema=prop if isinstance(prop, dict) else {},
                pointer=loc.child("properties", name).pointer,
            )
            for name, prop in props.items()
        ]

    def _param(
        self, name: str, where: str, decl: Any, loc: Loc, *, required_default: bool
    ) -> Parameter:
        required = required_default
        examples: list[Any] = []
        if isinstance(decl, dict):
            if isinstance(decl.get("required"), bool):
                required = decl["required"]
            if "example" in decl:
                examples.append(_example_value(decl["example"]))
            if isinstance(decl.get("examples"), dict):
                examples.extend(_example_value(v) for v in decl["examples"].values())
        if where == "path":
            required = True
        return Parameter(
            name=name,
            location=where,  # type: ignore[arg-type]
            required=required,
            schema=self._type(decl, loc),
            examples=tuple(examples),
            pointer=loc.pointer,
        )

    # -- bodies and responses ---------------------------------------------------------------

    def _body(self, value: Any, loc: Loc) -> RequestBody | None:
        content = self._content(value, loc)
        if not content:
            return None
        return RequestBody(required=True, content=content)

    def _content(self, value: Any, loc: Loc) -> tuple[MediaType, ...]:
        if value is None:
            return ()
        if not isinstance(value, dict):
            return tuple(MediaType(m, self._type(value, loc)) for m in self.media_types)
        if value and all("/" in str(k) for k in value):
            items = [(str(k), v, loc.child(k)) for k, v in value.items()]
        else:
            items = [(m, value, loc) for m in self.media_types]
        out = []
        for media, decl, mloc in items:
            examples: list[tuple[str, Any]] = []
            if isinstance(decl, dict):
                if "example" in decl:
                    examples.append(("default", _example_value(decl["example"])))
                if isinstance(decl.get("examples"), dict):
                    examples.extend(
                        (str(k), _example_value(v)) for k, v in decl["examples"].items()
                    )
                if "formParameters" in decl and isinstance(decl["formParameters"], dict):
                    props = {}
                    required = []
                    for pname, pdecl in decl["formParameters"].items():
                        props[str(pname)] = self._type(pdecl, mloc.child("formParameters", pname))
                        if isinstance(pdecl, dict) and pdecl.get("required") is True:
                            required.append(str(pname))
                    schema: dict[str, Any] = {"type": "object", "properties": props}
                    if required:
                        schema["required"] = required
                    out.append(MediaType(media, schema, tuple(examples)))
                    continue
            schema = self._type(decl, mloc) if decl is not None else {}
            out.append(MediaType(media, schema, tuple(examples)))
        return tuple(out)

    def _responses(self, value: Any, loc: Loc) -> tuple[Response, ...]:
        if not isinstance(value, dict):
            return ()
        out = []
        for code, raw in value.items():
            status = str(code)
            if not re.match(r"^[1-5]\d\d$", status):
                self.warn(loc.child(code), f"odd response code {status!r}")
                continue
            raw = raw if isinstance(raw, dict) else {}
            description = raw.get("description")
            description = description if isinstance(description, str) else ""
            content = self._content(raw.get("body"), loc.child(code, "body"))
            headers = tuple(
                (p.name, p.schema)
                for p in self._params(raw.get("headers"), "header", loc.child(code, "headers"))
            )
            out.append(Response(status, description, content, headers))
        return tuple(out)

    # -- types ------------------------------------------------------------------------------

    def _type(self, decl: Any, loc: Loc, depth: int = 0) -> dict[str, Any]:
        """A RAML type declaration (or 0.8 named parameter / schema) as JSON Schema."""
        if depth > 32:
            return {}
        if decl is None:
            return {"type": "string"}
        if isinstance(decl, str):
            return self._type_expression(decl, loc, depth)
        if isinstance(decl, list):
            return {"anyOf": [self._type(d, loc, depth + 1) for d in decl]}
        if not isinstance(decl, dict):
            return {}
        if isinstance(decl, IncludedJson):
            return dict(_json_schema(decl))
        base = decl.get("type", decl.get("schema"))
        if isinstance(base, dict) and ("$schema" in base or "properties" in base or "type" in base):
            return dict(_json_schema(base))
        if isinstance(base, dict | list):
            schema = self._type(base, loc.child("type"), depth + 1)
        elif isinstance(base, str):
            schema = self._type_expression(base, loc.child("type"), depth)
        elif "properties" in decl:
            schema = {"type": "object"}
        elif "items" in decl:
            schema = {"type": "array"}
        else:
            schema = {"type": "string"}
        facets: dict[str, Any] = {k: decl[k] for k in _FACETS if k in decl}
        if isinstance(decl.get("properties"), dict):
            props: dict[str, Any] = {}
            required: list[str] = []
            for pname, pdecl in decl["properties"].items():
                pname = str(pname)
                optional = pname.endswith("?")
                clean = pname.rstrip("?")
                props[clean] = self._type(pdecl, loc.child("properties", pname), depth + 1)
                is_required = not optional
                if isinstance(pdecl, dict) and isinstance(pdecl.get("required"), bool):
                    is_required = pdecl["required"]
                if is_required:
                    required.append(clean)
            facets["type"] = "object"
            facets["properties"] = props
            if required:
                facets["required"] = required
        if "items" in decl:
            facets["type"] = "array"
            facets["items"] = self._type(decl["items"], loc.child("items"), depth + 1)
        if "example" in decl:
            facets["example"] = _example_value(decl["example"])
        if not facets:
            return schema
        if "$ref" in schema:
            return {"allOf": [schema, facets]}
        merged = dict(schema)
        merged.update(facets)
        return merged

    def _type_expression(self, expr: str, loc: Loc, depth: int) -> dict[str, Any]:
        text = expr.strip()
        if text.startswith("{") or text.startswith("<"):
            if text.startswith("{"):
                try:
                    parsed = _json_schema(json.loads(text))
                    return parsed if isinstance(parsed, dict) else {}
                except ValueError:
                    self.warn(loc, "inline JSON schema cannot be parsed; treated as any value")
            return {}
        if "|" in text:
            return {
                "anyOf": [self._type_expression(part, loc, depth + 1) for part in text.split("|")]
            }
        if text.startswith("(") and text.endswith(")"):
            return self._type_expression(text[1:-1], loc, depth + 1)
        if text.endswith("[]"):
            return {"type": "array", "items": self._type_expression(text[:-2], loc, depth + 1)}
        if text in _BUILTIN_TYPES:
            return dict(_BUILTIN_TYPES[text])
        text = self._in_namespace(text, loc)
        if text in self.types:
            name = re.sub(r"[^A-Za-z0-9._-]", "_", text)
            if name not in self.schemas:
                self.schemas[name] = {}
                decl, dloc = self.types[text]
                self.schemas[name] = self._type(decl, dloc, depth + 1)
            return {"$ref": f"#/schemas/{name}"}
        self.warn(loc, f"unknown type {text!r}; treated as any value")
        return {}

    def _in_namespace(self, name: str, loc: Loc) -> str:
        """``name`` as declared: inside a library, a sibling type is named without the
        library's namespace (RAML 1.0, Libraries)."""
        if name in self.types:
            return name
        for where, namespace in self.namespaces.items():
            inside = loc.pointer == where.pointer or loc.pointer.startswith(where.pointer + "/")
            if loc.doc == where.doc and inside and namespace + name in self.types:
                return namespace + name
        return name

    def _qualified(self, body: Any, name: str, *, resource: bool = False) -> Any:
        """A library's trait or resource type (``name``), as applied outside the library: the
        types, traits and resource types it names without the namespace are the library's,
        so they get it (``page: Page`` in ``lib.paged`` is ``lib.Page``), before its
        ``<<parameters>>`` take the values the caller gives."""
        namespace = next((ns for ns in self.namespaces.values() if name.startswith(ns)), None)
        if namespace is None or not isinstance(body, dict):
            return body
        qualify = _Qualify(namespace, self.types, self.traits, self.resource_types)
        if not resource:
            return qualify.method(body)
        out = {
            k: qualify.method(v) if k.rstrip("?") in RAML_METHODS else v for k, v in body.items()
        }
        if "type" in out:
            out["type"] = qualify.ref(out["type"], self.resource_types)
        if "is" in out:
            out["is"] = qualify.refs(out["is"])
        if "uriParameters" in out:
            out["uriParameters"] = qualify.params(out["uriParameters"])
        return out

    # -- ids --------------------------------------------------------------------------------


_TYPE_NAME = re.compile(r"(?<![<\w.!-])[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*(?![\w.>-])")
"""A type's name in a type expression, not a ``<<parameter>>`` nor its ``!function``."""


@dataclass(frozen=True)
class _Qualify:
    """Gives a library's own names their namespace, in the places a trait or a resource
    type names types (parameters, bodies, responses), traits (``is``) and resource types."""

    namespace: str
    types: dict[str, Any]
    traits: dict[str, Any]
    resource_types: dict[str, Any]

    def type(self, value: Any) -> Any:
        """A type declaration: an expression (``Page[] | Sort``) or a mapping of facets."""
        if isinstance(value, str):
            text = value.lstrip()
            if text.startswith("{") or (text.startswith("<") and not text.startswith("<<")):
                return value  # an inline JSON or XML schema, not a <<parameter>>
            ours = lambda m: self.namespace + m[0] if self.namespace + m[0] in self.types else m[0]  # noqa: E731
            return _TYPE_NAME.sub(ours, value)
        if isinstance(value, list):
            return [self.type(v) for v in value]
        if not isinstance(value, dict):
            return value
        out = {k: self.type(v) if k in ("type", "items", "schema") else v for k, v in value.items()}
        if isinstance(out.get("properties"), dict):
            out["properties"] = self.params(out["properties"])
        return out

    def params(self, value: Any) -> Any:
        return {k: self.type(v) for k, v in value.items()} if isinstance(value, dict) else value

    def body(self, value: Any) -> Any:
        if isinstance(value, dict) and any("/" in str(k) for k in value):
            return {k: self.type(v) for k, v in value.items()}  # by media type
        return self.type(value)

    def ref(self, value: Any, table: dict[str, Any]) -> Any:
        name, args = _ref_and_args(value)
        if self.namespace + name not in table:
            return value
        return (
            self.namespace + name if not isinstance(value, dict) else {self.namespace + name: args}
        )

    def refs(self, value: Any) -> Any:
        listed = value if isinstance(value, list) else [value]
        return [self.ref(v, self.traits) for v in listed]

    def method(self, value: Any) -> Any:
        """A method, or a trait (what it adds to one)."""
        if not isinstance(value, dict):
            return value
        out = dict(value)
        for key in ("queryParameters", "headers", "uriParameters", "baseUriParameters"):
            if key in out:
                out[key] = self.params(out[key])
        if "queryString" in out:
            out["queryString"] = self.type(out["queryString"])
        if "body" in out:
            out["body"] = self.body(out["body"])
        if "is" in out:
            out["is"] = self.refs(out["is"])
        if isinstance(out.get("responses"), dict):
            out["responses"] = {
                code: self._response(answer) for code, answer in out["responses"].items()
            }
        return out

    def _response(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out = dict(value)
        if "body" in out:
            out["body"] = self.body(out["body"])
        if "headers" in out:
            out["headers"] = self.params(out["headers"])
        return out


def _ref_and_args(ref: Any) -> tuple[str, dict[str, Any]]:
    """``collection`` or ``{searchable: {field: name}}`` → name and parameters."""
    if isinstance(ref, dict) and ref:
        name, args = next(iter(ref.items()))
        return str(name), {str(k): v for k, v in (args or {}).items()} if isinstance(
            args, dict
        ) else {}
    return str(ref), {}


def _path_name(path: str, version: str) -> str:
    segments = [s for s in path.split("/") if s]
    if version == "1.0":
        segments = [s for s in segments if "{" not in s]
    return segments[-1] if segments else ""


def _substitute(value: Any, params: dict[str, Any]) -> Any:
    if isinstance(value, str):

        def repl(match: re.Match[str]) -> str:
            raw = params.get(match.group(1))
            text = "" if raw is None else str(raw)
            for fn in re.findall(r"!([A-Za-z]+)", match.group(2) or ""):
                transform: Callable[[str], str] | None = _TRANSFORMS.get(fn.lower())
                if transform is not None:
                    text = transform(text)
            return text

        return _PARAM.sub(repl, value)
    if isinstance(value, dict):
        return {_substitute(k, params): _substitute(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, params) for v in value]
    return value


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _merge_resource(resource: dict[str, Any], rtype: dict[str, Any]) -> dict[str, Any]:
    """Apply a resource type: its methods exist only where the resource defines them when
    marked optional (``get?``); the resource's own values win."""
    out = dict(resource)
    for key, value in rtype.items():
        if key.endswith("?") and key.rstrip("?") in RAML_METHODS:
            method = key.rstrip("?")
            if method in resource:
                own = resource[method] if isinstance(resource[method], dict) else {}
                out[method] = _deep_merge(value if isinstance(value, dict) else {}, own)
            continue
        if key in RAML_METHODS:
            own = resource.get(key)
            out[key] = _deep_merge(
                value if isinstance(value, dict) else {}, own if isinstance(own, dict) else {}
            )
            continue
        if key in ("usage", "description", "displayName"):
            continue
        if key not in out:
            out[key] = value
        elif isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = _deep_merge(value, out[key])
    return out


def _example_value(value: Any) -> Any:
    if (
        isinstance(value, dict)
        and "value" in value
        and set(value)
        <= {"value", "strict", "displayName", "description"}
        | {k for k in value if str(k).startswith("(")}
    ):
        return value["value"]
    return value


def _json_schema(value: Any) -> Any:
    """A JSON schema written inside RAML: kept, minus ``$ref``s (they point at files or URLs
    relative to the schema, which gatebench does not follow)."""
    if isinstance(value, dict):
        return {k: _json_schema(v) for k, v in value.items() if k != "$ref"}
    if isinstance(value, list):
        return [_json_schema(v) for v in value]
    return value


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
