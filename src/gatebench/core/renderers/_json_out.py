"""Indented JSON for generated configurations: ``json.dumps(data, indent=2,
ensure_ascii=False)``, written faster.

With ``indent`` the standard library encodes in Python, through generators, a few calls per
value; a configuration of thousands of routes spends a tenth of a second there per gateway.
:func:`dump_json` writes the same text for the plain data configurations hold (dicts with
string keys, lists, str, int, float, bool, None), strings through the C string encoder,
and leaves anything else (another key type, another value type) to ``json.dumps``.
tests/unit/test_json_out.py compares both on random data and on the renderers' documents.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any


def dump_json(data: Any) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=False)``."""
    out: list[str] = []
    try:
        _value(data, "\n", out)
    except (_NotCovered, RecursionError):  # json.dumps refuses a cycle as it always did
        return json.dumps(data, indent=2, ensure_ascii=False)
    return "".join(out)


class _NotCovered(Exception):
    """Something only ``json.dumps`` writes exactly (or refuses as it refuses it)."""


def _value(value: Any, newline: str, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        lead = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _NotCovered
            out.append(lead + encode_basestring(key) + ": ")
            _value(item, inner, out)
            lead = "," + inner
        out.append(newline + "}")
    elif kind is list:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        lead = "[" + inner
        for item in value:
            out.append(lead)
            _value(item, inner, out)
            lead = "," + inner
        out.append(newline + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float and value == value and value not in (float("inf"), float("-inf")):
        out.append(float.__repr__(value))
    else:
        raise _NotCovered


__all__ = ["dump_json"]
