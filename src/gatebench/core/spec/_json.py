"""JSON to Python values with located errors.

Tolerant in one documented way: trailing commas (``[1, 2,]``), which hand-edited specs often
carry, are removed with a warning per comma. Everything else that is not RFC 8259 JSON is a
located error; duplicate keys are a warning (the later value wins, as in most parsers).
"""

from __future__ import annotations

import json
import re
from typing import Any

from gatebench.core.errors import Problem, SpecSyntaxError
from gatebench.core.spec._limits import Limits
from gatebench.core.spec._text import LineIndex, line_col

_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[}\]])', re.DOTALL)


class _Duplicate(Exception):
    pass


class _BadConstant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadConstant(name)


def load_json(text: str, source: str, limits: Limits) -> tuple[Any, list[Problem]]:
    warnings: list[Problem] = []
    duplicates = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicates
        obj = dict(pairs)
        if len(obj) != len(pairs):
            duplicates = True
        return obj

    try:
        value = _loads(text, pairs_hook)
    except json.JSONDecodeError as exc:
        if not _is_trailing_comma(exc):
            raise _syntax_error(exc, source) from None
        stripped, positions = _strip_trailing_commas(text)
        index = LineIndex(text)
        for pos in positions:
            line, column = index(pos)
            warnings.append(
                Problem(
                    "",
                    "trailing comma ignored (JSON does not allow one)",
                    severity="warning",
                    line=line,
                    column=column,
                    source=source,
                )
            )
        try:
            value = _loads(stripped, pairs_hook)
        except json.JSONDecodeError as exc2:
            raise _syntax_error(exc2, source) from None
        text = stripped
    except _BadConstant as exc:
        match = re.search(rf"\b{re.escape(str(exc))}\b", text)
        where = line_col(text, match.start()) if match else None
        raise SpecSyntaxError(
            [
                Problem(
                    "",
                    f"{exc} is not a JSON value; use a number or a string",
                    line=where[0] if where else None,
                    column=where[1] if where else None,
                    source=source,
                )
            ]
        ) from None
    except RecursionError:
        raise SpecSyntaxError(
            [Problem("", f"nesting deeper than {limits.max_depth} levels", source=source)]
        ) from None
    lone = _lone_surrogate(text)
    if lone is not None:
        line, column = line_col(text, lone)
        raise SpecSyntaxError(
            [
                Problem(
                    "",
                    f"JSON syntax: {text[lone : lone + 6]} is not a Unicode character (half of a "
                    "UTF-16 surrogate pair, without the other half)",
                    line=line,
                    column=column,
                    source=source,
                )
            ]
        )
    if _deeper_than(text, limits.max_depth):
        raise SpecSyntaxError(
            [Problem("", f"nesting deeper than {limits.max_depth} levels", source=source)]
        )
    if duplicates:
        from gatebench.core.spec._locate import json_duplicate_keys

        for pointer_, key, (line, column) in json_duplicate_keys(text):
            warnings.append(
                Problem(
                    pointer_,
                    f"duplicate key {key!r}; the later value wins",
                    severity="warning",
                    line=line,
                    column=column,
                    source=source,
                )
            )
    return value, warnings


def _loads(text: str, pairs_hook: Any) -> Any:
    return json.loads(text, object_pairs_hook=pairs_hook, parse_constant=_reject_constant)


_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A JSON string, written as an unrolled loop (twice as fast as ``(?:[^"\\]|\\.)*``)."""


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LOW_SURROGATE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _lone_surrogate(text: str) -> int | None:
    """The offset of the first ``\\uD800``-``\\uDFFF`` escape without its other half, in a
    JSON text that parsed. ``json`` keeps it as a character that is no Unicode character (YAML
    refuses it), which no UTF-8 encoder writes: it would fail later, in the store or a config.

    Only surrogate escapes are looked at (none in most texts): outside strings a valid text has
    no backslash, and one is an escape when an even number of backslashes stand before it.
    """
    paired = -1
    for match in _SURROGATE.finditer(text):
        start = match.start()
        if start == paired:
            continue
        before = start
        while before and text[before - 1] == "\\":
            before -= 1
        if (start - before) % 2:
            continue  # an escaped backslash followed by the letters "uD8.."
        if text[start + 3] in "89abAB" and _LOW_SURROGATE.match(text, match.end()):
            paired = match.end()
            continue
        return start
    return None


_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_ONE_KIND = str.maketrans("[{]}", "(())")


def _deeper_than(text: str, limit: int) -> bool:
    """Whether a JSON text nests deeper than ``limit``, from its brackets outside strings.

    Each round deletes every ``()`` left (the innermost containers) in one pass of
    ``str.replace``, so the rounds until nothing is left are the nesting depth: at most
    ``limit`` rounds run, each in C, however long the text (no recursion).
    """
    brackets = _NOT_BRACKET.sub("", _STRINGS.sub("", text)).translate(_ONE_KIND)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = brackets.replace("()", "")
    return bool(brackets)


def _is_trailing_comma(exc: json.JSONDecodeError) -> bool:
    if exc.msg not in ("Expecting property name enclosed in double quotes", "Expecting value"):
        return False
    if exc.pos >= len(exc.doc) or exc.doc[exc.pos] not in "]}":
        return False
    before = exc.doc[: exc.pos].rstrip()
    return before.endswith(",")


def _strip_trailing_commas(text: str) -> tuple[str, list[int]]:
    positions: list[int] = []

    def repl(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        positions.append(match.start())
        return match.group(2)

    return _TRAILING_COMMA.sub(repl, text), positions


_FRIENDLY = {
    "Expecting property name enclosed in double quotes": (
        "expected a property name in double quotes (single quotes and comments are not JSON)"
    ),
    "Expecting ',' delimiter": "expected ',' between values",
    "Expecting ':' delimiter": "expected ':' after a property name",
    "Expecting value": "expected a value",
    "Extra data": "unexpected text after the end of the document",
    "Unterminated string starting at": "string is not closed",
}


def _syntax_error(exc: json.JSONDecodeError, source: str) -> SpecSyntaxError:
    message = _FRIENDLY.get(exc.msg, exc.msg)
    if exc.msg.startswith("Invalid control character"):
        ch = exc.doc[exc.pos] if exc.pos < len(exc.doc) else "?"
        message = (
            f"raw control character U+{ord(ch):04X} inside a string; escape it (\\n, \\t, \\u00XX)"
        )
    elif exc.msg.startswith("Invalid \\escape") or exc.msg.startswith("Invalid \\u"):
        message = "invalid escape sequence in a string"
    return SpecSyntaxError(
        [Problem("", f"JSON syntax: {message}", line=exc.lineno, column=exc.colno, source=source)]
    )
