"""Route replication for the scale and change-under-load runs (gatebench.core.routescale): exact
sizes, distinct prefixes, escapes kept, deterministic, and what counts as a correct answer."""

from __future__ import annotations

import json

import pytest

from gatebench.core.errors import PlanError
from gatebench.core.ir import Api
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers._routes import routes_for
from gatebench.core.routescale import (
    INSTANCE_HEADER,
    Probe,
    added_routes,
    answer_problem,
    parse_sizes,
    prefix_stem,
    probes_for,
    replicate,
    routes_at_positions,
    table_positions,
)
from gatebench.core.spec import read_spec
from plans import auction_api

SPEC = b"""\
openapi: 3.0.3
info: {title: t, version: '1'}
servers: [{url: 'http://example.com/v1'}]
paths:
  /pets/{id}:
    get: {operationId: getPet, parameters: [{name: id, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
    delete: {operationId: deletePet, parameters: [{name: id, in: path, required: true, schema: {type: string}}], responses: {'204': {description: ok}}}
  /pets/{petId}:
    put: {operationId: putPet, parameters: [{name: petId, in: path, required: true, schema: {type: string}}], responses: {'200': {description: ok}}}
  /r1/caf%C3%A9 x:
    get: {operationId: cafe, responses: {'200': {description: ok}}}
"""


def _api(text: bytes = SPEC) -> Api:
    result = read_spec(text)
    assert result.api is not None, result.problems
    return result.api


def test_replicate_gives_exactly_the_size_with_distinct_routes() -> None:
    api = _api()
    for size in (1, 3, 4, 10, 100, 1001):
        grown = replicate(api, size)
        assert len(grown.operations) == size
        table = routes_for(grown)
        assert len(table) == size
        assert len({(r.method, r.path) for r in table}) == size
        assert len({op.operation_id for op in grown.operations}) == size


def test_copies_are_prefixed_after_the_base_path_and_keep_every_escape() -> None:
    api = _api()
    # '/r1/...' is taken by the description itself: the stem becomes 'rr'.
    assert prefix_stem(api) == "rr"
    grown = replicate(api, 9)
    paths = [op.route_path for op in grown.operations]
    assert paths[:4] == ["/v1/pets/{id}", "/v1/pets/{id}", "/v1/pets/{petId}", "/v1/r1/caf%C3%A9 x"]
    assert paths[4:8] == [
        "/v1/rr1/pets/{id}",
        "/v1/rr1/pets/{id}",
        "/v1/rr1/pets/{petId}",
        "/v1/rr1/r1/caf%C3%A9 x",
    ]
    assert [op.operation_id for op in grown.operations[4:6]] == ["getPet__rr1", "deletePet__rr1"]
    copy = grown.operations[7]
    original = api.operations[3]
    assert (copy.method, copy.pointer, copy.path_params, copy.security) == (
        original.method,
        original.pointer,
        original.path_params,
        original.security,
    )
    # The renderers escape the copy exactly as the original: same regex after the prefix.
    table = {r.operation_id: r for r in routes_for(grown)}
    assert table["cafe__rr1"].regex().replace("/rr1", "", 1) == table["cafe"].regex()
    assert table["cafe__rr1"].sample_path() == "/v1/rr1/r1/caf%C3%A9%20x"


def test_operations_sharing_a_route_count_once() -> None:
    text = SPEC.replace(
        b"  /r1/caf",
        b"  /pets/{x}:\n    patch: {operationId: p1, responses: {'200': {description: ok}}}\n  /r1/caf",
    )
    text = text.replace(
        b"patch: {operationId: p1,",
        b"get: {operationId: dup, parameters: [{name: x, in: path, required: true, schema: {type: string}}],",
    )
    api = _api(text)
    assert len(api.operations) == 5
    assert len(routes_for(api)) == 4
    grown = replicate(api, 8)
    assert "dup" not in {op.operation_id for op in grown.operations}
    assert len(routes_for(grown)) == 8


