"""API Blueprint: recognised, read with Drafter (npm drafter.js, installed by
scripts/setup.d/50-node.sh), refused with what to do when Node.js or the parser is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatebench.core.spec import read_spec
from gatebench.core.spec._apib import looks_like_blueprint
from paths import DATA

NOTES = DATA / "blueprint" / "notes.apib"


def test_a_blueprint_is_read_into_operations() -> None:
    result = read_spec(NOTES)
    assert result.problems == [], [p.format() for p in result.problems]
    assert result.api is not None
    assert result.api.title == "Notes API"
    assert result.api.source_format == "apib-1A"
    got = [
        (op.operation_id, op.method, op.route_path, [p.name for p in op.parameters])
        for op in result.api.operations
    ]
    assert got == [
        ("get_notes", "GET", "/v1/notes", ["limit"]),
        ("post_notes", "POST", "/v1/notes", ["limit"]),
        ("get_notes_id", "GET", "/v1/notes/{id}", ["id"]),
        ("delete_notes_id", "DELETE", "/v1/notes/{id}", ["id"]),
    ]
    create = result.api.operation("post_notes")
    assert create.request_body is not None
    (media,) = create.request_body.content
    assert (media.media_type, media.examples) == (
        "application/json",
        (("default", {"title": "Buy milk"}),),
    )
    assert [r.status for r in create.responses] == ["201"]
    limit = result.api.operation("get_notes").query_params[0]
    assert (limit.required, limit.schema, limit.examples) == (False, {"type": "number"}, (10,))


def test_blueprint_warnings_are_located_by_line(tmp_path: Path) -> None:
    path = tmp_path / "api.apib"
    path.write_text(
        "FORMAT: 1A\n\n# T\n\n## Things [/things]\n\n### List [GET]\n\n+ Request\n\n"
        "+ Response 200\n",
        encoding="utf-8",
    )
    result = read_spec(path)
    assert result.errors == []
    assert result.api is not None and len(result.api.operations) == 1
    assert [(p.line, p.column, p.message) for p in result.warnings] == [
        (9, 1, "API Blueprint: empty request message-body")
    ]


def test_without_node_a_blueprint_is_refused_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GATEBENCH_NODE_BIN", "/nonexistent/node")
    result = read_spec(NOTES)
    assert [(p.pointer, p.message) for p in result.errors] == [
        (
            "",
            "API Blueprint is read with Node.js and the npm package drafter.js@3.2.0: 'node' is "
            "not installed here (scripts/setup.sh node installs it; NODE_PATH may name its "
            "node_modules), or convert it to OpenAPI with apib2swagger (npx apib2swagger -i "
            "api.apib -o swagger.json --open-api-3)",
        )
    ]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("api.md", "FORMAT: 1A\n# API\n", True),
        ("api.txt", "# Notes API\n\n## Note [/notes/{id}]\n", True),
        ("api.txt", "# Group Notes\n### Delete [DELETE /notes/{id}]\n", True),
        ("api.yaml", "openapi: 3.0.3\n# [/not/a/heading]\n", False),
        ("api.yaml", "# a comment\nopenapi: 3.0.3\n", False),
    ],
)
def test_recognising_a_blueprint(name: str, text: str, expected: bool) -> None:
    assert looks_like_blueprint(name, text) is expected


def test_a_host_whose_port_is_not_a_number_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "api.apib"
    path.write_text(
        "FORMAT: 1A\nHOST: http://127.0.0.1:9000;return 200/\n\n# T\n\n## Things [/things]\n\n"
        "### List [GET]\n\n+ Response 200\n",
        encoding="utf-8",
    )
    result = read_spec(path)
    assert result.api is None
    assert [p.format() for p in result.errors] == [
        "api.apib:2:1: error: /: HOST 'http://127.0.0.1:9000;return 200/' cannot be a server: "
        "its port '9000;return 200' is not a number"
    ]


def test_a_question_mark_in_a_uri_template_starts_its_query_part(tmp_path: Path) -> None:
    """RFC 6570: a literal '?' starts the query; the route is the part before it and the
    variables after it are query parameters (a fixed 'name=value' is a fixed query value)."""
    path = tmp_path / "devices.apib"
    path.write_text(
        "FORMAT: 1A\n\n# Devices\n\n## Devices [/devices?{product_key}&{limit}]\n\n"
        "+ Parameters\n    + product_key: `abc` (string, required) - The product\n"
        "    + limit: `10` (number, optional) - How many\n\n"
        "### List devices [GET]\n\n+ Response 200\n\n"
        "## Phones [/devices/{id}/status?type=phone&since={date}]\n\n"
        "+ Parameters\n    + id: `1` (number, required) - The device\n"
        "    + date: `2024-01-01` (string, optional) - Since when\n\n"
        "### Phone status [GET]\n\n+ Response 200\n",
        encoding="utf-8",
    )
    result = read_spec(path)
    assert result.errors == []
    assert result.api is not None
    assert result.api.left_out == ()
    got = {
        op.route_path: [
            (p.name, p.location, p.required, p.schema, p.examples) for p in op.parameters
        ]
        for op in result.api.operations
    }
    assert got == {
        "/devices": [
            ("product_key", "query", True, {"type": "string"}, ("abc",)),
            ("limit", "query", False, {"type": "number"}, (10,)),
        ],
        "/devices/{id}/status": [
            ("id", "path", True, {"type": "number"}, (1,)),
            ("type", "query", True, {"type": "string", "enum": ["phone"]}, ("phone",)),
            ("since", "query", False, {"type": "string"}, ("2024-01-01",)),
        ],
    }
    assert [(p.severity, p.line, p.message) for p in result.warnings] == [
        (
            "note",
            11,
            "2 URI templates carry a query part after '?' (e.g. '/devices?{product_key}&{limit}'): "
            "they are routed on the part before it and its variables are sent as query parameters",
        )
    ]


def test_parameters_keep_their_members_default_type_and_place_in_the_template(
    tmp_path: Path,
) -> None:
    """``+ Members`` of an enum, ``+ Default:`` and ``array[number]`` were lost (a request sent
    ``.example`` where only ``pdf`` or ``png`` go), and ``?type=phone{&since}`` fixed ``type``
    to ``phone{`` and lost ``since``."""
    path = tmp_path / "notes.apib"
    path.write_text(
        "FORMAT: 1A\n\n# Notes\n\n## File [/notes/{id}/{name}.{ext}{?limit,ids*}]\n\n"
        "### Get [GET]\n\n+ Parameters\n    + id: 7 (number, required)\n"
        "    + name: report (string, required)\n"
        "    + ext: `pdf` (enum[string], required)\n        + Members\n"
        "            + `pdf`\n            + `png`\n"
        "    + limit: 10 (number, optional)\n        + Default: `20`\n"
        "    + ids: 1 (array[number], required)\n\n+ Response 200\n\n"
        "## Phones [/phones?type=phone{&since}]\n\n### List [GET]\n\n"
        "+ Parameters\n    + since: `2024-01-01` (string, required)\n\n+ Response 200\n",
        encoding="utf-8",
    )
    result = read_spec(path)
    assert result.errors == []
    assert result.api is not None
    got = {
        op.route_path: [
            (p.name, p.required, p.schema, p.examples, p.explode) for p in op.parameters
        ]
        for op in result.api.operations
    }
    assert got == {
        "/notes/{id}/{name}.{ext}": [
            ("id", True, {"type": "number"}, (7,), None),
            ("name", True, {"type": "string"}, ("report",), None),
            ("ext", True, {"type": "string", "enum": ["pdf", "png"]}, ("pdf",), None),
            ("limit", False, {"type": "number", "default": 20}, (10,), None),
            ("ids", True, {"type": "array", "items": {"type": "number"}}, ([1],), True),
        ],
        "/phones": [
            ("type", True, {"type": "string", "enum": ["phone"]}, ("phone",), None),
            ("since", True, {"type": "string"}, ("2024-01-01",), None),
        ],
    }


def test_a_host_without_a_scheme_is_a_path_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "api.apib"
    path.write_text(
        "FORMAT: 1A\nHOST: api.example.com/v1\n\n# T\n\n## Things [/things]\n\n"
        "### List [GET]\n\n+ Response 200\n",
        encoding="utf-8",
    )
    result = read_spec(path)
    assert result.api is not None
    assert result.api.operations[0].route_path == "/api.example.com/v1/things"
    assert [p.format() for p in result.problems] == [
        "api.apib:2:1: warning: /: HOST 'api.example.com/v1' has no scheme, so it is a path and "
        "routes start at '/api.example.com/v1'; its first segment reads like a host name: if it "
        "is one, write 'https://api.example.com/v1'"
    ]


def test_a_template_variable_in_the_host_is_warned_about(tmp_path: Path) -> None:
    """API Blueprint expands nothing in HOST: {version} became a path parameter of every route,
    silently."""
    path = tmp_path / "api.apib"
    path.write_text(
        "FORMAT: 1A\nHOST: http://api.example.com/{version}/x\n\n# T\n\n## Things [/things]\n\n"
        "### List [GET]\n\n+ Response 200\n",
        encoding="utf-8",
    )
    result = read_spec(path)
    assert [p.format() for p in result.problems] == [
        "api.apib:2:1: warning: /: HOST 'http://api.example.com/{version}/x' holds {version}, "
        "which API Blueprint never expands (its HOST is a URL, not a template): every route "
        "takes it as a path parameter of that name; write the value instead"
    ]


def test_the_headers_a_request_shows_are_header_parameters(tmp_path: Path) -> None:
    """``+ Headers`` of a ``+ Request`` were not read: a service that needs ``X-Client`` got
    requests without it. Credentials and the body's type are never among them."""
    path = tmp_path / "h.apib"
    path.write_text(
        "FORMAT: 1A\n\n# H\n\n## Notes [/notes]\n\n### Create [POST]\n\n"
        "+ Request (application/json)\n\n    + Headers\n\n            X-Client: web-app\n"
        "            Authorization: Bearer secret\n            X-Trace: abc\n\n"
        '    + Body\n\n            {"title": "a"}\n\n'
        "+ Request (text/plain)\n\n    + Headers\n\n            X-Client: cli\n\n"
        "    + Body\n\n            hello\n\n+ Response 201\n",
        encoding="utf-8",
    )
    result = read_spec(path)
    assert result.api is not None
    (op,) = result.api.operations
    assert [(p.name, p.required, p.examples) for p in op.header_params] == [
        ("X-Client", True, ("web-app",)),
        ("X-Trace", False, ("abc",)),
    ]
