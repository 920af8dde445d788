"""Reading descriptions: formats, bundles, and every safety limit, with exact wording."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from gatebench.core.errors import Problem
from gatebench.core.spec import Limits, read_spec

MINIMAL_YAML = """\
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /pets:
    get:
      responses:
        "200": {description: ok}
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def warning_at(result: object, pointer: str) -> Problem:
    """The one warning at ``pointer``; the description is read (no errors)."""
    assert result.errors == [], [p.format() for p in result.errors]  # type: ignore[attr-defined]
    found = [p for p in result.warnings if p.pointer == pointer]  # type: ignore[attr-defined]
    assert len(found) == 1, [p.format() for p in result.warnings]  # type: ignore[attr-defined]
    return found[0]  # type: ignore[no-any-return]


def only_error(result: object) -> Problem:
    errors = result.errors  # type: ignore[attr-defined]
    assert len(errors) == 1, [p.format() for p in errors]
    return errors[0]  # type: ignore[no-any-return]


# -- formats ------------------------------------------------------------------------------


def test_yaml_openapi_30(tmp_path: Path) -> None:
    result = read_spec(write(tmp_path, "api.yaml", MINIMAL_YAML))
    assert result.errors == []
    assert result.api is not None
    assert result.api.source_format == "openapi-3.0.3"
    assert [(o.method, o.path_template) for o in result.api.operations] == [("GET", "/pets")]


def test_json_openapi_31(tmp_path: Path) -> None:
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {"post": {"operationId": "make", "responses": {"201": {"description": "x"}}}}
        },
    }
    result = read_spec(write(tmp_path, "api.json", json.dumps(doc)))
    assert result.errors == []
    assert result.api is not None
    assert result.api.source_format == "openapi-3.1.0"
    assert result.api.operations[0].operation_id == "make"


def test_openapi_31_without_paths_is_valid_with_no_operations(tmp_path: Path) -> None:
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "webhooks": {"ping": {"post": {}}},
    }
    result = read_spec(write(tmp_path, "api.json", json.dumps(doc)))
    assert result.errors == []
    assert result.api is not None and result.api.operations == ()
    notes = [p.message for p in result.problems if p.severity == "note"]
    assert "1 webhook skipped: webhooks are calls the API makes, not routes" in notes


def test_swagger_20(tmp_path: Path) -> None:
    doc = {
        "swagger": "2.0",
        "info": {"title": "t", "version": "1"},
        "host": "api.example.com",
        "basePath": "/v2",
        "schemes": ["https"],
        "paths": {
            "/pets": {"get": {"operationId": "list", "responses": {"200": {"description": "ok"}}}}
        },
    }
    result = read_spec(write(tmp_path, "swagger.json", json.dumps(doc)))
    assert result.errors == []
    assert result.api is not None
    op = result.api.operations[0]
    assert result.api.source_format == "swagger-2.0"
    assert op.base_url == "https://api.example.com/v2"
    assert op.route_path == "/v2/pets"


def test_raml_10_and_08(tmp_path: Path) -> None:
    raml10 = write(
        tmp_path,
        "a/api.raml",
        "#%RAML 1.0\ntitle: A\nbaseUri: http://x/{version}\nversion: v3\n/items:\n  get:\n    queryParameters:\n      page: integer\n",
    )
    raml08 = write(
        tmp_path,
        "b/api.raml",
        "#%RAML 0.8\ntitle: B\n/items/{id}:\n  uriParameters:\n    id: {type: integer}\n  put:\n    body:\n      application/json:\n        example: '{\"a\": 1}'\n",
    )
    a = read_spec(raml10)
    b = read_spec(raml08)
    assert a.errors == [] and b.errors == []
    assert a.api is not None and b.api is not None
    op = a.api.operations[0]
    assert (a.api.source_format, op.method, op.route_path) == ("raml-1.0", "GET", "/v3/items")
    assert op.query_params[0].name == "page"
    assert op.query_params[0].required is True  # RAML 1.0: required unless marked with '?'
    assert op.query_params[0].schema == {"type": "integer"}
    op = b.api.operations[0]
    assert (b.api.source_format, op.method, op.route_path) == ("raml-0.8", "PUT", "/items/{id}")
    assert op.path_params[0].schema == {"type": "integer"}