def test_replication_is_deterministic_and_a_smaller_size_keeps_the_first_routes() -> None:
    api = auction_api()
    assert replicate(api, 1000) == replicate(api, 1000)
    assert replicate(api, 2).operations == api.operations[:2]
    big = replicate(api, 100)
    assert replicate(api, 10).operations == big.operations[:10]
    assert added_routes(replicate(api, 10), big) == big.operations[10:]


def test_every_runnable_renderer_renders_a_replicated_table() -> None:
    grown = replicate(auction_api(), 30)
    target = RenderTarget(workdir="/tmp/gb", listen_port=8000, admin_port=8001)
    for name in ("nginx", "haproxy", "caddy", "envoy", "apache", "varnish", "traefik"):
        files = get_renderer(name).render(grown, target)
        text = "".join(files.values())
        assert "r9" in text, name


def test_sizes_are_located_and_checked() -> None:
    assert parse_sizes("10,100, 1000,10000") == (10, 100, 1000, 10000)
    with pytest.raises(PlanError) as info:
        parse_sizes("10,x,5,0,200000")
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        ("--routes", "item 2: expected a positive whole number of routes; got 'x'"),
        ("--routes", "item 3: sizes must increase; got 5 after 10"),
        ("--routes", "item 4: expected a positive whole number of routes; got '0'"),
        ("--routes", "item 5: at most 100000 routes; got 200000"),
    ]
    with pytest.raises(PlanError, match="expected 1 to 100000 routes; got 0"):
        replicate(auction_api(), 0)


def test_positions_are_the_start_middle_and_end_of_the_table_in_priority_order() -> None:
    assert table_positions(1) == {"start": 0, "middle": 0, "end": 0}
    assert table_positions(10) == {"start": 0, "middle": 5, "end": 9}
    grown = replicate(auction_api(), 10)
    at = routes_at_positions(grown)
    table = routes_for(grown)
    assert [at[k] for k in ("start", "middle", "end")] == [table[0], table[5], table[9]]


def _echo(method: str, path: str) -> bytes:
    return json.dumps({"method": method, "path": path}).encode()


def test_a_correct_answer_is_2xx_from_the_named_instance_with_the_same_request() -> None:
    probe = Probe("op", "GET", "/a/caf%C3%A9/%7E")
    good = {INSTANCE_HEADER: "b"}
    assert answer_problem(probe, 200, good, _echo("GET", probe.path), instance="b") is None
    assert answer_problem(probe, 404, good, b"") == "status 404"
    assert (
        answer_problem(probe, 200, {INSTANCE_HEADER: "a"}, _echo("GET", probe.path), instance="b")
        == "answered by backend 'a', not 'b'"
    )
    assert answer_problem(probe, 200, {}, b"{}", instance="b") == "not from the backend"
    assert (
        answer_problem(probe, 200, good, b"<html>") == "the answer is not the echo backend's JSON"
    )
    assert (
        answer_problem(probe, 200, good, _echo("PUT", probe.path)) == "the backend saw method 'PUT'"
    )
    normal = "/a/caf%C3%A9/~"
    assert (
        answer_problem(probe, 200, good, _echo("GET", normal)) == f"the backend saw path {normal!r}"
    )
    assert answer_problem(probe, 200, good, _echo("GET", normal), normalizes_path=True) is None
    assert answer_problem(Probe("h", "HEAD", "/x"), 200, good, b"", instance="b") is None


def test_probes_follow_the_table_and_can_be_limited_to_new_routes() -> None:
    small, big = replicate(auction_api(), 3), replicate(auction_api(), 6)
    probes = probes_for(big, added_routes(small, big))
    assert len(probes) == 3
    assert all(p.path.startswith("/r1/") for p in probes)
    assert {p.operation_id for p in probes} == {op.operation_id for op in big.operations[3:]}
