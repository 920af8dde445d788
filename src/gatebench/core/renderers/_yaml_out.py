"""Block-style YAML for generated configurations: the bytes libyaml writes, written faster.

Rendering a description of thousands of routes for every gateway spent most of its time in
PyYAML's representer (a Python object per node, even with libyaml's ``CSafeDumper``).
Configurations hold only plain data (dicts, lists, str, int, float, bool, None), so
:func:`dump_block_yaml` writes that shape directly, in the layout libyaml gives it
(indentation 2, sequences in a mapping not indented, ``{}``/``[]`` for empty containers,
``? key`` for a key over 128 bytes), and chooses each string's style by libyaml's rules:

- a printable ASCII string without line breaks is plain unless libyaml's scalar analysis
  forbids it (an indicator first, ``": "``, ``" #"``, a leading or trailing space, ``---``)
  or PyYAML's resolver would read it back as something else (``true``, ``12``, ``1.5``,
  ``null``, a date, ...); then single-quoted;
- every other string (non-ASCII, control characters, tabs) is styled by libyaml itself, all
  of them in one call, and its answer reused.

Whatever this fast path does not cover exactly (an object reachable twice, which libyaml
writes as an anchor and alias; a string with a line break, whose continuation lines depend
on indentation; another type; a string long enough to reach the line width) is
written by ``yaml.dump`` as before. tests/unit/test_yaml_out.py compares both paths on random
data of these shapes and on every renderer's output for the examples; the golden files check
the rest.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

import yaml
import yaml.resolver

try:
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Dumper = yaml.SafeDumper

_WIDTH = 1 << 20
_MAX_STRING = 1 << 16
"""Longer strings go the slow way: a line must stay well under libyaml's width."""
_SIMPLE_KEY_BYTES = 128
"""libyaml writes a longer key as a complex key (``? key`` then ``: value``)."""
_ASCII_LINE = re.compile(r"[\x20-\x7e]+\Z")
_BREAKS = re.compile("[\r\n\x85\u2028\u2029]")
_INDICATOR_FIRST = frozenset("#,[]{}&*!|>'\"%@`")
_FLOAT_TAG = "tag:yaml.org,2002:float"
_RESOLVERS: dict[Any, list[tuple[str, re.Pattern[str]]]] = (
    yaml.resolver.Resolver.yaml_implicit_resolvers
)
_WILDCARD = _RESOLVERS.get(None, [])


def dump_block_yaml(data: Any, *, allow_unicode: bool) -> str:
    """Block style, insertion order (deterministic), long lines kept."""
    fast = _fast_dump(data, allow_unicode=allow_unicode)
    if fast is not None:
        return fast
    return _libyaml_dump(data, allow_unicode=allow_unicode)


def dump_yaml(data: Any) -> str:
    """Block-style YAML in insertion order (deterministic), unicode kept, long lines kept: the
    style of the YAML files Envoy, Kong, Traefik and Google API Gateway read."""
    return dump_block_yaml(data, allow_unicode=True)


def read_rendered(text: str) -> tuple[str, dict[str, Any]]:
    """A rendered file, its comment header then :func:`dump_yaml`'s document, read back to
    be edited: the header (written in front again) and the document."""
    header = "".join(
        itertools.takewhile(lambda line: line.startswith("#"), text.splitlines(keepends=True))
    )
    return header, yaml.safe_load(text)


def _libyaml_dump(data: Any, *, allow_unicode: bool) -> str:
    text: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=allow_unicode,
        width=_WIDTH,
    )
    return text


class _NotCovered(Exception):
    """The data holds something only ``yaml.dump`` writes exactly."""


def _fast_dump(data: Any, *, allow_unicode: bool) -> str | None:
    if type(data) is not dict and type(data) is not list:
        return None
    strings: set[str] = set()
    try:
        _collect(data, strings, set())
        reprs = _string_reprs(strings, allow_unicode=allow_unicode)
    except _NotCovered:
        return None
    if not data:
        return "{}\n" if type(data) is dict else "[]\n"
    out: list[str] = []
    if isinstance(data, dict):
        _mapping(data, 0, "", out, reprs)
    else:
        _sequence(data, 0, "", out, reprs)
    return "".join(out)


def _collect(node: Any, strings: set[str], seen: set[int]) -> None:
    """Every string in ``node`` into ``strings``; :class:`_NotCovered` on anything else."""
    kind = type(node)
    if kind is str:
        strings.add(node)
        return
    if kind is dict or kind is list:
        if id(node) in seen:  # libyaml would write an anchor and an alias
            raise _NotCovered
        seen.add(id(node))
        if kind is dict:
            for key, value in node.items():
                if type(key) is dict or type(key) is list:
                    raise _NotCovered
                _collect(key, strings, seen)
                _collect(value, strings, seen)
        else:
            for item in node:
                _collect(item, strings, seen)
        return
    if node is None or kind is bool or kind is int:
        return
    if kind is float:
        _float(node)
        return
    raise _NotCovered


