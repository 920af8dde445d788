"""The renderer base: RenderTarget validation, the registry, routing semantics, refusals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gatebench.core.errors import RenderError, UnsupportedFeature, UnsupportedHere
from gatebench.core.ir import Api, Operation
from gatebench.core.renderers import (
    RenderTarget,
    encode_literal,
    escape_regex_char,
    gateway_aliases,
    gateway_names,
    get_renderer,
    identifier,
    local_gateway_names,
    routes_for,
)
from gatebench.core.renderers._routes import shared_param_names
from gatebench.local.provisioners import write_files
from replay import expected_route


def api_of(*routes: tuple[str, str], base_url: str = "") -> Api:
    ops = tuple(
        Operation(f"op{i}", method, path, base_url, pointer=f"/paths/{i}/{method.lower()}")
        for i, (method, path) in enumerate(routes)
    )
    return Api("t", "1", "openapi-3.0.3", ops)


# -- RenderTarget --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"workdir": "relative/dir"},
            "workdir must be an absolute path of A-Za-z0-9._+/- characters; got 'relative/dir'",
        ),
        (
            {"workdir": "/tmp/a b"},
            "workdir must be an absolute path of A-Za-z0-9._+/- characters; got '/tmp/a b'",
        ),
        (
            {"workdir": "/tmp/x;rm"},
            "workdir must be an absolute path of A-Za-z0-9._+/- characters; got '/tmp/x;rm'",
        ),
        ({"workdir": "/w", "listen_port": 0}, "listen_port must be a TCP port (1-65535); got 0"),
        (
            {"workdir": "/w", "listen_host": "a b"},
            "listen_host must be an IPv4 address or a host name; got 'a b'",
        ),
        (
            {"workdir": "/w", "backend_url": "http://x:1/path"},
            "backend_url must be http(s)://host:port with no path, query or credentials; got 'http://x:1/path'",
        ),
        (
            {"workdir": "/w", "backend_url": "http://u:p@x:1"},
            "backend_url must be http(s)://host:port with no path, query or credentials; got 'http://u:p@x:1'",
        ),
        (
            {"workdir": "/w", "backend_url": "http://x;y:1"},
            "backend_url must be http(s)://host:port with no path, query or credentials; got 'http://x;y:1'",
        ),
        ({"workdir": "/w", "workers": 0}, "workers must be an integer from 1 to 256; got 0"),
    ],
)
def test_render_target_refuses_unsafe_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(RenderError) as info:
        RenderTarget(**kwargs)  # type: ignore[arg-type]
    assert [p.message for p in info.value.problems] == [message]


def test_render_target_derived_values() -> None:
    target = RenderTarget(workdir="/w", backend_url="https://backend.internal", listen_port=81)
    assert target.backend_port == 443
    assert target.backend_origin == "https://backend.internal:443"
    assert target.listen_address == "127.0.0.1:81"
    assert target.path("logs", "x.log") == "/w/logs/x.log"


# -- registry ------------------------------------------------------------------------------


def test_registry_names_aliases_and_local_defaults() -> None:
    names = gateway_names()
    assert names == tuple(sorted(names))
    for expected in ("apache", "caddy", "envoy", "haproxy", "kong", "krakend", "nginx", "tyk"):
        assert expected in names
    assert gateway_aliases()["httpd"] == "apache"
    assert local_gateway_names() == ("apache", "caddy", "envoy", "haproxy", "nginx", "traefik")
    assert get_renderer(" HTTPD ").name == "apache"


def test_unknown_gateway_lists_the_known_ones() -> None:
    with pytest.raises(RenderError) as info:
        get_renderer("kongg")
    assert str(info.value) == "no renderer for 'kongg'; available: " + ", ".join(gateway_names())


def test_plan_accepts_the_registered_names() -> None:
    from gatebench.core.plan import build_plan
    from gatebench.core.spec import load_spec

    api = load_spec(Path(__file__).resolve().parents[2] / "examples/petstore/openapi.yaml").api
    assert api is not None
    section = {
        "gateways": ["httpd", "kong", "nginx"],
        "backend": {"mock": True},
        "workloads": [{"name": "list", "operation": "listPets", "injection": {"at_once": 1}}],
    }
    plan = build_plan(section, api)
    assert plan.gateways == ("apache", "kong", "nginx")


def test_cloud_only_gateways_have_no_local_command() -> None:
    kong = get_renderer("kong")
    assert kong.run_argv("/tmp") is None
    assert kong.available_here() == "kong only runs on the cloud path"
    assert kong.cloud_argv(RenderTarget(workdir="/gatebench")) == [
        "kong",
        "start",
        "-c",
        "/gatebench/kong.conf",
    ]


def test_missing_program_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("gatebench.core.renderers._base._SYSTEM_BIN_DIRS", ("/nonexistent",))
    with pytest.raises(UnsupportedHere) as info:
        get_renderer("haproxy").run_argv("/tmp")
    assert str(info.value) == (
        "haproxy: 'haproxy' is not installed here; run `scripts/setup.sh apt` (Debian package haproxy)"
    )


def test_command_templates_are_filled_from_the_target() -> None:
    target = RenderTarget(workdir="/w", listen_port=8123, admin_port=8124, workers=2)
    argv = get_renderer("varnish").cloud_argv(target)
    assert argv is not None
    assert "127.0.0.1:8123" in argv
    assert "127.0.0.1:8124" in argv
    envoy = get_renderer("envoy").cloud_argv(target)
    assert envoy is not None
    assert envoy[envoy.index("--concurrency") + 1] == "2"


def test_write_files_stays_inside_the_workdir(tmp_path: Path) -> None:
    from gatebench.core.errors import RunError

    with pytest.raises(RunError, match="not a relative path inside the workdir"):
        write_files({"../escape.conf": "x"}, tmp_path)
    with pytest.raises(RunError, match="not a relative path inside the workdir"):
        write_files({"/etc/passwd": "x"}, tmp_path)
    write_files({"a/b.conf": "x\n"}, tmp_path)
    assert (tmp_path / "a" / "b.conf").read_text() == "x\n"


# -- routing semantics ---------------------------------------------------------------------


def test_literal_segments_win_over_templates() -> None:
    api = api_of(
        ("GET", "/users/{id}"),
        ("GET", "/users/me"),
        ("GET", "/a/{x}/c"),
        ("GET", "/a/b/{y}"),
        ("GET", "/files/{name}"),
        ("GET", "/files/{name}.json"),
        ("GET", "/files/index.json"),
    )
    order = [r.path for r in routes_for(api)]
    assert order.index("/users/me") < order.index("/users/{id}")
    assert order.index("/a/b/{y}") < order.index("/a/{x}/c")
    assert order.index("/files/index.json") < order.index("/files/{name}.json")
    assert order.index("/files/{name}.json") < order.index("/files/{name}")


def test_oracle_is_method_aware_and_segment_exact() -> None:
    routes = routes_for(api_of(("GET", "/users/me"), ("DELETE", "/users/{id}"), ("GET", "/p/")))
    hit = expected_route(routes, "DELETE", "/users/me")
    assert hit is not None
    assert hit.path == "/users/{id}"
    assert expected_route(routes, "PATCH", "/users/me") is None
    assert expected_route(routes, "DELETE", "/users/a/b") is None
    assert expected_route(routes, "DELETE", "/users/") is None
    assert expected_route(routes, "GET", "/p") is None
    assert expected_route(routes, "GET", "/p/") is not None
    assert expected_route(routes, "DELETE", "/users/a%2Fb") is not None


def test_base_path_is_part_of_the_route() -> None:
    (route,) = routes_for(api_of(("GET", "/pets"), base_url="http://x.example/v1/"))
    assert route.path == "/v1/pets"


def test_encode_literal_keeps_pchar_and_escapes_the_rest() -> None:
    assert encode_literal("a b") == "a%20b"
    assert encode_literal("café") == "caf%C3%A9"
    assert encode_literal("!$&'()*+,;=:@-._~") == "!$&'()*+,;=:@-._~"
    assert encode_literal('q"<>[]^`|\\') == "q%22%3C%3E%5B%5D%5E%60%7C%5C"
    assert encode_literal("%2f%41") == "%2F%41"


def test_regexes_carry_no_metacharacter_from_the_spec() -> None:
    assert escape_regex_char("a") == "a"
    assert escape_regex_char("$") == "\\x24"
    assert escape_regex_char("é") == "\\xe9"
    (route,) = routes_for(api_of(("GET", "/a.b/(c)*/{x}")))
    regex = route.regex()
    assert regex == "^/a\\x2eb/\\x28c\\x29\\x2a/(?:[^/]+)$"
    assert re.fullmatch(regex, "/a.b/(c)*/1")
    assert not re.fullmatch(regex, "/axb/(c)*/1")


def test_either_form_accepts_decoded_characters() -> None:
    (route,) = routes_for(api_of(("GET", "/café/a%20b")))
    regex = route.regex(either=True)
    for path in ("/caf%C3%A9/a%20b", "/caf%c3%a9/a%20b", "/café/a b"):
        assert re.fullmatch(regex, path), path
    assert not re.fullmatch(regex, "/cafe/a b")


def test_identifier_is_safe_and_unique() -> None:
    taken: set[str] = set()
    assert identifier('get "x"; {return}', taken=taken) == "get__x____return"
    assert identifier('get "x"; {return}', taken=taken) == "get__x____return_2"
    assert identifier("123", taken=taken) == "v_123"
    assert identifier("日本", taken=taken) == "v"


def test_parameter_names_agree_where_paths_share_a_prefix() -> None:
    routes = routes_for(
        api_of(
            ("GET", "/users/{id}/posts/"), ("POST", "/users/{userId}/posts"), ("PUT", "/o/{a.b}")
        )
    )
    names = {r.path: shared_param_names(routes)[r.index] for r in routes}
    assert names["/users/{id}/posts/"] == names["/users/{userId}/posts"]
    assert names["/o/{a.b}"] == ("a_b",)


@pytest.mark.parametrize(
    ("operations", "message"),
    [
        (
            [Operation("op0", "GET", "/x/{a}{b}", "")],
            "parameters 'a' and 'b' follow each other in one path segment with nothing between them; no gateway can tell where one ends",
        ),
        (
            [Operation("op0", "GET", "/x", "http://h/{v}")],
            "the server URL's path '/{v}' contains '{' or '}'; a base path must be literal",
        ),
    ],
)
def test_routes_that_no_gateway_can_express(operations: list[Operation], message: str) -> None:
    with pytest.raises(UnsupportedFeature) as info:
        routes_for(Api("t", "1", "openapi-3.0.3", tuple(operations)))
    assert [p.message for p in info.value.problems] == [message]


# -- refusals, located ---------------------------------------------------------------------


def test_trace_is_refused_where_the_gateway_answers_it_itself() -> None:
    api = Api(
        "t",
        "1",
        "openapi-3.0.3",
        (Operation("traceIt", "TRACE", "/debug", "", pointer="/paths/~1debug/trace"),),
    )
    for gateway, reason in (
        ("nginx", "nginx answers TRACE with 405 itself"),
        ("apache", "httpd's core answers TRACE itself"),
        ("varnish", "Varnish does not forward TRACE"),
        ("krakend", "KrakenD endpoints take only GET, POST, PUT, PATCH, DELETE"),
        ("google-api-gateway", "TRACE is not an OpenAPI 2.0 method"),
    ):
        with pytest.raises(UnsupportedFeature) as info:
            get_renderer(gateway).render(api, RenderTarget(workdir="/w"))
        (problem,) = info.value.problems
        assert problem.pointer == "/paths/~1debug/trace"
        assert problem.message == f"{gateway} cannot express this route (TRACE /debug): {reason}"
    for gateway in ("haproxy", "caddy", "envoy", "kong", "tyk", "traefik"):
        assert get_renderer(gateway).render(api, RenderTarget(workdir="/w"))


def test_krakend_refuses_every_inexpressible_route_at_once() -> None:
    api = api_of(
        ("GET", "/f/{n}.json"),
        ("GET", "/a:b"),
        ("GET", "/__health"),
        ("GET", "/back\\slash"),
        ("GET", "/ok"),
    )
    with pytest.raises(UnsupportedFeature) as info:
        get_renderer("krakend").render(api, RenderTarget(workdir="/w"))
    assert sorted(p.message for p in info.value.problems) == [
        "krakend cannot express this route (GET /__health): /__health is reserved by KrakenD",
        "krakend cannot express this route (GET /a:b): the path may not contain ':' (KrakenD endpoint paths exclude * ? & % : \\ and encoded '/')",
        "krakend cannot express this route (GET /back\\slash): the path may not contain '\\\\' (KrakenD endpoint paths exclude * ? & % : \\ and encoded '/')",
        "krakend cannot express this route (GET /f/{n}.json): a parameter must fill its whole path segment (KrakenD cannot build words from variables)",
    ]


def test_operations_on_one_route_share_it() -> None:
    # Same path once the base path is added, or only variable names differ: the first
    # operation's route forwards for all of them (the backend tells them apart).
    routes = routes_for(
        Api(
            "t",
            "1",
            "openapi-3.0.3",
            (
                Operation("op0", "GET", "/v1/x", "http://h/v1"),
                Operation("op1", "GET", "/x", "http://h/v1/v1"),
                Operation("op2", "GET", "/p/{a}", ""),
                Operation("op3", "GET", "/p/{b}", ""),
                Operation("op4", "DELETE", "/p/{b}", ""),
            ),
        )
    )
    assert sorted((r.method, r.path, r.operation_id) for r in routes) == [
        ("DELETE", "/p/{b}", "op4"),
        ("GET", "/p/{a}", "op2"),
        ("GET", "/v1/v1/x", "op0"),
    ]


def test_traefik_readiness_is_rendered_only_with_an_admin_port() -> None:
    import yaml

    api = api_of(("GET", "/pets"))
    renderer = get_renderer("traefik")
    cloud = renderer.render(api, RenderTarget(workdir="/w", listen_host="0.0.0.0"))
    static = yaml.safe_load(cloud["traefik.yml"])
    assert set(static["entryPoints"]) == {"web"} and "ping" not in static
    assert "gatebench-ready" not in yaml.safe_load(cloud["dynamic.yml"])["http"]["routers"]
    local = renderer.render(api, RenderTarget(workdir="/w", listen_port=8000, admin_port=8001))
    assert yaml.safe_load(local["traefik.yml"])["entryPoints"]["traefik"] == {
        "address": "127.0.0.1:8001"
    }
    assert renderer.env("/w", RenderTarget(workdir="/w", workers=2)) == {"GOMAXPROCS": "2"}


def test_traefik_boot_problems_are_its_err_and_ftl_lines() -> None:
    log = (
        "\x1b[90m2026-11-23T23:26:04Z\x1b[0m \x1b[33mWRN\x1b[0m \x1b[1mTraefik can reject some "
        "encoded characters\x1b[0m\n"
        "\x1b[90m2026-11-23T23:26:04Z\x1b[0m \x1b[31mERR\x1b[0m \x1b[36merror=\x1b[0m"
        '"error while parsing rule Methodd(`POST`)" \x1b[36mrouterName=\x1b[0mr0-create@file\n'
        "2026-11-23T23:26:05Z FTL Command error error=boom\n"
        "2026-11-23T23:26:05Z INF an ERR inside a message is not a level\n"
    )
    assert get_renderer("traefik").boot_problems(log) == [
        '2026-11-23T23:26:04Z ERR error="error while parsing rule Methodd(`POST`)" '
        "routerName=r0-create@file",
        "2026-11-23T23:26:05Z FTL Command error error=boom",
    ]
    assert get_renderer("nginx").boot_problems(log) == []


def test_normal_path_is_rfc_3986_syntax_normalisation() -> None:
    from replay import normal_path

    assert normal_path("/pct%20enc%2Fslash%41") == "/pct%20enc%2FslashA"
    assert normal_path("/a%7e%2d%5F/%c3%a9%3b") == "/a~-_/%C3%A9%3B"
    assert normal_path("/plain/%%41") == "/plain/%A"


def test_a_normalising_gateway_may_change_only_the_form_of_the_path() -> None:
    import json

    from replay import ReplayRequest, Reply, compare_echoes

    def reply(path: str) -> Reply:
        echo = {
            "method": "GET",
            "path": path,
            "query": "",
            "host": "h",
            "body_sha256": "",
            "body_length": 0,
            "headers": {},
        }
        return Reply(200, {"x-gatebench-backend": "echo"}, json.dumps(echo).encode())

    req = ReplayRequest("op: sample", "GET", "/a%41")
    direct = reply("/a%41")
    assert compare_echoes(req, direct, reply("/aA"), normalizes_path=True) == []
    assert compare_echoes(req, direct, reply("/aA")) == ["path: sent '/a%41', backend got '/aA'"]
    assert compare_echoes(req, direct, reply("/aB"), normalizes_path=True) == [
        "path: sent '/a%41', backend got '/aB'"
    ]


def test_empty_segments_krakend_and_tyk_cannot_forward_are_refused() -> None:
    """Seen with the real gateways: KrakenD never routes a literal '//', Tyk drops the first
    '/' of a path that starts with one; both keep a trailing slash, Tyk an inner '//'."""
    api = api_of(("GET", "//lead"), ("GET", "/in//ner"), ("GET", "/trailing/"))
    with pytest.raises(UnsupportedFeature) as info:
        get_renderer("krakend").render(api, RenderTarget(workdir="/w"))
    assert sorted(p.message for p in info.value.problems) == [
        "krakend cannot express this route (GET //lead): an empty segment ('//'): KrakenD's "
        "router never routes a request to it",
        "krakend cannot express this route (GET /in//ner): an empty segment ('//'): KrakenD's "
        "router never routes a request to it",
    ]
    with pytest.raises(UnsupportedFeature) as info:
        get_renderer("tyk").render(api, RenderTarget(workdir="/w"))
    assert [p.message for p in info.value.problems] == [
        "tyk cannot express this route (GET //lead): a path that starts with an empty segment "
        "('//'): Tyk joins the path to its target and drops the leading '/', so the backend "
        "would get another path"
    ]
    inner = api_of(("GET", "/in//ner"), ("GET", "/trailing/"))
    assert get_renderer("tyk").render(inner, RenderTarget(workdir="/w"))
