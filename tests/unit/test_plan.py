"""The benchmark plan: every section, its defaults and its located errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gatebench.core.errors import PlanError
from gatebench.core.ir import Api
from gatebench.core.plan import (
    Injection,
    Plan,
    build_plan,
    describe_injection,
    describe_plan,
    load_plan,
)
from gatebench.core.plan._checks import gatling_path
from gatebench.core.renderers import gateway_names
from gatebench.core.spec import load_spec
from paths import EXAMPLES
from plans import auction_api, plan_errors, section


@pytest.fixture(scope="module")
def auction() -> Api:
    return auction_api()


def test_defaults(auction: Api) -> None:
    plan = build_plan(
        {
            "workloads": [{"name": "w", "operation": "getAuction", "injection": {"at_once": 5}}],
            "auth": {"bearer": {"env": "T"}},
        },
        auction,
    )
    assert plan.gateways == ("apache", "caddy", "envoy", "haproxy", "nginx", "traefik")
    assert plan.baseline is True
    assert plan.repetitions == 3
    assert plan.warmup.duration == 3.0
    assert plan.order == "shuffled"
    assert plan.backend.kind == "mock"
    assert plan.scoring.profile == "paper"
    assert plan.targets[-1] == "baseline"


def test_the_auction_example_plan(auction: Api) -> None:
    result = load_spec(EXAMPLES / "auction" / "openapi.yaml")
    plan = load_plan(result)
    assert plan.repetitions == 10
    create, bid, retrieve = plan.workloads
    assert (create.injection.kind, create.injection.users) == ("at_once", 50)
    image = next(p for p in create.body.parts if p.name == "image")
    assert (image.size, image.content_type, image.filename) == (
        8_600_000,
        "image/jpeg",
        "camera.jpg",
    )
    assert bid.param("amount") is not None and bid.param("amount").kind == "counter"  # type: ignore[union-attr]
    assert bid.body.value == {"bid": "${amount}"}
    # the paper's bidders arrive over a short ramp, in the order of their bids
    assert (bid.injection.kind, bid.injection.users, bid.injection.duration) == ("ramp", 50, 0.25)
    assert (retrieve.injection.kind, retrieve.injection.requests) == ("sequential", 400)
    gen = retrieve.param("auctionId")
    assert gen is not None and (gen.kind, gen.low, gen.high) == ("random", 1, 100)
    lines = describe_plan(plan, auction)
    assert lines[0] == "Benchmark plan for 'Auction service' (openapi-3.0.3, 3 operations)"
    assert lines[-1] == "  measured phases: 3 workloads × 7 targets × 10 repetitions = 210"
    one = dataclasses.replace(plan, repetitions=1, workloads=plan.workloads[:1])
    # one of each is said in the singular ('1 repetitions' read wrong)
    assert describe_plan(one, auction)[-1] == (
        "  measured phases: 1 workload × 7 targets × 1 repetition = 7"
    )


def test_one_user_or_request_is_said_in_the_singular() -> None:
    """'1 requests over 2s' and '1 users at once' read wrong in a plan and a run's tables."""
    said = [
        describe_injection(Injection("at_once", users=1)),
        describe_injection(Injection("sequential", users=1, requests=1)),
        describe_injection(Injection("concurrent", users=1, requests=1)),
        describe_injection(Injection("arrivals", counts=(1, 0), step=1.0, duration=2.0)),
        describe_injection(Injection("sequential", users=1, requests=2000)),
    ]
    assert said == [
        "1 user at once",
        "1 sequential request",
        "1 concurrent user up to 1 request",
        "recorded arrivals: 1 request over 2s (peak 1 req/s)",
        "2,000 sequential requests",
    ]


def test_a_fixed_value_is_described_as_the_plan_writes_it(auction: Api) -> None:
    """Python's repr read id='v1' and filter={'status': 'new'} in `gatebench plan`."""
    params = {"auctionId": {"value": {"status": "new"}}, "X": "v1", "Y": {"value": [1, 2]}}
    data = section(
        workloads=[
            {"name": "w", "operation": "getAuction", "params": params, "injection": {"at_once": 1}}
        ]
    )
    data["workloads"][0]["headers"] = {"H": "${X}", "I": "${Y}"}
    plan = build_plan(data, auction)
    [line] = [x for x in describe_plan(plan, auction) if x.startswith("    w ")]
    assert line.endswith('auctionId={"status": "new"}; X=v1; Y=[1, 2]')


def test_gatebench_plan_says_the_replicas_tls_and_fault_it_will_run(auction: Api) -> None:
    """What a run will do to the deployment is in the plan's description, not only in its
    report afterwards."""
    plan = build_plan(
        section(
            backend={"builtin": "auction", "replicas": 3, "balance": "least_conn"},
            tls={"key": "rsa-2048", "http2": True, "resumption": False},
            fault={"replica": 2, "workload": "get", "at": "4s"},
            warmup={"duration": "3s"},
        ),
        auction,
    )
    lines = describe_plan(plan, auction)
    assert lines[3] == (
        "  backend:     built-in auction service; 3 replicas, least_conn at every gateway (the "
        "baseline reaches the first)"
    )
    assert lines[4] == (
        "  tls:         rsa-2048 key, throwaway CA; HTTP/2 by ALPN; a full handshake per connection"
    )
    assert lines[5] == (
        "  fault:       backend replica 2 killed 4s into every gateway's measured 'get' "
        "phases, started again as each ends (not the baseline's)"
    )
    timed = [
        {"name": "get", "operation": "getAuction", "injection": {"concurrent": 2, "duration": "4s"}}
    ]
    at_half = build_plan(
        section(backend={"builtin": "auction", "replicas": 2}, fault={}, workloads=timed), auction
    )
    (fault,) = [line for line in describe_plan(at_half, auction) if "fault:" in line]
    assert "killed 50 % into every gateway's measured 'get' phases" in fault
    plain = describe_plan(build_plan(section(), auction), auction)
    assert not [line for line in plain if "tls:" in line or "fault:" in line or "replicas" in line]