@pytest.mark.parametrize("version", ["1.0", "0.8"])
def test_a_json_schema_a_raml_file_includes_keeps_its_required_list(
    tmp_path: Path, version: str
) -> None:
    """A JSON Schema brought in with ``!include`` as a named type (``types:``, 0.8's
    ``schemas:``) was read as a RAML type: every property required, its own list ignored."""
    write(
        tmp_path,
        "api/item.schema.json",
        '{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, '
        '"qty": {"type": "integer", "minimum": 1}}}',
    )
    declared = (
        "types:\n  Item: !include item.schema.json\n"
        if version == "1.0"
        else "schemas:\n  - Item: !include item.schema.json\n"
    )
    uses = "type: Item" if version == "1.0" else "schema: Item"
    spec = write(
        tmp_path,
        "api/api.raml",
        f"#%RAML {version}\ntitle: A\n{declared}/items:\n  post:\n    body:\n"
        f"      application/json:\n        {uses}\n",
    )
    result = read_spec(spec)
    assert result.errors == [], [p.format() for p in result.errors]
    assert result.api is not None
    assert result.api.schemas["Item"] == {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
    }


def test_a_raml_query_string_gives_its_query_parameters(tmp_path: Path) -> None:
    """RAML 1.0's ``queryString`` (an object type, inline or named) was dropped without a word:
    a required ``q`` was never sent."""
    spec = write(
        tmp_path,
        "api.raml",
        "#%RAML 1.0\ntitle: A\ntypes:\n  Paging:\n    properties:\n      page?: integer\n"
        "  Search:\n    type: Paging\n    properties:\n      q: string\n"
        "/search:\n  get:\n    queryString:\n      type: object\n      properties:\n"
        "        q: string\n        limit?: {type: integer, minimum: 1}\n"
        "/named:\n  get:\n    queryString: Search\n"
        "/odd:\n  get:\n    queryString: string\n",
    )
    result = read_spec(spec)
    assert result.api is not None
    got = {
        op.route_path: [(p.name, p.required, p.schema) for p in op.query_params]
        for op in result.api.operations
    }
    assert got == {
        "/search": [
            ("q", True, {"type": "string"}),
            ("limit", False, {"type": "integer", "minimum": 1}),
        ],
        "/named": [("q", True, {"type": "string"}), ("page", False, {"type": "integer"})],
        "/odd": [],
    }
    assert [(p.pointer, p.severity) for p in result.warnings] == [
        ("/~1odd/get/queryString", "warning")
    ]


def test_utf8_bom_and_utf16_are_read(tmp_path: Path) -> None:
    bom = read_spec(write(tmp_path, "bom.yaml", b"\xef\xbb\xbf" + MINIMAL_YAML.encode()))
    utf16 = read_spec(write(tmp_path, "u16.yaml", MINIMAL_YAML.encode("utf-16")))
    assert bom.errors == [] and utf16.errors == []


def test_yaml_12_scalars_keep_strings_and_keys(tmp_path: Path) -> None:
    text = MINIMAL_YAML.replace('version: "1"', "version: 1.0").replace(
        "get:", "get:\n      tags: [yes, no, on, 2024-01-01]"
    )
    result = read_spec(write(tmp_path, "api.yaml", text))
    assert result.api is not None
    assert result.api.operations[0].tags == ("yes", "no", "on", "2024-01-01")
    assert result.api.version == "1.0"
    assert result.api.operations[0].responses[0].status == "200"
    warning = [p for p in result.problems if p.pointer == "/info/version"]
    assert warning and warning[0].severity == "warning"
    assert warning[0].message == "expected a string, got 1.0"


