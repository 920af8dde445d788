"""Building the IR: precedence rules, security, bodies, ids, and what blocks benchmarking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gatebench.core.ir import Api, Operation
from gatebench.core.spec import SpecResult, read_spec


def spec(tmp_path: Path, doc: dict[str, Any], name: str = "api.json") -> SpecResult:
    path = tmp_path / name
    path.write_text(
        json.dumps(doc) if name.endswith(".json") else yaml.safe_dump(doc), encoding="utf-8"
    )
    return read_spec(path)


def api_of(result: SpecResult) -> Api:
    assert result.errors == [], [p.format() for p in result.errors]
    assert result.api is not None
    return result.api


def op(api: Api, method: str, path: str) -> Operation:
    for o in api.operations:
        if (o.method, o.path_template) == (method, path):
            return o
    raise AssertionError(f"no {method} {path}")


def oas(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths, **extra}


OK = {"200": {"description": "ok"}}


def test_server_precedence_operation_over_path_over_document(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {
                "servers": [{"url": "https://path.example.com/p"}],
                "get": {"servers": [{"url": "https://op.example.com/o"}], "responses": OK},
                "post": {"responses": OK},
            },
            "/b": {"get": {"responses": OK}},
        },
        servers=[{"url": "https://doc.example.com/d"}, {"url": "https://second.example.com"}],
    )
    api = api_of(spec(tmp_path, doc))
    assert op(api, "GET", "/a").base_url == "https://op.example.com/o"
    assert op(api, "POST", "/a").base_url == "https://path.example.com/p"
    assert op(api, "GET", "/b").base_url == "https://doc.example.com/d"
    assert op(api, "GET", "/b").route_path == "/d/b"


def test_server_variables_take_their_defaults_and_relative_urls_stay_relative(
    tmp_path: Path,
) -> None:
    doc = oas(
        {
            "/a": {"get": {"responses": OK}},
            "/b": {"get": {"servers": [{"url": "v2/"}], "responses": OK}},
        },
        servers=[
            {
                "url": "{scheme}://api.example.com/{base}",
                "variables": {
                    "scheme": {"default": "https", "enum": ["http", "https"]},
                    "base": {"default": "v1"},
                },
            }
        ],
    )
    api = api_of(spec(tmp_path, doc))
    assert op(api, "GET", "/a").base_url == "https://api.example.com/v1"
    assert op(api, "GET", "/b").base_url == "v2/"
    assert op(api, "GET", "/b").route_path == "/v2/b"


def test_server_variable_without_definition_blocks(tmp_path: Path) -> None:
    doc = oas({"/a": {"get": {"responses": OK}}}, servers=[{"url": "https://{region}.example.com"}])
    result = spec(tmp_path, doc)
    assert [(p.pointer, p.message) for p in result.errors] == [
        ("/servers/0/url", "server variable 'region' is not defined in 'variables'")
    ]


def test_no_servers_means_root(tmp_path: Path) -> None:
    api = api_of(spec(tmp_path, oas({"/a": {"get": {"responses": OK}}})))
    assert (api.operations[0].base_url, api.operations[0].route_path) == ("", "/a")


def test_swagger_base_path_without_host_is_relative(tmp_path: Path) -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "basePath": "/api",
        "paths": {"/x": {"get": {"responses": OK}}},
    }
    api = api_of(spec(tmp_path, doc))
    assert (api.operations[0].base_url, api.operations[0].route_path) == ("/api", "/api/x")


def test_a_swagger_host_written_as_a_url_is_read_as_its_host(tmp_path: Path) -> None:
    """host: http://x.example.com made the route //x.example.com/api/a: a path no client
    sends, which every gateway was configured with."""
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "host": "http://x.example.com",
        "basePath": "api",
        "paths": {"/a": {"get": {"responses": OK}}},
    }
    result = spec(tmp_path, doc)
    [operation] = api_of(result).operations
    assert (operation.base_url, operation.route_path) == ("http://x.example.com/api", "/api/a")
    said = {(p.pointer, p.message) for p in result.problems}
    assert ("/basePath", "basePath must start with '/'; read as '/api'") in said
    assert (
        "/host",
        "host 'http://x.example.com' is a URL; Swagger 2.0's host is a name and an optional "
        "port (the scheme goes in 'schemes', the path in 'basePath'): read as 'x.example.com'",
    ) in said
    # a URL that is no URL either is a located error, never a crash (urlsplit raises on '[x')
    result = spec(tmp_path, {**doc, "host": "http://[x"})
    assert [(p.pointer, p.severity) for p in result.errors] == [("/host", "error")]


@pytest.mark.parametrize(
    ("url", "route", "warned"),
    [
        (
            "//api.example.com/v1",
            "/v1/a",
            False,
        ),  # a network-path reference: its host is not a path
        ("api.example.com/v1", "/api.example.com/v1/a", True),  # relative, as OpenAPI says
        ("localhost:8080/api", "/localhost:8080/api/a", True),
        ("v1.2/api", "/v1.2/api/a", False),
    ],
)
def test_a_server_url_without_a_scheme(tmp_path: Path, url: str, route: str, warned: bool) -> None:
    """//host/v1 made the route //api.example.com/v1/a; a relative URL whose first segment
    reads like a host is still a path (OpenAPI), with a warning that says how to write a host."""
    doc = oas({"/a": {"get": {"responses": OK}}}, servers=[{"url": url}])
    result = spec(tmp_path, doc)
    assert api_of(result).operations[0].route_path == route
    said = [p.message for p in result.problems if p.pointer == "/servers/0/url"]
    assert said == (
        [
            f"server URL {url!r} has no scheme, so it is a path and routes start at '/{url}'; "
            f"its first segment reads like a host name: if it is one, write 'https://{url}'"
        ]
        if warned
        else []
    )


def test_a_raml_base_uri_without_a_scheme_is_warned_about_as_a_server_url_is(
    tmp_path: Path,
) -> None:
    (tmp_path / "api.raml").write_text(
        "#%RAML 1.0\ntitle: T\nbaseUri: api.example.com/v1\n/a:\n  get:\n", encoding="utf-8"
    )
    result = read_spec(tmp_path / "api.raml")
    assert api_of(result).operations[0].route_path == "/api.example.com/v1/a"
    assert [(p.pointer, p.line, p.message[:59]) for p in result.problems] == [
        ("/baseUri", 3, "baseUri 'api.example.com/v1' has no scheme, so it is a path")
    ]


def test_path_level_parameters_are_merged_and_overridden(tmp_path: Path) -> None:
    doc = oas(
        {
            "/items/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "trace", "in": "header", "schema": {"type": "string"}},
                ],
                "get": {
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        },
                        {
                            "name": "q",
                            "in": "query",
                            "schema": {"type": "string"},
                            "example": "abc",
                        },
                    ],
                    "responses": OK,
                },
                "delete": {"responses": OK},
            }
        }
    )
    api = api_of(spec(tmp_path, doc))
    get = op(api, "GET", "/items/{id}")
    assert [(p.name, p.schema) for p in get.path_params] == [("id", {"type": "integer"})]
    assert [p.name for p in get.header_params] == ["trace"]
    assert [(p.name, p.examples) for p in get.query_params] == [("q", ("abc",))]
    assert op(api, "DELETE", "/items/{id}").path_params[0].schema == {"type": "string"}


def test_path_parameter_missing_from_template_blocks(tmp_path: Path) -> None:
    doc = oas(
        {
            "/bid/{id}": {
                "post": {
                    "parameters": [
                        {
                            "name": "auctionId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": OK,
                }
            }
        }
    )
    result = spec(tmp_path, doc)
    reason = (
        "path parameter 'auctionId' is not in the path template '/bid/{id}' (its variables: id)"
    )
    assert [(p.pointer, p.message) for p in result.errors] == [
        (
            "/paths",
            "every operation is left out (1 problem above); there is nothing to benchmark",
        )
    ]
    assert [(p.pointer, p.message, p.line) for p in result.warnings] == [
        ("/paths/~1bid~1{id}/post/parameters/0", reason + "; the operation is left out", 1)
    ]
    # The same operation beside a readable one: only it is left out.
    doc["paths"]["/ok"] = {"get": {"responses": OK}}
    result = spec(tmp_path, doc)
    assert result.errors == []
    api = api_of(result)
    assert [op.route_path for op in api.operations] == ["/ok"]
    assert [x.to_dict() for x in api.left_out] == [
        {
            "method": "POST",
            "path": "/bid/{id}",
            "pointer": "/paths/~1bid~1{id}/post/parameters/0",
            "reason": reason,
        }
    ]


def test_template_variable_without_parameter_is_a_warning(tmp_path: Path) -> None:
    result = spec(tmp_path, oas({"/u/{name}": {"get": {"responses": OK}}}))
    api = api_of(result)
    assert api.operations[0].path_params[0].name == "name"
    assert [
        (p.severity, p.message) for p in result.problems if "template variable" in p.message
    ] == [
        (
            "warning",
            "path template variable 'name' has no path parameter; treated as a required string",
        )
    ]


@pytest.mark.parametrize(
    ("method", "message"),
    [
        (
            "fetch",
            "unknown method 'fetch'; expected one of get, put, post, delete, options, head, patch, trace",
        ),
        (
            "GET",
            "unknown method 'GET'; expected one of get, put, post, delete, options, head, patch, trace; "
            "methods are written in lower case",
        ),
    ],
)
def test_unknown_method_leaves_that_operation_out(
    tmp_path: Path, method: str, message: str
) -> None:
    result = spec(tmp_path, oas({"/a": {method: {"responses": OK}, "put": {"responses": OK}}}))
    assert result.errors == []
    assert [(p.pointer, p.message) for p in result.warnings] == [
        (f"/paths/~1a/{method}", message + "; the operation is left out")
    ]
    api = api_of(result)
    assert [(op.method, op.path_template) for op in api.operations] == [("PUT", "/a")]
    assert [(x.method, x.path, x.pointer) for x in api.left_out] == [
        (method, "/a", f"/paths/~1a/{method}")
    ]


def test_templates_differing_only_in_variable_names_share_a_route(tmp_path: Path) -> None:
    # Common in real descriptions (Google's `/v1/{parent}` and `/v1/{name}`): one route for
    # the gateway, both operations kept; the backend tells them apart.
    result = spec(
        tmp_path,
        oas(
            {
                "/p/{id}": {"get": {"operationId": "a", "responses": OK}},
                "/p/{petId}": {"get": {"operationId": "b", "responses": OK}},
            }
        ),
    )
    assert [o.operation_id for o in api_of(result).operations] == ["a", "b"]
    assert [(p.pointer, p.message) for p in result.warnings if "same route" in p.message] == [
        (
            "/paths/~1p~1{petId}/get",
            "GET /p/{petId} has the same route as GET /p/{id} (only variable names differ): "
            "gateways route both alike and the backend tells them apart",
        )
    ]


def test_a_variable_used_twice_takes_one_value(tmp_path: Path) -> None:
    result = spec(tmp_path, oas({"/a/{x}/b/{x}": {"get": {"responses": OK}}}))
    assert [p.name for p in api_of(result).operations[0].path_params] == ["x"]
    assert "path variable 'x' appears twice in the template; both places take the same value" in [
        p.message for p in result.warnings
    ]


def test_path_parameters_in_the_query_tail_of_a_key_are_sent_as_query_parameters(
    tmp_path: Path,
) -> None:
    path_param = {"name": "filename", "in": "path", "required": True, "schema": {"type": "string"}}
    doc = oas(
        {
            "/export?filename={filename}": {"get": {"parameters": [path_param], "responses": OK}},
            "/send/#env/{filename}": {"post": {"parameters": [path_param], "responses": OK}},
        }
    )
    result = spec(tmp_path, doc)
    api = api_of(result)
    export = op(api, "GET", "/export")
    assert (export.path_params, [(p.name, p.location) for p in export.query_params]) == (
        (),
        [("filename", "query")],
    )
    assert op(api, "POST", "/send/").parameters == ()
    assert sorted(p.message for p in result.warnings if p.message.startswith("path parameter")) == [
        "path parameter 'filename' is in the query part of the path key ('?filename={filename}'); it is sent as a query parameter",
        "path parameter 'filename' only appears after '#' in the path key ('#env/{filename}'), which requests never carry; it is ignored",
    ]


def test_parameters_without_name_or_location_are_ignored_with_a_warning(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {
                "get": {
                    "parameters": [{"in": "query", "schema": {}}, {"name": "x", "in": "form"}],
                    "responses": OK,
                }
            }
        }
    )
    result = spec(tmp_path, doc)
    assert api_of(result).operations[0].parameters == ()
    assert [(p.pointer, p.message) for p in result.warnings if "ignored" in p.message] == [
        ("/paths/~1a/get/parameters/0", "a parameter without a 'name' cannot be sent; ignored"),
        (
            "/paths/~1a/get/parameters/1/in",
            "parameter 'x': 'in' must be one of path, query, header, cookie; got 'form' (the parameter is ignored)",
        ),
    ]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("pets", "a path must start with '/'; got 'pets'"),
        (
            "/a\tb",
            "a path may not contain U+0009 (a control or line-break character); write it percent-encoded",
        ),
        ("/a%zz", "'%' in a path must start a %XX escape"),
        ("/a/{b", "unbalanced '{' or '}' in the path template '/a/{b'"),
    ],
)
def test_bad_path_templates_leave_their_operations_out(
    tmp_path: Path, path: str, message: str
) -> None:
    result = spec(
        tmp_path, oas({path: {"get": {"responses": OK}}, "/ok": {"get": {"responses": OK}}})
    )
    pointer = "/paths/" + path.replace("~", "~0").replace("/", "~1")
    assert result.errors == []
    assert [(p.pointer, p.message) for p in result.warnings] == [
        (pointer, message + "; the operation is left out")
    ]
    api = api_of(result)
    assert [op.path_template for op in api.operations] == ["/ok"]
    assert [(x.method, x.path, x.reason) for x in api.left_out] == [("GET", path, message)]
    # Alone, the bad path leaves nothing to benchmark: that is an error.
    alone = spec(tmp_path, oas({path: {"get": {"responses": OK}}}))
    assert [(p.pointer, p.message) for p in alone.errors] == [
        (
            "/paths",
            "every operation is left out (1 problem above); there is nothing to benchmark",
        )
    ]


def test_path_key_suffixes_route_on_the_part_before_them(tmp_path: Path) -> None:
    # The convention of AWS descriptions in APIs.guru: operations sharing a path told apart
    # by a '#...' suffix (a header or query discriminator the backend reads).
    doc = oas(
        {
            "/#Action=Start": {"post": {"operationId": "start", "responses": OK}},
            "/#Action=Stop": {"post": {"operationId": "stop", "responses": OK}},
            "/tags/{arn}#tagKeys": {
                "delete": {
                    "parameters": [
                        {
                            "name": "arn",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": OK,
                }
            },
            "/search?mode=fast": {"get": {"responses": OK}},
        }
    )
    result = spec(tmp_path, doc)
    api = api_of(result)
    assert [(o.operation_id, o.method, o.path_template) for o in api.operations] == [
        ("start", "POST", "/"),
        ("stop", "POST", "/"),
        ("get_search", "GET", "/search"),
        ("delete_tags_arn", "DELETE", "/tags/{arn}"),
    ]
    assert api.operations[0].pointer == "/paths/~1#Action=Start/post"
    assert [(p.pointer, p.message) for p in result.problems if p.severity == "note"] == [
        (
            "/paths",
            "4 paths carry a '#...' or '?...' suffix (e.g. '/#Action=Start'); requests never "
            "send it, so those operations are routed on the part before it",
        )
    ]


def test_security_default_override_and_none(tmp_path: Path) -> None:
    doc = oas(
        {
            "/default": {"get": {"responses": OK}},
            "/key": {"get": {"security": [{"key": []}], "responses": OK}},
            "/open": {"get": {"security": [], "responses": OK}},
            "/optional": {"get": {"security": [{}, {"bearer": []}], "responses": OK}},
            "/optional-too": {"get": {"security": [{"bearer": []}, {}], "responses": OK}},
            "/both": {"get": {"security": [{"bearer": [], "key": []}], "responses": OK}},
        },
        security=[{"bearer": []}],
        components={
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "Bearer"},
                "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            }
        },
    )
    api = api_of(spec(tmp_path, doc))
    labels = {o.path_template: o.security_label for o in api.operations}
    assert labels == {
        "/default": "bearer",
        "/key": "apiKey-header",
        "/open": "none",
        "/optional": "bearer",
        "/optional-too": "bearer",
        "/both": "bearer+apiKey-header",
    }
    # {} anywhere makes the credentials optional: sent when the plan gives them, never said to
    # be required ({} first dropped the bearer alternative; {} last was 'requires oauth2')
    optional = {o.path_template for o in api.operations if o.auth_optional}
    assert optional == {"/open", "/optional", "/optional-too"}
    key = op(api, "GET", "/key").security[0].schemes[0]
    assert (key.location, key.param_name) == ("header", "X-API-Key")


def test_optional_authentication_is_optional_wherever_it_is_written(tmp_path: Path) -> None:
    """RAML's ``null`` in ``securedBy`` (as OpenAPI's ``{}``): first, it dropped the scheme
    beside it; last, it was dropped, and the plan said the operation 'requires' the scheme.
    Now either way the scheme is sent when the plan gives credentials, and not asked for."""
    from gatebench.core.plan import build_plan

    (tmp_path / "api.raml").write_text(
        "#%RAML 1.0\ntitle: T\nsecuritySchemes:\n  tok:\n    type: OAuth 2.0\n"
        "/first:\n  get:\n    securedBy: [null, tok]\n"
        "/last:\n  get:\n    securedBy: [tok, null]\n"
        "/only:\n  get:\n    securedBy: [tok]\n",
        encoding="utf-8",
    )
    api = api_of(read_spec(tmp_path / "api.raml"))
    got = {o.path_template: (o.security_label, o.auth_optional) for o in api.operations}
    assert got == {
        "/first": ("oauth2", True),
        "/last": ("oauth2", True),
        "/only": ("oauth2", False),
    }
    workloads = [
        {
            "name": o.path_template.strip("/"),
            "operation": o.operation_id,
            "injection": {"at_once": 1},
        }
        for o in api.operations
    ]
    plan = build_plan({"gateways": ["nginx"], "workloads": workloads}, api)
    assert [w.message for w in plan.warnings if "authentication" in w.message] == [
        "operation 'get_only' requires oauth2 authentication; add auth: {bearer: {env: NAME}} "
        "or requests are sent without credentials"
    ]


def test_swagger_security_definitions(tmp_path: Path) -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "securityDefinitions": {
            "basic": {"type": "basic"},
            "q": {"type": "apiKey", "in": "query", "name": "key"},
        },
        "security": [{"basic": []}],
        "paths": {
            "/a": {"get": {"responses": OK}},
            "/b": {"get": {"security": [{"q": []}], "responses": OK}},
        },
    }
    api = api_of(spec(tmp_path, doc))
    assert [o.security_label for o in api.operations] == ["basic", "apiKey-query"]


def test_unknown_security_scheme_is_a_warning(tmp_path: Path) -> None:
    result = spec(tmp_path, oas({"/a": {"get": {"security": [{"nope": []}], "responses": OK}}}))
    api_of(result)
    assert [(p.pointer, p.message) for p in result.warnings if "security" in p.message] == [
        (
            "/paths/~1a/get/security/0/nope",
            "unknown security scheme 'nope' ignored (known: none defined)",
        )
    ]


def test_request_bodies_per_media_type_with_examples(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {
                "post": {
                    "requestBody": {"$ref": "#/components/requestBodies/Body"},
                    "responses": {
                        "201": {
                            "description": "made",
                            "content": {
                                "application/json": {
                                    "examples": {"one": {"$ref": "#/components/examples/One"}}
                                }
                            },
                        }
                    },
                }
            }
        },
        components={
            "requestBodies": {
                "Body": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/Thing"},
                            "example": {"n": 1},
                        },
                        "text/plain": {"schema": {"type": "string"}},
                    },
                }
            },
            "examples": {"One": {"value": {"ok": True}}},
            "schemas": {"Thing": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        },
    )
    api = api_of(spec(tmp_path, doc))
    body = api.operations[0].request_body
    assert body is not None and body.required
    assert [(m.media_type, m.schema, m.examples) for m in body.content] == [
        ("application/json", {"$ref": "#/schemas/Thing"}, (("default", {"n": 1}),)),
        ("text/plain", {"type": "string"}, ()),
    ]
    assert api.schemas == {"Thing": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    assert api.operations[0].responses[0].content[0].examples == (("one", {"ok": True}),)


def test_swagger_body_and_form_parameters_become_request_bodies(tmp_path: Path) -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "consumes": ["application/json"],
        "paths": {
            "/json": {
                "post": {
                    "parameters": [
                        {"name": "b", "in": "body", "required": True, "schema": {"type": "object"}}
                    ],
                    "responses": OK,
                }
            },
            "/upload": {
                "post": {
                    "parameters": [
                        {"name": "file", "in": "formData", "type": "file", "required": True},
                        {"name": "note", "in": "formData", "type": "string"},
                    ],
                    "responses": OK,
                }
            },
        },
    }
    api = api_of(spec(tmp_path, doc))
    json_body = op(api, "POST", "/json").request_body
    assert json_body is not None
    assert [(m.media_type, m.schema) for m in json_body.content] == [
        ("application/json", {"type": "object"})
    ]
    upload = op(api, "POST", "/upload").request_body
    assert upload is not None and upload.content[0].media_type == "multipart/form-data"
    assert upload.content[0].schema == {
        "type": "object",
        "properties": {"file": {"type": "string", "format": "binary"}, "note": {"type": "string"}},
        "required": ["file"],
    }
    assert op(api, "POST", "/upload").parameters == ()


def test_operation_ids_are_unique_and_generated(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {
                "get": {"operationId": "same", "responses": OK},
                "post": {"operationId": "same", "responses": OK},
            },
            "/pets/{petId}/photos": {"get": {"responses": OK}},
            "/": {"get": {"responses": OK}},
        }
    )
    result = spec(tmp_path, doc)
    api = api_of(result)
    assert sorted(o.operation_id for o in api.operations) == [
        "get_pets_petId_photos",
        "get_root",
        "same",
        "same_2",
    ]
    assert [p.message for p in result.warnings if "operationId" in p.message] == [
        "operationId 'same' is used twice; this one is renamed 'same_2'"
    ]
    assert op(api, "GET", "/pets/{petId}/photos").operation_id_generated


def test_a_renamed_operation_id_never_takes_another_operations(tmp_path: Path) -> None:
    """``dup`` twice beside an explicit ``dup_2``: the second ``dup`` was renamed ``dup_2``
    and the written ``dup_2`` became ``dup_2_2``, so a workload naming ``dup_2`` ran POST /c."""
    doc = oas(
        {
            "/c": {
                "get": {"operationId": "dup", "responses": OK},
                "post": {"operationId": "dup", "responses": OK},
            },
            "/d": {"get": {"operationId": "dup_2", "responses": OK}},
        }
    )
    result = spec(tmp_path, doc)
    api = api_of(result)
    assert [(o.method, o.path_template, o.operation_id) for o in api.operations] == [
        ("GET", "/c", "dup"),
        ("POST", "/c", "dup_3"),
        ("GET", "/d", "dup_2"),
    ]
    assert [(p.pointer, p.message) for p in result.warnings if "operationId" in p.message] == [
        (
            "/paths/~1c/post/operationId",
            "operationId 'dup' is used twice; this one is renamed 'dup_3'",
        )
    ]


def test_a_made_up_operation_id_never_takes_another_operations(tmp_path: Path) -> None:
    """``/a`` and ``/a/`` both make ``get_a``; the second is not ``get_a_2``, ``/a/2``'s."""
    doc = oas(
        {
            "/a": {"get": {"responses": OK}},
            "/a/": {"get": {"responses": OK}},
            "/a/2": {"get": {"responses": OK}},
        }
    )
    api = api_of(spec(tmp_path, doc))
    assert [(o.path_template, o.operation_id) for o in api.operations] == [
        ("/a", "get_a"),
        ("/a/", "get_a_3"),
        ("/a/2", "get_a_2"),
    ]


