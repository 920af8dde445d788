"""What a problem in a description blocks: only what it makes unknowable.

A ``$ref`` inside example data is data (class 1); a dangling reference makes one part of one
operation unknown, and only what hides a route leaves that operation out (class 2). Exact
pointers and wording throughout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.errors import PlanError
from gatebench.core.plan import build_plan
from gatebench.core.spec import SpecResult, read_spec

OK = {"200": {"description": "ok"}}
EVIL = {"$ref": "https://evil.example/x.json"}


def oas(paths: dict[str, Any], version: str = "3.0.3", **extra: Any) -> dict[str, Any]:
    return {"openapi": version, "info": {"title": "t", "version": "1"}, "paths": paths, **extra}


def read(tmp_path: Path, doc: dict[str, Any]) -> SpecResult:
    path = tmp_path / "api.json"
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return read_spec(path)


def warnings_of(result: SpecResult) -> list[tuple[str, str]]:
    return [(p.pointer, p.message) for p in result.warnings]


# -- 1. a $ref inside an example is data ---------------------------------------------------


def test_refs_inside_examples_and_extensions_are_data(tmp_path: Path) -> None:
    media = {
        "schema": {
            "type": "object",
            "example": {"$ref": "https://evil.example/a"},
            "default": {"$ref": "https://evil.example/b"},
            "enum": [{"$ref": "https://evil.example/c"}],
            "examples": [{"$ref": "https://evil.example/d"}],
            "x-sample": {"$ref": "https://evil.example/e"},
        },
        "examples": {"one": {"value": {"$ref": "https://evil.example/g"}}},
    }
    text = {"example": {"$ref": "https://evil.example/f"}}
    doc = oas(
        {
            "/a": {
                "post": {
                    "requestBody": {"content": {"application/json": media, "text/plain": text}},
                    "responses": OK,
                },
                "x-internal": {"$ref": "https://evil.example/h"},
            }
        },
        "3.1.0",
        **{"x-tooling": {"$ref": "https://evil.example/i"}},
    )
    result = read(tmp_path, doc)
    assert result.problems == []
    assert result.api is not None
    (op,) = result.api.operations
    assert op.request_body is not None
    content, plain = op.request_body.content
    assert content.examples == (("one", {"$ref": "https://evil.example/g"}),)
    assert plain.examples == (("default", {"$ref": "https://evil.example/f"}),)
    assert content.schema is not None
    assert content.schema["example"] == {"$ref": "https://evil.example/a"}
    assert content.schema["examples"] == [{"$ref": "https://evil.example/d"}]


def test_a_property_named_example_is_a_schema_not_data(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"example": {"$ref": "#/components/schemas/Thing"}},
    }
    doc = oas(
        {
            "/a": {
                "get": {
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {"application/json": {"schema": schema}},
                        }
                    }
                }
            }
        },
        components={"schemas": {"Thing": {"type": "integer"}}},
    )
    result = read(tmp_path, doc)
    assert result.problems == []
    assert result.api is not None
    media = result.api.operations[0].responses[0].content[0]
    assert media.schema == {
        "type": "object",
        "properties": {"example": {"$ref": "#/schemas/Thing"}},
    }
    assert result.api.schemas == {"Thing": {"type": "integer"}}


def test_an_example_object_reference_is_still_followed(tmp_path: Path) -> None:
    media = {"examples": {"one": {"$ref": "#/components/examples/One"}}}
    doc = oas(
        {
            "/a": {
                "post": {"requestBody": {"content": {"application/json": media}}, "responses": OK}
            }
        },
        components={"examples": {"One": {"value": {"$ref": "not a reference"}}}},
    )
    result = read(tmp_path, doc)
    assert result.problems == []
    assert result.api is not None
    body = result.api.operations[0].request_body
    assert body is not None
    assert body.content[0].examples == (("one", {"$ref": "not a reference"}),)


# -- 2. an error blocks only what it makes unknowable ---------------------------------------


def test_a_dangling_request_body_leaves_the_route_and_says_what_is_unknown(
    tmp_path: Path,
) -> None:
    doc = oas(
        {
            "/a": {
                "post": {
                    "operationId": "make",
                    "requestBody": {"$ref": "#/components/requestBodies/Gone"},
                    "responses": OK,
                }
            },
            "/b": {"get": {"operationId": "list", "responses": OK}},
        }
    )
    result = read(tmp_path, doc)
    assert result.errors == []
    reason = "cannot resolve '#/components/requestBodies/Gone': no 'components' in /"
    assert warnings_of(result) == [
        ("/paths/~1a/post/requestBody/$ref", reason + "; the request body is unknown")
    ]
    assert result.api is not None
    make = result.api.operation("make")
    assert make.request_body is None
    assert make.body_unknown is not None
    assert make.to_dict()["unknown"] == [
        {
            "part": "the request body",
            "pointer": "/paths/~1a/post/requestBody/$ref",
            "reason": reason,
        }
    ]
    workload = {"name": "w", "operation": "make", "injection": {"at_once": 1}}
    # Synthesizing (or sending nothing) needs the unknowable body: an error naming where.
    for body in ({}, {"body": "synthesized"}):
        with pytest.raises(PlanError) as info:
            build_plan({"gateways": ["nginx"], "workloads": [{**workload, **body}]}, result.api)
        assert [(p.pointer, p.message) for p in info.value.errors] == [
            (
                "/x-gatebench/workloads/0/body",
                "operation 'make' has an unknown request body (/paths/~1a/post/requestBody/$ref: "
                f"{reason}); give the body (json, text, binary or none), or fix the description",
            )
        ]
    # A workload that gives the body runs.
    plan = build_plan(
        {"gateways": ["nginx"], "workloads": [{**workload, "body": {"json": {"a": 1}}}]},
        result.api,
    )
    assert plan.workloads[0].body.kind == "json"


def test_a_dangling_schema_reference_makes_only_that_schema_unknown(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "owner": {"$ref": "#/components/schemas/Gone"}},
    }
    doc = oas(
        {
            "/a": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": schema}}},
                    "responses": OK,
                }
            }
        },
        components={"schemas": {"Owner": {"type": "string"}}},
    )
    result = read(tmp_path, doc)
    assert result.errors == []
    assert warnings_of(result) == [
        (
            "/paths/~1a/post/requestBody/content/application~1json/schema/properties/owner/$ref",
            "cannot resolve '#/components/schemas/Gone': no 'Gone' in /components/schemas; "
            "the schema is unknown",
        )
    ]
    assert result.api is not None
    body = result.api.operations[0].request_body
    assert body is not None and body.content[0].schema is not None
    # What is known stays; the unknown part accepts any value.
    assert body.content[0].schema["properties"] == {
        "name": {"type": "string"},
        "owner": {"$ref": "#/schemas/Gone"},
    }
    assert result.api.schemas == {"Gone": {}}
    assert result.api.operations[0].body_unknown is None


def test_a_dangling_path_item_reference_leaves_out_that_path_only(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {"$ref": "#/components/pathItems/Gone"},
            "/b": {"get": {"operationId": "list", "responses": OK}},
        },
        "3.1.0",
    )
    result = read(tmp_path, doc)
    assert result.errors == []
    reason = "cannot resolve '#/components/pathItems/Gone': no 'components' in /"
    assert warnings_of(result) == [
        ("/paths/~1a/$ref", reason + "; the operations of this path are left out")
    ]
    assert result.api is not None
    assert [op.operation_id for op in result.api.operations] == ["list"]
    assert [x.to_dict() for x in result.api.left_out] == [
        {"method": "*", "path": "/a", "pointer": "/paths/~1a/$ref", "reason": reason}
    ]
    with pytest.raises(PlanError) as info:
        build_plan(
            {
                "gateways": ["nginx"],
                "workloads": [{"name": "w", "operation": "GET /a", "injection": {"at_once": 1}}],
            },
            result.api,
        )
    assert [(p.pointer, p.message) for p in info.value.errors] == [
        (
            "/x-gatebench/workloads/0/operation",
            f"operation 'GET /a' is left out of the description: /paths/~1a/$ref: {reason}; "
            "fix the description to benchmark it",
        )
    ]


def test_a_left_out_operation_is_found_by_its_operation_id(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a/{id}": {
                "get": {
                    "operationId": "getA",
                    "parameters": [{"name": "other", "in": "path", "required": True}],
                    "responses": OK,
                }
            },
            "/b": {"get": {"responses": OK}},
        }
    )
    result = read(tmp_path, doc)
    assert result.errors == []
    assert result.api is not None
    (left,) = result.api.left_out
    assert (left.method, left.path, left.operation_id) == ("GET", "/a/{id}", "getA")
    assert left.matches("getA") and left.matches("get /a/{id}") and not left.matches("GET /b")


def test_dangling_response_parameter_and_header_references(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {
                "get": {
                    "parameters": [{"$ref": "#/components/parameters/Gone"}],
                    "responses": {
                        "200": {
                            "description": "ok",
                            "headers": {"X-Rate": {"$ref": "#/components/headers/Gone"}},
                        },
                        "404": {"$ref": "#/components/responses/Gone"},
                    },
                }
            }
        },
        components={"parameters": {}, "headers": {}, "responses": {}},
    )
    result = read(tmp_path, doc)
    assert result.errors == []
    assert warnings_of(result) == [
        (
            "/paths/~1a/get/parameters/0/$ref",
            "cannot resolve '#/components/parameters/Gone': no 'Gone' in /components/parameters; "
            "the parameter is unknown",
        ),
        (
            "/paths/~1a/get/responses/200/headers/X-Rate/$ref",
            "cannot resolve '#/components/headers/Gone': no 'Gone' in /components/headers; "
            "response header 'X-Rate' is unknown",
        ),
        (
            "/paths/~1a/get/responses/404/$ref",
            "cannot resolve '#/components/responses/Gone': no 'Gone' in /components/responses; "
            "response 404 is unknown",
        ),
    ]
    assert result.api is not None
    (op,) = result.api.operations
    assert [r.status for r in op.responses] == ["200"]
    assert [u.part for u in op.unknown] == [
        "the parameter",
        "response header 'X-Rate'",
        "response 404",
    ]


# -- 3. OpenAPI 3.1: JSON Schema 2020-12 references ---------------------------------------


def body_schema_31(tmp_path: Path, schema: Any, schemas: dict[str, Any]) -> SpecResult:
    doc = oas(
        {
            "/a": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": schema}}},
                    "responses": OK,
                }
            }
        },
        "3.1.0",
        components={"schemas": schemas},
    )
    return read(tmp_path, doc)


def test_31_anchors_ids_and_dynamic_refs_resolve_inside_the_document(tmp_path: Path) -> None:
    schemas = {
        "Pet": {
            "$id": "https://pets.example/schemas/pet",
            "type": "object",
            "properties": {
                "name": {"$anchor": "name", "type": "string"},
                "tag": {"$ref": "#/$defs/tag"},
            },
            "$defs": {"tag": {"type": "string", "maxLength": 8}},
        },
        "Tree": {
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
        },
        "Local": {"$anchor": "local", "type": "integer"},
        "Cat": {
            "$id": "https://pets.example/schemas/cat",
            "properties": {"name": {"$ref": "/schemas/pet#name"}},
        },
        "X": {"$id": "/components/schemas/x", "$defs": {"y": {"$anchor": "y", "type": "boolean"}}},
    }
    schema = {
        "type": "object",
        "properties": {
            "pet": {"$ref": "https://pets.example/schemas/pet"},
            "petName": {"$ref": "https://pets.example/schemas/pet#name"},
            "cat": {"$ref": "https://pets.example/schemas/cat"},
            "y": {"$ref": "/components/schemas/x#y"},
            "local": {"$ref": "#local"},
            "tree": {"$ref": "#/components/schemas/Tree"},
        },
    }
    result = body_schema_31(tmp_path, schema, schemas)
    assert result.problems == []
    assert result.api is not None
    body = result.api.operations[0].request_body
    assert body is not None
    assert body.content[0].schema == {
        "type": "object",
        "properties": {
            "pet": {"$ref": "#/schemas/Pet"},
            "petName": {"$ref": "#/schemas/name"},
            "cat": {"$ref": "#/schemas/Cat"},
            "y": {"$ref": "#/schemas/y"},
            "local": {"$ref": "#/schemas/Local"},
            "tree": {"$ref": "#/schemas/Tree"},
        },
    }
    # $id and anchors are gone from the IR (its references are rewritten); the $ref inside
    # the $id'd schema resolved against that $id.
    assert result.api.schemas["Pet"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "tag": {"$ref": "#/schemas/tag"}},
        "$defs": {"tag": {"type": "string", "maxLength": 8}},
    }
    assert result.api.schemas["tag"] == {"type": "string", "maxLength": 8}
    assert result.api.schemas["y"] == {"type": "boolean"}
    assert result.api.schemas["name"] == {"type": "string"}
    # A relative reference inside Cat resolved against Cat's $id.
    assert result.api.schemas["Cat"] == {"properties": {"name": {"$ref": "#/schemas/name"}}}
    assert result.api.schemas["Tree"] == {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#/schemas/Tree"}}},
    }


def test_31_unknown_anchor_and_remote_id_are_located_and_never_fetched(tmp_path: Path) -> None:
    schemas = {"Pet": {"$id": "https://pets.example/schemas/pet", "type": "object"}}
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#nowhere"},
            "b": {"$ref": "https://pets.example/schemas/cat"},
        },
    }
    result = body_schema_31(tmp_path, schema, schemas)
    assert result.errors == []
    at = "/paths/~1a/post/requestBody/content/application~1json/schema/properties"
    assert warnings_of(result) == [
        (
            f"{at}/a/$ref",
            "cannot resolve '#nowhere': no schema of the bundle declares that $id or $anchor; "
            "the schema is unknown",
        ),
        (
            f"{at}/b/$ref",
            "remote reference 'https://pets.example/schemas/cat' is not fetched; put the file in "
            "the bundle (a folder or zip) and refer to it by a relative path; the schema is unknown",
        ),
    ]


def test_30_named_anchor_says_what_30_resolves(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {
                "get": {
                    "parameters": [
                        {"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/Q"}}
                    ],
                    "responses": {"200": {"$ref": "#ok"}},
                }
            }
        },
        components={"schemas": {"Q": {"type": "string"}}},
    )
    result = read(tmp_path, doc)
    assert warnings_of(result) == [
        (
            "/paths/~1a/get/responses/200/$ref",
            "'#ok' uses a named anchor; OpenAPI 3.0 and Swagger 2.0 resolve JSON pointers (#/a/b) "
            "only; response 200 is unknown",
        )
    ]


# -- 6. a single file whose references lead to a sibling folder -----------------------------


def test_a_reference_into_a_sibling_folder_names_the_folder_to_pass(tmp_path: Path) -> None:
    root = tmp_path / "azure"
    spec = root / "network" / "spec" / "swagger.json"
    spec.parent.mkdir(parents=True)
    (root / "common").mkdir()
    (root / "common" / "Error.json").write_text(
        json.dumps({"definitions": {"Error": {"type": "object"}}}), encoding="utf-8"
    )
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {
                "get": {
                    "responses": {
                        "default": {
                            "description": "error",
                            "schema": {"$ref": "../../common/Error.json#/definitions/Error"},
                        }
                    }
                }
            }
        },
    }
    spec.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    result = read_spec(spec)
    assert result.errors == []
    assert warnings_of(result) == [
        (
            "/paths/~1a/get/responses/default/schema/$ref",
            "'../../common/Error.json#/definitions/Error' points outside the bundle (the path "
            "leaves the bundle): a single file's bundle is its own folder; pass the folder that "
            f"holds both instead: gatebench validate {root} --entry network/spec/swagger.json; "
            "the schema is unknown",
        )
    ]
    # As told: the folder, with the entry.
    whole = read_spec(root, entry="network/spec/swagger.json")
    assert whole.problems == []
    assert whole.api is not None and whole.api.schemas == {"Error": {"type": "object"}}
    # An upload stays confined to its bundle, and is told nothing about the disk.
    upload = read_spec(spec.read_bytes(), name="swagger.json")
    assert [m for _, m in warnings_of(upload)] == [
        "'../../common/Error.json#/definitions/Error' points outside the bundle (the path "
        "leaves the bundle); the schema is unknown"
    ]


# -- 4. Swagger 2.0 / AutoRest x-ms-paths ----------------------------------------------------


def test_x_ms_paths_are_operations_routed_on_the_path_plus_the_fixed_query(
    tmp_path: Path,
) -> None:
    vm = "/subscriptions/{sub}/vms/{vm}"
    sub = {"name": "sub", "in": "path", "required": True, "type": "string"}
    name = {"name": "vm", "in": "path", "required": True, "type": "string"}
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            vm: {"get": {"operationId": "VMs_Get", "parameters": [sub, name], "responses": OK}}
        },
        "x-ms-paths": {
            vm + "?action=restart": {
                "post": {"operationId": "VMs_Restart", "parameters": [sub, name], "responses": OK}
            },
            vm + "?action=start&force=true": {
                "post": {"operationId": "VMs_Start", "parameters": [sub, name], "responses": OK}
            },
        },
    }
    result = read(tmp_path, doc)
    assert result.problems == []
    assert result.api is not None
    ops = {op.operation_id: op for op in result.api.operations}
    assert sorted(ops) == ["VMs_Get", "VMs_Restart", "VMs_Start"]
    restart, start = ops["VMs_Restart"], ops["VMs_Start"]
    assert (restart.method, restart.route_path) == ("POST", vm)
    assert restart.pointer == "/x-ms-paths/~1subscriptions~1{sub}~1vms~1{vm}?action=restart/post"
    assert [(p.name, p.required, p.schema, p.examples) for p in start.query_params] == [
        ("action", True, {"type": "string", "enum": ["start"]}, ("start",)),
        ("force", True, {"type": "string", "enum": ["true"]}, ("true",)),
    ]
    assert ops["VMs_Get"].query_params == ()


def test_a_bad_server_of_one_operation_leaves_out_that_operation_only(tmp_path: Path) -> None:
    bad = {"url": "https://{region}.example.com/v1"}
    doc = oas(
        {
            "/a": {"get": {"operationId": "a", "servers": [bad], "responses": OK}},
            "/b": {"servers": [bad], "get": {"responses": OK}, "put": {"responses": OK}},
            "/c": {"get": {"operationId": "c", "responses": OK}},
        },
        servers=[{"url": "https://api.example.com"}],
    )
    result = read(tmp_path, doc)
    assert result.errors == []
    assert warnings_of(result) == [
        (
            "/paths/~1a/get/servers/0/url",
            "server variable 'region' is not defined in 'variables'; the operation is left out",
        ),
        (
            "/paths/~1b/servers/0/url",
            "server variable 'region' is not defined in 'variables'; the operation is left out",
        ),
    ]
    assert result.api is not None
    assert [op.operation_id for op in result.api.operations] == ["c"]
    assert [(x.method, x.path) for x in result.api.left_out] == [
        ("GET", "/a"),
        ("GET", "/b"),
        ("PUT", "/b"),
    ]
    # In the document's servers, the same problem hides every route: an error.
    doc["servers"] = [bad]
    assert [(p.pointer, p.message) for p in read(tmp_path, doc).errors] == [
        ("/servers/0/url", "server variable 'region' is not defined in 'variables'")
    ]
