"""Block-style YAML for generated configurations, written by libyaml when it is there.

PyYAML's pure-Python emitter dominates rendering a description of thousands of routes
(several seconds per gateway); libyaml's (``CSafeDumper``) writes the same bytes for the
plain data configurations hold (checked by the golden tests) in a fraction of the time.
"""

from __future__ import annotations

from typing import Any

import yaml

try:
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Dumper = yaml.SafeDumper


def dump_block_yaml(data: Any, *, allow_unicode: bool) -> str:
    """Block style, insertion order (deterministic), long lines kept."""
    text: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=allow_unicode,
        width=1 << 20,
    )
    return text


__all__ = ["dump_block_yaml"]