def test_order_is_deterministic_by_route_then_method(tmp_path: Path) -> None:
    doc = oas(
        {
            "/b": {"post": {"responses": OK}, "get": {"responses": OK}},
            "/a": {"delete": {"responses": OK}},
        }
    )
    api = api_of(spec(tmp_path, doc))
    assert [(o.method, o.path_template) for o in api.operations] == [
        ("DELETE", "/a"),
        ("GET", "/b"),
        ("POST", "/b"),
    ]


def test_callbacks_are_skipped_with_a_note(tmp_path: Path) -> None:
    doc = oas(
        {
            "/s": {
                "post": {
                    "callbacks": {"onEvent": {"{$request.body#/url}": {"post": {"responses": OK}}}},
                    "responses": OK,
                }
            }
        }
    )
    result = spec(tmp_path, doc)
    assert len(api_of(result).operations) == 1
    assert [
        (p.severity, p.pointer, p.message) for p in result.problems if p.severity == "note"
    ] == [
        (
            "note",
            "/paths/~1s/post/callbacks",
            "1 callback skipped: callbacks are calls the API makes, not routes",
        )
    ]


def test_unsupported_version(tmp_path: Path) -> None:
    result = spec(tmp_path, {"openapi": "4.0.0", "paths": {}})
    assert [(p.pointer, p.message) for p in result.errors] == [
        (
            "/openapi",
            "unsupported version '4.0.0'; gatebench reads OpenAPI 3.0, 3.1, 3.2 and Swagger '2.0'",
        )
    ]


