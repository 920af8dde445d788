"""Every resource and data block of infra/ checked against the Google provider's own schema
(`terraform providers schema -json`, hashicorp/google 6.50.0; the types infra/ uses are
vendored in tests/data/terraform/ by scripts/filter_provider_schema.py): argument and block
names exist, required arguments and blocks are present, read-only attributes are not set,
arguments are not written as blocks nor blocks as arguments, and literal values fit the
attribute's type. Expressions (``${...}``) are not evaluated: their types are Terraform's
business at plan time; a literal string, number, bool, list or object is checked.

Resources of other providers are checked against ``OTHER_PROVIDERS`` (hand-written from their
documentation) or refused by name.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import hcl2

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "tests" / "data" / "terraform" / "google-6.50.0-schema.filtered.json"
META = {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection"}

# hashicorp/time 0.13.1, time_sleep (registry docs, "time_sleep"): every argument optional.
OTHER_PROVIDERS: dict[str, dict[str, Any]] = {
    "time_sleep": {
        "attributes": {
            "create_duration": {"type": "string", "optional": True},
            "destroy_duration": {"type": "string", "optional": True},
            "triggers": {"type": ["map", "string"], "optional": True},
            "id": {"type": "string", "computed": True},
        },
    },
}


@dataclass(frozen=True)
class SchemaProblem:
    path: str
    line: int
    block: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.block}: {self.message}"


@cache
def provider_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SCHEMA.read_text())
    return data


def _is_expression(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("${") and value.endswith("}")


def _literal_string(value: Any) -> str | None:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return None


def _type_problem(value: Any, expected: Any, name: str) -> str | None:
    """Why a literal value cannot be converted to the attribute's type (None: it can, or it
    is an expression Terraform evaluates later)."""
    if _is_expression(value) or expected == "dynamic":
        return None
    text = _literal_string(value)
    if text is not None:
        if "${" in text or "%{" in text:
            return None  # a template: a string, unless it is all one interpolation
        if expected == "string":
            return None
        if expected == "number" and re.fullmatch(r"-?\d+(\.\d+)?", text):
            return None
        if expected == "bool" and text in ("true", "false"):
            return None
        return f"{name}: expected {_type_name(expected)}, got the string {text!r}"
    if isinstance(value, bool):
        if expected in ("bool", "string"):
            return None
        return f"{name}: expected {_type_name(expected)}, got {str(value).lower()}"
    if isinstance(value, int | float):
        if expected in ("number", "string"):
            return None
        return f"{name}: expected {_type_name(expected)}, got the number {value}"
    if isinstance(value, list):
        if isinstance(expected, list) and expected[0] in ("list", "set"):
            for index, item in enumerate(value):
                problem = _type_problem(item, expected[1], f"{name}[{index}]")
                if problem:
                    return problem
            return None
        if isinstance(expected, list) and expected[0] == "tuple":
            return None
        return f"{name}: expected {_type_name(expected)}, got a list"
    if isinstance(value, dict):
        if value.get("__is_block__"):
            return f"{name} is an argument: write `{name} = ...`, not a block"
        if isinstance(expected, list) and expected[0] == "map":
            for key, item in value.items():
                problem = _type_problem(item, expected[1], f"{name}[{key}]")
                if problem:
                    return problem
            return None
        if isinstance(expected, list) and expected[0] == "object":
            unknown = sorted({k.strip('"') for k in value} - set(expected[1]))
            if unknown:
                return f"{name}: unknown attributes {unknown} of the object"
            return None
        return f"{name}: expected {_type_name(expected)}, got an object"
    return None


def _type_name(expected: Any) -> str:
    if isinstance(expected, str):
        return expected
    if expected[0] in ("list", "set", "map"):
        return f"{expected[0]}({_type_name(expected[1])})"
    return expected[0]


def _suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_block(schema: dict[str, Any], body: dict[str, Any], where: str, top: bool) -> list[str]:
    """Problems of one block's body against its schema block; ``where`` prefixes nested names."""
    problems: list[str] = []
    attributes: dict[str, Any] = schema.get("attributes", {})
    blocks: dict[str, Any] = schema.get("block_types", {})
    present: set[str] = set()
    for key, value in body.items():
        if key.startswith("__") or (top and key in META):
            continue
        if key == "dynamic":
            for entry in value:
                for quoted, dyn in entry.items():
                    name = quoted.strip('"')
                    present.add(name)
                    if name not in blocks:
                        problems.append(
                            f"unknown block {where}{name!r} (dynamic){_suggest(name, sorted(blocks))}"
                        )
                        continue
                    for content in dyn.get("content", []):
                        problems += check_block(
                            blocks[name]["block"], content, f"{where}{name}.", top=False
                        )
            continue
        present.add(key)
        if key in attributes:
            spec = attributes[key]
            if spec.get("computed") and not spec.get("optional") and not spec.get("required"):
                problems.append(f"{where}{key!r} is read-only (computed by the provider)")
                continue
            problem = _type_problem(value, spec["type"], f"{where}{key}")
            if problem:
                problems.append(problem)
        elif key in blocks:
            items = value if isinstance(value, list) else [value]
            if not all(isinstance(i, dict) and i.get("__is_block__") for i in items):
                problems.append(f"{where}{key!r} is a block: write `{key} {{ ... }}`")
                continue
            spec = blocks[key]
            if spec.get("max_items") and len(items) > spec["max_items"]:
                problems.append(
                    f"{where}{key!r}: at most {spec['max_items']} block(s), got {len(items)}"
                )
            for item in items:
                problems += check_block(spec["block"], item, f"{where}{key}.", top=False)
        else:
            problems.append(
                f"unknown argument {where}{key!r}{_suggest(key, sorted([*attributes, *blocks]))}"
            )
    for key, spec in sorted(attributes.items()):
        if spec.get("required") and key not in present:
            problems.append(f"missing required argument {where}{key!r}")
    for key, spec in sorted(blocks.items()):
        if spec.get("min_items", 0) >= 1 and key not in present:
            problems.append(f"missing required block {where}{key!r}")
    return problems


