"""A parameter's value as the description says to send it: OpenAPI's ``style`` and ``explode``
(OpenAPI 3.0.3 and 3.1.0, "Style Values" and "Style Examples").

The defaults are the specification's: ``form`` exploded in the query and in cookies, ``simple``
not exploded in the path and in headers. Arrays and objects are serialized by their style;
a value nested inside one is written as compact JSON (the specification leaves it undefined), as
is the value of a parameter described by ``content`` rather than a schema.
Values are percent-encoded for where they go: in the path and the query every byte but the
unreserved ones; in a header only control characters and bytes beyond ASCII (a line break never
reaches the head); in a cookie also what RFC 6265's cookie-octet leaves out (space, ``"``,
``,``, ``;``, ``\\``) and ``%``. The style's own delimiters are not encoded, but a
``pipeDelimited`` list is ``a%7Cb`` and a ``spaceDelimited`` one ``a%20b``, since ``|`` and a
space may not appear in a request target, and ``deepObject`` names are ``name%5Bkey%5D``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from gatebench.core.ir import Parameter, is_json_media

_DELIMITERS = {
    "form": ",",
    "simple": ",",
    "spaceDelimited": "%20",
    "pipeDelimited": "%7C",
    "tabDelimited": "%09",  # Swagger 2.0's collectionFormat: tsv
}


_STYLES = {
    "path": ("simple", "label", "matrix"),
    "query": ("form", "spaceDelimited", "pipeDelimited", "deepObject", "tabDelimited"),
    "header": ("simple",),
    "cookie": ("form",),
}
"""The styles each place takes, its default first; another (the description's mistake) is
read as the default."""

_PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F))
_SAFE = {
    "header": _PRINTABLE,  # a control character (a line break) never reaches the head
    "cookie": "".join(c for c in _PRINTABLE if c not in ' "%,;\\'),  # RFC 6265 cookie-octet
}
"""What is left as it is in a value; every other byte is percent-encoded (UTF-8)."""


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def serialized(p: Parameter, value: Any) -> list[tuple[str, str]]:
    """``value`` of ``p`` as (name, value) pairs, both encoded for ``p``'s place. In the path
    and in a header there is one pair, whose value is the whole text (in the path, the text
    that replaces ``{name}``, a ``label`` or ``matrix`` prefix included); in the query and in
    cookies, one pair per name the style writes."""
    where = p.location
    style = p.style if p.style in _STYLES[where] else _STYLES[where][0]
    explode = p.explode if p.explode is not None else style == "form"

    def enc(text: str) -> str:
        return quote(text, safe=_SAFE.get(where, ""))

    name = enc(p.name)
    if p.content is not None:  # the media type's text: JSON for application/json and +json
        if is_json_media(p.content):
            return [(name, enc(json.dumps(value, separators=(",", ":"))))]
        return [(name, enc(_text(value)))]
    if isinstance(value, dict):
        pairs = [(enc(str(k)), enc(_text(v))) for k, v in value.items()]
        flat = [x for pair in pairs for x in pair]
    elif isinstance(value, list):
        pairs, flat = [], [enc(_text(v)) for v in value]
    else:
        return _scalar(style, name, enc(_text(value)))
    obj = isinstance(value, dict)
    if style == "deepObject" and obj:
        return [(f"{name}%5B{k}%5D", v) for k, v in pairs]
    if style in ("label", "matrix"):
        lead = "." if style == "label" else ";"
        if not explode:
            head = lead if style == "label" else f";{name}=" if flat else f";{name}"
            return [("", head + ",".join(flat))]
        if obj:
            return [("", "".join(f"{lead}{k}={v}" for k, v in pairs))]
        if style == "label":
            return [("", "".join(f".{v}" for v in flat))]
        return [("", "".join(f";{name}={v}" for v in flat) or f";{name}")]
    if style == "simple" or where in ("path", "header"):
        text = ",".join(f"{k}={v}" for k, v in pairs) if explode and obj else ",".join(flat)
        return [(name, text)]
    if explode and style in ("form", "deepObject"):  # deepObject of a list: as form
        return pairs if obj else [(name, v) for v in flat]
    return [(name, _DELIMITERS.get(style, ",").join(flat))]


def _scalar(style: str, name: str, text: str) -> list[tuple[str, str]]:
    if style == "label":
        return [("", f".{text}")]
    if style == "matrix":
        return [("", f";{name}={text}")]
    return [(name, text)]


def form_body(value: dict[str, Any], encoding: Sequence[Parameter] = ()) -> str:
    """A form body (``application/x-www-form-urlencoded``): each property written as a query
    parameter of its name would be, ``form`` and exploded unless ``encoding`` (the media type's
    :attr:`~gatebench.core.ir.MediaType.encoding`) says otherwise: ``tags=a&tags=b``."""
    given = {p.name: p for p in encoding}
    pairs = [
        pair
        for name, item in value.items()
        for pair in serialized(
            given.get(str(name)) or Parameter(str(name), "query", False, {}), item
        )
    ]
    return "&".join(f"{name}={text}" for name, text in pairs)


__all__ = ["form_body", "serialized"]