def test_schema_conformance_findings_are_warnings(tmp_path: Path) -> None:
    doc = oas({"/a": {"get": {"responses": OK, "deprecated": "yes"}}})
    result = spec(tmp_path, doc)
    assert result.errors == []
    assert [(p.pointer, p.message) for p in result.warnings] == [
        ("/paths/~1a/get/deprecated", "expected a boolean, got 'yes'")
    ]


def test_header_parameters_owned_by_openapi_are_noted(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a": {
                "get": {
                    "parameters": [
                        {"name": "Authorization", "in": "header", "schema": {"type": "string"}}
                    ],
                    "responses": OK,
                }
            }
        }
    )
    result = spec(tmp_path, doc)
    assert api_of(result).operations[0].header_params == ()
    assert [p.message for p in result.problems if p.severity == "note"] == [
        "header parameter 'Authorization' is ignored (OpenAPI describes it elsewhere)"
    ]


def test_ir_json_is_stable(tmp_path: Path) -> None:
    doc = oas(
        {
            "/a/{id}": {
                "get": {
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        }
                    ],
                    "responses": OK,
                }
            }
        }
    )
    first = json.dumps(api_of(spec(tmp_path, doc)).to_dict(), sort_keys=True)
    second = json.dumps(api_of(spec(tmp_path, doc, "again.json")).to_dict(), sort_keys=True)
    assert first == second


