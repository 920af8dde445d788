"""A route a gateway cannot express is left out of its files unless a workload needs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatebench.core.errors import UnsupportedFeature
from gatebench.core.policies import ApiKeyAuth, Policies, PolicySet
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers._leave_out import render_leaving_out, sent_query_names
from gatebench.core.spec import load_spec
from paths import DATA

TEMPLATES = DATA / "adversarial" / "templates.yaml"


def test_unused_routes_are_left_out_with_located_warnings() -> None:
    api = load_spec(TEMPLATES).api
    assert api is not None
    rendered = render_leaving_out(
        get_renderer("krakend"), api, RenderTarget("/tmp/gw"), needed={"aXc"}
    )
    assert [(p.pointer, p.severity) for p in rendered.left_out] == [
        ("/paths/~1files~1{name}.json/get", "warning"),
        ("/paths/~1files~1{name}/head", "warning"),
        ("/paths/~1items~1{id}/options", "warning"),
        ("/paths/~1v{major}.{minor}~1status/get", "warning"),
    ]
    assert rendered.left_out[2].message == (
        "krakend cannot express this route (OPTIONS /items/{id}): KrakenD endpoints take only "
        "GET, POST, PUT, PATCH, DELETE; the route is left out of its configuration"
    )
    assert rendered.summary("krakend") == (
        "krakend: 4 of 10 routes left out (it cannot express them and no workload uses them)"
    )
    config = json.loads(rendered.files["krakend.json"])
    assert len(config["endpoints"]) == 6


def test_a_route_a_workload_needs_excludes_the_gateway_with_the_reason() -> None:
    api = load_spec(TEMPLATES).api
    assert api is not None
    with pytest.raises(UnsupportedFeature) as info:
        render_leaving_out(
            get_renderer("krakend"), api, RenderTarget("/tmp/gw"), needed={"headFile", "aXc"}
        )
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        (
            "/paths/~1files~1{name}/head",
            "krakend cannot express this route (HEAD /files/{name}): KrakenD endpoints take only "
            "GET, POST, PUT, PATCH, DELETE",
        )
    ]


def test_google_api_gateway_leaves_out_what_its_path_rules_refuse() -> None:
    api = load_spec(TEMPLATES).api
    assert api is not None
    rendered = render_leaving_out(get_renderer("google-api-gateway"), api, RenderTarget("/tmp/gw"))
    assert [p.pointer for p in rendered.left_out] == [
        "/paths/~1files~1{name}.json/get",
        "/paths/~1v{major}.{minor}~1status/get",
    ]
    assert "/files/{name}.json" not in rendered.files["openapi.yaml"]


def test_a_gateway_that_expresses_everything_is_unchanged() -> None:
    api = load_spec(TEMPLATES).api
    assert api is not None
    nginx = get_renderer("nginx")
    rendered = render_leaving_out(nginx, api, RenderTarget("/tmp/gw"))
    assert rendered.left_out == ()
    assert rendered.files == nginx.render(api, RenderTarget("/tmp/gw"))


def test_the_report_lists_the_routes_a_gateway_left_out() -> None:
    from test_report import m, run_record

    from gatebench.core.report import build_report

    line = "krakend: 3 of 1,123 routes left out (it cannot express them and no workload uses them)"
    report = build_report(
        run_record(
            gateways=["krakend", "nginx"],
            target_errors={"nginx": "config rejected"},
            environment={"routes_left_out": {"krakend": line}},
        ),
        [m("krakend", "w", 0, 10.0)],
    )
    cautions = list(report.cautions)
    assert cautions[cautions.index("nginx failed: config rejected.") + 1] == line + "."


SEARCH = """
openapi: 3.0.3
info: {title: Search, version: "1"}
paths:
  /search:
    get:
      operationId: search
      security: [{apiKey: []}]
      parameters:
        - {name: key, in: query, schema: {type: string}}
        - {name: q, in: query, schema: {type: string}}
      responses: {"200": {description: ok}}
  /items:
    get:
      operationId: listItems
      parameters:
        - {name: page, in: query, schema: {type: integer}}
      responses: {"200": {description: ok}}
components:
  securitySchemes:
    apiKey: {type: apiKey, in: query, name: key}
"""


def test_a_workload_whose_query_repeats_a_parameter_excludes_krakend(tmp_path: Path) -> None:
    """KrakenD rebuilds the query (names sorted, a name's values together): an operation a
    workload uses that sends 'key' twice (declared, and the API key of its security scheme)
    cannot be measured through it; the same operation unused, or another gateway, is fine."""
    spec = tmp_path / "search.yaml"
    spec.write_text(SEARCH)
    api = load_spec(spec).api
    assert api is not None
    krakend = get_renderer("krakend")
    with pytest.raises(UnsupportedFeature) as info:
        render_leaving_out(krakend, api, RenderTarget("/tmp/gw"), needed={"search"})
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        (
            "/paths/~1search/get",
            "krakend cannot forward the query of this operation unchanged (GET /search): it "
            "sends 'key' more than once in the query, and KrakenD rebuilds the query (names "
            "sorted, each name's values together: docs/gateways.md), so the backend would not "
            "get the parameters in the order sent",
        )
    ]
    assert render_leaving_out(krakend, api, RenderTarget("/tmp/gw"), needed={"listItems"}).files
    assert render_leaving_out(
        get_renderer("nginx"), api, RenderTarget("/tmp/gw"), needed={"search"}
    ).files


def test_an_api_key_policy_in_the_query_counts_as_a_sent_parameter(tmp_path: Path) -> None:
    spec = tmp_path / "search.yaml"
    spec.write_text(SEARCH)
    api = load_spec(spec).api
    assert api is not None
    policies = PolicySet(
        default=Policies(auth=ApiKeyAuth(header=None, query="page", keys_env="K")),
    )
    names = sent_query_names(api.operation("listItems"), policies)
    assert names == ["page", "page"]
    assert get_renderer("krakend").query_problem(names) is not None
    assert get_renderer("krakend").query_problem(["page", "q"]) is None
    assert get_renderer("tyk").query_problem(names) is None