def test_operation_by_method_and_path(auction: Api) -> None:
    plan = build_plan(
        section(
            workloads=[
                {
                    "name": "b",
                    "operation": "post /bid/{auctionId}",
                    "injection": {"at_once": 1},
                    "params": {"auctionId": 3},
                }
            ]
        ),
        auction,
    )
    assert plan.workloads[0].operation_id == "bid"


def test_unknown_gateway_lists_the_known_ones(auction: Api) -> None:
    assert plan_errors(auction, section(gateways=["nginx", "kongg"])) == [
        (
            "/x-gatebench/gateways/1",
            "unknown gateway 'kongg'; did you mean 'kong'? available: "
            + ", ".join(sorted(gateway_names())),
        )
    ]


def test_unknown_operation_lists_close_matches(auction: Api) -> None:
    data = section(
        workloads=[{"name": "w", "operation": "getAuctions", "injection": {"at_once": 1}}]
    )
    assert plan_errors(auction, data) == [
        (
            "/x-gatebench/workloads/0/operation",
            "no operation 'getAuctions' in the description; did you mean 'getAuction', 'createAuction'?",
        )
    ]


AMBIGUOUS = """\
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /x: {delete: {operationId: GET /y, responses: {"200": {description: ok}}}}
  /y: {get: {responses: {"200": {description: ok}}}}
x-gatebench:
  workloads:
    - {name: a, operation: GET /y, injection: {concurrent: 1, duration: 1s}}
    - {name: b, operation: DELETE /x, injection: {concurrent: 1, duration: 1s}}
"""


def test_an_operation_id_that_reads_as_another_route_is_refused_as_ambiguous(
    tmp_path: Path,
) -> None:
    """``operation: GET /y`` ran DELETE /x, whose operationId is 'GET /y', without a word."""
    (tmp_path / "api.yaml").write_text(AMBIGUOUS, encoding="utf-8")
    with pytest.raises(PlanError) as caught:
        load_plan(load_spec(tmp_path / "api.yaml"))
    assert [(p.pointer, p.line, p.column, p.message) for p in caught.value.problems] == [
        (
            "/x-gatebench/workloads/0/operation",
            8,
            17,
            "'GET /y' is ambiguous: it is the operationId of DELETE /x and the route of GET /y; "
            "write 'DELETE /x' or 'get_y'",
        )
    ]
    fixed = AMBIGUOUS.replace("operation: GET /y", "operation: get_y")
    (tmp_path / "api.yaml").write_text(fixed, encoding="utf-8")
    plan = load_plan(load_spec(tmp_path / "api.yaml"))
    assert [w.operation_id for w in plan.workloads] == ["get_y", "GET /y"]


DOT_SEGMENTS = """\
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /double//slash: {get: {operationId: ds, responses: {"200": {description: ok}}}}
  /p/../x: {get: {operationId: up, responses: {"200": {description: ok}}}}
  /p/./y: {get: {operationId: here, responses: {"200": {description: ok}}}}
  /p/a.b/..c: {get: {operationId: dots, responses: {"200": {description: ok}}}}
x-gatebench:
  workloads:
    - {name: ds, operation: ds, injection: {concurrent: 1, duration: 1s}}
    - {name: up, operation: up, injection: {concurrent: 1, duration: 1s}}
    - {name: here, operation: GET /p/./y, injection: {concurrent: 1, duration: 1s}}
    - {name: dots, operation: dots, injection: {concurrent: 1, duration: 1s}}
"""


def test_a_path_gatling_would_send_as_another_is_warned_about_at_each_workload(
    tmp_path: Path,
) -> None:
    """Gatling sent /double/slash and /x: every request missed the route on every target,
    the baseline too; wrk sends the path as written."""
    (tmp_path / "api.yaml").write_text(DOT_SEGMENTS, encoding="utf-8")
    plan = load_plan(load_spec(tmp_path / "api.yaml"))
    tail = (
        ": it merges repeated '/' and resolves '.' and '..' segments, so every request would "
        "ask for another route; give engine: wrk, which sends the path as written, or write "
        "the path without them"
    )
    assert [(w.pointer, w.line, w.column, w.message) for w in plan.warnings] == [
        (
            "/x-gatebench/workloads/0/operation",
            10,
            18,
            "engine gatling sends the path of GET /double//slash ('/double//slash') as "
            f"'/double/slash'{tail}",
        ),
        (
            "/x-gatebench/workloads/1/operation",
            11,
            18,
            f"engine gatling sends the path of GET /p/../x ('/p/../x') as '/x'{tail}",
        ),
        (
            "/x-gatebench/workloads/2/operation",
            12,
            20,
            f"engine gatling sends the path of GET /p/./y ('/p/./y') as '/p/y'{tail}",
        ),
    ]
    (tmp_path / "api.yaml").write_text(
        DOT_SEGMENTS.replace("x-gatebench:\n", "x-gatebench:\n  engine: wrk\n"), encoding="utf-8"
    )
    assert load_plan(load_spec(tmp_path / "api.yaml")).warnings == ()


