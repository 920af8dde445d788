"""Line and column of a JSON pointer, found by re-reading the text.

Positions are only needed when there is a problem to report, so they are computed on
demand (once per document) instead of being recorded while every document is parsed.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import yaml

from gatebench.core.errors import escape_pointer_token, split_pointer
from gatebench.core.spec._text import LineIndex

Position = tuple[int, int]

_JSON_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|\S',
    re.DOTALL,
)


def json_positions(text: str) -> dict[str, Position]:
    """Pointer -> position of every value (for object members: of the member's key)."""
    positions: dict[str, Position] = {"": (1, 1)}
    for _ in _walk_json(text, positions):
        pass
    return positions


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def json_positions_of(text: str, pointers: Iterable[str]) -> dict[str, Position]:
    """Positions of the given pointers (and of every ancestor on their way, so that
    :func:`nearest` works), in one pass that descends only where a pointer leads and skips
    every other value at the C decoder's speed: locating a few hundred findings in a
    description of several megabytes costs a fraction of walking all its tokens."""
    trie: dict[str, Any] = {}
    for pointer in pointers:
        node = trie
        for token in split_pointer(pointer) if pointer else []:
            node = node.setdefault(token, {})
    positions: dict[str, Position] = {"": (1, 1)}
    line_col = LineIndex(text)
    start = _SPACE.match(text, 1 if text.startswith("\ufeff") else 0)
    assert start is not None
    # A text json.loads accepted never fails here; if it did, what was found is kept.
    with contextlib.suppress(ValueError, IndexError):
        _descend(text, start.end(), trie, "", positions, line_col)
    return positions


def _descend(
    text: str,
    i: int,
    trie: dict[str, Any],
    pointer: str,
    positions: dict[str, Position],
    line_col: LineIndex,
) -> int:
    """Walk the value at ``i`` where ``trie`` leads; return the index after it."""
    if not trie or text[i] not in "{[":
        return _DECODER.raw_decode(text, i)[1]
    if text[i] == "{":
        i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
        if text[i] == "}":
            return i + 1
        while True:
            key_at = i
            key, i = scanstring(text, i + 1)
            i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
            i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]  # past ':'
            child = trie.get(key)
            if child is not None:
                here = pointer + "/" + escape_pointer_token(key)
                positions.setdefault(here, line_col(key_at))
                i = _descend(text, i, child, here, positions, line_col)
            else:
                i = _DECODER.raw_decode(text, i)[1]
            i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
            if text[i] == "}":
                return i + 1
            i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]  # past ','
            if text[i] == "}":  # a tolerated trailing comma
                return i + 1
    i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
    index = 0
    while text[i] != "]":
        child = trie.get(str(index))
        if child is not None:
            here = f"{pointer}/{index}"
            positions.setdefault(here, line_col(i))
            i = _descend(text, i, child, here, positions, line_col)
        else:
            i = _DECODER.raw_decode(text, i)[1]
        index += 1
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
        if text[i] == ",":
            i = _SPACE.match(text, i + 1).end()  # type: ignore[union-attr]
    return i + 1


def json_duplicate_keys(text: str) -> list[tuple[str, str, Position]]:
    """``(pointer of the object, key, position of the repeated key)`` for every repeat."""
    return [(p, k, pos) for p, k, pos in _walk_json(text, {}) if k is not None]


@dataclass
class _Open:
    """A mapping or sequence a walk is inside of: where its next value's pointer comes from."""

    pointer: str
    is_map: bool
    index: int = 0
    key: Any = None
    """A mapping's key whose value comes next; None: a key comes next."""
    seen: set[Any] = field(default_factory=set)

    def member(self, key: Any) -> str:
        return self.pointer + "/" + escape_pointer_token(str(key))

    def next_value(self) -> str:
        """The pointer of the value that comes next: the key's just read, or the next item's."""
        if self.is_map:
            pointer, self.key = self.member(self.key), None
        else:
            pointer, self.index = f"{self.pointer}/{self.index}", self.index + 1
        return pointer


def _walk_json(
    text: str, positions: dict[str, Position]
) -> Iterator[tuple[str, str | None, Position]]:
    stack: list[_Open] = []
    import json as _json

    line_col = LineIndex(text)
    for match in _JSON_TOKEN.finditer(text):
        tok = match.group()
        if not stack:
            if tok in "{[":
                stack.append(_Open("", tok == "{"))
            continue
        top = stack[-1]
        if tok in ("}", "]"):
            stack.pop()
            continue
        if tok in (",", ":"):
            continue
        if top.is_map and top.key is None:
            # an object key
            try:
                key = _json.loads(tok)
            except ValueError:
                key = tok
            top.key = key
            pos = line_col(match.start())
            if key in top.seen:
                yield top.pointer, str(key), pos
            top.seen.add(key)
            positions.setdefault(top.member(key), pos)
            continue
        child = top.next_value()
        if not top.is_map:
            positions.setdefault(child, line_col(match.start()))
        if tok in "{[":
            stack.append(_Open(child, tok == "{"))


def yaml_positions(text: str) -> dict[str, Position]:
    """Pointer -> position for a YAML text (keys located at the key, like JSON)."""
    positions: dict[str, Position] = {"": (1, 1)}
    stack: list[_Open] = []
    try:
        events = list(yaml.parse(text, Loader=_Loader))
    except yaml.YAMLError:
        return positions
    for event in events:
        if isinstance(
            event,
            yaml.MappingStartEvent | yaml.SequenceStartEvent | yaml.ScalarEvent | yaml.AliasEvent,
        ):
            mark = event.start_mark
            pos = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
            if not stack:
                ptr = ""
            else:
                top = stack[-1]
                if top.is_map and top.key is None:
                    top.key = event.value if isinstance(event, yaml.ScalarEvent) else "?"
                    positions.setdefault(top.member(top.key), pos)
                    continue
                ptr = top.next_value()
                if not top.is_map:
                    positions.setdefault(ptr, pos)
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                stack.append(_Open(ptr, isinstance(event, yaml.MappingStartEvent)))
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            stack.pop()
    return positions


try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


def nearest(positions: dict[str, Position], pointer: str) -> Position | None:
    """The position of the pointer, or of its closest existing ancestor."""
    while True:
        if pointer in positions:
            return positions[pointer]
        if not pointer:
            return None
        pointer = pointer[: pointer.rfind("/")]