def test_raml_resource_types_traits_and_security(tmp_path: Path) -> None:
    (tmp_path / "lib.raml").write_text(
        "#%RAML 1.0 Library\ntypes:\n  Bid:\n    properties:\n      amount: number\n      note?: string\n"
        "      currency?: Currency\n  Currency:\n    enum: [EUR, USD]\n",
        encoding="utf-8",
    )
    text = """\
#%RAML 1.0
title: Auction
version: v1
baseUri: https://api.example.com/{version}
uses:
  lib: lib.raml
securitySchemes:
  token:
    type: x-custom
    describedBy:
      headers:
        Authorization: string
securedBy: [token]
resourceTypes:
  collection:
    get:
      description: list <<resourcePathName | !pluralize>>
    post?:
      body:
        application/json:
          type: object
traits:
  paged:
    queryParameters:
      page?: integer
/auctions:
  type: collection
  get:
    is: [paged]
  /{auctionId}:
    uriParameters:
      auctionId: integer
    get:
      responses:
        200:
          body:
            application/json:
              example: {"id": 1}
    /bids:
      post:
        securedBy: [null]
        body:
          application/json:
            type: lib.Bid
"""
    (tmp_path / "api.raml").write_text(text, encoding="utf-8")
    result = read_spec(tmp_path / "api.raml")
    api = api_of(result)
    summary = [(o.method, o.route_path, o.security_label) for o in api.operations]
    assert summary == [
        ("GET", "/v1/auctions", "bearer"),
        ("GET", "/v1/auctions/{auctionId}", "bearer"),
        ("POST", "/v1/auctions/{auctionId}/bids", "none"),
    ]
    listing = op(api, "GET", "/auctions")
    assert [(p.name, p.required) for p in listing.query_params] == [("page", False)]
    bid = op(api, "POST", "/auctions/{auctionId}/bids")
    assert bid.path_params[0].schema == {"type": "integer"}
    assert bid.request_body is not None
    assert bid.request_body.content[0].schema == {"$ref": "#/schemas/lib.Bid"}
    # inside its library, a type names a sibling without the namespace (RAML 1.0 Libraries)
    assert api.schemas["lib.Bid"] == {
        "type": "object",
        "properties": {
            "amount": {"type": "number"},
            "note": {"type": "string"},
            "currency": {"$ref": "#/schemas/lib.Currency"},
        },
        "required": ["amount"],
    }
    assert api.schemas["lib.Currency"] == {"type": "string", "enum": ["EUR", "USD"]}
    assert not result.problems
    assert op(api, "GET", "/auctions/{auctionId}").responses[0].content[0].examples == (
        ("default", {"id": 1}),
    )


