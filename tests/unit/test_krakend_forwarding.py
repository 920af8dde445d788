"""What KrakenD does to a request on its way to the backend, as its renderer declares it
(docs/gateways.md, "What each gateway forwards unchanged"). The examples are what real
KrakenD CE 2.13.8 forwarded in route replay; route replay holds every KrakenD it finds to
exactly these rules, and compares the rest of the request byte for byte."""

from __future__ import annotations

import pytest

from gatebench.core.ir import Api, Operation
from gatebench.core.renderers import get_renderer, routes_for
from gatebench.core.renderers.krakend import rebuilt_path, rebuilt_query
from replay import Forwarding, ReplayRequest, Reply, compare_echoes, expected_route


@pytest.mark.parametrize(
    ("sent", "received"),
    [
        (
            "gb=1&gb=2&sp=a%20b+c&enc=%C3%A9%2F%3F&empty=",
            "empty=&enc=%C3%A9%2F%3F&gb=1&gb=2&sp=a+b+c",
        ),
        ("limit=20&gb=1&gb=2", "gb=1&gb=2&limit=20"),
        ("b=2&a=1&b=3", "a=1&b=2&b=3"),
        ("flag", "flag="),
        ("x=1;y=2&z=3", "z=3"),
        ("a=%zz&b=1", "b=1"),
        ("&&a=1&", "a=1"),
        ("", ""),
        ("q=(a)!*'~._-", "q=%28a%29%21%2A%27~._-"),
        ("k%20ey=v", "k+ey=v"),
    ],
)
def test_the_query_is_rebuilt_as_gos_url_values_encode(sent: str, received: str) -> None:
    assert rebuilt_query(sent) == received
    assert get_renderer("krakend").forwarded_query(sent) == received


@pytest.mark.parametrize(
    ("sent", "received"),
    [
        (
            "/pets/x%20y;z=1,(a)'!*$&+:@~%C3%A9-._",
            "/pets/x%20y;z=1,%28a%29%27%21%2A$&+:@~%C3%A9-._",
        ),
        ("/sub-delims/!$'()+,;=@~_.", "/sub-delims/!$'()+,;=@~_."),
        ("/pets/42", "/pets/42"),
        ("/caf%C3%A9/(x)", "/caf%C3%A9/%28x%29"),
        ("/a/%41%7e", "/a/A~"),
        ("/a//c", "/a//c"),
    ],
)
def test_the_path_is_decoded_and_written_again_by_go(sent: str, received: str) -> None:
    assert rebuilt_path(sent) == received


def test_krakend_answers_400_itself_for_escaped_delimiters_in_a_parameter() -> None:
    krakend = get_renderer("krakend")
    for value in ("%3F", "%23", "%25", "a%3fb"):
        assert krakend.answers_itself(f"/pets/{value}") == 400
    assert krakend.answers_itself("/pets/x%20y") is None
    assert get_renderer("nginx").answers_itself("/pets/%3F") is None


def _echo(path: str, query: str, host: str) -> Reply:
    body = (
        f'{{"method": "GET", "path": "{path}", "query": "{query}", "host": "{host}", '
        '"headers": {}, "body_sha256": "", "body_length": 0}'
    )
    return Reply(200, {"x-gatebench-backend": "echo"}, body.encode(), 9000)


def test_replay_expects_krakends_rewrite_exactly_and_nothing_else() -> None:
    krakend = Forwarding.of(get_renderer("krakend"))
    req = ReplayRequest("x", "GET", "/p/(a)%20?b=1&a=2")
    direct = _echo("/p/(a)%20", "b=1&a=2", "client.test")
    right = _echo("/p/%28a%29%20", "a=2&b=1", "127.0.0.1:9000")
    assert compare_echoes(req, direct, right, forwarding=krakend) == []
    # The same bytes as sent are a failure for KrakenD: the rewrite is expected, not allowed.
    assert compare_echoes(req, direct, direct, forwarding=krakend) == [
        "path: sent '/p/%28a%29%20', backend got '/p/(a)%20'",
        "query: sent 'a=2&b=1', backend got 'b=1&a=2'",
        "host: sent '127.0.0.1:9000', backend got 'client.test'",
    ]
    # And any other gateway must forward the bytes sent.
    assert compare_echoes(req, direct, right) == [
        "path: sent '/p/(a)%20', backend got '/p/%28a%29%20'",
        "query: sent 'b=1&a=2', backend got 'a=2&b=1'",
        "host: sent 'client.test', backend got '127.0.0.1:9000'",
    ]


def test_replay_expects_the_400_from_krakend_itself() -> None:
    krakend = Forwarding.of(get_renderer("krakend"))
    req = ReplayRequest("x", "GET", "/p/q%3Fh")
    direct = _echo("/p/q%3Fh", "", "client.test")
    refused = Reply(400, {}, b"error: encoded url params", 0)
    assert compare_echoes(req, direct, refused, forwarding=krakend) == []
    assert compare_echoes(req, direct, direct, forwarding=krakend) == [
        "expected 400 from the gateway itself, got 200",
        "the request reached the backend",
    ]


def test_an_empty_parameter_before_more_path_is_routed_by_krakend_only() -> None:
    api = Api(
        "t",
        "1",
        "openapi-3.0.3",
        (
            Operation("aXc", "GET", "/a/{x}/c", "", pointer="/paths/0/get"),
            Operation("item", "GET", "/items/{id}", "", pointer="/paths/1/get"),
        ),
    )
    routes = routes_for(api)

    def hit(path: str, empty: bool) -> str | None:
        route = expected_route(routes, "GET", path, empty_parameters=empty)
        return None if route is None else route.operation_id

    assert hit("/a//c", False) is None
    assert hit("/a//c", True) == "aXc"
    # A trailing empty parameter is not routed, by KrakenD either.
    assert hit("/items/", True) is None
    assert hit("/a/b/c", True) == "aXc"
    assert get_renderer("krakend").routes_empty_parameters
    assert not get_renderer("nginx").routes_empty_parameters


def test_traefik_forwards_a_semicolon_in_the_query_as_an_ampersand() -> None:
    """Seen in route replay with Traefik 3.7.15; every other change fails the replay."""
    traefik = Forwarding.of(get_renderer("traefik"))
    assert traefik.query("flag&x=1;2&z=3") == "flag&x=1&2&z=3"
    assert Forwarding.of(get_renderer("tyk")).query("flag&x=1;2&z=3") == "flag&x=1;2&z=3"
    assert Forwarding.of(get_renderer("krakend")).query("flag&x=1;2&z=3") == "flag=&z=3"