@pytest.mark.parametrize(
    ("path", "sent"),
    [
        ("/double//slash", "/double/slash"),
        ("//x//", "/x/"),
        ("/p/../x", "/x"),
        ("/p/./y", "/p/y"),
        ("/a/../../etc/x", "/../etc/x"),
        ("/../a", "/../a"),
        ("/a/b/../../../c", "/../c"),
        ("/a/./../b", "/b"),
        ("/a/b/..", "/a/"),
        ("/a/..", "/"),
        ("/a/b/.", "/a/b/"),
        ("/a//../b", "/a/b"),
        ("/.x/..y/x../.../x.", "/.x/..y/x../.../x."),
        ("/a/%2E%2E/b", "/a/%2E%2E/b"),
        ("/a/{id}/../b", "/a/b"),
    ],
)
def test_gatling_path_is_what_gatlings_uri_parser_sends(path: str, sent: str) -> None:
    """Each pair as io.gatling.http.client.uri.Uri.create (3.15.1) parses it."""
    assert gatling_path(path) == sent


def test_a_workload_without_an_operation_says_it_got_nothing(auction: Api) -> None:
    data = section(workloads=[{"name": "w", "injection": {"at_once": 1}}])
    assert plan_errors(auction, data) == [
        (
            "/x-gatebench/workloads/0/operation",
            "expected an operationId or 'METHOD /path', got nothing",
        )
    ]


