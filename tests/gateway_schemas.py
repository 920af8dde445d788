"""Schemas of Kong and Tyk (tests/data/schemas, sources in tests/data/SOURCES.md), for tests
that run everywhere: Kong's declarative format and plugins as transcribed from its
``schema.lua`` files, Tyk's own API definition and ``tyk.conf`` schemas and a transcription of
its ``apidef`` structs. Like KrakenD's official schema (krakend_schema.py), they check the
files where the gateways are not installed (Kong never is here)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import yaml
from jsonschema import Draft4Validator, Draft202012Validator
from jsonschema.exceptions import ValidationError

from paths import DATA

KONG_SCHEMA = DATA / "schemas" / "kong-3.9" / "declarative-policies.schema.json"
TYK_CLASSIC_SCHEMA = DATA / "schemas" / "tyk-5.8" / "apidef-classic.schema.json"
TYK_STRUCTS_SCHEMA = DATA / "schemas" / "tyk-5.8" / "apidef-structs.schema.json"
TYK_CONF_SCHEMA = DATA / "schemas" / "tyk-5.8" / "tyk-conf.schema.json"


@cache
def kong_validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(KONG_SCHEMA.read_text()))


@cache
def tyk_validators() -> tuple[Draft4Validator, Draft202012Validator]:
    """Tyk's own schema (draft 4, as Tyk states it) and the struct transcription."""
    return (
        Draft4Validator(json.loads(TYK_CLASSIC_SCHEMA.read_text())),
        Draft202012Validator(json.loads(TYK_STRUCTS_SCHEMA.read_text())),
    )


def _lines(errors: list[ValidationError]) -> list[str]:
    return sorted(f"/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors)


def kong_errors(kong_yml: str | dict[str, Any]) -> list[str]:
    """``pointer: message`` for every way ``kong.yml`` breaks the transcribed schema."""
    doc = yaml.safe_load(kong_yml) if isinstance(kong_yml, str) else kong_yml
    return _lines(list(kong_validator().iter_errors(doc)))


@cache
def tyk_conf_validator() -> Draft4Validator:
    """``tyk.conf``'s schema, as Tyk's own ``tyk lint`` reads it (draft 4)."""
    return Draft4Validator(json.loads(TYK_CONF_SCHEMA.read_text()))


def tyk_conf_errors(conf: str | dict[str, Any]) -> list[str]:
    """``pointer: message`` for every way ``tyk.conf`` breaks Tyk's configuration schema."""
    doc = json.loads(conf) if isinstance(conf, str) else conf
    return _lines(list(tyk_conf_validator().iter_errors(doc)))


def tyk_errors(api_definition: str | dict[str, Any]) -> list[str]:
    """``pointer: message`` for every way an API definition breaks Tyk's schema or the structs."""
    doc = json.loads(api_definition) if isinstance(api_definition, str) else api_definition
    return _lines([e for v in tyk_validators() for e in v.iter_errors(doc)])