def _line(text: str, kind: str, rtype: str, name: str) -> int:
    match = re.search(rf'^{kind}\s+"{rtype}"\s+"{name}"', text, re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else 0


def check_file(path: Path, root: Path = ROOT) -> list[SchemaProblem]:
    text = path.read_text()
    with path.open() as fh:
        doc = hcl2.load(fh)
    schema = provider_schema()
    rel = str(path.relative_to(root))
    problems: list[SchemaProblem] = []
    for kind, section, catalogue in (
        ("resource", "resource", schema["resource_schemas"]),
        ("data", "data", schema["data_source_schemas"]),
    ):
        for block in doc.get(section, []):
            for quoted_type, named in block.items():
                rtype = quoted_type.strip('"')
                for quoted_name, body in named.items():
                    name = quoted_name.strip('"')
                    label = f"{'data.' if kind == 'data' else ''}{rtype}.{name}"
                    line = _line(text, kind, rtype, name)
                    if rtype.startswith("google_"):
                        if rtype not in catalogue:
                            known = sorted(catalogue)
                            problems.append(
                                SchemaProblem(
                                    rel,
                                    line,
                                    label,
                                    f"{rtype} is not in the vendored provider schema "
                                    f"{SCHEMA.name}{_suggest(rtype, known)}; if it is a real "
                                    "type, rerun scripts/filter_provider_schema.py",
                                )
                            )
                            continue
                        block_schema = catalogue[rtype]["block"]
                    elif kind == "resource" and rtype in OTHER_PROVIDERS:
                        block_schema = OTHER_PROVIDERS[rtype]
                    else:
                        problems.append(
                            SchemaProblem(
                                rel,
                                line,
                                label,
                                f"no schema for {rtype}: add it to OTHER_PROVIDERS",
                            )
                        )
                        continue
                    for message in check_block(block_schema, body, "", top=True):
                        problems.append(SchemaProblem(rel, line, label, message))
    return problems


def check_tree(infra: Path, root: Path = ROOT) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    for path in sorted(infra.rglob("*.tf")):
        problems += check_file(path, root)
    return problems