def test_unknown_key_suggests_the_right_one(auction: Api) -> None:
    assert plan_errors(auction, section(repetiton=10)) == [
        (
            "/x-gatebench/repetiton",
            "unknown key 'repetiton' in x-gatebench; did you mean 'repetitions'?",
        )
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"infrastructure": {"zone": "europe-central2-a", "credentials": "{...}"}},
            (
                "/x-gatebench/infrastructure/credentials",
                "'credentials' looks like a credential; credentials are never accepted in the "
                "benchmark description (the cloud path runs as its own service accounts, and "
                "request tokens come from environment variables: auth: {bearer: {env: NAME}})",
            ),
        ),
        (
            {"service_account_key": "x"},
            (
                "/x-gatebench/service_account_key",
                "'service_account_key' looks like a credential; credentials are never accepted in "
                "the benchmark description (the cloud path runs as its own service accounts, and "
                "request tokens come from environment variables: auth: {bearer: {env: NAME}})",
            ),
        ),
        (
            {"infrastructure": {"network": "-----BEGIN PRIVATE KEY-----\nabc"}},
            (
                "/x-gatebench/infrastructure/network",
                "this value holds a private key; credentials are never accepted in the benchmark description",
            ),
        ),
        (
            {"auth": {"bearer": {"token": "abc"}}},
            (
                "/x-gatebench/auth/bearer/token",
                "a token is never written in the description; name the environment variable that "
                "holds it: auth: {bearer: {env: NAME}}",
            ),
        ),
        (
            {"auth": {"bearer": "abc"}},
            (
                "/x-gatebench/auth/bearer",
                "write auth: {bearer: {env: NAME}} with the name of an environment variable; a "
                "literal token is never accepted",
            ),
        ),
    ],
)
def test_credentials_are_refused(
    auction: Api, data: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert expected in plan_errors(auction, section(**data))


@pytest.mark.parametrize(
    ("injection", "expected"),
    [
        ({"at_once": 50}, ("at_once", 50, None, None, None)),
        ({"ramp": {"users": 10, "duration": "5s"}}, ("ramp", 10, None, 5.0, None)),
        (
            {"constant_rate": {"rate": 20, "duration": "1m"}},
            ("constant_rate", None, 20.0, 60.0, None),
        ),
        (
            {"constant_rate": {"rate": "20/s", "duration": "1m"}},
            ("constant_rate", None, 20.0, 60.0, None),
        ),
        (
            {"constant_rate": {"rate": "20 req/s", "duration": "1m"}},
            ("constant_rate", None, 20.0, 60.0, None),
        ),
        ({"concurrent": 5, "duration": "500ms"}, ("concurrent", 5, None, 0.5, None)),
        ({"concurrent": 5, "requests": 100}, ("concurrent", 5, None, None, 100)),
        ({"sequential": 400}, ("sequential", 1, None, None, 400)),
    ],
)
def test_injection_profiles(
    auction: Api, injection: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    plan = build_plan(
        section(workloads=[{"name": "w", "operation": "getAuction", "injection": injection}]),
        auction,
    )
    inj = plan.workloads[0].injection
    assert (inj.kind, inj.users, inj.rate, inj.duration, inj.requests) == expected


@pytest.mark.parametrize(
    ("injection", "expected"),
    [
        (
            {"at_once": 0},
            (
                "/x-gatebench/workloads/0/injection/at_once",
                "expected a whole number from 1 to 100,000, got 0",
            ),
        ),
        (
            {"concurrent": 5},
            (
                "/x-gatebench/workloads/0/injection",
                "concurrent users need a 'duration' (such as 30s) or a number of 'requests'",
            ),
        ),
        (  # as k6 writes it: the bound is said to go beside the count
            {"concurrent": {"users": 2, "duration": "2s"}},
            (
                "/x-gatebench/workloads/0/injection/concurrent",
                "expected a whole number of users from 1 to 100,000, got a mapping; the bound "
                "goes beside it: injection: {concurrent: 50, duration: 30s} (or requests: N)",
            ),
        ),
        (
            {"ramp": {"users": 5, "duration": "soon"}},
            (
                "/x-gatebench/workloads/0/injection/ramp/duration",
                "expected a duration such as '30s', '500ms' or '2m', got 'soon'",
            ),
        ),
        (
            {"at_once": 1, "sequential": 2},
            (
                "/x-gatebench/workloads/0/injection",
                "give exactly one of at_once, ramp, constant_rate, arrivals, concurrent, sequential",
            ),
        ),
        (
            {"burst": 3},
            (
                "/x-gatebench/workloads/0/injection/burst",
                "unknown key 'burst' in injection; expected one of: at_once, ramp, constant_rate, arrivals, concurrent, sequential, duration, requests",
            ),
        ),
    ],
)
def test_injection_errors(
    auction: Api, injection: dict[str, Any], expected: tuple[str, str]
) -> None:
    data = section(workloads=[{"name": "w", "operation": "getAuction", "injection": injection}])
    assert expected in plan_errors(auction, data)


def test_parameter_generators(auction: Api) -> None:
    params = {
        "auctionId": {"list": [1, 2, 3], "order": "random"},
    }
    plan = build_plan(
        section(
            workloads=[
                {
                    "name": "w",
                    "operation": "getAuction",
                    "params": params,
                    "injection": {"at_once": 1},
                }
            ]
        ),
        auction,
    )
    gen = plan.workloads[0].param("auctionId")
    assert gen is not None and (gen.kind, gen.values, gen.random_order) == ("list", (1, 2, 3), True)
    for raw, kind in (
        ({"range": [1, 5]}, "range"),
        ({"random": {"min": 1, "max": 9}}, "random"),
        ({"counter": {"start": 10, "step": 2}}, "counter"),
        (7, "constant"),
    ):
        plan = build_plan(
            section(
                workloads=[
                    {
                        "name": "w",
                        "operation": "getAuction",
                        "params": {"auctionId": raw},
                        "injection": {"at_once": 1},
                    }
                ]
            ),
            auction,
        )
        assert plan.workloads[0].params[0][1].kind == kind


def test_parameter_errors(auction: Api) -> None:
    data = section(
        workloads=[
            {
                "name": "w",
                "operation": "getAuction",
                "params": {"auctionID": 1, "auctionId": {"range": [5, 1]}},
                "injection": {"at_once": 1},
            },
            {
                "name": "v",
                "operation": "getAuction",
                "params": {"auctionId": {"random": {"min": 1}}},
                "injection": {"at_once": 1},
            },
        ]
    )
    assert plan_errors(auction, data) == [
        (
            "/x-gatebench/workloads/0/params/auctionId/range",
            "expected [low, high] (or {min, max}) whole numbers with low <= high, got [5, 1]",
        ),
        (
            "/x-gatebench/workloads/0/params/auctionID",
            "'auctionID' is neither a parameter of 'getAuction' (auctionId) nor a ${placeholder} in the body or headers",
        ),
        (  # it said "got [1, None]"
            "/x-gatebench/workloads/1/params/auctionId/random",
            "expected [low, high] (or {min, max}) whole numbers with low <= high, got "
            "{\"min\": 1}: 'max' is missing",
        ),
    ]


def test_placeholder_without_value(auction: Api) -> None:
    data = section(
        workloads=[
            {
                "name": "b",
                "operation": "bid",
                "params": {"auctionId": 1},
                "body": {"json": {"bid": "${amount}"}},
                "injection": {"at_once": 1},
            }
        ]
    )
    assert plan_errors(auction, data) == [
        ("/x-gatebench/workloads/0", "placeholder ${amount} has no value in params")
    ]


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("example", "example"),
        ("synthesized", "synthesized"),
        ({"binary": {"size": "16MiB"}}, "binary"),
        ({"json": {"bid": 5}}, "json"),
        ({"text": "hello", "media_type": "text/plain"}, "text"),
        ("none", "none"),
    ],
)
def test_body_kinds(auction: Api, body: Any, kind: str) -> None:
    plan = build_plan(
        section(
            workloads=[
                {
                    "name": "b",
                    "operation": "bid",
                    "params": {"auctionId": 1},
                    "body": body,
                    "injection": {"at_once": 1},
                }
            ]
        ),
        auction,
    )
    assert plan.workloads[0].body.kind == kind


def test_default_body_is_the_example_when_there_is_one(auction: Api) -> None:
    plan = build_plan(
        section(
            workloads=[
                {
                    "name": "b",
                    "operation": "bid",
                    "params": {"auctionId": 1},
                    "injection": {"at_once": 1},
                }
            ]
        ),
        auction,
    )
    assert (plan.workloads[0].body.kind, plan.workloads[0].body.media_type) == (
        "example",
        "application/json",
    )
    plan = build_plan(
        section(
            workloads=[{"name": "c", "operation": "createAuction", "injection": {"at_once": 1}}]
        ),
        auction,
    )
    assert plan.workloads[0].body.kind == "synthesized"