def test_raml_library_resource_types_and_traits_name_their_own_declarations(
    tmp_path: Path,
) -> None:
    """A library's resource type names its library's trait and parent resource type, and its
    trait its types, without the namespace (RAML 1.0 Libraries): the resource type was
    refused ('unknown trait') and the trait's parameters read as any value."""
    (tmp_path / "lib.raml").write_text(
        "#%RAML 1.0 Library\n"
        "types:\n  Sort:\n    enum: [asc, desc]\n  Page:\n    type: integer\n    minimum: 1\n"
        "traits:\n  paged:\n    queryParameters:\n      page: Page\n      sort?: Sort\n"
        "resourceTypes:\n  base:\n    get:\n      responses:\n        200:\n"
        "          body:\n            application/json:\n              type: Page\n"
        "  item:\n    type: base\n    get:\n      is: [paged]\n"
        "  coll:\n    get:\n      responses:\n        200:\n          body:\n"
        "            application/json:\n              type: <<item>>[]\n"
        "  either:\n    get:\n      responses:\n        200:\n          body:\n"
        "            application/json:\n              type: <<item>> | Sort\n",
        encoding="utf-8",
    )
    (tmp_path / "api.raml").write_text(
        "#%RAML 1.0\ntitle: T\nuses:\n  lib: lib.raml\n"
        "types:\n  Page: string\n"
        "/a:\n  type: lib.item\n/b:\n  get:\n    is: [lib.paged]\n/c:\n  get:\n"
        "    queryParameters:\n      page: Page\n/d:\n  type: {lib.coll: {item: Page}}\n"
        "/e:\n  type: {lib.either: {item: Page}}\n",
        encoding="utf-8",
    )
    result = read_spec(tmp_path / "api.raml")
    api = api_of(result)
    assert not result.problems
    for path in ("/a", "/b"):
        query = {p.name: (p.required, p.schema) for p in op(api, "GET", path).query_params}
        assert query == {
            "page": (True, {"$ref": "#/schemas/lib.Page"}),
            "sort": (False, {"$ref": "#/schemas/lib.Sort"}),
        }, path
    [answer] = op(api, "GET", "/a").responses
    assert answer.content[0].schema == {"$ref": "#/schemas/lib.Page"}
    # outside what a library applies, a name is the main document's own, and so is a type
    # the main document gives a library's resource type as a <<parameter>>
    assert op(api, "GET", "/c").query_params[0].schema == {"$ref": "#/schemas/Page"}
    [listed] = op(api, "GET", "/d").responses
    assert listed.content[0].schema == {"type": "array", "items": {"$ref": "#/schemas/Page"}}
    # an expression that starts with a <<parameter>> is not an inline XML schema: the
    # library's name after it is still the library's (it was left as 'Sort', the main's none)
    [either] = op(api, "GET", "/e").responses
    assert either.content[0].schema == {
        "anyOf": [{"$ref": "#/schemas/Page"}, {"$ref": "#/schemas/lib.Sort"}]
    }


