"""KrakenD's official configuration schema (v2.13, copied into tests/data/schemas: see
tests/data/SOURCES.md), for tests: every https ``$id`` is resolved to its local file, so
validation never touches the network."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft201909Validator
from referencing import Registry, Resource

from paths import DATA

SCHEMA_DIR = DATA / "schemas" / "krakend-v2.13"
SCHEMA_BASE = "https://www.krakend.io/schema/v2.13/"


@cache
def krakend_validator() -> Draft201909Validator:
    """The official KrakenD schema, every https ``$id`` resolved to its local file."""
    assert (SCHEMA_DIR / "endpoint.json").is_file(), (
        f"the KrakenD schema is missing in {SCHEMA_DIR}"
    )
    resources = []
    for path in sorted(SCHEMA_DIR.rglob("*.json")):
        data = json.loads(path.read_text())
        uri = SCHEMA_BASE + path.relative_to(SCHEMA_DIR).as_posix()
        if path.name == "_root.json":
            continue
        resources.append((uri, Resource.from_contents(data, default_specification=_draft())))
    registry: Registry[Any] = Registry().with_resources(resources)
    root = json.loads((SCHEMA_DIR / "krakend.json").read_text())
    root.setdefault("$id", SCHEMA_BASE + "krakend.json")
    return Draft201909Validator(root, registry=registry)


def _draft() -> Any:
    from referencing.jsonschema import DRAFT201909

    return DRAFT201909
