"""JSON Schema 2020-12 references in OpenAPI 3.1+: ``$id`` base URIs, ``$anchor``,
``$dynamicAnchor`` and references such as ``/schemas/pet#name`` that resolve against an
``$id`` inside the document.

Resolution is the ``referencing`` library's (the jsonschema project's resolver), over a
registry built from the document's own schemas only: it has no retrieval function, so a URI
that no schema of the bundle declares is unresolvable, never fetched. Only the schemas that
declare an ``$id`` or an anchor (and what they contain) are registered, so a description
without them costs nothing; the result is mapped back to its place in the document, because
the IR names a schema after where it stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urldefrag, urljoin

from gatebench.core.errors import split_pointer
from gatebench.core.spec._walk import walk_objects

_KEYWORDS = ("$id", "$anchor", "$dynamicAnchor")


def _crawls(crawl: Any, root: Any) -> bool:
    try:
        crawl([root])
    except Exception:
        return False
    return True


def document_uri(name: str) -> str:
    """The base URI of a bundle document: its retrieval URI inside the bundle."""
    return "gatebench:///" + quote(name)


@dataclass
class SchemaIndex:
    """The schemas of one document that declare an ``$id`` or an anchor, registered with
    ``referencing``; ``places`` maps each object below them back to its JSON pointer."""

    uri: str
    registry: Any = None
    places: dict[int, str] = field(default_factory=dict)

    @classmethod
    def build(cls, name: str, text: str, data: Any) -> SchemaIndex:
        uri = document_uri(name)
        index = cls(uri)
        if not any(k in text for k in _KEYWORDS):
            return index
        roots: list[Any] = []
        for value, pointer in walk_objects(data, stop=lambda v: any(k in v for k in _KEYWORDS)):
            if any(k in value for k in _KEYWORDS):
                roots.append(value)
                for inner, inner_pointer in walk_objects(value):
                    index.places[id(inner)] = pointer + inner_pointer
        if not roots:
            return index
        from referencing import Registry
        from referencing.jsonschema import DRAFT202012

        def crawl(schemas: list[Any]) -> Any:
            # One resource at the document's URI whose $defs are the roots: crawling it
            # scopes each anchor to its nearest $id, as JSON Schema says.
            wrapper = {"$defs": {str(i): root for i, root in enumerate(schemas)}}
            resource = DRAFT202012.create_resource(wrapper)
            return Registry().with_resource(uri, resource).crawl()

        try:
            index.registry = crawl(roots)
        except Exception:  # the library trips on malformed schemas: keep the readable ones
            index.registry = crawl([root for root in roots if _crawls(crawl, root)])
        return index

    def base_uri(self, data: Any, pointer: str) -> str:
        """The base URI in force at ``pointer``: the document's, changed by every ``$id`` on
        the way down (the object at ``pointer`` included)."""
        base = self.uri
        value = data
        tokens = split_pointer(pointer) if pointer else []
        for token in [None, *tokens]:
            if token is not None:
                if isinstance(value, dict) and token in value:
                    value = value[token]
                elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                    value = value[int(token)]
                else:
                    break
            if isinstance(value, dict) and isinstance(value.get("$id"), str):
                base = urljoin(base, value["$id"])
        return base

    def lookup(self, base: str, ref: str) -> str | None:
        """The JSON pointer (in this document) of what ``ref`` names from ``base``, or None
        when no schema of the document declares it."""
        if self.registry is None:
            return None
        try:
            resolved = self.registry.resolver(base).lookup(ref)
        except Exception:  # Unresolvable, or the library tripping on a malformed schema
            return None
        return self.places.get(id(resolved.contents))

    def is_document(self, uri: str) -> bool:
        return urldefrag(uri)[0] == self.uri


__all__ = ["SchemaIndex", "document_uri"]