def test_raml_errors_are_located(tmp_path: Path) -> None:
    (tmp_path / "api.raml").write_text(
        "#%RAML 1.0\ntitle: x\n/a:\n  type: missing\n  fetch:\n  /{id}:\n    uriParameters:\n      other: string\n    get:\n",
        encoding="utf-8",
    )
    result = read_spec(tmp_path / "api.raml")
    assert [(p.pointer, p.line, p.message) for p in result.errors] == [
        ("", 1, "every operation is left out (1 operation above); there is nothing to benchmark"),
        ("/~1a/type", 4, "unknown resource type 'missing' (no resource types are declared)"),
        (
            "/~1a/fetch",
            5,
            "unknown method or property 'fetch'; expected a method (get, put, post, delete, options, head, patch, trace, connect), a nested '/resource' or a resource property",
        ),
    ]
    # a URI parameter its path lacks leaves its methods out, as OpenAPI's reader does, rather
    # than stopping the whole description
    assert [(p.pointer, p.line, p.message) for p in result.warnings] == [
        (
            "/~1a/~1{id}/uriParameters/other",
            8,
            "URI parameter 'other' is not in the resource path '/a/{id}': its methods are left out",
        ),
    ]


def test_a_raml_resource_with_a_stray_uri_parameter_is_left_out_and_named(tmp_path: Path) -> None:
    """It stopped the whole description with an error; now its methods are left out, with a
    warning, and a workload naming one is told why, as for OpenAPI."""
    from gatebench.core.errors import PlanError
    from gatebench.core.plan import build_plan

    (tmp_path / "api.raml").write_text(
        "#%RAML 1.0\ntitle: T\n/a:\n  get:\n/b/{id}:\n  uriParameters:\n    idd: integer\n"
        "  get:\n  delete:\n",
        encoding="utf-8",
    )
    result = read_spec(tmp_path / "api.raml")
    api = api_of(result)
    assert [o.path_template for o in api.operations] == ["/a"]
    assert [(x.method, x.path, x.pointer) for x in api.left_out] == [
        ("GET", "/b/{id}", "/~1b~1{id}/get"),
        ("DELETE", "/b/{id}", "/~1b~1{id}/delete"),
    ]
    workloads = [{"name": "w", "operation": "GET /b/{id}", "injection": {"at_once": 1}}]
    with pytest.raises(PlanError) as refused:
        build_plan({"gateways": ["nginx"], "workloads": workloads}, api)
    assert "is left out of the description" in str(refused.value.problems[0].message)


# -- names that cannot be what they claim ---------------------------------------------------

TOKEN_HINT = "letters, digits and !#$%&'*+-.^_`|~"


