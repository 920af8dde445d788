"""YAML to plain Python values, built from the parser's event stream.

Why not ``yaml.safe_load``: libyaml's composer recurses in C and crashes the process on
deeply nested flow collections, PyYAML resolves scalars with YAML 1.1 rules (``yes`` is
``True``, ``2024-01-01`` a date, ``200:`` an integer key), and it expands aliases without
limit. Here the events are consumed iteratively, so depth, alias expansion and duplicate
keys are checked as the document is built, and scalars follow the YAML 1.2 core schema.
Mapping keys are always the key's text: OpenAPI keys are strings (``200``, ``/pets``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from gatebench.core.errors import Problem, SpecSyntaxError, escape_pointer_token
from gatebench.core.spec._limits import Limits
from gatebench.core.spec._text import line_col

try:  # libyaml's scanner is ~10x faster; the pure-Python one is a fallback.
    from yaml import CSafeLoader as _EventLoader
except ImportError:  # pragma: no cover - depends on the PyYAML wheel
    from yaml import SafeLoader as _EventLoader  # type: ignore[assignment]

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_BOOL_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$")
_INT_OCT = re.compile(r"^0o[0-7]+$")
_INT_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")

_STD = "tag:yaml.org,2002:"
IncludeHook = Callable[[str, str, int, int], tuple[Any, int]]
"""``(path, pointer, line, column) -> (value, size)``: resolves a RAML ``!include``."""


def resolve_plain(value: str) -> Any:
    """A plain (unquoted) scalar under the YAML 1.2 core schema."""
    if not value or value[0] in "~nNtTfF":
        if _NULL.match(value):
            return None
        if _BOOL_TRUE.match(value):
            return True
        if _BOOL_FALSE.match(value):
            return False
        return value
    c = value[0]
    if c.isdigit() or c in "+-.":
        if _INT.match(value):
            return int(value)
        if _FLOAT.match(value):
            return float(value)
        if _INT_OCT.match(value):
            return int(value[2:], 8)
        if _INT_HEX.match(value):
            return int(value[2:], 16)
        if _INF.match(value):
            return float("-inf") if value[0] == "-" else float("inf")
        if _NAN.match(value):
            return float("nan")
    return value


@dataclass
class _Frame:
    obj: Any
    is_map: bool
    anchor: str | None
    token: str
    size: int = 1
    key: str = ""
    has_key: bool = False
    key_line: int = 0
    merges: list[Any] = field(default_factory=list)
    awaiting_merge: bool = False


_NO_VALUE = object()


class _Builder:
    """Turns parser events into values; one instance per document."""

    def __init__(self, text: str, source: str, limits: Limits, include: IncludeHook | None):
        self.text = text
        self.source = source
        self.limits = limits
        self.include = include
        self.warnings: list[Problem] = []
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.open_anchors: set[str] = set()
        self.expanded = 0
        self.root: Any = _NO_VALUE
        self.documents = 0

    def fail(self, message: str, mark: Any) -> SpecSyntaxError:
        return SpecSyntaxError(
            [
                Problem(
                    _pointer(self.stack),
                    message,
                    line=mark.line + 1 if mark is not None else None,
                    column=mark.column + 1 if mark is not None else None,
                    source=self.source,
                )
            ]
        )

    def warn(self, message: str, mark: Any) -> None:
        self.warnings.append(
            Problem(
                _pointer(self.stack, _pending_token(self.stack)),
                message,
                severity="warning",
                line=mark.line + 1,
                column=mark.column + 1,
                source=self.source,
            )
        )

    def count(self, n: int, mark: Any) -> None:
        self.expanded += n
        if self.expanded > self.limits.max_nodes:
            raise self.fail(
                f"the document expands to more than {self.limits.max_nodes:,} values "
                "(YAML aliases can multiply a small file: an alias bomb?)",
                mark,
            )

    def expecting_key(self) -> bool:
        return bool(self.stack) and self.stack[-1].is_map and not self.stack[-1].has_key

    def attach(self, value: Any, size: int, mark: Any) -> None:
        """Attach a finished value (never a key) to the open collection, or make it the root."""
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        if not top.is_map:
            top.obj.append(value)
            return
        top.has_key = False
        if top.awaiting_merge:
            top.awaiting_merge = False
            if not isinstance(value, dict | list):
                raise self.fail(
                    "the value of a '<<' merge key must be a mapping or a list of mappings", mark
                )
            top.merges.append(value)
            return
        key = top.key
        if key in top.obj:
            self.warnings.append(
                Problem(
                    _pointer(self.stack, key),
                    f"duplicate key {key!r}; the later value (line {top.key_line + 1}) wins",
                    severity="warning",
                    line=top.key_line + 1,
                    source=self.source,
                )
            )
        top.obj[key] = value

    def set_key(self, text: str, mark: Any, *, merge: bool = False) -> None:
        top = self.stack[-1]
        top.key = text
        top.has_key = True
        top.key_line = mark.line
        top.awaiting_merge = merge

    def scalar(self, event: Any) -> None:
        self.count(1, event.start_mark)
        if self.expecting_key():
            merge = event.value == "<<" and event.implicit[0] and event.tag is None
            self.set_key(event.value, event.start_mark, merge=merge)
            return
        tag = event.tag
        if tag == "!include":
            if self.include is not None:
                where = _pointer(self.stack, _pending_token(self.stack))
                value, size = self.include(
                    event.value.strip(),
                    where,
                    event.start_mark.line + 1,
                    event.start_mark.column + 1,
                )
                self.count(size, event.start_mark)
                if event.anchor:
                    self.anchors[event.anchor] = (value, size)
                self.attach(value, size, event.start_mark)
                return
            self.warn(
                f"'!include' is only resolved in RAML; kept as the string {event.value!r}",
                event.start_mark,
            )
        value = self.resolve(event)
        if event.anchor:
            self.anchors[event.anchor] = (value, 1)
        self.attach(value, 1, event.start_mark)

    def resolve(self, event: Any) -> Any:
        tag = event.tag
        value: str = event.value
        if tag is None:
            return resolve_plain(value) if event.implicit[0] else value
        if tag == "!" or tag == "!include":
            return value
        if tag.startswith(_STD):
            short = tag[len(_STD) :]
            if short in ("str", "binary", "timestamp"):
                return value
            resolved = resolve_plain(value)
            ok = {
                "int": isinstance(resolved, int) and not isinstance(resolved, bool),
                "float": isinstance(resolved, int | float) and not isinstance(resolved, bool),
                "bool": isinstance(resolved, bool),
                "null": resolved is None,
            }.get(short)
            if ok:
                return float(resolved) if short == "float" else resolved
            if ok is None:
                self.warn(f"YAML tag !!{short} on a scalar ignored", event.start_mark)
                return resolve_plain(value) if event.implicit[0] else value
            raise self.fail(f"{value!r} is not a valid !!{short}", event.start_mark)
        self.warn(f"unknown YAML tag {tag!r} ignored", event.start_mark)
        return resolve_plain(value) if event.implicit[0] else value

    def start(self, event: Any, is_map: bool) -> None:
        self.count(1, event.start_mark)
        if self.expecting_key():
            raise self.fail(
                "a mapping key must be a plain value, not a mapping or list", event.start_mark
            )
        if len(self.stack) >= self.limits.max_depth:
            raise self.fail(f"nesting deeper than {self.limits.max_depth} levels", event.start_mark)
        if event.anchor:
            self.open_anchors.add(event.anchor)
        frame = _Frame({} if is_map else [], is_map, event.anchor, _child_token(self.stack))
        self.stack.append(frame)

    def end(self, event: Any) -> None:
        frame = self.stack.pop()
        if frame.merges:
            _apply_merges(frame, self.fail, event.start_mark)
        if frame.anchor:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = (frame.obj, frame.size)
        self.attach(frame.obj, frame.size, event.start_mark)

    def alias(self, event: Any) -> None:
        anchor = event.anchor
        if anchor in self.open_anchors:
            raise self.fail(f"alias *{anchor} refers to a value that contains it", event.start_mark)
        if anchor not in self.anchors:
            raise self.fail(f"alias *{anchor} has no anchor &{anchor} before it", event.start_mark)
        value, size = self.anchors[anchor]
        self.count(size, event.start_mark)
        if self.expecting_key():
            if not isinstance(value, str | int | float | bool) and value is not None:
                raise self.fail(
                    "a mapping key must be a plain value, not a mapping or list", event.start_mark
                )
            self.set_key(str(value), event.start_mark)
            return
        self.attach(value, size, event.start_mark)

    def events(self) -> Iterator[Any]:
        loader = _EventLoader(self.text)
        try:
            if hasattr(loader, "raw_parse"):  # libyaml: get_event() returns None at the end
                while (event := loader.get_event()) is not None:
                    yield event
            else:  # pragma: no cover - pure-Python PyYAML
                while loader.check_event():
                    yield loader.get_event()
        finally:
            loader.dispose()

    def run(self) -> Any:
        for event in self.events():
            kind = type(event)
            if kind is yaml.ScalarEvent:
                self.scalar(event)
            elif kind is yaml.MappingStartEvent:
                self.start(event, True)
            elif kind is yaml.SequenceStartEvent:
                self.start(event, False)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                self.end(event)
            elif kind is yaml.AliasEvent:
                self.alias(event)
            elif kind is yaml.DocumentStartEvent:
                self.documents += 1
                if self.documents > 1:
                    raise self.fail(
                        "more than one YAML document in the file; put the API description "
                        "in a single document",
                        event.start_mark,
                    )
        return None if self.root is _NO_VALUE else self.root


def load_yaml(
    text: str,
    source: str,
    limits: Limits,
    *,
    include: IncludeHook | None = None,
) -> tuple[Any, list[Problem]]:
    """Parse one YAML document. Returns the value and non-fatal problems (warnings).

    ``include`` resolves RAML ``!include`` tags; without it they stay strings.
    """
    builder = _Builder(text, source, limits, include)
    try:
        value = builder.run()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = exc.problem or "invalid YAML"
        if (
            mark is not None
            and "cannot start any token" in message
            and _char_at(text, mark) == "\t"
        ):
            message = "found a tab, which YAML does not allow for indentation; indent with spaces"
        elif exc.context:
            message = f"{message} ({exc.context})"
        if exc.context == "while scanning a simple key":
            message += (
                "; a YAML key longer than 1,024 characters must be written as an explicit "
                "key ('? key' on one line, ': value' on the next)"
            )
        raise SpecSyntaxError(
            [
                Problem(
                    _pointer(builder.stack),
                    f"YAML syntax: {message}",
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                    source=source,
                )
            ]
        ) from None
    except yaml.reader.ReaderError as exc:
        line, column = line_col(text, exc.position)
        raise SpecSyntaxError(
            [
                Problem(
                    "",
                    f"character U+{exc.character:04X} is not allowed in YAML; "
                    "remove it or escape it inside a double-quoted string",
                    line=line,
                    column=column,
                    source=source,
                )
            ]
        ) from None
    except yaml.YAMLError as exc:  # pragma: no cover - unmarked YAML errors are rare
        raise SpecSyntaxError([Problem("", f"YAML syntax: {exc}", source=source)]) from None
    return value, builder.warnings


def _char_at(text: str, mark: Any) -> str:
    """The character a parser's mark (0-based line and column) points at ("" past the end)."""
    lines = text.split("\n")
    line = lines[mark.line] if 0 <= mark.line < len(lines) else ""
    return line[mark.column : mark.column + 1]


def _apply_merges(frame: _Frame, fail: Callable[[str, Any], SpecSyntaxError], mark: Any) -> None:
    """``<<: *base`` — keys written in the mapping win over merged ones; earlier merges win."""
    for item in frame.merges:
        for src in item if isinstance(item, list) else [item]:
            if not isinstance(src, dict):
                raise fail("a '<<' merge list may only hold mappings", mark)
            for k, v in src.items():
                frame.obj.setdefault(k, v)


def _child_token(stack: list[_Frame]) -> str:
    if not stack:
        return ""
    top = stack[-1]
    if top.is_map:
        return str(top.key)
    return str(len(top.obj))


def _pending_token(stack: list[_Frame]) -> str | None:
    if not stack:
        return None
    top = stack[-1]
    if top.is_map:
        return str(top.key) if top.has_key else None
    return str(len(top.obj))


def _pointer(stack: list[_Frame], extra: str | None = None) -> str:
    tokens = [f.token for f in stack[1:]]
    if stack and extra is not None:
        tokens.append(extra)
    elif stack and stack[-1].is_map and stack[-1].has_key:
        tokens.append(str(stack[-1].key))
    return "".join("/" + escape_pointer_token(t) for t in tokens)