def _string_reprs(strings: set[str], *, allow_unicode: bool) -> dict[str, str]:
    reprs: dict[str, str] = {}
    hard: list[str] = []
    for s in strings:
        if len(s) > _MAX_STRING or _BREAKS.search(s):
            raise _NotCovered
        if _ASCII_LINE.match(s):
            reprs[s] = s if _plain_allowed(s) else "'" + s.replace("'", "''") + "'"
        else:
            hard.append(s)
    if hard:
        # libyaml styles the rest in one call: "- <scalar>" per line, without line breaks.
        lines = _libyaml_dump(hard, allow_unicode=allow_unicode).split("\n")
        if len(lines) != len(hard) + 1 or lines[-1]:
            raise _NotCovered
        for s, line in zip(hard, lines, strict=False):
            if not line.startswith("- "):
                raise _NotCovered
            reprs[s] = line[2:]
    return reprs


def _plain_allowed(s: str) -> bool:
    """libyaml's block-plain analysis for printable ASCII, then PyYAML's resolver."""
    first = s[0]
    if first == " " or s[-1] == " " or first in _INDICATOR_FIRST:
        return False
    if first in "?:-" and (len(s) == 1 or s[1] == " "):
        return False
    if s.startswith(("---", "...")) or ": " in s or s[-1] == ":" or " #" in s:
        return False
    return all(not regexp.match(s) for _tag, regexp in _RESOLVERS.get(first, []) + _WILDCARD)


def _scalar(value: Any, reprs: dict[str, str]) -> str:
    if type(value) is str:
        return reprs[value]
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is float:
        return _float(value)
    return str(value)


def _float(value: float) -> str:
    """PyYAML's ``represent_float``, written plain as libyaml writes it."""
    if value != value:
        text = ".nan"
    elif value in (math.inf, -math.inf):
        text = ".inf" if value > 0 else "-.inf"
    else:
        text = repr(value).lower()
        if "." not in text and "e" in text:
            text = text.replace("e", ".0e", 1)
    for tag, regexp in _RESOLVERS.get(text[0], []) + _WILDCARD:
        if regexp.match(text):
            if tag == _FLOAT_TAG:
                return text
            break
    raise _NotCovered


def _mapping(
    node: dict[Any, Any], indent: int, first: str, out: list[str], reprs: dict[str, str]
) -> None:
    """``node`` (not empty) as a block mapping; its first key follows ``first``."""
    pad = " " * indent
    lead = first
    for key, value in node.items():
        text = _scalar(key, reprs)
        if type(key) is str and len(key.encode("utf-8")) > _SIMPLE_KEY_BYTES:
            out.append(f"{lead}? {text}\n{pad}:")
            _value(value, indent + 2, out, reprs, complex_key=True)
        else:
            out.append(f"{lead}{text}:")
            _value(value, indent, out, reprs, complex_key=False)
        lead = pad


def _value(
    value: Any, indent: int, out: list[str], reprs: dict[str, str], *, complex_key: bool
) -> None:
    kind = type(value)
    if kind is dict:
        if not value:
            out.append(" {}\n")
        elif complex_key:
            _mapping(value, indent, " ", out, reprs)
        else:
            out.append("\n")
            _mapping(value, indent + 2, " " * (indent + 2), out, reprs)
    elif kind is list:
        if not value:
            out.append(" []\n")
        elif complex_key:
            _sequence(value, indent, " ", out, reprs)
        else:
            out.append("\n")
            _sequence(value, indent, " " * indent, out, reprs)
    else:
        out.append(f" {_scalar(value, reprs)}\n")


def _sequence(
    node: list[Any], indent: int, first: str, out: list[str], reprs: dict[str, str]
) -> None:
    """``node`` (not empty) as a block sequence; its first dash follows ``first``."""
    pad = " " * indent
    lead = first
    for item in node:
        kind = type(item)
        if kind is dict and item:
            out.append(f"{lead}-")
            _mapping(item, indent + 2, " ", out, reprs)
        elif kind is list and item:
            out.append(f"{lead}-")
            _sequence(item, indent + 2, " ", out, reprs)
        elif kind is dict:
            out.append(f"{lead}- {{}}\n")
        elif kind is list:
            out.append(f"{lead}- []\n")
        else:
            out.append(f"{lead}- {_scalar(item, reprs)}\n")
        lead = pad


__all__ = ["dump_block_yaml", "dump_yaml", "read_rendered"]
