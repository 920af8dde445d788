"""Gateways that are not replayed on every machine (Kong and Google API Gateway never run
here; KrakenD and Tyk only where installed; Traefik boots but has no offline checker): their
goldens checked, everywhere, with what exists.

- KrakenD against the official JSON schema (v2.13, ``tests/data/schemas``, its https ``$id``s
  mapped to the local files); Google API Gateway as Swagger 2.0 with openapi-spec-validator.
- Structure: the fields each gateway's documentation requires for our semantics.
- Routing, simulated (not the real gateway): the route table *as written in the config*
  (regexes, templates, methods) is evaluated with Python's ``re`` over the replay matrix of
  the case, on the raw path and on the decoded path, and must route exactly the requests the
  IR routes. The config languages' regex subset used here (``\\xHH``, classes, groups,
  anchors) means the same in PCRE, RE2, Go and Python.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any
from urllib.parse import unquote

import pytest
import yaml
from _cases import ALL_SPECS, ERRORS_FILE, case_api, golden_target, render_case
from krakend_schema import krakend_validator
from openapi_spec_validator import validate

from gatebench.core.renderers import get_renderer
from replay import replay_matrix

Router = Callable[[str, str], bool]


@cache
def _files(gateway: str, case: str) -> dict[str, str] | None:
    files = render_case(get_renderer(gateway), case)
    return None if ERRORS_FILE in files else files


def _cases_rendered(gateway: str) -> list[str]:
    return [c for c in sorted(ALL_SPECS) if _files(gateway, c) is not None]


# -- KrakenD -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases_rendered("krakend"))
def test_krakend_matches_the_official_schema(case: str) -> None:
    files = _files("krakend", case)
    assert files is not None
    config = json.loads(files["krakend.json"])
    errors = sorted(krakend_validator().iter_errors(config), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:20])
    for endpoint in config["endpoints"]:
        assert endpoint["output_encoding"] == "no-op"
        assert endpoint["input_headers"] == ["*"]
        assert endpoint["input_query_strings"] == ["*"]
        (backend,) = endpoint["backend"]
        assert backend["encoding"] == "no-op"
        assert backend["url_pattern"] == endpoint["endpoint"]


def test_the_krakend_schema_check_can_fail() -> None:
    files = _files("krakend", "petstore")
    assert files is not None
    config = json.loads(files["krakend.json"])
    config["endpoints"][0]["endpoint"] = "/pets/*/x"
    config["endpoints"][0]["method"] = "TRACE"
    assert len(list(krakend_validator().iter_errors(config))) >= 2


@pytest.mark.parametrize("case", _cases_rendered("krakend"))
def test_krakend_parameter_names_agree_where_paths_share_a_prefix(case: str) -> None:
    """gin panics on /a/{x}/b beside /a/{y}/c: every prefix must name its parameter once."""
    files = _files("krakend", case)
    assert files is not None
    seen: dict[str, str] = {}
    for endpoint in json.loads(files["krakend.json"])["endpoints"]:
        parts = endpoint["endpoint"].split("/")
        for i, part in enumerate(parts):
            if part.startswith("{"):
                prefix = "/".join("{}" if p.startswith("{") else p for p in parts[:i])
                assert seen.setdefault(prefix, part) == part, endpoint["endpoint"]
                assert re.fullmatch(r"\{[A-Za-z][A-Za-z0-9_]*\}", part)


# -- Google API Gateway --------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases_rendered("google-api-gateway"))
def test_google_api_gateway_is_valid_swagger_2(case: str) -> None:
    files = _files("google-api-gateway", case)
    assert files is not None
    document = yaml.safe_load(files["openapi.yaml"])
    validate(document)
    assert document["swagger"] == "2.0"
    backend = document["x-google-backend"]
    assert backend["path_translation"] == "APPEND_PATH_TO_ADDRESS"
    assert backend["disable_auth"] is True
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", i) for i in ids)


def test_the_swagger_check_can_fail() -> None:
    files = _files("google-api-gateway", "petstore")
    assert files is not None
    document = yaml.safe_load(files["openapi.yaml"])
    path = next(p for p in document["paths"] if "{" in p)
    next(iter(document["paths"][path].values())).pop("parameters")
    with pytest.raises(Exception, match="petId"):
        validate(document)


# -- Kong, Tyk, Traefik: structure ---------------------------------------------------------


@pytest.mark.parametrize("case", _cases_rendered("kong"))
def test_kong_declarative_structure(case: str) -> None:
    files = _files("kong", case)
    assert files is not None
    config = yaml.safe_load(files["kong.yml"])
    assert config["_format_version"] == "3.0"
    (service,) = config["services"]
    assert service["url"] == golden_target("kong").backend_origin
    names = [r["name"] for r in service["routes"]]
    assert len(names) == len(set(names))
    priorities = [r["regex_priority"] for r in service["routes"]]
    assert priorities == sorted(priorities, reverse=True) and len(set(priorities)) == len(priorities)
    for route in service["routes"]:
        assert re.fullmatch(r"[\w.~-]+", route["name"])
        assert route["strip_path"] is False and route["preserve_host"] is True
        (path,) = route["paths"]
        assert path.startswith("~/") and path.endswith("$")
        assert len(route["methods"]) == 1
    conf = files["kong.conf"]
    assert "database = off\n" in conf
    assert f"declarative_config = {golden_target('kong').path('kong.yml')}\n" in conf


@pytest.mark.parametrize("case", _cases_rendered("tyk"))
def test_tyk_structure(case: str) -> None:
    files = _files("tyk", case)
    assert files is not None
    conf = json.loads(files["tyk.conf"])
    assert conf["app_path"] == golden_target("tyk").path("apps")
    assert conf["storage"]["type"] == "redis"
    assert conf["secret"] == "", "the secret comes from TYK_GW_SECRET, never from a file"
    options = conf["http_server_options"]
    assert options["enable_path_prefix_matching"] and options["enable_path_suffix_matching"]
    api = json.loads(files["apps/gatebench.json"])
    assert api["use_keyless"] is True
    assert api["proxy"]["strip_listen_path"] is False and api["proxy"]["listen_path"] == "/"
    assert api["version_data"]["versions"]["Default"]["use_extended_paths"] is True
    assert json.loads(files["policies/policies.json"]) == {}


@pytest.mark.parametrize("case", _cases_rendered("traefik"))
def test_traefik_structure(case: str) -> None:
    files = _files("traefik", case)
    assert files is not None
    static = yaml.safe_load(files["traefik.yml"])
    assert static["providers"]["file"]["filename"] == golden_target("traefik").path("dynamic.yml")
    assert static["entryPoints"]["web"]["address"] == golden_target("traefik").listen_address
    assert static["entryPoints"]["web"]["http"] == {"sanitizePath": False}
    dynamic = yaml.safe_load(files["dynamic.yml"])
    assert dynamic["http"]["services"]["backend"]["loadBalancer"]["passHostHeader"] is True
    # readiness: only on the admin port, only on loopback, only to Traefik's own ping
    assert static["entryPoints"]["traefik"] == {
        "address": f"127.0.0.1:{golden_target('traefik').admin_port}"
    }
    assert static["ping"] == {"entryPoint": "traefik", "manualRouting": True}
    ready = dynamic["http"]["routers"]["gatebench-ready"]
    assert ready == {
        "entryPoints": ["traefik"],
        "rule": "Path(`/ping`)",
        "service": "ping@internal",
    }
    others = [r for n, r in dynamic["http"]["routers"].items() if n != "gatebench-ready"]
    assert others and all(r["entryPoints"] == ["web"] for r in others)


# -- routing, simulated over the replay matrix ----------------------------------------------


def _pcre_to_python(regex: str) -> str:
    return regex.replace("(?<", "(?P<")


def kong_router(files: dict[str, str]) -> Router:
    routes = yaml.safe_load(files["kong.yml"])["services"][0]["routes"]
    table = [(r["methods"][0], re.compile(_pcre_to_python(r["paths"][0][1:]))) for r in routes]
    return lambda method, path: any(m == method and rx.match(path) for m, rx in table)


def tyk_router(files: dict[str, str]) -> Router:
    api = json.loads(files["apps/gatebench.json"])
    allow = api["version_data"]["versions"]["Default"]["extended_paths"]["white_list"]
    table = [(set(e["method_actions"]), re.compile(e["path"])) for e in allow]
    return lambda method, path: any(method in ms and rx.search(path) for ms, rx in table)


def traefik_router(files: dict[str, str]) -> Router:
    routers = yaml.safe_load(files["dynamic.yml"])["http"]["routers"].values()
    table = []
    for router in routers:
        if router["entryPoints"] != ["web"]:
            continue  # the readiness router, on the loopback admin entry point
        match = re.fullmatch(r"Method\(`([A-Z]+)`\) && PathRegexp\(`([^`]+)`\)", router["rule"])
        assert match, router["rule"]
        table.append((match.group(1), re.compile(match.group(2))))
    return lambda method, path: any(m == method and rx.search(path) for m, rx in table)


def _template_router(entries: list[tuple[str, str]]) -> Router:
    table = []
    for method, template in entries:
        pattern = "/".join(
            "[^/]+" if re.fullmatch(r"\{[^{}]+\}", part) else re.escape(part)
            for part in template.split("/")
        )
        table.append((method, re.compile(pattern)))
    return lambda method, path: any(m == method and rx.fullmatch(path) for m, rx in table)


def krakend_router(files: dict[str, str]) -> Router:
    endpoints = json.loads(files["krakend.json"])["endpoints"]
    return _template_router([(e["method"], e["endpoint"]) for e in endpoints])


def google_router(files: dict[str, str]) -> Router:
    paths = yaml.safe_load(files["openapi.yaml"])["paths"]
    return _template_router([(m.upper(), p) for p, item in paths.items() for m in item])


ROUTERS: dict[str, tuple[Callable[[dict[str, str]], Router], tuple[str, ...]]] = {
    # gateway: (route table reader, the path forms it may match on)
    "kong": (kong_router, ("raw", "decoded")),
    "tyk": (tyk_router, ("raw", "decoded")),
    "traefik": (traefik_router, ("raw", "decoded")),
    "krakend": (krakend_router, ("decoded",)),
    "google-api-gateway": (google_router, ("decoded",)),
}
PAIRS = [(g, c) for g in sorted(ROUTERS) for c in _cases_rendered(g)]


@pytest.mark.parametrize(("gateway", "case"), PAIRS, ids=[f"{g}-{c}" for g, c in PAIRS])
def test_config_routes_like_the_ir(gateway: str, case: str) -> None:
    files = _files(gateway, case)
    assert files is not None
    reader, forms = ROUTERS[gateway]
    router = reader(files)
    matrix = replay_matrix(case_api(case), large_body_bytes=1)
    wrong = []
    for req in matrix:
        for form in forms:
            path = unquote(req.path) if form == "decoded" else req.path
            if form == "decoded" and "%2F" in req.path.upper():
                continue  # a decoded %2F is a '/': outside the shared semantics
            if router(req.method, path) != req.expect_routed:
                wrong.append(f"{req.method} {req.target[:100]} ({form}) [{req.label}]")
    assert not wrong, f"{len(wrong)} requests routed differently from the IR:\n" + "\n".join(
        wrong[:40]
    )


def test_the_simulation_can_fail() -> None:
    files = _files("kong", "petstore")
    assert files is not None
    broken = files["kong.yml"].replace("[^/]+", ".+")
    router = kong_router({**files, "kong.yml": broken})
    assert router("GET", "/v1/pets/1/extra")

