"""Writes the large, real-world-shaped specs in ``large/`` (deterministic; re-run to refresh).

    .venv/bin/python tests/data/adversarial/generate_large.py

Shapes seen in public APIs: deep resource trees with tenants and sub-resources, literal
siblings of templates (``me``, ``search``, ``$count``, ``_bulk``), Google-style custom verbs
(``{name}:cancel``), file extensions (``{name}.{ext}``), OData keys (``Products('{id}')``),
versioned base paths, trailing-slash twins, operationIds with spaces, dots, quotes and
unicode, missing operationIds, every method. Three input formats: OpenAPI 3.0 (YAML),
Swagger 2.0 (JSON) and RAML 1.0. ``tests/unit/test_render_large.py`` checks the committed
files equal this script's output.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent / "large"
RESOURCES = [
    "projects",
    "items",
    "users",
    "orders",
    "invoices",
    "files",
    "teams",
    "café-menus",
    "line_items",
    "webhooks",
    "audit.logs",
    "search-indexes",
    "tags",
    "comments",
    "releases",
]
LITERALS = ["me", "search", "$count", "_bulk", "export.csv", "latest", "~archive", "@self"]
VERBS = ["cancel", "undelete", "batchGet"]
ODD_IDS = [
    'get "quoted" {x}',
    "list items; DROP",
    "créer l'élément",
    "op.with.dots",
    "tab\tin id",
    "日本語の操作",
    "$(whoami)",
    "a/b\\c",
    "",
]


def _param(name: str, where: str = "path", v2: bool = False) -> dict[str, Any]:
    if v2:
        return {"name": name, "in": where, "required": where == "path", "type": "string"}
    return {"name": name, "in": where, "required": where == "path", "schema": {"type": "string"}}


def _paths(rng: random.Random, count: int) -> list[tuple[str, list[str]]]:
    """(path template, path parameter names), unique, ``count`` of them roughly."""
    out: dict[str, list[str]] = {}
    while len(out) < count:
        depth = rng.randint(1, 4)
        parts: list[str] = []
        names: list[str] = []
        for level in range(depth):
            resource = rng.choice(RESOURCES)
            parts.append(resource)
            if level < depth - 1 or rng.random() < 0.6:
                kind = rng.random()
                name = f"{resource.replace('-', '_').replace('.', '_').replace('é', 'e')}Id{level}"
                if kind < 0.7:
                    parts.append("{" + name + "}")
                    names.append(name)
                elif kind < 0.85:
                    parts.append(rng.choice(LITERALS))
                else:
                    parts.append("{" + name + "}:" + rng.choice(VERBS))
                    names.append(name)
        if rng.random() < 0.08:
            parts.append("{file}.{ext}")
            names += ["file", "ext"]
        if rng.random() < 0.05:
            parts.append("Products('{key}')")
            names.append("key")
        path = "/" + "/".join(parts)
        if rng.random() < 0.05:
            path += "/"
        out.setdefault(path, names)
    return sorted(out.items())


def _operation_id(rng: random.Random, n: int) -> str | None:
    if rng.random() < 0.1:
        return None
    if rng.random() < 0.15:
        return rng.choice(ODD_IDS) + f" #{n}"
    return f"operation{n}"


def openapi3(rng: random.Random) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    n = 0
    for path, names in _paths(rng, 130):
        item: dict[str, Any] = {"parameters": [_param(name) for name in names]}
        for method in rng.sample(
            ["get", "put", "post", "delete", "patch", "head", "options"], rng.randint(1, 4)
        ):
            n += 1
            op: dict[str, Any] = {"responses": {"200": {"description": "ok"}}}
            op_id = _operation_id(rng, n)
            if op_id is not None:
                op["operationId"] = op_id
            if method in ("post", "put", "patch"):
                op["requestBody"] = {
                    "content": {"application/json": {"schema": {"type": "object"}}}
                }
            if rng.random() < 0.3:
                op["parameters"] = [_param("page", "query"), _param("X-Request-Tag", "header")]
            item[method] = op
        paths[path] = item
    return {
        "openapi": "3.0.3",
        "info": {"title": "Large generated API (OpenAPI 3.0)", "version": "2024-01"},
        "servers": [
            {
                "url": "https://api.example.com/{version}",
                "variables": {"version": {"default": "v2"}},
            }
        ],
        "paths": paths,
    }


def swagger2(rng: random.Random) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    n = 0
    for path, names in _paths(rng, 70):
        item: dict[str, Any] = {"parameters": [_param(name, v2=True) for name in names]}
        for method in rng.sample(["get", "put", "post", "delete", "patch"], rng.randint(1, 3)):
            n += 1
            op: dict[str, Any] = {"responses": {"200": {"description": "ok"}}}
            op_id = _operation_id(rng, n)
            if op_id is not None:
                op["operationId"] = op_id
            if method in ("post", "put"):
                op["parameters"] = [{"name": "body", "in": "body", "schema": {"type": "object"}}]
            elif method == "patch":
                op["consumes"] = ["application/x-www-form-urlencoded"]
                op["parameters"] = [{"name": "field", "in": "formData", "type": "string"}]
            item[method] = op
        paths[path] = item
    return {
        "swagger": "2.0",
        "info": {"title": "Large generated API (Swagger 2.0)", "version": "1"},
        "host": "legacy.example.com",
        "basePath": "/api/v1",
        "schemes": ["https"],
        "paths": paths,
    }


def raml(rng: random.Random) -> str:
    """RAML 1.0: nested resources, inherited uriParameters, a versioned baseUri."""
    lines = [
        "#%RAML 1.0",
        "title: Large generated API (RAML 1.0)",
        "version: v3",
        "baseUri: https://raml.example.com/{version}",
        "mediaType: application/json",
    ]

    def emit(depth: int, indent: str, budget: list[int]) -> None:
        for resource in rng.sample(RESOURCES, rng.randint(2, 4)):
            if budget[0] <= 0:
                return
            name = resource.replace("-", "_").replace(".", "_").replace("é", "e") + f"Id{depth}"
            lines.append(f"{indent}/{resource}:")
            for method in rng.sample(["get", "post"], rng.randint(1, 2)):
                lines.append(f"{indent}  {method}:")
                lines.append(f"{indent}    description: {method} {resource}")
                budget[0] -= 1
            lines.append(f"{indent}  /{{{name}}}:")
            lines.append(f"{indent}    uriParameters:")
            lines.append(f"{indent}      {name}: string")
            for method in rng.sample(["get", "put", "delete", "patch"], rng.randint(1, 3)):
                lines.append(f"{indent}    {method}:")
                lines.append(f"{indent}      displayName: {method} one {resource}")
                budget[0] -= 1
            literal = rng.choice(["me", "search", "latest"])
            lines.append(f"{indent}  /{literal}:")
            lines.append(f"{indent}    get:")
            budget[0] -= 1
            if depth < 2:
                emit(depth + 1, indent + "    ", budget)

    emit(0, "", [120])
    return "\n".join(lines) + "\n"


def main() -> None:
    HERE.mkdir(parents=True, exist_ok=True)
    (HERE / "openapi3.yaml").write_text(
        yaml.safe_dump(openapi3(random.Random(1)), sort_keys=False, allow_unicode=True, width=200)
    )
    (HERE / "swagger2.json").write_text(
        json.dumps(swagger2(random.Random(2)), indent=1, ensure_ascii=False) + "\n"
    )
    (HERE / "api.raml").write_text(raml(random.Random(3)))


if __name__ == "__main__":
    main()