# -- bundles ------------------------------------------------------------------------------


def bundle_files(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    write(
        root,
        "openapi.yaml",
        """\
openapi: 3.0.3
info: {title: bundled, version: "1"}
paths:
  /pets/{id}:
    $ref: paths/pet.yaml
components:
  schemas:
    Local: {type: string}
""",
    )
    write(
        root,
        "paths/pet.yaml",
        """\
parameters:
  - $ref: ../common.yaml#/parameters/Id
get:
  responses:
    "200":
      description: ok
      content:
        application/json:
          schema: {$ref: "../schemas/pet.yaml"}
""",
    )
    write(
        root,
        "common.yaml",
        "parameters:\n  Id: {name: id, in: path, required: true, schema: {type: integer}}\n",
    )
    write(
        root,
        "schemas/pet.yaml",
        "type: object\nproperties:\n  name: {type: string}\n  parent: {$ref: '#'}\n",
    )
    return root


def test_folder_bundle_resolves_relative_refs_and_cycles(tmp_path: Path) -> None:
    root = bundle_files(tmp_path)
    result = read_spec(root)
    assert result.errors == [], [p.format() for p in result.errors]
    assert result.api is not None
    op = result.api.operations[0]
    assert op.path_params[0].schema == {"type": "integer"}
    assert op.responses[0].content[0].schema == {"$ref": "#/schemas/pet"}
    assert result.api.schemas["pet"]["properties"]["parent"] == {"$ref": "#/schemas/pet"}


def test_zip_bundle_with_top_folder(tmp_path: Path) -> None:
    root = bundle_files(tmp_path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zf.write(path, "api/" + path.relative_to(root).as_posix())
    result = read_spec(buf.getvalue(), name="upload.zip")
    assert result.errors == [], [p.format() for p in result.errors]
    assert result.api is not None and len(result.api.operations) == 1


def test_zip_entry_escaping_the_archive_is_refused(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("openapi.yaml", MINIMAL_YAML)
        zf.writestr("../evil.yaml", "x: 1")
    problem = only_error(read_spec(buf.getvalue(), name="up.zip"))
    assert problem.message == "zip entry '../evil.yaml' points outside the archive"


def test_zip_bomb_is_stopped_by_the_size_limit() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("openapi.yaml", MINIMAL_YAML)
        zf.writestr("big.yaml", "#" * 3_000_000)
    assert len(buf.getvalue()) < 100_000
    problem = only_error(
        read_spec(buf.getvalue(), name="up.zip", limits=Limits(max_bytes=1_000_000))
    )
    assert problem.message == "the zip unpacks to more than 1,000,000 bytes"


def test_folder_with_several_descriptions_asks_for_entry(tmp_path: Path) -> None:
    write(tmp_path, "one.yaml", MINIMAL_YAML)
    write(tmp_path, "two.yaml", MINIMAL_YAML)
    problem = only_error(read_spec(tmp_path))
    assert (
        problem.message
        == "several API descriptions in the bundle (one.yaml, two.yaml); name one with --entry "
        "(an upload: the 'entry' parameter)"
    )
    assert read_spec(tmp_path, entry="two.yaml").errors == []


def _zip(*members: tuple[str, str]) -> bytes:
    import warnings

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": on purpose
        for name, text in members:
            zf.writestr(zipfile.ZipInfo(name), text)
    return buf.getvalue()


def test_a_line_break_in_a_zip_member_name_cannot_forge_a_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from gatebench.cli import main

    name = "x\nforged.yaml:1:1: error: pwned\r.yaml"
    data = _zip((name, "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: [\n"))
    problem = only_error(read_spec(data, name="up.zip"))
    assert problem.source == name  # the exact name in data (JSON answers escape it themselves)
    assert problem.format() == (
        "x\\nforged.yaml:1:1: error: pwned\\r.yaml:4:1: error: /paths: YAML syntax: "
        "did not find expected node content (while parsing a flow node)"
    )
    (tmp_path / "up.zip").write_bytes(data)
    assert main(["validate", str(tmp_path / "up.zip")]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("x\\nforged.yaml:1:1: error: pwned\\r")


def test_a_zip_member_named_twice_is_a_warning_and_the_later_one_is_read() -> None:
    data = _zip(
        ("openapi.yaml", MINIMAL_YAML),
        ("openapi.yaml", MINIMAL_YAML.replace("title: t", "title: later")),
    )
    result = read_spec(data, name="up.zip")
    assert result.errors == []
    assert result.api is not None and result.api.title == "later"
    assert [(p.source, p.message) for p in result.warnings] == [
        ("up.zip", "the zip holds 'openapi.yaml' twice; the later one is read")
    ]


def test_backslashes_in_zip_member_names_are_folders() -> None:
    """Older Windows zip tools write ``paths\\a.yaml``: a folder, not a name outside the
    archive (a ``..\\`` still is)."""
    root = MINIMAL_YAML.replace(
        '  /pets:\n    get:\n      responses:\n        "200": {description: ok}\n',
        "  /pets:\n    $ref: 'paths/pets.yaml'\n",
    )
    item = "get:\n  responses:\n    '200': {description: ok}\n"
    result = read_spec(_zip(("api\\openapi.yaml", root), ("api\\paths\\pets.yaml", item)))
    assert result.errors == [], [p.format() for p in result.errors]
    assert result.api is not None and len(result.api.operations) == 1
    outside = only_error(read_spec(_zip(("openapi.yaml", root), ("..\\evil.yaml", "x: 1"))))
    assert outside.message == "zip entry '..\\\\evil.yaml' points outside the archive"


def test_an_encrypted_zip_member_is_refused_in_one_clean_line() -> None:
    data = bytearray(_zip(("openapi.yaml", MINIMAL_YAML)))
    data[6] |= 1  # "encrypted" in the local header and in the central directory
    data[data.find(b"PK\x01\x02") + 8] |= 1
    problem = only_error(read_spec(bytes(data), name="up.zip"))
    assert problem.message == (
        "zip entry 'openapi.yaml' is encrypted; gatebench reads no password-protected "
        "archive: zip the files again without a password"
    )


def test_benchmark_file_points_to_unmodified_spec(tmp_path: Path) -> None:
    write(tmp_path, "api.yaml", MINIMAL_YAML)
    bench = write(
        tmp_path,
        "bench.yaml",
        "x-gatebench:\n  spec: api.yaml\n  workloads:\n    - {name: w, operation: GET /pets, injection: {at_once: 1}}\n",
    )
    result = read_spec(bench)
    assert result.errors == []
    assert result.spec_name == "api.yaml"
    assert result.benchmark_loc is not None and result.benchmark_loc.doc == "bench.yaml"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "https://example.com/api.yaml",
            "a URL is never fetched: put the file in the bundle (a folder or zip) and give its "
            "relative path",
        ),
        ("//example.com/api.yaml", "a URL is never fetched"),
        ("../api.yaml", "the path leaves the bundle"),
        ("nothere.yaml", "no such file beside the benchmark file"),
    ],
)
def test_a_benchmark_files_spec_is_a_file_beside_it(
    tmp_path: Path, target: str, message: str
) -> None:
    """A URL was read as a relative path and answered 'no such file beside the benchmark
    file', as if a file of that name could have been there."""
    write(tmp_path, "api.yaml", MINIMAL_YAML)
    bench = write(tmp_path, "bench.yaml", f"x-gatebench:\n  spec: '{target}'\n")
    [problem] = read_spec(bench).errors
    assert problem.pointer == "/x-gatebench/spec"
    assert problem.message.startswith(f"{target!r}: {message}")


# -- safety -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "https://example.com/schemas.yaml#/Pet",
            "remote reference 'https://example.com/schemas.yaml#/Pet' is not fetched; put the "
            "file in the bundle (a folder or zip) and refer to it by a relative path",
        ),
        (
            "//example.com/x.yaml",
            "remote reference '//example.com/x.yaml' is not fetched; put the file in the bundle "
            "(a folder or zip) and refer to it by a relative path",
        ),
        (
            "../outside.yaml",
            "'../outside.yaml' points outside the bundle (the path leaves the bundle)",
        ),
        (
            "/etc/passwd",
            "'/etc/passwd' points outside the bundle (absolute paths point outside the bundle)",
        ),
        (
            "file:///etc/passwd",
            "'file:///etc/passwd' points outside the bundle (the file lies outside the bundle)",
        ),
    ],
)
def test_references_outside_the_bundle_are_never_followed(
    tmp_path: Path, ref: str, message: str
) -> None:
    text = MINIMAL_YAML.replace('"200": {description: ok}', f'"200": {{$ref: "{ref}"}}')
    result = read_spec(write(tmp_path / "b", "api.yaml", text))
    problem = warning_at(result, "/paths/~1pets/get/responses/200/$ref")
    assert problem.message == message + "; response 200 is unknown"
    assert problem.line == 7
    # The response is unknown; the route stays.
    assert result.api is not None
    (op,) = result.api.operations
    assert op.responses == ()
    assert [u.to_dict() for u in op.unknown] == [
        {
            "part": "response 200",
            "pointer": "/paths/~1pets/get/responses/200/$ref",
            "reason": message,
        }
    ]


