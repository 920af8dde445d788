"""Conformance to the OpenAPI / Swagger JSON Schemas, via openapi-spec-validator.

openapi-spec-validator ships the official schemas and validators for Swagger 2.0 and
OpenAPI 3.0/3.1/3.2. Its fast backend (jsonschema-rs) decides whether a document conforms
and, when it does not, explains each finding: its errors are read directly (the library's
adapter drops the kind of error and the sub-errors of ``oneOf``/``anyOf``), so a precise
message (``'bogus' is not one of [...]`` instead of "not valid under any of the given
schemas") costs no second pass. The Python ``jsonschema`` backend, 20-30 times slower on a
description with hundreds of findings, is only the fallback when the Rust validator is not
there.

Its findings are warnings: what actually blocks a benchmark is reported as an error by the
IR builder, which is stricter about routes and lenient about everything else. The library's
second pass (a semantic walk that resolves references itself) runs with ``strict=True``,
through a resolver that only reads the bundle.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from gatebench.core.errors import Problem, escape_pointer_token
from gatebench.core.spec._reader import Document, Reader
from gatebench.core.spec._refs import Loc, RefError, Refs
from gatebench.core.spec._walk import walk_objects

_MAX_FINDINGS = 200


_VERSIONS = ("2.0", "3.0", "3.1", "3.2")


def _schema_path(version: str) -> Path:
    """openapi-spec-validator's schema file, found without importing the library.

    Importing it (pydantic settings, jsonschema-path) costs more than validating a large
    description with the Rust validator, and only its schema files are needed here.
    """
    spec = importlib.util.find_spec("openapi_spec_validator")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - a dependency
        raise RuntimeError("openapi-spec-validator is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder / "resources" / "schemas" / f"v{version}" / "schema.json"


@functools.cache
def _rust_validator(version: str) -> Any | None:
    """The compiled jsonschema-rs validator of ``version``'s schema, once per process; None
    when jsonschema-rs is missing or openapi-spec-validator is told to use jsonschema."""
    backend = os.environ.get("OPENAPI_SPEC_VALIDATOR_SCHEMA_VALIDATOR_BACKEND", "")
    if backend.strip().lower() == "jsonschema":
        return None
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - a pinned dependency
        return None
    schema = json.loads(_schema_path(version).read_text(encoding="utf-8"))
    return jsonschema_rs.validator_cls_for(schema)(schema)


def _python_validators(version: str) -> tuple[Any, Any]:
    from openapi_spec_validator import schemas
    from openapi_spec_validator.schemas.backend.jsonschema import create_validator

    table = {
        "2.0": (schemas.openapi_v2_schema_validator, schemas.schema_v2),
        "3.0": (schemas.openapi_v30_schema_validator, schemas.schema_v30),
        "3.1": (schemas.openapi_v31_schema_validator, schemas.schema_v31),
        "3.2": (schemas.openapi_v32_schema_validator, schemas.schema_v32),
    }
    fast, schema = table[version[:3]]
    return fast, lambda: create_validator(schema)


def conformance_problems(data: Any, version: str, source: str) -> list[Problem]:
    rust = _rust_validator(version[:3]) if version[:3] in _VERSIONS else None
    fast: Any = None
    make_detailed: Any = None
    if rust is None:
        fast, make_detailed = _python_validators(version)
        rust = getattr(fast, "_rs_validator", None)
    try:
        if rust is not None:
            findings = list(_rust_findings(rust.iter_errors(data), data))
        else:
            if next(iter(fast.iter_errors(data)), None) is None:
                return []
            findings = list(_findings(make_detailed().iter_errors(data)))
        if not findings:
            return []
    except RecursionError:
        return [
            Problem(
                "",
                "too deeply nested to check against the OpenAPI schema",
                "warning",
                source=source,
            )
        ]
    out: list[Problem] = []
    seen: set[str] = set()
    for pointer, message in findings:
        if pointer in seen:
            continue
        seen.add(pointer)
        out.append(Problem(pointer, message, "warning", source=source))
        if len(out) >= _MAX_FINDINGS:
            out.append(
                Problem(
                    "",
                    f"more than {_MAX_FINDINGS} schema findings; the rest are not shown",
                    "warning",
                    source=source,
                )
            )
            break
    return out


def _findings(errors: Iterator[Any]) -> Iterator[tuple[str, str]]:
    for error in errors:
        deepest = _deepest(error)
        pointer = "".join("/" + escape_pointer_token(str(t)) for t in deepest.absolute_path)
        extra = _unexpected_keys(deepest)
        if extra:
            # One finding per unexpected key, located at the key itself.
            for key in extra:
                yield pointer + "/" + escape_pointer_token(key), f"unexpected property {key!r}"
            continue
        yield pointer, _message(deepest)


def _rust_findings(errors: Iterator[Any], data: Any) -> Iterator[tuple[str, str]]:
    """Findings from jsonschema-rs errors, worded as :func:`_findings` words them. A number
    JSON cannot hold (YAML's ``.inf`` and ``.nan``, ``1e400``) reaches jsonschema-rs as null:
    the finding names it, read from ``data``."""
    for error in errors:
        deepest = _rust_deepest(error)
        pointer = "".join("/" + escape_pointer_token(str(t)) for t in deepest.instance_path)
        kind = deepest.kind
        name = getattr(kind, "name", "")
        if name in ("additionalProperties", "unevaluatedProperties"):
            for key in getattr(kind, "unexpected", None) or []:
                yield pointer + "/" + escape_pointer_token(str(key)), f"unexpected property {key!r}"
            continue
        yield pointer, _rust_message(deepest, _value_at(data, deepest.instance_path))


def _value_at(data: Any, path: Iterable[Any]) -> Any:
    for token in path:
        if isinstance(data, list) and isinstance(token, int) and 0 <= token < len(data):
            data = data[token]
        elif isinstance(data, dict):
            data = data.get(token)
        else:
            return None
    return data


def _rust_deepest(error: Any) -> Any:
    """Into ``oneOf``/``anyOf``: the branch that is not a Reference Object, then the most
    relevant error in it (the shallowest, as jsonschema's ``best_match`` chooses)."""
    for _ in range(64):
        context = getattr(error.kind, "context", None)
        if not context:
            break
        branches = [b for b in context if b and not _is_ref_branch(b)] or [b for b in context if b]
        candidates = [e for branch in branches for e in branch]
        if not candidates:
            break
        error = min(
            candidates,
            key=lambda e: (len(e.instance_path), getattr(e.kind, "name", "") in _WEAK),
        )
    return error


_WEAK = ("anyOf", "oneOf")


def _is_ref_branch(branch: list[Any]) -> bool:
    return any(
        getattr(e.kind, "name", "") == "required" and getattr(e.kind, "property", None) == "$ref"
        for e in branch
    )


def _rust_message(error: Any, written: Any = None) -> str:
    kind = error.kind
    name = getattr(kind, "name", "")
    instance = error.instance
    if instance is None and isinstance(written, float) and not math.isfinite(written):
        instance = written
    if name == "required":
        return f"required property {kind.property!r} is missing"
    if name == "type":
        return f"expected {_type_words(list(kind.types))}, got {_short(instance)}"
    if name == "enum":
        return f"{_short(instance)} is not one of {list(kind.options)}"[:200]
    if name == "pattern":
        return f"{_short(instance)} does not match {kind.pattern!r}"[:200]
    worded = _worded(name, getattr(kind, "schema", None) or getattr(kind, "limit", None), instance)
    return worded or _truncate(str(error.message))


def _worded(validator: str, value: Any, instance: Any) -> str | None:
    """What jsonschema says in its own notation, in words: ``not: {required: [schema,
    content]}`` (a Parameter takes one of the two), ``minProperties`` (``responses: {}``) and
    ``minItems`` (``required: []``)."""
    required = value.get("required") if validator == "not" and isinstance(value, dict) else None
    if isinstance(required, list) and len(required) >= 2 and len(value) == 1:
        names = " and ".join(repr(str(k)) for k in required)
        return f"{names} may not both be given (one of them says what the value is)"
    if validator == "minProperties" and isinstance(value, int) and isinstance(instance, dict):
        return f"expected at least {value} entr{'y' if value == 1 else 'ies'}, got {len(instance)}"
    if validator == "minItems" and isinstance(value, int) and isinstance(instance, list):
        return f"expected at least {value} item{'' if value == 1 else 's'}, got {len(instance)}"
    return None


def _unexpected_keys(error: Any) -> list[str]:
    if error.validator not in ("additionalProperties", "unevaluatedProperties"):
        return []
    instance, schema = error.instance, error.schema
    if not isinstance(instance, dict) or not isinstance(schema, dict):
        return []
    known = set(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [
        str(k) for k in instance if k not in known and not any(p.search(str(k)) for p in patterns)
    ]


def _deepest(error: Any) -> Any:
    from jsonschema.exceptions import best_match

    while error.context:
        # Prefer the branch that is not a Reference Object: "$ref is required" helps nobody.
        candidates = [e for e in error.context if "'$ref' is a required property" not in e.message]
        choice = best_match(candidates or error.context)
        if choice is None:
            break
        error = choice
    return error


def _message(error: Any) -> str:
    validator = error.validator
    instance = error.instance
    if validator == "required":
        missing = [
            k for k in error.validator_value if isinstance(instance, dict) and k not in instance
        ]
        if missing:
            return f"required property {missing[0]!r} is missing"
    if validator in ("additionalProperties", "unevaluatedProperties") and isinstance(
        instance, dict
    ):
        return f"unexpected properties: {error.message.split('(')[-1].rstrip(')')}"[:200]
    if validator == "type":
        return f"expected {_type_words(error.validator_value)}, got {_short(instance)}"
    if validator == "enum":
        return f"{_short(instance)} is not one of {error.validator_value}"[:200]
    if validator in ("pattern", "patternProperties"):
        return f"{_short(instance)} does not match {error.validator_value!r}"[:200]
    return _worded(validator, error.validator_value, instance) or _truncate(error.message)


def _type_words(value: Any) -> str:
    words = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "boolean": "a boolean",
        "integer": "an integer",
        "number": "a number",
        "null": "null",
    }
    if isinstance(value, list):
        if len(value) == 1:
            return words.get(value[0], str(value[0]))
        return " or ".join(words.get(v, str(v)) for v in value)
    return words.get(value, str(value))


def _short(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return ".nan (not a number), which JSON cannot hold"
    if isinstance(value, float) and math.isinf(value):
        sign = "-" if value < 0 else ""
        return (
            f"{sign}.inf (an infinite number, or one beyond a 64-bit float such as "
            f"{sign}1e400), which JSON cannot hold"
        )
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _truncate(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."


def strict_problems(reader: Reader, doc: Document, version: str) -> list[Problem]:
    """openapi-spec-validator's semantic walk of the description ``doc`` (the bundle's entry,
    or the description a benchmark file names), reading only from the bundle.

    The library fetches any URI its handlers do not claim (``requests`` for http(s), ``urlopen``
    for the rest, ``file:`` included), so one handler claims every scheme: a reference is
    resolved as the reader resolves it (:meth:`Refs.target`), and one the reader refuses stops
    the walk with the reader's words, at that ``$ref``, without a byte sent or read.
    """
    from openapi_spec_validator.validation import validators as v

    classes = {
        "2.0": v.OpenAPIV2SpecValidator,
        "3.0": v.OpenAPIV30SpecValidator,
        "3.1": v.OpenAPIV31SpecValidator,
        "3.2": v.OpenAPIV32SpecValidator,
    }
    base = classes[version[:3]]
    entry = doc.name
    refs = Refs(reader)

    def bundle_document(uri: str) -> Any:
        # URIs arrive joined to the referring file's URI; the description's is "", so a
        # relative URI is relative to its folder, as the reader resolves its refs.
        target = refs.target(uri, Loc(entry, ""))
        return refs.get(Loc(target.doc, ""), uri)

    class BundleOnly(base):  # type: ignore[misc, valid-type]
        resolver_handlers: ClassVar[Mapping[str, Any]] = _EveryScheme(bundle_document)

    validator = BundleOnly(doc.data)
    out: list[Problem] = []
    try:
        for error in validator.iter_errors():
            path = getattr(error, "absolute_path", None) or []
            pointer = "".join("/" + escape_pointer_token(str(t)) for t in path)
            out.append(
                Problem(pointer, _truncate(str(error).splitlines()[0]), "warning", source=entry)
            )
            if len(out) >= _MAX_FINDINGS:
                break
    except Exception as exc:  # the library's resolver errors, and any error of its own
        refused = _refused_ref(reader, refs, exc, entry)
        if refused is not None:
            out.append(refused)
        else:
            out.append(
                Problem(
                    "",
                    f"openapi-spec-validator stopped: {_truncate(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)}",
                    "warning",
                    source=entry,
                )
            )
    return out


class _EveryScheme(Mapping[str, Any]):
    """Resolver handlers that claim every URI scheme for one handler."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def __getitem__(self, scheme: str) -> Any:
        return self.handler

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _refused_ref(reader: Reader, refs: Refs, exc: BaseException, entry: str) -> Problem | None:
    """The problem at the ``$ref`` whose refusal stopped the walk (of the description
    ``entry``), when one did."""
    refusal: RefError | None = None
    ref = ""  # as written: referencing's Unresolvable keeps it, the handler sees it joined
    chain: BaseException | None = exc
    while chain is not None:
        if isinstance(chain, RefError):
            refusal = chain
        if not ref and isinstance(getattr(chain, "ref", None), str):
            ref = chain.ref  # type: ignore[attr-defined]
        chain = chain.__cause__ or chain.__context__
    if refusal is None:
        return None
    message = str(refusal)
    where = Loc(entry, "")
    for name in sorted(reader.documents, key=lambda n: (n != entry, n)):
        if not ref:
            break
        holder = next(
            (
                Loc(name, p)
                for o, p in walk_objects(reader.documents[name].data)
                if o.get("$ref") == ref
            ),
            None,
        )
        if holder is not None:
            where = holder.child("$ref")
            try:
                refs.target(ref, holder)
            except RefError as said:
                message = str(said)
            break
    return Problem(
        where.pointer,
        f"{message}; the strict check stops here",
        "warning",
        source=where.doc,
    )
