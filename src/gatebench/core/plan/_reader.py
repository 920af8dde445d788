"""Reading the section while collecting located problems: the typed value readers every
section uses (whole numbers in a range, durations, sizes, strings) and the mapping check.

Which keys a mapping may hold is the shipped JSON Schema's to say
(``schemas/x-gatebench.schema.json``, checked with jsonschema-rs by ``_schema``): the reader
reports the keys the schema refused, where the walk meets them, with a suggestion.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from gatebench.core.errors import Problem, pointer
from gatebench.core.plan._model import MAX_BODY_BYTES, MAX_DURATION_S
from gatebench.core.plan._schema import SectionSchema, keys, node
from gatebench.core.units import parse_duration, parse_size

_CREDENTIAL_WORDS = re.compile(
    r"(credential|secret|password|passwd|private[_-]?key|access[_-]?key|key[_-]?file|"
    r"service[_-]?account[_-]?key|api[_-]?key|token|auth[_-]?key)",
    re.IGNORECASE,
)


def is_credential_key(key: Any) -> bool:
    """A key that names a credential (refused at the top and in ``infrastructure``)."""
    return bool(_CREDENTIAL_WORDS.search(str(key)))


class Reader:
    """Collects located problems while walking the section."""

    def __init__(self, base: str, source: str | None, schema: SectionSchema) -> None:
        self.base = base
        self.source = source
        self.schema = schema
        self.problems: list[Problem] = []

    def error(self, where: Sequence[str | int], message: str) -> None:
        self.problems.append(Problem(self.base + pointer(*where), message, source=self.source))

    def warn(self, where: Sequence[str | int], message: str) -> None:
        self.problems.append(
            Problem(self.base + pointer(*where), message, "warning", source=self.source)
        )

    def mapping(
        self,
        value: Any,
        where: Sequence[str | int],
        part: str,
        *,
        skip_credentials: bool = False,
    ) -> dict[str, Any]:
        """``value`` when it is a mapping, each key the schema refused (``part``: its
        ``$defs`` entry) reported with the closest allowed key."""
        what = node(part)["title"]
        if not isinstance(value, dict):
            self.error(where, f"{what} must be a mapping, got {_kind(value)}")
            return {}
        refused = self.schema.refused(where)
        allowed = list(keys(part))
        for key in value:
            if skip_credentials and is_credential_key(key):
                continue  # reported by _refuse_credentials, with the reason
            if str(key) in refused:
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                suggestion = (
                    f"did you mean {hint[0]!r}?"
                    if hint
                    else f"expected one of: {', '.join(allowed)}"
                )
                self.error([*where, key], f"unknown key {key!r} in {what}; {suggestion}")
        return value

    def integer(self, value: Any, where: Sequence[str | int], low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(where, f"expected a whole number from {low} to {high:,}, got {_show(value)}")
            return None
        if not low <= value <= high:
            self.error(where, f"expected a whole number from {low} to {high:,}, got {value:,}")
            return None
        return value

    def duration(
        self, value: Any, where: Sequence[str | int], *, allow_zero: bool = False
    ) -> float | None:
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            self.error(where, str(exc))
            return None
        if seconds > MAX_DURATION_S:
            self.error(where, f"at most 24h, got {_show(value)}")
            return None
        if seconds == 0 and not allow_zero:
            self.error(where, "a duration must be more than 0")
            return None
        return seconds

    def size(self, value: Any, where: Sequence[str | int]) -> int | None:
        try:
            size = parse_size(value)
        except ValueError as exc:
            self.error(where, str(exc))
            return None
        if size > MAX_BODY_BYTES:
            self.error(where, f"at most 1GB, got {_show(value)}")
            return None
        return size

    def string(self, value: Any, where: Sequence[str | int], what: str) -> str | None:
        if not isinstance(value, str) or not value:
            self.error(where, f"{what} must be a non-empty string, got {_show(value)}")
            return None
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a number"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
