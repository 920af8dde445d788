"""Load + validate + build the IR for a generated description of 1,500 operations (~4 MB).

Target: under 1 s on this machine. Each figure is the median of several runs in a fresh
process (cold: imports and validator set-up included) and in a warm process, for JSON and
YAML, with the CPU used by other processes during the measurement.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from ._machine import CpuWindow

TITLE = "Reading a 1,500-operation description"
OPERATIONS = 1500
RUNS = 5


def generate(operations: int = OPERATIONS) -> dict[str, Any]:
    """A description shaped like large real APIs: shared components, refs, examples, prose."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    resources = operations // 3
    prose = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. "
    for i in range(resources):
        schemas[f"Item{i}"] = {
            "type": "object",
            "description": prose * 3,
            "required": ["id", "name"],
            "properties": {
                "id": {"type": "integer", "format": "int64", "description": "Identifier. " + prose},
                "name": {"type": "string", "maxLength": 200, "example": f"item {i}"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "price": {"type": "number", "minimum": 0},
                "status": {"type": "string", "enum": ["available", "pending", "sold"]},
                "owner": {"$ref": f"#/components/schemas/Item{(i + 1) % resources}"},
                "createdAt": {"type": "string", "format": "date-time"},
            },
        }
        ok = {
            "description": "The item. " + prose,
            "headers": {"X-Rate-Limit": {"schema": {"type": "integer"}, "description": prose}},
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/Item{i}"},
                    "example": {"id": i, "name": f"item {i}", "tags": ["a", "b"], "price": 9.5},
                }
            },
        }
        errors = {
            "400": {"$ref": "#/components/responses/BadRequest"},
            "404": {"$ref": "#/components/responses/NotFound"},
        }
        paths[f"/v1/resource{i}"] = {
            "get": {
                "operationId": f"list{i}",
                "summary": f"List resource {i}",
                "description": prose * 6,
                "tags": [f"group{i % 20}"],
                "parameters": [
                    {"$ref": "#/components/parameters/Limit"},
                    {"$ref": "#/components/parameters/Offset"},
                    {
                        "name": "filter",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": prose,
                    },
                ],
                "responses": {"200": ok, **errors},
            },
            "post": {
                "operationId": f"create{i}",
                "description": prose * 4,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": f"#/components/schemas/Item{i}"},
                            "example": {"name": "new"},
                        }
                    },
                },
                "responses": {"201": ok, **errors},
                "security": [{"bearer": []}],
            },
        }
        paths[f"/v1/resource{i}/{{id}}"] = {
            "parameters": [
                {
                    "name": "id",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "integer"},
                    "description": prose,
                }
            ],
            "get": {
                "operationId": f"get{i}",
                "description": prose * 5,
                "responses": {"200": ok, **errors},
            },
        }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Generated", "version": "1.0", "description": prose * 20},
        "servers": [{"url": "https://api.example.com"}],
        "security": [],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "parameters": {
                "Limit": {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "maximum": 100},
                },
                "Offset": {"name": "offset", "in": "query", "schema": {"type": "integer"}},
            },
            "responses": {
                "BadRequest": {"description": "Bad request. " + prose},
                "NotFound": {"description": "Not found. " + prose},
            },
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


_CHILD = """
import sys, time, json
t0 = time.perf_counter()
from gatebench.core.spec import read_spec
r = read_spec(sys.argv[1], strict=sys.argv[2] == "strict")
cold = time.perf_counter() - t0
warm = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    r2 = read_spec(sys.argv[1], strict=sys.argv[2] == "strict")
    warm.append(time.perf_counter() - t)
import resource
print(json.dumps({"cold": cold, "warm": warm, "ops": len(r.api.operations), "errors": len(r.errors),
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _measure(path: Path, mode: str, warm_runs: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), mode, str(warm_runs)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def run() -> str:
    doc = generate()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "JSON": Path(tmp) / "big.json",
            "YAML": Path(tmp) / "big.yaml",
        }
        files["JSON"].write_text(json.dumps(doc, indent=2), encoding="utf-8")
        files["YAML"].write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        for label, path in files.items():
            for mode in ("default", "strict"):
                colds, warms, rss = [], [], []
                with CpuWindow() as cpu:
                    for _ in range(RUNS if mode == "default" else 1):
                        result = _measure(path, mode, warm_runs=3 if mode == "default" else 1)
                        assert result["errors"] == 0 and result["ops"] == OPERATIONS, result
                        colds.append(result["cold"])
                        warms.extend(result["warm"])
                        rss.append(result["maxrss_mb"])
                rows.append(
                    (
                        label,
                        path.stat().st_size,
                        mode,
                        statistics.median(colds),
                        statistics.median(warms),
                        min(warms),
                        max(warms),
                        max(rss),
                        cpu.others_pct,
                    )
                )
    lines = [
        f"A generated OpenAPI 3.0 description with {OPERATIONS:,} operations (shared components, "
        "`$ref`s, examples, prose), read by `gatebench.core.spec.read_spec`: bytes → YAML/JSON → "
        "safety limits → `$ref` resolution → openapi-spec-validator conformance → IR. "
        "`strict` adds openapi-spec-validator's semantic walk (`gatebench validate --strict`). "
        "Cold = first call in a fresh process (imports and validator set-up included); "
        "warm = later calls. Target: under 1 s.",
        "",
        "| format | size | mode | cold (median) | warm (median) | warm min–max | peak RSS | CPU used by others |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, size, mode, cold, warm, lo, hi, rss, others in rows:
        lines.append(
            f"| {label} | {size / 1e6:.1f} MB | {mode} | {cold:.2f} s | {warm:.2f} s | "
            f"{lo:.2f}–{hi:.2f} s | {rss:.0f} MB | {others:.0f} % |"
        )
    default_json = next(r for r in rows if r[0] == "JSON" and r[2] == "default")
    default_yaml = next(r for r in rows if r[0] == "YAML" and r[2] == "default")
    verdict = "met" if max(default_json[3], default_yaml[3]) < 1.0 else "NOT met"
    lines += [
        "",
        f"Target (< 1 s, default mode, cold): {verdict} — JSON {default_json[3]:.2f} s, YAML {default_yaml[3]:.2f} s.",
        f"Measured at {time.strftime('%H:%M UTC', time.gmtime())}.",
    ]
    return "\n".join(lines)