def test_body_errors(auction: Api) -> None:
    data = section(
        workloads=[
            {
                "name": "a",
                "operation": "createAuction",
                "body": "example",
                "injection": {"at_once": 1},
            },
            {
                "name": "b",
                "operation": "getAuction",
                "body": "synthesized",
                "injection": {"at_once": 1},
            },
            {
                "name": "c",
                "operation": "createAuction",
                "body": {"multipart": {"f": {"size": "1MB", "filename": "../x"}}},
                "injection": {"at_once": 1},
            },
        ]
    )
    assert plan_errors(auction, data) == [
        (
            "/x-gatebench/workloads/0/body",
            "operation 'createAuction' has no request body example; use synthesized, json or binary",
        ),
        (
            "/x-gatebench/workloads/1/body",
            "operation 'getAuction' declares no request body to synthesize from",
        ),
        (
            "/x-gatebench/workloads/2/body/multipart/f/filename",
            "a file name may not contain quotes, slashes or line breaks",
        ),
    ]


def test_headers_may_not_carry_credentials(auction: Api) -> None:
    data = section(
        workloads=[
            {
                "name": "w",
                "operation": "getAuction",
                "headers": {
                    "Authorization": "Bearer x",
                    "X-Ok": "1",
                    "Bad Name": "v",
                    "X-Trailing\n": "v",
                    "X-Multi": "a\nb",
                },
                "injection": {"at_once": 1},
            }
        ]
    )
    assert plan_errors(auction, data) == [
        (
            "/x-gatebench/workloads/0/headers/Authorization",
            "Authorization is never written in the description; use auth: {...} with an environment variable",
        ),
        ("/x-gatebench/workloads/0/headers/Bad Name", "'Bad Name' is not a valid HTTP header name"),
        (
            "/x-gatebench/workloads/0/headers/X-Trailing\n",
            "'X-Trailing\\n' is not a valid HTTP header name",
        ),
        ("/x-gatebench/workloads/0/headers/X-Multi", "a header value must be a single-line string"),
    ]


def test_missing_auth_for_a_secured_operation_is_a_warning(auction: Api) -> None:
    data = section(auth=None)
    del data["auth"]
    plan = build_plan(data, auction)
    assert plan.auth.bearer_env is None


SCHEMES = """\
openapi: 3.1.0
info: {title: s, version: "1"}
components:
  securitySchemes:
    mtls: {type: mutualTLS}
    digest: {type: http, scheme: digest}
    key: {type: apiKey, in: header, name: X-Key}
paths:
  /a: {get: {operationId: a, security: [{mtls: []}], responses: {"200": {description: ok}}}}
  /e: {get: {operationId: e, security: [{key: [], digest: []}], responses: {"200": {description: ok}}}}
  /k: {get: {operationId: k, security: [{key: []}], responses: {"200": {description: ok}}}}
x-gatebench:
  gateways: [nginx]
  auth: {api_key: {env: K}}
  workloads:
    - {name: a, operation: a, injection: {concurrent: 1, duration: 1s}}
    - {name: e, operation: e, injection: {concurrent: 1, duration: 1s}}
    - {name: k, operation: k, injection: {concurrent: 1, duration: 1s}}
"""


def test_a_scheme_gatebench_cannot_send_is_a_warning(tmp_path: Path) -> None:
    """mutualTLS and HTTP digest: the requests went without them and nothing said so."""
    (tmp_path / "api.yaml").write_text(SCHEMES)
    plan = load_plan(load_spec(tmp_path / "api.yaml"))
    assert [(w.pointer, w.message) for w in plan.warnings] == [
        (
            f"/x-gatebench/workloads/{i}/operation",
            f"operation {op!r} requires {scheme} authentication, which gatebench does not "
            "send: its requests go without it (a backend of your own that checks it refuses "
            "them; gatebench's own backends do not check it)",
        )
        for i, op, scheme in ((0, "a", "mutualTLS"), (1, "e", "digest"))
    ]


def test_backend_variants(auction: Api) -> None:
    assert (
        build_plan(section(backend={"url": "http://10.0.0.5:8080"}), auction).backend.url
        == "http://10.0.0.5:8080"
    )
    mock = build_plan(
        section(backend={"mock": {"latency": "5ms", "response_size": "1kB"}}), auction
    ).backend
    assert (mock.kind, mock.latency, mock.response_size) == ("mock", 0.005, 1000)
    assert build_plan(section(backend={"builtin": "auction"}), auction).backend.builtin == "auction"
    assert plan_errors(auction, section(backend={"url": "http://user:pw@host"})) == [
        (
            "/x-gatebench/backend/url",
            "credentials in the URL are never accepted; use auth: {...} with an env variable",
        )
    ]
    assert plan_errors(auction, section(backend={"url": "x", "mock": True})) == [
        ("/x-gatebench/backend", "give exactly one of 'url' (your service), 'mock' or 'builtin'")
    ]
    for url in ("http://10.0.0.5:8080/\n", "http://10.0.0.5:99999", "http://10.0.0.5:80:80"):
        assert plan_errors(auction, section(backend={"url": url})) == [
            ("/x-gatebench/backend/url", f"expected an http:// or https:// URL, got {url!r}")
        ]
    # the gateways forward to the origin with the description's paths, and the baseline
    # would have sent its requests under the path: the two compared different requests
    for url in ("http://10.0.0.5:8080/base", "http://10.0.0.5/?x=1", "https://a.example/#f"):
        [(where, said)] = plan_errors(auction, section(backend={"url": url}))
        assert where == "/x-gatebench/backend/url"
        assert said.startswith(
            f"expected the origin of your service, http(s)://host:port, got {url!r}"
        )
    assert build_plan(section(backend={"url": "http://[::1]:8080/"}), auction).backend.url