def test_unresolvable_local_ref_suggests_a_name(tmp_path: Path) -> None:
    text = MINIMAL_YAML + "components:\n  responses:\n    Ok: {description: ok}\n"
    text = text.replace('"200": {description: ok}', '"200": {$ref: "#/components/responses/OK"}')
    problem = warning_at(
        read_spec(write(tmp_path, "api.yaml", text)), "/paths/~1pets/get/responses/200/$ref"
    )
    assert problem.message == (
        "cannot resolve '#/components/responses/OK': no 'OK' in /components/responses; did you "
        "mean 'Ok'?; response 200 is unknown"
    )


def test_circular_reference_chain_is_an_error_not_a_hang(tmp_path: Path) -> None:
    text = MINIMAL_YAML.replace(
        "      responses:",
        "      parameters: [{$ref: '#/components/parameters/A'}]\n      responses:",
    ) + (
        "components:\n  parameters:\n    A: {$ref: '#/components/parameters/B'}\n"
        "    B: {$ref: '#/components/parameters/A'}\n"
    )
    problem = warning_at(
        read_spec(write(tmp_path, "api.yaml", text)), "/paths/~1pets/get/parameters/0/$ref"
    )
    assert problem.message == (
        "circular $ref: api.yaml#/components/parameters/A -> api.yaml#/components/parameters/B "
        "-> api.yaml#/components/parameters/A; the parameter is unknown"
    )


