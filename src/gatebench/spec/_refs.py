"""Local ``$ref`` resolution inside a bundle; remote references are refused, never fetched."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import SpecSyntaxError, closest, escape_pointer_token, split_pointer
from ._bundle import OutsideBundle, join_inside
from ._reader import Reader


@dataclass(frozen=True, order=True)
class Loc:
    """A place in the bundle: document name and JSON pointer."""

    doc: str
    pointer: str

    def child(self, *tokens: str | int) -> Loc:
        pointer = self.pointer
        for token in tokens:
            text = str(token)
            if "~" in text or "/" in text:
                text = escape_pointer_token(text)
            pointer += "/" + text
        return Loc(self.doc, pointer)


class RefError(Exception):
    """A reference that cannot be followed; the message says why, for the user."""


class Refs:
    def __init__(self, reader: Reader) -> None:
        self.reader = reader

    def target(self, ref: Any, at: Loc) -> Loc:
        """Where ``ref`` (found at ``at``) points. Raises :class:`RefError`."""
        if not isinstance(ref, str):
            raise RefError(f"$ref must be a string, got {_kind(ref)}")
        if ref.startswith("#/") and "%" not in ref:  # the common case: a pointer into this file
            return Loc(at.doc, ref[1:])
        if ref.startswith(("http://", "https://", "//")):
            raise RefError(
                f"remote reference {ref!r} is not fetched; put the file in the bundle "
                "(a folder or zip) and refer to it by a relative path"
            )
        try:
            parts = urlsplit(ref)
        except ValueError as exc:
            raise RefError(f"{ref!r} is not a valid reference ({exc})") from None
        if parts.netloc or parts.scheme not in ("", "file"):
            if len(parts.scheme) == 1:  # C:\...
                raise RefError(f"{ref!r} is an absolute path; use a path relative to the file")
            raise RefError(
                f"remote reference {ref!r} is not fetched; put the file in the bundle "
                "(a folder or zip) and refer to it by a relative path"
            )
        doc = at.doc
        try:
            if parts.scheme == "file":
                doc = self.reader.bundle.name_for_file_uri(unquote(parts.path))
            elif parts.path:
                doc = join_inside(at.doc, unquote(parts.path))
        except OutsideBundle as exc:
            raise RefError(f"{ref!r} points outside the bundle ({exc})") from None
        fragment = unquote(parts.fragment)
        if fragment and not fragment.startswith("/"):
            raise RefError(
                f"{ref!r} uses a named anchor; gatebench resolves JSON pointers (#/a/b) only"
            )
        return Loc(doc, fragment)

    def get(self, loc: Loc, ref: str = "") -> Any:
        """The value at ``loc``. Raises :class:`RefError` or SpecSyntaxError (bad target file)."""
        try:
            found = loc.doc == self.reader.bundle.entry or self.reader.bundle.exists(loc.doc)
        except OutsideBundle as exc:
            raise RefError(f"{ref!r} points outside the bundle ({exc})") from None
        if not found:
            raise RefError(f"cannot resolve {ref!r}: there is no file {loc.doc!r} in the bundle")
        value = self.reader.document(loc.doc).data
        walked = ""
        try:
            tokens = split_pointer(loc.pointer)
        except ValueError as exc:
            raise RefError(f"cannot resolve {ref!r}: {exc}") from None
        for token in tokens:
            if isinstance(value, dict):
                if token not in value:
                    hint = closest(token, [str(k) for k in value])
                    extra = f"; did you mean {hint!r}?" if hint else ""
                    raise RefError(
                        f"cannot resolve {ref!r}: no {token!r} in {walked or '/'}{extra}"
                    )
                value = value[token]
            elif isinstance(value, list):
                if not token.isdigit() or int(token) >= len(value):
                    raise RefError(f"cannot resolve {ref!r}: no item {token!r} in {walked or '/'}")
                value = value[int(token)]
            else:
                raise RefError(
                    f"cannot resolve {ref!r}: {walked or '/'} is {_kind(value)}, not an object"
                )
            walked += "/" + escape_pointer_token(token)
        return value

    def deref(self, value: Any, at: Loc, max_hops: int = 32) -> tuple[Any, Loc]:
        """Follow ``$ref`` chains (a Reference Object to another). Raises :class:`RefError`."""
        seen: list[Loc] = []
        while isinstance(value, dict) and "$ref" in value:
            target = self.target(value["$ref"], at)
            if target in seen or target == at:
                chain = " -> ".join(_show(x) for x in [*seen, target])
                raise RefError(f"circular $ref: {chain}")
            if len(seen) >= max_hops:
                raise RefError(f"more than {max_hops} chained $refs")
            seen.append(target)
            value = self.get(target, value["$ref"])
            at = target
        return value, at


_SCHEMED_REF = re.compile(r"""\$ref["']?\s*:\s*["']?(?:[A-Za-z][A-Za-z0-9+.-]*:|//)""")


def remote_refs(text: str, data: Any, doc: str) -> list[tuple[Loc, str]]:
    """Every ``$ref`` with a scheme or host (``https://``, ``//host``, ``file:``, ``urn:``) in a
    document, used or not, as (the object holding it, the reference): the caller checks each
    one with :meth:`Refs.target`, so none is ever fetched and each is reported where it stands.

    A regular expression over the text first decides whether a walk is needed at all, so a
    description without such references costs one scan.
    """
    if not _SCHEMED_REF.search(text):
        return []
    return sorted(
        (loc, ref)
        for loc, ref in references(data, Loc(doc, ""))
        if re.match(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)", ref)
    )


def references(data: Any, at: Loc) -> Iterator[tuple[Loc, str]]:
    """Every ``$ref`` string of a description, as (the object holding it, the reference),
    skipping literal data: a ``$ref`` key inside an example value (``example``, an Example
    Object's ``value``, a JSON Schema's ``examples`` list), a ``default``, ``enum`` or
    ``const``, or any ``x-`` extension is data, not a reference. Keys of mappings named by the
    description (``properties``, ``paths``, ``responses``, ...) are names, not keywords: a
    property called ``example`` is a schema."""
    stack: list[tuple[Any, Loc, str]] = [(data, at, "")]
    while stack:
        value, loc, kind = stack.pop()
        if isinstance(value, list):
            stack.extend(
                (v, loc.child(i), "") for i, v in enumerate(value) if isinstance(v, dict | list)
            )
            continue
        if not isinstance(value, dict):
            continue
        if kind in ("names", "schema-names"):
            for key, item in value.items():
                if isinstance(item, dict | list) and (
                    kind == "schema-names" or not str(key).startswith("x-")
                ):
                    stack.append((item, loc.child(key), ""))
            continue
        if kind == "examples":  # name -> Example Object (or Reference Object)
            for key, item in value.items():
                if isinstance(item, dict):
                    stack.append((item, loc.child(key), "example-object"))
            continue
        ref = value.get("$ref")
        if isinstance(ref, str):
            yield loc, ref
        for key, item in value.items():
            key = str(key)
            if not isinstance(item, dict | list) or is_data(key, kind):
                continue
            if key == "examples":
                if isinstance(item, dict):
                    stack.append((item, loc.child(key), "examples"))
                continue
            child = (
                "schema-names" if key in SCHEMA_NAME_MAPS else ("names" if key in NAME_MAPS else "")
            )
            stack.append((item, loc.child(key), child))


NAME_MAPS = frozenset(
    {
        "callbacks",
        "content",
        "encoding",
        "headers",
        "links",
        "parameters",
        "pathItems",
        "paths",
        "requestBodies",
        "responses",
        "securityDefinitions",
        "securitySchemes",
        "variables",
        "webhooks",
    }
)
"""Mappings keyed by names the description chooses; their ``x-`` keys are extensions."""

SCHEMA_NAME_MAPS = frozenset(
    {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties", "schemas"}
)
"""Mappings of schemas keyed by names, where ``x-foo`` is a name like any other."""

_DATA_KEYS = frozenset({"example", "default", "enum", "const"})


def is_data(key: str, kind: str = "") -> bool:
    """Whether the value under ``key`` is literal data, where a ``$ref`` is not a reference
    (``kind`` is ``example-object`` inside an Example Object, whose ``value`` is data)."""
    return (
        key in _DATA_KEYS or key.startswith("x-") or (key == "value" and kind == "example-object")
    )


def _show(loc: Loc) -> str:
    return f"{loc.doc}#{loc.pointer}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


__all__ = [
    "NAME_MAPS",
    "SCHEMA_NAME_MAPS",
    "Loc",
    "RefError",
    "Refs",
    "SpecSyntaxError",
    "is_data",
    "references",
    "remote_refs",
]