def test_infrastructure(auction: Api) -> None:
    plan = build_plan(
        section(infrastructure={"project": "my-proj-1", "zone": "europe-central2-a"}), auction
    )
    assert plan.infrastructure is not None
    assert (plan.infrastructure.region, plan.infrastructure.gateway_machine) == (
        "europe-central2",
        "n2-standard-2",
    )
    assert plan_errors(auction, section(infrastructure={"zone": "mars"})) == [
        (
            "/x-gatebench/infrastructure/zone",
            "expected a zone such as 'europe-central2-a', got 'mars'",
        )
    ]


def test_infrastructure_testers(auction: Api) -> None:
    plan = build_plan(section(infrastructure={"testers": 3}), auction)
    assert plan.infrastructure is not None and plan.infrastructure.testers == 3
    plan = build_plan(section(infrastructure={"zone": "europe-central2-a"}), auction)
    assert plan.infrastructure is not None and plan.infrastructure.testers == 1
    for bad, shown in ((0, "0"), (17, "17"), ("2", "'2'"), (True, "true"), (2.5, "2.5")):
        errors = plan_errors(auction, section(infrastructure={"testers": bad}))
        assert errors == [
            (
                "/x-gatebench/infrastructure/testers",
                f"expected a whole number of load generators from 1 to 16, got {shown}",
            )
        ], bad


def test_scoring(auction: Api) -> None:
    plan = build_plan(
        section(scoring={"profile": "robust", "weights": {"p99": 2, "throughput": 1}}), auction
    )
    assert plan.scoring.weights == (("p99", 2.0), ("throughput", 1.0))
    assert plan_errors(auction, section(scoring={"weights": {"p99": 2}})) == [
        (
            "/x-gatebench/scoring/weights",
            "weights apply to the 'robust' profile; the 'paper' profile weighs every metric equally",
        )
    ]


def test_nothing_to_measure(auction: Api) -> None:
    assert (
        "/x-gatebench/gateways",
        "nothing to measure: no gateways and baseline: false",
    ) in plan_errors(auction, section(gateways=[], baseline=False))