def test_a_header_or_cookie_name_that_is_not_an_http_token_is_a_located_error(
    tmp_path: Path,
) -> None:
    doc = oas(
        {
            "/a": {
                "get": {
                    "parameters": [
                        {"name": "X-Evil\r\nInjected: yes", "in": "header", "schema": {}},
                        {"name": "X Space", "in": "header", "schema": {}},
                        {"name": "X-Fine", "in": "header", "schema": {}},
                        {"name": "c;d", "in": "cookie", "schema": {}},
                        {"name": "q with space", "in": "query", "schema": {}},
                    ],
                    "responses": OK,
                }
            }
        },
        components={
            "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key\n"}}
        },
    )
    result = spec(tmp_path, doc)
    assert result.api is None
    assert [(p.pointer, p.message) for p in result.errors] == [
        (
            "/paths/~1a/get/parameters/0/name",
            "header parameter name 'X-Evil\\r\\nInjected: yes' is not an HTTP token "
            f"({TOKEN_HINT})",
        ),
        (
            "/paths/~1a/get/parameters/1/name",
            f"header parameter name 'X Space' is not an HTTP token ({TOKEN_HINT})",
        ),
        (
            "/paths/~1a/get/parameters/3/name",
            f"cookie parameter name 'c;d' is not an HTTP token ({TOKEN_HINT})",
        ),
    ]
    assert all(p.line is not None for p in result.errors)
    # A security scheme that cannot be used is ignored, as every other one is, with the reason.
    assert (
        "/components/securitySchemes/key/name",
        f"apiKey header name 'X-Key\\n' is not an HTTP token ({TOKEN_HINT}); the scheme is ignored",
    ) in [(p.pointer, p.message) for p in result.warnings]


def test_a_media_type_a_content_type_header_cannot_carry_is_left_out_with_a_warning(
    tmp_path: Path,
) -> None:
    """A request body's media type becomes the Content-Type of every request sent, a
    response's the mock's: one with a line break would be another header."""
    doc = oas(
        {
            "/a": {
                "post": {
                    "requestBody": {
                        "content": {
                            "text/plain\r\nX-Evil: 1": {"schema": {"type": "string"}},
                            "application/json; charset=utf-8": {"schema": {"type": "object"}},
                        }
                    },
                    "responses": {
                        "200": {"description": "ok", "content": {"json, xml": {"schema": {}}}}
                    },
                }
            }
        }
    )
    result = spec(tmp_path, doc)
    assert result.api is not None
    op = result.api.operations[0]
    assert op.request_body is not None
    assert [m.media_type for m in op.request_body.content] == ["application/json; charset=utf-8"]
    assert op.responses[0].content == ()
    said = [(p.pointer, p.message) for p in result.warnings if "media type" in p.message]
    tail = "is not a media type (type/subtype, RFC 9110 8.3.1): left out"
    assert said == [
        ("/paths/~1a/post", f"request body media type 'text/plain\\r\\nX-Evil: 1' {tail}"),
        ("/paths/~1a/post", f"response 200 media type 'json, xml' {tail}"),
    ]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9000;return 200/", "its port '9000;return 200' is not a number"),
        ("http://127.0.0.1:²/", "its port '²' is not a number"),
        ("https://api.example.com:99999", "its port '99999' is not a number from 1 to 65535"),
        (
            "http://a;b.example.com/v1",
            "its host 'a;b.example.com' is not a host name or an IP address",
        ),
        ("http://[::1/v1", "its host '[::1' is not a host name or an IP address"),
    ],
)
def test_a_server_url_whose_authority_is_not_host_and_port_is_a_located_error(
    tmp_path: Path, url: str, why: str
) -> None:
    result = spec(tmp_path, oas({"/a": {"get": {"responses": OK}}}, servers=[{"url": url}]))
    assert result.api is None
    assert [(p.pointer, p.message) for p in result.errors] == [
        ("/servers/0/url", f"server URL {url!r} cannot be a server: {why}")
    ]


@pytest.mark.parametrize(
    ("server", "said"),
    [
        (
            '{url: "http://api.example.com/my api/v1"}',
            "server URL 'http://api.example.com/my api/v1' cannot be a URL: its path holds a "
            "space; write it %20",
        ),
        (
            "{url: 'http://x/{b}', variables: {b: {default: 'a\"c;d}{'}}}",
            "server URL 'http://x/a\"c;d}{' cannot be a URL: its path holds '}'; write it %7D",
        ),
        (
            "{url: 'http://x/v1%'}",
            "server URL 'http://x/v1%' cannot be a URL: its path holds a '%' that does not "
            "start a %XX escape; write it %25",
        ),
    ],
)
def test_a_document_server_url_whose_path_no_request_carries_is_a_located_error(
    tmp_path: Path, server: str, said: str
) -> None:
    """It was dropped with a warning and the routes started at '/': every request to a
    backend serving /my%20api/v1/a asked for /a."""
    (tmp_path / "api.yaml").write_text(
        f"openapi: 3.0.3\ninfo: {{title: t, version: '1'}}\nservers:\n  - {server}\n"
        "paths:\n  /a:\n    get: {responses: {'200': {description: ok}}}\n",
        encoding="utf-8",
    )
    result = read_spec(tmp_path / "api.yaml")
    assert result.api is None
    assert [(p.pointer, p.line, p.column, p.message) for p in result.errors] == [
        ("/servers/0/url", 4, 6, said)
    ]


def test_a_swagger_base_path_no_request_carries_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(
        "swagger: '2.0'\ninfo: {title: t, version: '1'}\nhost: api.example.com\n"
        "basePath: /b a\npaths:\n  /a:\n    get: {responses: {'200': {description: ok}}}\n",
        encoding="utf-8",
    )
    result = read_spec(tmp_path / "api.yaml")
    assert result.api is None
    assert [(p.pointer, p.line, p.column, p.message) for p in result.errors] == [
        ("/basePath", 4, 1, "basePath '/b a' cannot be a URL path: it holds a space; write it %20")
    ]


def test_an_operation_server_url_whose_path_no_request_carries_leaves_it_out(
    tmp_path: Path,
) -> None:
    doc = oas(
        {
            "/a": {"get": {"servers": [{"url": "http://x/my api"}], "responses": OK}},
            "/b": {"get": {"responses": OK}},
        }
    )
    result = spec(tmp_path, doc)
    assert [op.path_template for op in api_of(result).operations] == ["/b"]
    assert [(p.pointer, p.line, p.column, p.message) for p in result.warnings] == [
        (
            "/paths/~1a/get/servers/0/url",
            1,
            100,
            "server URL 'http://x/my api' cannot be a URL: its path holds a space; write it %20; "
            "the operation is left out",
        )
    ]


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com:8443/v1",
        "http://[2001:db8::1]:8080/x",
        "http://[fe80::1%25eth0]/",
        "http://user@api.example.com/",
        "https://api_v2.example.com",
        "//api.example.com/v1",
        "/v1",
        "v2/",
    ],
)
def test_server_urls_with_a_host_and_a_port_number_are_read(tmp_path: Path, url: str) -> None:
    api = api_of(spec(tmp_path, oas({"/a": {"get": {"responses": OK}}}, servers=[{"url": url}])))
    assert api.operations[0].base_url == url


