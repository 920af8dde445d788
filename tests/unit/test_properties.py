"""Property: any mutation of a valid description yields an IR or located problems — never
another exception. Mutations are structural (replace, delete or add values anywhere) and
textual (arbitrary bytes inserted, removed or replaced in the serialized file).

Also: a ``$ref`` inside example data stays data, whatever it says; OpenAPI 3.1 anchors and
``$id``s resolve to the schema that declares them, whatever their names; and the targeted
JSON position lookup agrees with the full walk."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gatebench.core.errors import PlanError
from gatebench.core.plan import load_plan
from gatebench.core.spec import Limits, SpecResult, read_spec
from gatebench.core.spec._locate import json_positions, json_positions_of
from paths import EXAMPLES

SEEDS: list[tuple[str, bytes]] = [
    ("auction.yaml", (EXAMPLES / "auction" / "openapi.yaml").read_bytes()),
    ("petstore.yaml", (EXAMPLES / "petstore" / "openapi.yaml").read_bytes()),
    (
        "swagger.json",
        json.dumps(
            {
                "swagger": "2.0",
                "info": {"title": "t", "version": "1"},
                "host": "h.example.com",
                "basePath": "/b",
                "securityDefinitions": {"k": {"type": "apiKey", "in": "header", "name": "X-K"}},
                "paths": {
                    "/p/{id}": {
                        "parameters": [
                            {"name": "id", "in": "path", "required": True, "type": "integer"}
                        ],
                        "get": {
                            "operationId": "g",
                            "security": [{"k": []}],
                            "responses": {
                                "200": {"description": "ok", "schema": {"$ref": "#/definitions/D"}}
                            },
                        },
                        "post": {
                            "consumes": ["multipart/form-data"],
                            "parameters": [{"name": "f", "in": "formData", "type": "file"}],
                            "responses": {"201": {"description": "c"}},
                        },
                    }
                },
                "definitions": {
                    "D": {"type": "object", "properties": {"self": {"$ref": "#/definitions/D"}}}
                },
            }
        ).encode(),
    ),
    (
        "anchors31.json",
        json.dumps(
            {
                "openapi": "3.1.0",
                "info": {"title": "t", "version": "1"},
                "paths": {
                    "/a": {
                        "post": {
                            "requestBody": {
                                "content": {
                                    "application/json": {
                                        "schema": {"$ref": "https://s.example/pet#name"},
                                        "examples": {"e": {"value": {"$ref": "https://evil/x"}}},
                                    }
                                }
                            },
                            "responses": {
                                "200": {
                                    "description": "ok",
                                    "content": {
                                        "application/json": {
                                            "schema": {"$ref": "#tree"},
                                            "example": {"$ref": "#/nowhere"},
                                        }
                                    },
                                }
                            },
                            "x-sample": {"$ref": "//evil/y"},
                        }
                    }
                },
                "components": {
                    "schemas": {
                        "Pet": {
                            "$id": "https://s.example/pet",
                            "properties": {"name": {"$anchor": "name", "type": "string"}},
                        },
                        "Tree": {
                            "$dynamicAnchor": "tree",
                            "properties": {"kids": {"items": {"$dynamicRef": "#tree"}}},
                        },
                    }
                },
            }
        ).encode(),
    ),
    (
        "api.raml",
        b"#%RAML 1.0\ntitle: R\nbaseUri: http://x/{version}\nversion: v1\nresourceTypes:\n  c:\n    get:\n    post?:\n"
        b"traits:\n  t:\n    queryParameters:\n      q?: string\n/items:\n  type: c\n  post:\n    body:\n      application/json:\n"
        b"        properties:\n          a: integer\n  /{id}:\n    get:\n      is: [t]\n",
    ),
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)
interesting_keys = st.sampled_from(
    [
        "$ref",
        "paths",
        "get",
        "GET",
        "parameters",
        "in",
        "name",
        "schema",
        "servers",
        "url",
        "security",
        "requestBody",
        "responses",
        "x-gatebench",
        "workloads",
        "operation",
        "injection",
        "/{x}",
        "/a/{b}",
        "type",
        "uses",
        "is",
        "body",
        "uriParameters",
        "definitions",
        "components",
        "$anchor",
        "$id",
        "$dynamicRef",
        "example",
        "examples",
        "value",
        "x-sample",
    ]
)


def containers(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(containers(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(containers(v, (*path, i)))
    return out


def get_in(value: Any, path: tuple[Any, ...]) -> Any:
    for token in path:
        value = value[token]
    return value


@st.composite
def structural_mutation(draw: st.DrawFn) -> tuple[str, bytes]:
    name, raw = draw(st.sampled_from(SEEDS))
    if name.endswith(".raml"):
        header, body = raw.split(b"\n", 1)
        data = yaml.safe_load(body)
    else:
        data = json.loads(raw) if name.endswith(".json") else yaml.safe_load(raw)
    for _ in range(draw(st.integers(1, 3))):
        paths = containers(data)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if not path:
            continue
        parent = get_in(data, path[:-1])
        if action == "replace":
            parent[path[-1]] = draw(json_values)
        elif action == "delete":
            del parent[path[-1]]
        else:
            target = get_in(data, path)
            if isinstance(target, dict):
                target[draw(interesting_keys | st.text(max_size=6))] = draw(json_values)
            elif isinstance(target, list):
                target.append(draw(json_values))
    as_json = draw(st.booleans()) and not name.endswith(".raml")
    text = json.dumps(data) if as_json else yaml.safe_dump(data, allow_unicode=True)
    if name.endswith(".raml"):
        return name, header + b"\n" + text.encode()
    return ("m.json" if as_json else "m.yaml"), text.encode()


@st.composite
def textual_mutation(draw: st.DrawFn) -> tuple[str, bytes]:
    name, raw = draw(st.sampled_from(SEEDS))
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        chunk = draw(
            st.binary(min_size=1, max_size=4)
            | st.sampled_from(
                [
                    b"{",
                    b"}",
                    b"[",
                    b'"',
                    b"'",
                    b":",
                    b"\n",
                    b"\t",
                    b"&a",
                    b"*a",
                    b"!include x",
                    b"\x00",
                    b"\xff",
                    b"$ref: http://x",
                ]
            )
        )
        if action == "insert":
            data[pos:pos] = chunk
        elif action == "delete":
            del data[pos : pos + len(chunk)]
        else:
            data[pos : pos + len(chunk)] = chunk
    return name, bytes(data)


def check(result: SpecResult) -> None:
    assert isinstance(result, SpecResult)
    for problem in result.problems:
        assert problem.severity in ("error", "warning", "note")
        assert isinstance(problem.pointer, str) and (
            problem.pointer == "" or problem.pointer.startswith("/")
        )
        assert problem.message
        assert problem.format()
    if result.errors:
        assert result.api is None
        return
    assert result.api is not None
    json.dumps(result.api.to_dict())
    try:
        load_plan(result)
    except PlanError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.pointer == "" or problem.pointer.startswith("/")


LIMITS = Limits(max_bytes=2_000_000)
SETTINGS = settings(
    max_examples=int(os.environ.get("GATEBENCH_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(structural_mutation())
def test_structural_mutations_give_an_ir_or_located_problems(case: tuple[str, bytes]) -> None:
    name, data = case
    check(read_spec(data, name=name, limits=LIMITS))


@SETTINGS
@given(textual_mutation())
def test_textual_mutations_give_an_ir_or_located_problems(case: tuple[str, bytes]) -> None:
    name, data = case
    check(read_spec(data, name=name, limits=LIMITS))


NOT_A_URI = (
    b'{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"post": '
    b'{"requestBody": {"content": {"application/json": {"schema": {"$ref": '
    b'"https://[s.example/pet#name"}}}}, "responses": {"200": {"description": "ok"}}}}}, '
    b'"components": {"schemas": {"P": {"$id": "https://s.example/pet", "$anchor": "name"}}}}'
)


def test_a_reference_that_is_no_uri_is_a_located_problem() -> None:
    """A textual mutation found it: "https://[host" is no URI (urllib raises on it while
    resolving against a schema's $id); the schema is then unknown, said where, not a crash."""
    result = read_spec(NOT_A_URI, name="anchors31.json", limits=LIMITS)
    check(result)
    (problem,) = result.warnings
    assert problem.pointer.endswith("/schema/$ref")
    assert "'https://[s.example/pet#name' is not a valid reference (Invalid IPv6 URL)" in (
        problem.message
    )


def test_seeds_are_valid(tmp_path: Path) -> None:
    for name, data in SEEDS:
        result = read_spec(data, name=name)
        assert result.errors == [], (name, [p.format() for p in result.errors])


# -- a $ref inside example data is data --------------------------------------------------

refs = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "https://evil.example/x",
            "//evil/y",
            "../../etc/passwd",
            "#/nowhere",
            "#anchor",
            "file:///x",
        ]
    ),
)
ref_data = st.recursive(
    st.builds(lambda r: {"$ref": r}, refs) | json_values,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["$ref", "$id", "$anchor", "a"]), children, max_size=3)
    ),
    max_leaves=6,
)


