#!/usr/bin/env python3
"""Write the part of the Google provider's schema that infra/ uses, for the offline check of
every resource and data block (tests/unit/test_terraform_schema.py).

The input is the output of `terraform providers schema -json` for hashicorp/google 6.50.0
(a configuration that requires only that provider, after `terraform init`), gzipped or not.
The output keeps, for every resource and data source type any .tf file under infra/ declares,
its block schema as the provider gives it without the prose (descriptions), plus where it
came from:

    scripts/filter_provider_schema.py SCHEMA.json[.gz] [OUT.json]

OUT defaults to tests/data/terraform/google-6.50.0-schema.filtered.json. Rerun it after
adding a resource type to infra/ (the test says so when a type is missing).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "terraform" / "google-6.50.0-schema.filtered.json"
PROVIDER = "registry.terraform.io/hashicorp/google"
_BLOCK = re.compile(r'^(resource|data)\s+"(google_[a-z0-9_]+)"\s+"[^"]+"\s*\{', re.MULTILINE)


def used_types(infra: Path) -> dict[str, set[str]]:
    used: dict[str, set[str]] = {"resource": set(), "data": set()}
    for tf in sorted(infra.rglob("*.tf")):
        for kind, rtype in _BLOCK.findall(tf.read_text()):
            used[kind].add(rtype)
    return used


def without_prose(value: object) -> object:
    if isinstance(value, dict):
        return {
            k: without_prose(v)
            for k, v in value.items()
            # the prose of a spec, not an attribute named "description"
            if not (k in ("description", "description_kind") and isinstance(v, str))
        }
    if isinstance(value, list):
        return [without_prose(v) for v in value]
    return value


def filtered(
    schema: dict[str, object], used: dict[str, set[str]], source: str
) -> dict[str, object]:
    provider = schema["provider_schemas"][PROVIDER]  # type: ignore[index]
    missing = sorted(
        [t for t in used["resource"] if t not in provider["resource_schemas"]]
        + [t for t in used["data"] if t not in provider["data_source_schemas"]]
    )
    if missing:
        raise SystemExit(f"the provider schema has no {', '.join(missing)}")
    return {
        "source": source,
        "format_version": schema["format_version"],
        "provider": PROVIDER,
        "version": "6.50.0",
        "resource_schemas": {
            t: without_prose(provider["resource_schemas"][t]) for t in sorted(used["resource"])
        },
        "data_source_schemas": {
            t: without_prose(provider["data_source_schemas"][t]) for t in sorted(used["data"])
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[1])
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        schema = json.load(fh)
    source = (
        "terraform providers schema -json, hashicorp/google 6.50.0 (MPL-2.0), "
        f"filtered to the types infra/ uses by scripts/filter_provider_schema.py from {path.name}"
    )
    out = Path(argv[2]) if len(argv) == 3 else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    data = filtered(schema, used_types(ROOT / "infra"), source)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(
        f"{out}: {len(data['resource_schemas'])} resources, {len(data['data_source_schemas'])} data sources"
    )  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