def test_plan_errors_carry_lines(tmp_path: Path) -> None:
    text = (
        (EXAMPLES / "auction" / "openapi.yaml")
        .read_text(encoding="utf-8")
        .replace("repetitions: 10", "repetitions: ten")
    )
    (tmp_path / "api.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(PlanError) as info:
        load_plan(load_spec(tmp_path / "api.yaml"))
    (problem,) = info.value.errors
    assert problem.pointer == "/x-gatebench/repetitions"
    assert problem.message == "expected a whole number from 1 to 1,000, got 'ten'"
    assert (
        problem.line
        == text.splitlines().index(
            "  repetitions: ten            # the paper averaged 10 executions"
        )
        + 1
    )


def test_separate_plan_file(tmp_path: Path) -> None:
    (tmp_path / "bench.yaml").write_text(
        yaml.safe_dump(
            {
                "x-gatebench": {
                    "gateways": ["haproxy"],
                    "workloads": [
                        {"name": "l", "operation": "listPets", "injection": {"at_once": 2}}
                    ],
                }
            }
        ),
        encoding="utf-8",
    )
    plan = load_plan(
        load_spec(EXAMPLES / "petstore" / "openapi.yaml"), str(tmp_path / "bench.yaml")
    )
    assert isinstance(plan, Plan) and plan.gateways == ("haproxy",)


def test_no_plan_says_how_to_add_one(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n", encoding="utf-8"
    )
    with pytest.raises(PlanError) as info:
        load_plan(load_spec(tmp_path / "api.yaml"))
    assert info.value.errors[0].message == (
        "no 'x-gatebench' section: add one to the description (see examples/) or pass a benchmark file with --plan"
    )


SELF_REQUIRING = """\
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /a:
    post:
      operationId: a
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: '#/components/schemas/Node'}}}
      responses: {"200": {description: ok}}
components:
  schemas:
    Node: {type: object, required: [child], properties: {child: {$ref: '#/components/schemas/Node'}}}
x-gatebench:
  gateways: [nginx]
  workloads:
    - {name: given, operation: a, body: synthesized, injection: {at_once: 1}}
    - {name: default, operation: a, injection: {at_once: 1}}
    - {name: mine, operation: a, body: {json: {child: null}}, injection: {at_once: 1}}
"""


def test_a_body_no_finite_value_matches_is_warned_where_it_is_asked_and_still_sent(
    tmp_path: Path,
) -> None:
    """A request body whose schema requires itself (no finite JSON matches it) used to raise
    out of the run from the synthesizer; now the plan warns at the body it asks for, and the
    load carries the body ended with null."""
    from gatebench.core.workload import compile_load

    (tmp_path / "api.yaml").write_text(SELF_REQUIRING)
    result = load_spec(tmp_path / "api.yaml")
    assert result.api is not None
    plan = load_plan(result)
    warned = [(w.pointer, w.message) for w in plan.warnings if "no finite body" in w.message]
    assert [p for p, _ in warned] == [
        "/x-gatebench/workloads/0/body",
        "/x-gatebench/workloads/1/body",
    ]
    assert "operation 'a'" in warned[0][1] and "body: {json: {...}}" in warned[0][1]
    document = compile_load(plan, result.api, {"nginx": "http://127.0.0.1:1"}).document
    bodies = {p["workload"]: p["request"]["body"] for p in document["phases"]}
    assert bodies["given"] == bodies["default"]
    sent = [json.loads(bodies[w]["parts"][0]["text"]) for w in ("given", "mine")]
    assert sent == [{"child": None}] * 2


def _errors_of(tmp_path: Path, workloads: str, head: str = "") -> list[Any]:
    """The plan's errors for ``workloads`` (YAML lines under ``workloads:``) on ``head`` (the
    description; by default SELF_REQUIRING's, with its operation ``a``)."""
    head = head or SELF_REQUIRING.split("x-gatebench:")[0]
    plan = "x-gatebench:\n  gateways: [nginx]\n  workloads:\n" + workloads
    (tmp_path / "api.yaml").write_text(head + plan)
    with pytest.raises(PlanError) as info:
        load_plan(load_spec(tmp_path / "api.yaml"))
    return list(info.value.errors)


def test_a_cookie_value_a_cookie_cannot_hold_is_refused_where_it_is_given(tmp_path: Path) -> None:
    """The engines send a value the plan gives as written; in a Cookie header a space, a
    comma or a semicolon would change what the server reads (RFC 6265's cookie-octet)."""
    head = SELF_REQUIRING.split("x-gatebench:")[0].replace(
        "      requestBody:",
        "      parameters: [{name: s, in: cookie, schema: {type: string}}]\n      requestBody:",
    )
    errors = _errors_of(
        tmp_path,
        "    - {name: a, operation: a, body: {json: {}}, params: {s: {list: [ok, 'c;d']}},"
        " injection: {at_once: 1}}\n"
        "    - {name: b, operation: a, body: {json: {}}, params: {s: 'a%20b'},"
        " injection: {at_once: 1}}\n",
        head,
    )
    assert [(e.pointer, e.message[:28]) for e in errors] == [
        ("/x-gatebench/workloads/0/params/s", "the cookie value 'c;d' holds")
    ]


def test_a_line_break_in_a_value_sent_in_a_header_is_refused_where_it_is_given(
    tmp_path: Path,
) -> None:
    """'headers:' refused a value with a line break, but a header parameter's value, or a
    placeholder's in a header, validated fine and went to the engines as written."""
    head = SELF_REQUIRING.split("x-gatebench:")[0].replace(
        "      requestBody:",
        "      parameters: [{name: X-Trace, in: header, schema: {type: string}}]\n"
        "      requestBody:",
    )
    errors = _errors_of(
        tmp_path,
        '    - {name: a, operation: a, body: {json: {}}, params: {X-Trace: {value: "v\\r\\nX: 1"}},'
        " injection: {at_once: 1}}\n"
        "    - {name: b, operation: a, body: {json: {}}, headers: {X-Tenant: '${t}'},"
        ' params: {t: {list: [ok, "a\\nb"]}, X-Trace: fine}, injection: {at_once: 1}}\n',
        head,
    )
    said = "and it is sent in a header: a header value must be a single-line string"
    assert [(e.pointer, e.message) for e in errors] == [
        (
            "/x-gatebench/workloads/0/params/X-Trace",
            f"a value of 'X-Trace' holds a line break or NUL, {said}",
        ),
        ("/x-gatebench/workloads/1/params/t", f"a value of 't' holds a line break or NUL, {said}"),
    ]


def test_headers_the_load_engine_sets_are_never_sent_from_a_description_or_a_plan(
    tmp_path: Path,
) -> None:
    """A required 'Connection: close' parameter ended every kept-alive connection, and a
    Content-Length from a plan framed a GET with a body it does not have."""
    from gatebench.core.workload import compile_load

    head = SELF_REQUIRING.split("x-gatebench:")[0].replace(
        "      requestBody:",
        "      parameters: [{name: Connection, in: header, required: true, schema: {type: string,"
        " example: close}}, {name: Content-Length, in: header, schema: {type: integer}},"
        " {name: X-Ok, in: header, required: true, schema: {type: string, example: 'yes'}}]\n"
        "      requestBody:",
    )
    errors = _errors_of(
        tmp_path,
        "    - {name: a, operation: a, body: {json: {}}, params: {Content-Length: 5},"
        " headers: {Transfer-Encoding: chunked}, injection: {at_once: 1}}\n",
        head,
    )
    assert [(e.pointer, e.message) for e in errors] == [
        (
            "/x-gatebench/workloads/0/headers/Transfer-Encoding",
            "Transfer-Encoding is set by the load engine (how the request is framed and its "
            "connection kept alive): leave it out",
        ),
        (
            "/x-gatebench/workloads/0/params/Content-Length",
            "header parameter 'Content-Length' of 'a' is never sent: the load engine sets it (how "
            "the request is framed and its connection kept alive)",
        ),
    ]
    (tmp_path / "api.yaml").write_text(
        head + "x-gatebench:\n  gateways: [nginx]\n  workloads:\n"
        "    - {name: a, operation: a, body: {json: {}}, injection: {at_once: 1}}\n"
    )
    result = load_spec(tmp_path / "api.yaml")
    plan = load_plan(result)
    assert [w.message[:40] for w in plan.warnings if w.pointer == "/x-gatebench/workloads/0"] == [
        "header parameter 'Connection' of 'a' is "
    ]
    assert result.api is not None
    document = compile_load(plan, result.api, {"nginx": "http://127.0.0.1:1"}).document
    assert [h[0] for h in document["phases"][0]["request"]["headers"]] == ["X-Ok"]


def test_a_list_or_mapping_a_parameter_draws_is_refused_a_fixed_one_is_not(
    tmp_path: Path,
) -> None:
    """A value an engine draws for a parameter is sent as one text; a list or mapping among
    them would reach the server as Java's or JSON's text, not as the parameter's style writes
    it. A fixed one ({value: ...}) is written by the style (core.workload), a cookie's too."""
    head = SELF_REQUIRING.split("x-gatebench:")[0].replace(
        "      requestBody:",
        "      parameters: [{name: s, in: cookie, schema: {type: object}},"
        " {name: ids, in: query, schema: {type: array}}]\n      requestBody:",
    )
    errors = _errors_of(
        tmp_path,
        "    - {name: a, operation: a, body: {json: {}}, params: {ids: {list: [[1, 2], '3']}},"
        " injection: {at_once: 1}}\n"
        "    - {name: b, operation: a, body: {json: {}}, params: {s: {value: {k: 'a b'}}, "
        "ids: {value: [1, 2]}}, injection: {at_once: 1}}\n"
        "    - {name: c, operation: a, body: {json: {}}, params: {ids: [1, 2]},"
        " injection: {at_once: 1}}\n",
        head,
    )
    assert [(e.pointer, e.message) for e in errors] == [
        (
            "/x-gatebench/workloads/0/params/ids",
            "a list or mapping among the values of query parameter 'ids' would be sent as one "
            "text, not as its style writes it: give a fixed one with {value: ...} (written by "
            "its style), or each value as the text to send ('3,4')",
        ),
        (
            "/x-gatebench/workloads/2/params/ids",
            "write values to cycle through as {list: [...]}, or one list sent as the "
            "parameter's value (by its style: ids=1,2) as {value: [...]}",
        ),
    ]


def test_a_content_type_that_is_not_a_media_type_is_refused_at_its_key(tmp_path: Path) -> None:
    """A body's media type and a part's content type go into a Content-Type header as
    written: a line break in one would be another header."""
    errors = _errors_of(
        tmp_path,
        "    - {name: a, operation: a, injection: {at_once: 1}, body: {multipart: {f: {size: 1,"
        ' content_type: "image/png\\r\\nX: 1"}, t: {value: x, content_type: "a/b; c"}}}}\n'
        '    - {name: b, operation: a, injection: {at_once: 1}, body: {text: x, media_type: "a"}}\n'
        "    - {name: c, operation: a, injection: {at_once: 1}, body: {text: x,"
        ' media_type: "text/csv; header=present"}}\n',
    )
    said = "expected a media type such as 'application/json' (type/subtype; RFC 9110 8.3.1), got "
    assert [(e.pointer, e.message) for e in errors] == [
        ("/x-gatebench/workloads/0/body/multipart/f/content_type", said + "'image/png\\r\\nX: 1'"),
        ("/x-gatebench/workloads/0/body/multipart/t/content_type", said + "'a/b; c'"),
        ("/x-gatebench/workloads/1/body/media_type", said + "'a'"),
    ]


def test_a_form_field_given_as_a_parameter_is_sent_to_the_body(tmp_path: Path) -> None:
    """Swagger 2.0 declares form fields as parameters (in: formData); gatebench reads them as
    the body's fields, so 'tags' in params was refused without saying where it goes."""
    from gatebench.core.spec import read_spec

    (tmp_path / "api.yaml").write_text(
        'swagger: "2.0"\ninfo: {title: Up, version: "1"}\npaths:\n  /up:\n    post:\n'
        "      operationId: up\n      consumes: [CONSUMES]\n      parameters:\n"
        "        - {name: tags, in: formData, type: string}\n"
        '      responses: {"200": {description: ok}}\n'.replace("CONSUMES", "multipart/form-data")
    )
    api = read_spec(tmp_path / "api.yaml").api
    assert api is not None
    data = {
        "workloads": [
            {"name": "w", "operation": "up", "params": {"tags": "x"}, "injection": {"at_once": 1}}
        ]
    }
    (message,) = [m for p, m in plan_errors(api, section(**data)) if p.endswith("/params/tags")]
    assert message.endswith(
        "; it is a field of the multipart/form-data body: give it there, body: {multipart: "
        "{tags: {value: ...}}} (docs/input.md, 'Bodies')"
    )


def test_a_structure_synthesized_for_a_media_type_gatebench_does_not_write_is_warned(
    tmp_path: Path,
) -> None:
    """An application/xml body without an example went out as JSON text, without a word."""
    from gatebench.core.spec import read_spec

    (tmp_path / "api.yaml").write_text(
        'openapi: 3.0.3\ninfo: {title: t, version: "1"}\npaths:\n'
        "  /pets:\n    post:\n      operationId: addPet\n      requestBody:\n"
        "        required: true\n        content:\n          application/xml:\n"
        "            schema: {type: object, properties: {id: {type: integer}}}\n"
        '      responses: {"201": {description: ok}}\n'
        "  /notes:\n    post:\n      operationId: addNote\n      requestBody:\n"
        "        required: true\n        content:\n          text/plain:\n"
        "            schema: {type: string}\n"
        '      responses: {"201": {description: ok}}\n'
    )
    api = read_spec(tmp_path / "api.yaml").api
    assert api is not None
    workloads = [
        {"name": n, "operation": n, "injection": {"at_once": 1}} for n in ("addPet", "addNote")
    ]
    plan = build_plan(section(workloads=workloads), api)
    said = [(w.pointer, w.message) for w in plan.warnings if "synthesizes" in w.message]
    assert said == [
        (
            "/x-gatebench/workloads/0/body",
            "the request body of operation 'addPet' is application/xml without an example: "
            "gatebench synthesizes a structure as JSON text, which a service reading "
            "application/xml refuses. Give the body to send: body: {text: '...', media_type: "
            "application/xml}, or an example in the description",
        )
    ]