def test_a_swagger_host_with_a_port_that_is_not_a_number_is_a_located_error(
    tmp_path: Path,
) -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "host": "127.0.0.1:9000;return 200",
        "paths": {"/x": {"get": {"responses": OK}}},
    }
    result = spec(tmp_path, doc)
    assert result.api is None
    assert [(p.pointer, p.message) for p in result.errors] == [
        (
            "/host",
            "host '127.0.0.1:9000;return 200' cannot be a server: "
            "its port '9000;return 200' is not a number",
        )
    ]


def test_raml_header_names_and_base_uri_are_checked(tmp_path: Path) -> None:
    (tmp_path / "api.raml").write_text(
        "#%RAML 1.0\ntitle: x\nbaseUri: http://127.0.0.1:9000;return 200/\n/a:\n  get:\n"
        '    headers:\n      "X Bad":\n        type: string\n',
        encoding="utf-8",
    )
    result = read_spec(tmp_path / "api.raml")
    assert result.api is None
    assert [(p.pointer, p.line, p.message) for p in result.errors] == [
        (
            "/baseUri",
            3,
            "baseUri 'http://127.0.0.1:9000;return 200/' cannot be a server: "
            "its port '9000;return 200' is not a number",
        ),
        (
            "/~1a/get/headers/X Bad",
            7,
            f"header parameter name 'X Bad' is not an HTTP token ({TOKEN_HINT})",
        ),
    ]


def test_validate_refuses_a_header_name_with_a_line_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gatebench.cli import main

    path = tmp_path / "api.yaml"
    path.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n"
        '      parameters:\n        - {name: "X-A\\r\\nX-B: 1", in: header, schema: {}}\n'
        "      responses: {'200': {description: ok}}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert out == (
        "api.yaml:7:12: error: /paths/~1a/get/parameters/0/name: header parameter name "
        f"'X-A\\r\\nX-B: 1' is not an HTTP token ({TOKEN_HINT})\n"
    )


def test_an_encoding_content_type_is_read_and_a_wrong_one_is_a_located_warning(
    tmp_path: Path,
) -> None:
    """The Encoding Object's contentType: the first concrete media type of its list; a
    wildcard alone names none; text that is no media type is a warning at its key, never a
    Content-Type header."""
    media = {
        "schema": {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}},
        "encoding": {
            "a": {"contentType": "image/*, image/png"},
            "b": {"contentType": "image/*"},
            "c": {"contentType": "png\r\nX-Evil: 1"},
        },
    }
    body = {"content": {"multipart/form-data": media}}
    result = spec(tmp_path, oas({"/a": {"post": {"requestBody": body, "responses": OK}}}))
    [content] = op(api_of(result), "POST", "/a").request_body.content  # type: ignore[union-attr]
    assert [(p.name, p.content) for p in content.encoding] == [("a", "image/png")]
    assert content.to_dict()["encoding"] == {"a": {"content_type": "image/png"}}
    assert [(p.pointer, p.message[:40]) for p in result.problems] == [
        (
            "/paths/~1a/post/requestBody/content/multipart~1form-data/encoding/c/contentType",
            "expected a media type, or a comma-separa",
        )
    ]


def test_a_scheme_declared_but_unreadable_is_not_called_unknown(tmp_path: Path) -> None:
    """An apiKey scheme without 'in' was refused, then every requirement naming it read
    "unknown security scheme 'k' ignored (known: none defined)", and the refusal said
    "got None" for what the document left out."""
    doc = oas(
        {"/a": {"get": {"security": [{"k": []}], "responses": OK}}},
        components={"securitySchemes": {"k": {"type": "apiKey", "name": "X"}}},
    )
    said = {(p.pointer, p.message) for p in spec(tmp_path, doc).problems}
    assert (
        "/components/securitySchemes/k/in",
        "apiKey 'in' must be header, query or cookie; got nothing",
    ) in said
    assert (
        "/paths/~1a/get/security/0/k",
        "security scheme 'k' ignored: its declaration could not be read (its problems are above)",
    ) in said


def test_a_title_is_one_line_wherever_it_is_shown(tmp_path: Path) -> None:
    """A RAML title with a line break spilled onto a line of its own in `gatebench parse`."""
    (tmp_path / "api.raml").write_text(
        '#%RAML 1.0\ntitle: "Notes\\nAPI\\t\\u0085v2"\nversion: "1\\n"\n/a:\n  get:\n',
        encoding="utf-8",
    )
    api = api_of(read_spec(tmp_path / "api.raml"))
    assert (api.title, api.version) == ("Notes API v2", "1")


def test_a_parameter_described_by_content_takes_its_media_types_example(tmp_path: Path) -> None:
    """A parameter with ``content`` instead of ``schema`` read only its own example: the media
    type's ({a: 1, b: "x y"}) was replaced by a synthesized {"a": 1}."""
    doc = oas(
        {
            "/c": {
                "get": {
                    "parameters": [
                        {
                            "name": "f",
                            "in": "query",
                            "required": True,
                            "content": {
                                "application/json": {
                                    "schema": {"type": "object"},
                                    "example": {"a": 1, "b": "x y"},
                                }
                            },
                        },
                        {
                            "name": "t",
                            "in": "query",
                            "content": {"text/plain": {"examples": {"hi": {"value": "hello"}}}},
                        },
                    ],
                    "responses": OK,
                }
            }
        }
    )
    (operation,) = api_of(spec(tmp_path, doc)).operations
    assert [(p.name, p.examples) for p in operation.query_params] == [
        ("f", ({"a": 1, "b": "x y"},)),
        ("t", ("hello",)),
    ]