@SETTINGS
@given(
    ref_data,
    st.sampled_from(["example", "examples/e/value", "schema/example", "schema/default", "x-any"]),
)
def test_refs_in_example_data_are_data(value: Any, where: str) -> None:
    media: dict[str, Any] = {"schema": {"type": "object"}}
    slot = media
    tokens = where.split("/")
    for token in tokens[:-1]:
        slot = slot.setdefault(token, {})
    slot[tokens[-1]] = value
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {
                "post": {
                    "requestBody": {"content": {"application/json": media}},
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    result = read_spec(json.dumps(doc).encode(), name="api.json")
    assert result.errors == []
    assert [p for p in result.problems if "reference" in p.message or "$ref" in p.message] == []
    assert result.api is not None
    body = result.api.operations[0].request_body
    assert body is not None
    (content,) = body.content
    if where == "example":
        assert content.examples == (("default", value),)
    elif where == "examples/e/value":
        assert content.examples == (("e", value),)
    elif where.startswith("schema/"):
        assert content.schema is not None and content.schema[tokens[-1]] == value


# -- OpenAPI 3.1 anchors and $ids ----------------------------------------------------------

names = st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]{0,10}", fullmatch=True)


@SETTINGS
@given(st.lists(st.tuples(names, st.booleans()), min_size=1, max_size=5, unique_by=lambda t: t[0]))
def test_31_anchors_and_ids_resolve_to_their_schema(declared: list[tuple[str, bool]]) -> None:
    schemas: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    for i, (name, by_id) in enumerate(declared):
        key = f"S{i}"
        if by_id:
            schemas[key] = {"$id": f"https://s.example/{name}", "type": "integer", "minimum": i}
            properties[f"p{i}"] = {"$ref": f"https://s.example/{name}"}
        else:
            schemas[key] = {"$anchor": name, "type": "integer", "minimum": i}
            properties[f"p{i}"] = {"$ref": f"#{name}"}
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": properties}
                            }
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {"schemas": schemas},
    }
    result = read_spec(json.dumps(doc).encode(), name="api.json")
    assert result.problems == [], [p.format() for p in result.problems]
    assert result.api is not None
    body = result.api.operations[0].request_body
    assert body is not None and body.content[0].schema is not None
    got = body.content[0].schema["properties"]
    for i in range(len(declared)):
        ref = got[f"p{i}"]["$ref"]
        assert ref.startswith("#/schemas/")
        target = result.api.schemas[ref.removeprefix("#/schemas/")]
        assert target == {"type": "integer", "minimum": i}


# -- positions -------------------------------------------------------------------------------


@SETTINGS
@given(json_values, st.sampled_from([None, 0, 1, 2, 4]))
def test_targeted_positions_agree_with_the_full_walk(value: Any, indent: int | None) -> None:
    doc = {"root": value, "list": [value, {"k": value}]}
    text = json.dumps(doc, indent=indent)
    everything = json_positions(text)
    for pointer, position in everything.items():
        assert json_positions_of(text, [pointer])[pointer] == position
    assert json_positions_of(text, list(everything)) == everything
