"""Local ``$ref`` resolution inside a bundle; remote references are refused, never fetched."""

from __future__ import annotations

import re
from typing import Any, NamedTuple
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from gatebench.core.errors import SpecSyntaxError, closest, escape_pointer_token, split_pointer
from gatebench.core.spec._anchors import SchemaIndex
from gatebench.core.spec._bundle import OutsideBundle, join_inside
from gatebench.core.spec._reader import Reader
from gatebench.core.spec._walk import walk_objects


class Loc(NamedTuple):
    """A place in the bundle: document name and JSON pointer. A named tuple, because the
    IR builder makes one for every value it reads (a dataclass costs several times more)."""

    doc: str
    pointer: str

    def child(self, *tokens: str | int) -> Loc:
        pointer = self[1]
        for token in tokens:
            text = token if type(token) is str else str(token)
            if "~" in text or "/" in text:
                text = escape_pointer_token(text)
            pointer += "/" + text
        # tuple.__new__ directly: the IR builder calls this ~50 times per operation.
        return _new_tuple(Loc, (self[0], pointer))


_new_tuple = tuple.__new__


class RefError(Exception):
    """A reference that cannot be followed; the message says why, for the user."""


class Refs:
    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.json_schema_2020 = False
        """OpenAPI 3.1+: ``$id``, ``$anchor`` and ``$dynamicAnchor`` count (see _anchors)."""
        self._indexes: dict[str, SchemaIndex] = {}

    def target(self, ref: Any, at: Loc) -> Loc:
        """Where ``ref`` (found at ``at``) points. Raises :class:`RefError`."""
        if not isinstance(ref, str):
            raise RefError(f"$ref must be a string, got {_kind(ref)}")
        if (  # the common case: a pointer into this file, no $id in the way
            ref.startswith("#/")
            and "%" not in ref
            and (not self.json_schema_2020 or self._index(at.doc).registry is None)
        ):
            return Loc(at.doc, ref[1:])
        if self.json_schema_2020:
            found = self._schema_target(ref, at)
            if found is not None:
                return found
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
            wider = self.reader.bundle.wider_folder(at.doc, unquote(parts.path))
            if wider:
                raise RefError(
                    f"{ref!r} points outside the bundle ({exc}): a single file's bundle is its "
                    f"own folder; pass the folder that holds both instead: {wider}"
                ) from None
            raise RefError(f"{ref!r} points outside the bundle ({exc})") from None
        fragment = unquote(parts.fragment)
        if fragment and not fragment.startswith("/"):
            if self.json_schema_2020:
                raise RefError(f"cannot resolve {ref!r}: no $anchor {fragment!r} in the bundle")
            raise RefError(
                f"{ref!r} uses a named anchor; OpenAPI 3.0 and Swagger 2.0 resolve JSON pointers "
                "(#/a/b) only"
            )
        return Loc(doc, fragment)

    def _index(self, doc: str) -> SchemaIndex:
        if doc not in self._indexes:
            document = self.reader.document(doc)
            self._indexes[doc] = SchemaIndex.build(doc, document.text, document.data)
        return self._indexes[doc]

    def _schema_target(self, ref: str, at: Loc) -> Loc | None:
        """A reference resolved as JSON Schema 2020-12 does, when an ``$id`` or an anchor of
        the document is involved; None to resolve it as a plain relative reference."""
        index = self._index(at.doc)
        if index.registry is None:
            return None
        try:  # an $id or a reference that is no URI ("https://[host/...": urllib refuses it)
            base = index.base_uri(self.reader.document(at.doc).data, at.pointer)
            pointer = index.lookup(base, ref)
            if pointer is not None:
                return Loc(at.doc, pointer)
            full = urljoin(base, ref)
            fragment = urldefrag(full)[1]
        except ValueError as exc:
            raise RefError(f"{ref!r} is not a valid reference ({exc})") from None
        if base == index.uri and (not fragment or fragment.startswith("/")):
            return None  # a pointer or a file of the bundle, as without $ids
        if base != index.uri and index.is_document(full):
            return None
        if full.startswith("gatebench:") or not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", ref):
            raise RefError(
                f"cannot resolve {ref!r}: no schema of the bundle declares that $id or $anchor"
                + (f" (resolved against the base URI {base!r})" if base != index.uri else "")
            )
        return None

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
    found: list[tuple[Loc, str]] = []
    for value, pointer in walk_objects(data):
        ref = value.get("$ref")
        if isinstance(ref, str) and re.match(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)", ref):
            found.append((Loc(doc, pointer), ref))
    return sorted(found)


def _show(loc: Loc) -> str:
    return f"{loc.doc}#{loc.pointer}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


__all__ = ["Loc", "RefError", "Refs", "SpecSyntaxError", "remote_refs"]
