"""The schema check reads openapi-spec-validator's schema files itself and compiles each
jsonschema-rs validator once per process; the library's Python backend stays the fallback
(``OPENAPI_SPEC_VALIDATOR_SCHEMA_VALIDATOR_BACKEND=jsonschema``) with the same findings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from openapi_spec_validator.schemas.backend.jsonschema import create_validator
from openapi_spec_validator.schemas.utils import get_schema_content

from gatebench.core.spec import _conformance
from gatebench.core.spec._conformance import _rust_validator, _schema_path, conformance_problems

DOC = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/a": {
            "get": {"deprecated": "no", "x_unknown": 1, "responses": {"200": {"description": "ok"}}}
        },
        "/b": {
            "get": {
                "parameters": [
                    {"name": "q", "in": "query", "schema": {}, "content": {"text/plain": {}}}
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "requestBody": {
                    "content": {"application/json": {"schema": {"type": "object", "required": []}}}
                },
                "responses": {},
            },
        },
    },
}
EXPECTED = [
    ("/paths/~1a/get/deprecated", "expected a boolean, got 'no'"),
    ("/paths/~1a/get/x_unknown", "unexpected property 'x_unknown'"),
    # in words, not jsonschema's {"required":["schema","content"]} is not allowed for {...}
    (
        "/paths/~1b/get/parameters/0",
        "'schema' and 'content' may not both be given (one of them says what the value is)",
    ),
    (
        "/paths/~1b/post/requestBody/content/application~1json/schema/required",
        "expected at least 1 item, got 0",  # not "[] has less than 1 item"
    ),
    ("/paths/~1b/post/responses", "expected at least 1 entry, got 0"),  # not "{} has less ..."
]


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    _rust_validator.cache_clear()
    yield
    _rust_validator.cache_clear()


@pytest.mark.parametrize("version", ["2.0", "3.0", "3.1", "3.2"])
def test_schema_files_are_the_librarys(version: str) -> None:
    assert json.loads(_schema_path(version).read_text(encoding="utf-8")) == dict(
        get_schema_content(version)
    )


def test_compiled_once(fresh_cache: None) -> None:
    assert _rust_validator("3.0") is not None
    assert _rust_validator("3.0") is _rust_validator("3.0")
    assert _rust_validator.cache_info().misses == 1


def test_findings(fresh_cache: None) -> None:
    found = [(p.pointer, p.message) for p in conformance_problems(DOC, "3.0.3", "a.json")]
    assert sorted(found) == EXPECTED


def test_python_backend_when_asked(fresh_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAPI_SPEC_VALIDATOR_SCHEMA_VALIDATOR_BACKEND", "jsonschema")
    assert _rust_validator("3.0") is None
    # The library's Python validators, built here: its own proxies keep whichever backend
    # they were first resolved with in this process.
    schema = get_schema_content("3.0")
    asked: list[str] = []

    def python_validators(version: str) -> tuple[Any, Any]:
        asked.append(version)
        return create_validator(schema), lambda: create_validator(schema)

    monkeypatch.setattr(_conformance, "_python_validators", python_validators)
    found = [(p.pointer, p.message) for p in conformance_problems(DOC, "3.0.3", "a.json")]
    assert asked == ["3.0.3"]
    assert sorted(found) == EXPECTED