def test_size_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "api.yaml", MINIMAL_YAML + "#" * 2000)
    problem = only_error(read_spec(path, limits=Limits(max_bytes=1000)))
    assert (
        problem.message
        == f"the file is {path.stat().st_size:,} bytes; the limit is 1,000 (raise it with --max-bytes)"
    )
    upload = only_error(
        read_spec(path.read_bytes(), name="api.yaml", limits=Limits(max_bytes=1000))
    )
    assert upload.message == f"the upload is {path.stat().st_size:,} bytes; the limit is 1,000"


def test_size_limit_counts_included_files(tmp_path: Path) -> None:
    root = bundle_files(tmp_path)
    write(root, "schemas/pet.yaml", "type: object\ndescription: " + "x" * 5000 + "\n")
    problem = only_error(read_spec(root, limits=Limits(max_bytes=4000)))
    assert problem.message == (
        "the description and the files it includes exceed 4,000 bytes (raise the limit with --max-bytes)"
    )


def test_billion_laughs(tmp_path: Path) -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    problem = only_error(read_spec(write(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")))
    assert problem.message == (
        "the document expands to more than 5,000,000 values (YAML aliases can multiply a small "
        "file: an alias bomb?)"
    )
    assert problem.line == 7


def test_recursive_alias(tmp_path: Path) -> None:
    problem = only_error(read_spec(write(tmp_path, "a.yaml", "a: &x\n  b: *x\n")))
    assert (problem.pointer, problem.message, problem.line) == (
        "/a/b",
        "alias *x refers to a value that contains it",
        2,
    )


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_depth_limit(tmp_path: Path, fmt: str) -> None:
    text = "[" * 100_000 + "]" * 100_000
    problem = only_error(read_spec(write(tmp_path, f"deep.{fmt}", text)))
    assert problem.message == "nesting deeper than 128 levels"


def test_non_utf8_bytes(tmp_path: Path) -> None:
    data = MINIMAL_YAML.replace("title: t", "title: caf\xe9").encode("latin-1")
    problem = only_error(read_spec(write(tmp_path, "api.yaml", data)))
    assert problem.message == "byte 0xe9 at offset 32 is not valid UTF-8; save the file as UTF-8"
    assert (problem.line, problem.column) == (2, 18)


def test_control_characters(tmp_path: Path) -> None:
    yaml_problem = only_error(
        read_spec(write(tmp_path, "api.yaml", MINIMAL_YAML.replace("title: t", "title: t\x07")))
    )
    assert yaml_problem.message == (
        "character U+0007 is not allowed in YAML; remove it or escape it inside a double-quoted string"
    )
    assert (yaml_problem.line, yaml_problem.column) == (2, 16)
    json_problem = only_error(
        read_spec(write(tmp_path, "api.json", '{"openapi": "3.0.3", "info": {"title": "a\tb"}}'))
    )
    assert (
        json_problem.message
        == "JSON syntax: raw control character U+0009 inside a string; escape it (\\n, \\t, \\u00XX)"
    )
    assert (json_problem.line, json_problem.column) == (1, 42)


@pytest.mark.parametrize(
    ("text", "escape", "column"),
    [
        ('{"openapi": "3.0.3", "info": {"title": "a\\ud800", "version": "1"}}', "\\ud800", 42),
        ('{"openapi": "3.0.3", "paths": {"/a\\uDFFF": {}}}', "\\uDFFF", 35),
        ('{"openapi": "3.0.3", "x": ["\\ud83d\\u0041"]}', "\\ud83d", 29),
    ],
)
def test_a_lone_surrogate_escape_is_not_json_text(
    tmp_path: Path, text: str, escape: str, column: int
) -> None:
    """json.loads keeps ``\\ud800`` as a character no encoder writes: it passed, then failed
    with a traceback in the strict check, ``parse`` or the result store."""
    problem = only_error(read_spec(write(tmp_path, "api.json", text)))
    assert (problem.pointer, problem.line, problem.column, problem.message) == (
        "",
        1,
        column,
        f"JSON syntax: {escape} is not a Unicode character (half of a UTF-16 surrogate pair, "
        "without the other half)",
    )


def test_a_surrogate_pair_and_an_escaped_backslash_are_json_text(tmp_path: Path) -> None:
    doc = {"openapi": "3.0.3", "info": {"title": "\U0001f600 \\ud800", "version": "1"}, "paths": {}}
    text = json.dumps(doc)
    assert "\\ud83d\\ude00 \\\\ud800" in text
    result = read_spec(write(tmp_path, "api.json", text))
    assert result.errors == []
    assert result.api is not None and result.api.title == "\U0001f600 \\ud800"


def test_trailing_commas_are_tolerated_with_a_warning(tmp_path: Path) -> None:
    text = (
        '{"openapi": "3.0.3", "info": {"title": "t", "version": "1",},\n'
        ' "paths": {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}},\n}'
    )
    result = read_spec(write(tmp_path, "api.json", text))
    assert result.errors == []
    warnings = [p for p in result.problems if p.message.startswith("trailing comma")]
    assert [(p.line, p.column, p.message) for p in warnings] == [
        (1, 59, "trailing comma ignored (JSON does not allow one)"),
        (2, 73, "trailing comma ignored (JSON does not allow one)"),
    ]


def test_json_syntax_error_is_located(tmp_path: Path) -> None:
    problem = only_error(
        read_spec(write(tmp_path, "api.json", '{"openapi": "3.0.3"\n "info": {}}'))
    )
    assert (problem.line, problem.column, problem.message) == (
        2,
        2,
        "JSON syntax: expected ',' between values",
    )


def test_yaml_syntax_error_is_located(tmp_path: Path) -> None:
    problem = only_error(
        read_spec(write(tmp_path, "api.yaml", "openapi: 3.0.3\ninfo: [a, b\npaths: {}\n"))
    )
    assert (
        problem.message
        == "YAML syntax: did not find expected ',' or ']' (while parsing a flow sequence)"
    )
    assert problem.line == 3


def test_duplicate_keys_warn(tmp_path: Path) -> None:
    text = MINIMAL_YAML + "  /pets:\n    post:\n      responses: {'201': {description: x}}\n"
    result = read_spec(write(tmp_path, "api.yaml", text))
    dupes = [p for p in result.problems if p.message.startswith("duplicate key")]
    assert [(p.pointer, p.message, p.line) for p in dupes] == [
        ("/paths/~1pets", "duplicate key '/pets'; the later value (line 8) wins", 8)
    ]
    json_result = read_spec(
        write(tmp_path, "d.json", '{"openapi": "3.0.3", "openapi": "3.0.3", "paths": {}}')
    )
    assert [(p.pointer, p.message) for p in json_result.problems if "duplicate" in p.message] == [
        ("", "duplicate key 'openapi'; the later value wins")
    ]


def test_nan_is_not_json(tmp_path: Path) -> None:
    problem = only_error(read_spec(write(tmp_path, "api.json", '{"openapi": "3.0.3", "x": NaN}')))
    assert (problem.message, problem.line, problem.column) == (
        "NaN is not a JSON value; use a number or a string",
        1,
        27,
    )


def test_symlink_leading_out_of_the_bundle(tmp_path: Path) -> None:
    outside = write(tmp_path, "secret.yaml", "password: hunter2\n")
    root = tmp_path / "bundle"
    write(
        root,
        "api.yaml",
        MINIMAL_YAML.replace('"200": {description: ok}', '"200": {$ref: "link.yaml"}'),
    )
    os.symlink(outside, root / "link.yaml")
    problem = warning_at(read_spec(root / "api.yaml"), "/paths/~1pets/get/responses/200/$ref")
    assert problem.message == (
        "'link.yaml' points outside the bundle (the path (or a symlink on it) leads outside the "
        "bundle); response 200 is unknown"
    )


def test_missing_file_and_empty_document(tmp_path: Path) -> None:
    assert only_error(read_spec(tmp_path / "nope.yaml")).message == "no such file or folder"
    empty = only_error(read_spec(write(tmp_path, "empty.yaml", "")))
    assert (
        empty.message
        == "expected an OpenAPI or Swagger document (a mapping with 'openapi' or 'swagger'), got null"
    )


def test_raml_include_outside_bundle_and_cycles(tmp_path: Path) -> None:
    outside = write(
        tmp_path, "a/api.raml", "#%RAML 1.0\ntitle: x\ntypes: !include ../secret.raml\n"
    )
    problem = only_error(read_spec(outside))
    assert problem.message == "!include '../secret.raml': the path leaves the bundle"
    assert (problem.pointer, problem.line) == ("/types", 3)
    write(tmp_path, "c/one.raml", "#%RAML 1.0 Library\ntypes: !include two.raml\n")
    write(tmp_path, "c/two.raml", "#%RAML 1.0 Library\ntypes: !include one.raml\n")
    cyclic = only_error(
        read_spec(
            write(tmp_path, "c/api.raml", "#%RAML 1.0\ntitle: x\nuses:\n  l: !include one.raml\n")
        )
    )
    assert (
        cyclic.message
        == "!include 'one.raml': the file includes itself (directly or through other files)"
    )
    # every include that cannot be read is said at once (only the first was)
    several = read_spec(
        write(
            tmp_path,
            "d/api.raml",
            "#%RAML 1.0\ntitle: x\ntypes:\n  A: !include ../secret.json\n"
            "  B: !include http://example.com/b.json\n  C: !include missing.json\n/a:\n  get:\n",
        )
    )
    assert [(p.line, p.message.split(":")[0]) for p in several.errors] == [
        (4, "!include '../secret.json'"),
        (5, "!include 'http"),
        (6, "!include 'missing.json'"),
    ]


@pytest.mark.parametrize(
    ("text", "pointer", "line", "column"),
    [
        ('openapi: 3.0.3\ninfo:\n\ttitle: t\n  version: "1"\npaths: {}\n', "/info", 3, 1),
        (MINIMAL_YAML.replace("    get:", "\tget:"), "/paths/~1pets", 5, 1),
    ],
)
def test_a_tab_in_indentation_is_named(
    tmp_path: Path, text: str, pointer: str, line: int, column: int
) -> None:
    """It said 'found character that cannot start any token', without saying which."""
    problem = only_error(read_spec(write(tmp_path, "api.yaml", text)))
    assert (problem.pointer, problem.line, problem.column, problem.message) == (
        pointer,
        line,
        column,
        "YAML syntax: found a tab, which YAML does not allow for indentation; indent with spaces",
    )


def test_an_empty_raml_file_says_it_holds_nothing(tmp_path: Path) -> None:
    problem = only_error(read_spec(write(tmp_path, "api.raml", "#%RAML 1.0\n")))
    assert (problem.pointer, problem.line, problem.column, problem.message) == (
        "",
        1,
        1,
        "expected a RAML API (a mapping), got nothing",
    )


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ("1e400", ".inf (an infinite number, or one beyond a 64-bit float such as 1e400)"),
        ("-.inf", "-.inf (an infinite number, or one beyond a 64-bit float such as -1e400)"),
        (".nan", ".nan (not a number)"),
    ],
)
def test_a_number_json_cannot_hold_is_named(tmp_path: Path, value: str, got: str) -> None:
    """1e400 and .nan reached the schema check as null: 'expected a number, got None'."""
    text = MINIMAL_YAML.replace(
        "    get:\n",
        f"    get:\n      parameters: [{{name: q, in: query, schema: {{minimum: {value}}}}}]\n",
    )
    result = read_spec(write(tmp_path, "api.yaml", text))
    assert [(p.pointer, p.line, p.column, p.message) for p in result.warnings] == [
        (
            "/paths/~1pets/get/parameters/0/schema/minimum",
            6,
            50,
            f"expected a number, got {got}, which JSON cannot hold",
        )
    ]


@pytest.mark.parametrize("ref", ["#", "", "api.yaml"])
def test_a_reference_to_the_whole_document_says_so(tmp_path: Path, ref: str) -> None:
    """It said 'a parameter without a 'name' cannot be sent': the document has no 'name'."""
    text = (
        MINIMAL_YAML.replace("    get:\n", f"    get:\n      parameters: [{{$ref: '{ref}'}}]\n")
        + f"  /b:\n    $ref: '{ref}'\n"
    )
    result = read_spec(write(tmp_path, "api.yaml", text))
    said = f"{ref!r} points at the whole document, not at an object in it"
    assert [(p.pointer, p.line, p.column, p.message) for p in result.warnings] == [
        ("/paths/~1pets/get/parameters/0/$ref", 6, 21, f"{said}; the parameter is unknown"),
        ("/paths/~1b/$ref", 10, 5, f"{said}; the operations of this path are left out"),
    ]
