"""Durations and sizes as users write them: ``30s``, ``500ms``, ``2m``; ``8.6MB``, ``16MiB``.

Sizes: ``kB``/``MB``/``GB`` are decimal (the paper's 8.6 MB image is 8,600,000 bytes),
``KiB``/``MiB``/``GiB`` binary; ``B`` or a bare number is bytes. A bare duration is seconds.
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|kB|KB|MB|GB|KiB|MiB|GiB)?\s*$")
_DURATION_FACTORS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_SIZE_FACTORS = {
    None: 1,
    "B": 1,
    "kB": 1000,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}


def _given(value: object) -> str:
    """A value that is no string, in words (YAML's null is nothing, not Python's None)."""
    words = {type(None): "nothing", dict: "a mapping", list: "a list"}
    return words.get(type(value), repr(value))


def parse_duration(value: object) -> float:
    """Seconds, from ``30s`` / ``500ms`` / ``2m`` / ``1h`` / a number. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as '30s', got a boolean")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration such as '30s' or '500ms', got {_given(value)}")
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"expected a duration such as '30s', '500ms' or '2m', got {value!r}")
    return float(match.group(1)) * _DURATION_FACTORS[match.group(2)]


def parse_size(value: object) -> int:
    """Bytes, from ``8.6MB`` / ``16MiB`` / ``512`` / ``1kB``. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as '8.6MB', got a boolean")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    if isinstance(value, float):
        raise ValueError(f"write a fractional size with a unit, such as '{value}MB'")
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as '8.6MB', got {_given(value)}")
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"expected a size such as '8.6MB', '16MiB' or '512B', got {value!r}")
    return round(float(match.group(1)) * _SIZE_FACTORS[match.group(2)])


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    if seconds < 120 or seconds % 60:
        return f"{seconds:g}s"
    return f"{seconds / 60:g}m"


def format_size(size: int) -> str:
    for unit, factor in (("GB", 1000**3), ("MB", 1000**2), ("kB", 1000)):
        if size >= factor:
            return f"{size / factor:g}{unit}"
    return f"{size}B"
