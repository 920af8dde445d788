"""Documents of a bundle, parsed once each, with positions for problems on demand."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from gatebench.core.errors import Problem, SpecSyntaxError
from gatebench.core.spec._apib import looks_like_blueprint
from gatebench.core.spec._bundle import Bundle, OutsideBundle, join_inside
from gatebench.core.spec._json import load_json
from gatebench.core.spec._limits import Limits
from gatebench.core.spec._locate import Position, json_positions_of, nearest, yaml_positions
from gatebench.core.spec._text import decode
from gatebench.core.spec._yaml import load_yaml

Format = Literal["json", "yaml", "raml", "text", "apib"]


@dataclass
class Document:
    name: str
    format: Format
    text: str
    data: Any
    _positions: dict[str, Position] | None = field(default=None, repr=False)
    _located: set[str] = field(default_factory=set, repr=False)

    def locate(self, pointers: Iterable[str]) -> None:
        """Find the positions of many pointers at once (JSON: one targeted pass)."""
        if self.format != "json":
            return
        wanted = [p for p in pointers if p not in self._located]
        if not wanted:
            return
        found = json_positions_of(self.text, wanted)
        self._positions = {**(self._positions or {}), **found}
        self._located.update(wanted)

    def position(self, pointer: str) -> Position | None:
        if self.format in ("text", "apib"):
            return None
        if self.format == "json":
            self.locate([pointer])
        elif self._positions is None:
            self._positions = yaml_positions(self.text)
        assert self._positions is not None
        return nearest(self._positions, pointer)


def detect_format(name: str, text: str) -> Format:
    head = text.lstrip("\ufeff")
    if head.startswith("#%RAML"):
        return "raml"
    lower = name.lower()
    stripped = head.lstrip()
    if not stripped.startswith(("{", "[")) and looks_like_blueprint(name, head[:65536]):
        return "apib"
    if lower.endswith(".json") or (
        stripped[:1] in ("{", "[") and not lower.endswith((".yaml", ".yml", ".raml"))
    ):
        return "json"
    return "yaml"


class Reader:
    """Parses bundle files on demand; collects parse warnings; locates problems."""

    def __init__(self, bundle: Bundle, limits: Limits) -> None:
        self.bundle = bundle
        self.limits = limits
        self.documents: dict[str, Document] = {}
        self.warnings: list[Problem] = list(bundle.warnings)
        self._include_stack: list[str] = []

    @property
    def entry(self) -> Document:
        return self.document(self.bundle.entry)

    def document(self, name: str) -> Document:
        if name in self.documents:
            return self.documents[name]
        try:
            data = self.bundle.read(name)
        except FileNotFoundError:
            raise SpecSyntaxError(
                [Problem("", "no such file in the bundle", source=name)]
            ) from None
        except OutsideBundle as exc:
            raise SpecSyntaxError([Problem("", str(exc), source=name)]) from None
        text = decode(data, name)
        fmt = detect_format(name, text)
        warnings: list[Problem] = []
        if fmt == "apib":
            value = None
        elif fmt == "json":
            value, warnings = load_json(text, name, self.limits)
        else:
            hook = self._include_hook(name) if fmt == "raml" or self._include_stack else None
            value, warnings = load_yaml(text, name, self.limits, include=hook)
        self.warnings.extend(warnings)
        doc = Document(name, fmt, text, value)
        self.documents[name] = doc
        return doc

    def locate_all(self, problems: Iterable[Problem]) -> None:
        """Prepare the positions of many problems at once (see :meth:`Document.locate`)."""
        wanted: dict[str, list[str]] = {}
        for problem in problems:
            if problem.line is None:
                wanted.setdefault(problem.source or self.bundle.entry, []).append(problem.pointer)
        for name, pointers in wanted.items():
            doc = self.documents.get(name)
            if doc is not None:
                doc.locate(pointers)

    def locate(self, problem: Problem) -> Problem:
        """Fill in line and column from the problem's document, when they are missing."""
        if problem.line is not None:
            return problem
        name = problem.source or self.bundle.entry
        doc = self.documents.get(name)
        if doc is None:
            return problem
        pos = doc.position(problem.pointer)
        if pos is None:
            return problem
        return Problem(problem.pointer, problem.message, problem.severity, pos[0], pos[1], name)

    def _include_hook(self, base: str) -> Any:
        def include(target: str, where: str, line: int, column: int) -> tuple[Any, int]:
            """The included value; an include that cannot be read is an error on record and
            null in its place, so that every such problem is said at once, not the first."""
            try:
                return resolve(target, where, line, column)
            except SpecSyntaxError as exc:
                self.warnings.extend(exc.problems)
                return None, 1

        def resolve(target: str, where: str, line: int, column: int) -> tuple[Any, int]:
            def fail(message: str) -> SpecSyntaxError:
                return SpecSyntaxError(
                    [
                        Problem(
                            where,
                            f"!include {target!r}: {message}",
                            line=line,
                            column=column,
                            source=base,
                        )
                    ]
                )

            try:
                parts = urlsplit(target)
            except ValueError as exc:
                raise fail(f"not a valid path ({exc})") from None
            if parts.scheme or parts.netloc:
                raise fail(
                    "remote files are never fetched; put the file in the bundle and use a relative path"
                )
            try:
                name = join_inside(base, unquote(parts.path))
            except OutsideBundle as exc:
                raise fail(str(exc)) from None
            if name in self._include_stack or name == base:
                raise fail("the file includes itself (directly or through other files)")
            if len(self._include_stack) >= self.limits.max_include_depth:
                raise fail(f"more than {self.limits.max_include_depth} nested includes")
            try:
                found = self.bundle.exists(name)
            except OutsideBundle as exc:
                raise fail(str(exc)) from None
            if not found:
                raise fail("no such file in the bundle")
            ext = posixpath.splitext(name)[1].lower()
            if ext not in (".raml", ".yaml", ".yml", ".json"):
                raw = self.bundle.read(name)
                return decode(raw, name), 1
            self._include_stack.append(base)
            try:
                doc = self.document(name)
            finally:
                self._include_stack.pop()
            data = (
                IncludedJson(doc.data)
                if doc.format == "json" and isinstance(doc.data, dict)
                else doc.data
            )
            return data, _count_values(data)

        return include


class IncludedJson(dict[str, Any]):
    """A JSON file a RAML ``!include`` brought in: in a type's place it is a JSON Schema, whose
    ``required`` list says which properties are required, never a RAML type declaration."""


def _count_values(value: Any) -> int:
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count
