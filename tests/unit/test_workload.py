"""The workload document rendered from the plan: schedule, templates, bodies, no secrets."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.capabilities import ENGINE_WARMUP_S
from gatebench.core.ir import Api
from gatebench.core.plan import Plan, build_plan, load_plan
from gatebench.core.spec import load_spec, read_spec
from gatebench.core.trust import CEILING_TARGET
from gatebench.core.workload import (
    OCTETS,
    build_schedule,
    compile_load,
    engine_warmup,
    json_template,
    plan_as_run,
    quick_plan,
    render_workload,
)

ROOT = Path(__file__).resolve().parents[2]
URLS = {
    "nginx": "http://127.0.0.1:1001",
    "haproxy": "http://127.0.0.1:1002",
    "caddy": "http://127.0.0.1:1003",
    "envoy": "http://127.0.0.1:1004",
    "apache": "http://127.0.0.1:1005",
    "baseline": "http://127.0.0.1:2000",
}


@cache
def auction() -> tuple[Api, Plan]:
    result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
    assert result.api is not None
    # the gateway list is given, so this test does not depend on which renderers exist
    known = ("apache", "caddy", "envoy", "haproxy", "nginx", "traefik")
    return result.api, build_plan(result.benchmark, result.api, known_gateways=known)


def test_schedule_shuffles_targets_per_repetition_reproducibly() -> None:
    _api, plan = auction()
    urls = {t: URLS.get(t, "http://127.0.0.1:3000") for t in plan.targets}
    a = build_schedule(plan, urls, reset_url="http://127.0.0.1:2000/__gatebench__/reset", seed=7)
    b = build_schedule(plan, urls, reset_url="http://127.0.0.1:2000/__gatebench__/reset", seed=7)
    assert a == b
    assert len(a.target_order) == plan.repetitions == 10
    orders = {order for _, order in a.target_order}
    assert len(orders) > 1  # shuffled, not fixed
    assert all(sorted(order) == sorted(plan.targets) for _, order in a.target_order)
    per_target = len(plan.workloads) * 2  # a warm-up and a measured phase per workload
    assert len(a.phases) == plan.repetitions * len(plan.targets) * per_target
    assert [p.index for p in a.phases] == list(range(len(a.phases)))
    first = a.phases[:per_target]
    assert [p.measured for p in first] == [False] * 3 + [True] * 3
    assert all(p.before for p in first if p.measured)
    assert not any(p.before for p in first if not p.measured)
    assert first[0].injection.kind == "concurrent"
    assert first[0].injection.users == 50
    assert first[0].injection.duration == pytest.approx(1.0)  # 3 s warm-up shared by 3 workloads


def test_a_jvm_gateway_warms_up_until_it_is_steady_the_first_time_only() -> None:
    """A gateway that compiles its code at run time (Renderer.jit_warmup_s) warms up at least
    that long in its first repetition, the plan's own workloads sharing it; later repetitions
    and the other targets keep the plan's 3 s."""
    from dataclasses import replace

    from gatebench.core.renderers import get_renderer

    _, plan = auction()
    plan = replace(plan, gateways=("nginx", "zuul"), repetitions=2)
    jit = get_renderer("zuul").jit_warmup_s
    assert jit > plan.warmup.duration  # type: ignore[operator]
    urls = {"nginx": URLS["nginx"], "zuul": "http://127.0.0.1:1009", "baseline": URLS["baseline"]}
    schedule = build_schedule(plan, urls, seed=2)

    def warmup(target: str, rep: int) -> float:
        return sum(
            p.injection.duration or 0.0
            for p in schedule.phases
            if p.target == target and p.repetition == rep and not p.measured
        )

    assert warmup("zuul", 1) == pytest.approx(jit)
    assert warmup("zuul", 2) == pytest.approx(3.0)
    assert warmup("nginx", 1) == warmup("baseline", 1) == pytest.approx(3.0)
    zuul_first = [p for p in schedule.phases if p.target == "zuul" and not p.measured][:3]
    assert [p.workload for p in zuul_first] == [w.name for w in plan.workloads]


def test_targets_without_a_url_are_left_out() -> None:
    _, plan = auction()
    schedule = build_schedule(plan, {"nginx": URLS["nginx"], "baseline": URLS["baseline"]}, seed=1)
    assert {p.target for p in schedule.phases} == {"nginx", "baseline"}


def test_rendered_document_has_names_of_secrets_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUCTION_TOKEN", "very-secret-value")
    api, plan = auction()
    schedule = build_schedule(plan, {"baseline": URLS["baseline"]}, seed=3, repetitions=1)
    doc = render_workload(plan, api, schedule, skip_file="/tmp/skip")
    text = json.dumps(doc)
    assert "very-secret-value" not in text
    assert doc["format"] == "gatebench-workload/1"
    assert doc["secret_env"] == ["AUCTION_TOKEN"]
    by_name = {p["workload"]: p for p in doc["phases"] if p["measured"]}
    bid = by_name["bid"]
    assert bid["request"]["path"] == [{"text": "/bid/"}, {"param": "auctionId", "as": "path"}]
    assert bid["request"]["auth"] == [
        {"header": "Authorization", "prefix": "Bearer ", "env": "AUCTION_TOKEN"}
    ]
    assert bid["request"]["body"] == {
        "kind": "template",
        "content_type": "application/json",
        "parts": [{"text": '{"bid":'}, {"param": "amount", "as": "json"}, {"text": "}"}],
    }
    assert bid["params"] == {
        "auctionId": {"kind": "constant", "value": 1},
        "amount": {"kind": "counter", "start": 1, "step": 1},
    }
    assert bid["request"]["expect"] == [200]
    create = by_name["create-auction"]["request"]["body"]
    assert create["kind"] == "multipart"
    assert create["parts"][2] == {
        "name": "image",
        "size": 8_600_000,
        "filename": "camera.jpg",
        "content_type": "image/jpeg",
    }
    retrieve = by_name["retrieve"]
    assert retrieve["injection"] == {"kind": "sequential", "users": 1, "requests": 400}
    assert retrieve["params"]["auctionId"] == {"kind": "random", "low": 1, "high": 100}
    assert retrieve["request"]["base_url"] == URLS["baseline"]


def test_json_template_keeps_types_and_escapes_text() -> None:
    parts = json_template({"a": "${x}", "b": 'say "${y}"!', "c": [1, None, "plain"]})
    assert parts == [
        {"text": '{"a":'},
        {"param": "x", "as": "json"},
        {"text": ',"b":"say \\"'},
        {"param": "y", "as": "json-string"},
        {"text": '\\"!","c":[1,null,"plain"]}'},
    ]


def test_required_parameters_get_a_constant_from_the_description() -> None:
    api, plan = auction()
    w = next(w for w in plan.workloads if w.name == "retrieve")
    plan2 = type(plan)(**{**plan.__dict__, "workloads": (type(w)(**{**w.__dict__, "params": ()}),)})
    schedule = build_schedule(plan2, {"baseline": URLS["baseline"]}, seed=1, repetitions=1)
    doc = render_workload(plan2, api, schedule)
    phase = doc["phases"][-1]
    assert phase["params"] == {}  # fixed text in the request, as its style writes it
    assert phase["request"]["path"] == [{"text": "/auctions/"}, {"text": "1"}]


STYLED = """\
openapi: 3.0.3
info: {title: p, version: "1"}
paths:
  /p/{ids}/{obj}/{dot}:
    get:
      operationId: styles
      parameters:
        - {name: ids, in: path, required: true, schema: {type: array, items: {type: integer}, example: [3, 4]}}
        - {name: obj, in: path, required: true, style: matrix, explode: true, schema: {type: object, properties: {a: {type: string}, b: {type: integer}}}}
        - {name: dot, in: path, required: true, style: label, schema: {type: string, example: "x y"}}
        - {name: tags, in: query, required: true, schema: {type: array, items: {type: string}, example: [a, "b&c"]}}
        - {name: pipes, in: query, required: true, style: pipeDelimited, explode: false, schema: {type: array, items: {type: string}, example: [a, b]}}
        - {name: filter, in: query, required: true, style: deepObject, explode: true, schema: {type: object, properties: {x: {type: string}}}}
        - {name: optional, in: query, schema: {type: string}}
        - {name: q, in: query, required: true, content: {application/json: {schema: {type: object, properties: {k: {type: string}}}}}}
        - {name: X-Ids, in: header, required: true, schema: {type: array, items: {type: integer}, example: [1, 2]}}
        - {name: session, in: cookie, required: true, schema: {type: string, example: s1}}
        - {name: prefs, in: cookie, required: true, explode: false, schema: {type: object, example: {k: v}}}
      responses: {"200": {description: ok}}
x-gatebench:
  gateways: [nginx]
  workloads: [{name: styles, operation: styles, injection: {at_once: 1}}]
"""


def _request_of(spec: str, tmp_path: Path) -> dict[str, Any]:
    """The request the engines get for the last phase of ``spec``'s plan."""
    (tmp_path / "api.yaml").write_text(spec)
    result = load_spec(tmp_path / "api.yaml")
    assert result.api is not None
    plan = load_plan(result)
    schedule = build_schedule(plan, {"nginx": URLS["nginx"]}, seed=1, repetitions=1)
    return dict(render_workload(plan, result.api, schedule)["phases"][-1]["request"])


def test_a_parameter_the_plan_leaves_out_is_sent_as_its_style_says(tmp_path: Path) -> None:
    """OpenAPI's style and explode (the specification's "Style Examples"): a list in the path
    is 3,4 and not the JSON [3,4]; an exploded form list repeats its name; deepObject names its
    keys; a parameter described by content is its JSON; a cookie parameter goes in the Cookie
    header (before this, it was never sent)."""
    request = _request_of(STYLED, tmp_path)
    path = "".join(part["text"] for part in request["path"])
    assert path == "/p/3,4/;a=example;b=1/.x%20y"
    query = "&".join(f"{n}={''.join(p['text'] for p in parts)}" for n, parts in request["query"])
    assert query == (
        "tags=a&tags=b%26c&pipes=a%7Cb&filter%5Bx%5D=example&q=%7B%22k%22%3A%22example%22%7D"
    )
    headers = {n: "".join(p["text"] for p in parts) for n, parts in request["headers"]}
    assert headers == {"X-Ids": "1,2", "Cookie": "session=s1; prefs=k,v"}


ESCAPED = """\
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /pct/a%20b%2f/{id}/é:
    get:
      operationId: pct
      parameters: [{name: id, in: path, required: true, schema: {type: string, example: x}}]
      responses: {"200": {description: ok}}
x-gatebench:
  gateways: [nginx]
  workloads: [{name: pct, operation: pct, injection: {at_once: 1}}]
"""


def test_a_percent_escape_in_the_path_is_sent_as_written(tmp_path: Path) -> None:
    """``%20`` in a template was encoded again (``%2520``): every request missed the route
    the gateways and the mock backend match. What is not ``pchar`` is still encoded."""
    import re

    from gatebench.core.renderers import routes_for

    request = _request_of(ESCAPED, tmp_path)
    path = "".join(part["text"] for part in request["path"])
    assert path == "/pct/a%20b%2F/x/%C3%A9"
    api = load_spec(tmp_path / "api.yaml").api
    assert api is not None
    [route] = routes_for(api)
    assert re.fullmatch(route.regex(), path)


def test_a_list_or_mapping_the_plan_gives_is_sent_as_the_style_says(tmp_path: Path) -> None:
    """``{value: [...]}`` or ``{value: {...}}`` for a parameter is written by its style, as the
    description's own values are: it was sent as one text, Java's or JSON's (``ids=[5, 6]``,
    ``filter={"x":"new"}``), a value no server reads as the description says. A value the
    engine draws, or plain text, is sent as written."""
    given = STYLED.replace(
        "injection: {at_once: 1}}]",
        "injection: {at_once: 1}, params: {ids: {value: [5, 6]}, filter: {value: {x: new}}, "
        "X-Ids: {value: [7, 8]}, prefs: {value: {a: b}}, tags: 'x,y', pipes: {list: [p, q]}}}]",
    )
    request = _request_of(given, tmp_path)
    assert "".join(part["text"] for part in request["path"]) == "/p/5,6/;a=example;b=1/.x%20y"
    query = [(n, parts) for n, parts in request["query"]]
    assert query[:2] == [
        ("tags", [{"param": "tags", "as": "query"}]),
        ("pipes", [{"param": "pipes", "as": "query"}]),
    ]
    rest = "&".join(f"{n}={''.join(p['text'] for p in parts)}" for n, parts in query[2:])
    assert rest == "filter%5Bx%5D=new&q=%7B%22k%22%3A%22example%22%7D"
    headers = {n: "".join(p["text"] for p in parts) for n, parts in request["headers"]}
    assert headers == {"X-Ids": "7,8", "Cookie": "session=s1; prefs=a,b"}


def test_quick_plan_is_one_short_repetition() -> None:
    _, plan = auction()
    quick = quick_plan(plan)
    assert quick.repetitions == 1
    assert quick.warmup.duration == 1.0
    kinds = {w.name: w.injection for w in quick.workloads}
    assert kinds["retrieve"].requests == 100
    assert kinds["create-auction"].users == 50


def test_one_call_compiles_a_plan_into_the_schedule_and_its_document() -> None:
    api, plan = auction()
    plan = plan_as_run(plan, quick=True, repetitions=2)
    assert plan.repetitions == 2 and plan.workloads == quick_plan(plan).workloads
    urls = {"nginx": URLS["nginx"], "baseline": URLS["baseline"]}
    compiled = compile_load(
        plan,
        api,
        urls,
        reset_url="http://127.0.0.1:2000/__gatebench__/reset",
        seed=5,
        keep=lambda p: p.repetition == 2,
        ceiling_url="http://127.0.0.1:4000",
        skip_file="/tmp/skip",
    )
    phases = compiled.schedule.phases
    ceiling = [p for p in phases if p.target == CEILING_TARGET]
    # the ceiling first: its warm-ups then every workload once, as repetition 0, no reset
    assert phases[: len(ceiling)] == tuple(ceiling)
    assert {p.repetition for p in ceiling} == {0} and not any(p.before for p in ceiling)
    assert [p.workload for p in ceiling if p.measured] == [w.name for w in plan.workloads]
    # then only the phases ``keep`` accepted, their indices shifted past the ceiling's
    rest = phases[len(ceiling) :]
    assert {p.repetition for p in rest} == {2} and {p.target for p in rest} == set(urls)
    full = build_schedule(plan, urls, reset_url="http://127.0.0.1:2000/__gatebench__/reset", seed=5)
    kept = [p for p in full.phases if p.repetition == 2]
    assert [p.index for p in rest] == [p.index + len(ceiling) for p in kept]
    assert [p.index for p in ceiling] == list(range(len(ceiling)))
    # the document is the schedule's, phase for phase
    document = compiled.document
    assert document["seed"] == compiled.schedule.seed == 5
    assert document["skip_file"] == "/tmp/skip"
    assert [(d["index"], d["target"]) for d in document["phases"]] == [
        (p.index, p.target) for p in phases
    ]
    assert document == render_workload(plan, api, compiled.schedule, skip_file="/tmp/skip")


def test_the_engine_warms_itself_against_the_backend_after_the_ceiling() -> None:
    """The engine's own warm-up (docs/trust.md, "The engine's own warm-up"): every workload in
    turn against the backend, its answers checked, unmeasured, as repetition 0, lasting the
    seconds asked in all; first of all, so that the ceiling is read on a warm engine too."""
    api, plan = auction()
    urls = {"nginx": URLS["nginx"], "baseline": URLS["baseline"]}
    backend = "http://127.0.0.1:2000"
    compiled = compile_load(
        plan,
        api,
        urls,
        seed=5,
        ceiling_url="http://127.0.0.1:4000",
        engine_warmup=(backend, 20.0),
    )
    phases = compiled.schedule.phases
    ceiling = [p for p in phases if p.target == CEILING_TARGET]
    warm = [p for p in phases if p.engine_warmup]
    assert phases[: len(warm)] == tuple(warm)
    assert phases[len(warm) : len(warm) + len(ceiling)] == tuple(ceiling)
    assert [p.workload for p in warm] == [w.name for w in plan.workloads]
    assert all(p.base_url == backend and not p.measured and p.repetition == 0 for p in warm)
    # checking answers as the measured phases do: that code is as cold as the rest until used
    assert all(p.answers_checked for p in warm)
    assert sum(p.injection.duration or 0.0 for p in warm) == pytest.approx(20.0)
    assert warm[0].label == f"engine warm-up · {plan.workloads[0].name}"
    # the schedule follows, its order untouched, and the document numbers phases in order
    plain = compile_load(plan, api, urls, seed=5, ceiling_url="http://127.0.0.1:4000")
    rest = phases[len(warm) :]
    assert [(p.target, p.workload, p.repetition, p.measured) for p in rest] == [
        (p.target, p.workload, p.repetition, p.measured) for p in plain.schedule.phases
    ]
    assert [d["index"] for d in compiled.document["phases"]] == list(range(len(phases)))
    # no target's own warm-up phase is taken for the engine's
    assert not any(p.engine_warmup for p in plain.schedule.phases)
    # Gatling's 20 s on both paths; none for wrk (no JIT) and none in the quick profile
    assert engine_warmup(backend, "gatling", quick=False) == (backend, ENGINE_WARMUP_S["gatling"])
    assert engine_warmup(backend, "gatling", quick=True) is None
    assert engine_warmup(backend, "wrk", quick=False) is None


def test_cookie_parameters_and_an_api_key_cookie_are_one_cookie_header(tmp_path: Path) -> None:
    """A client sends one Cookie header (RFC 6265 5.4): fixed cookie parameters go in front of
    the API key the plan sends as a cookie; with a generator among them, a header of their own."""
    spec = STYLED.replace(
        "      responses:",
        "      security: [{key: []}]\n      responses:",
        1,
    ).replace(
        "x-gatebench:",
        "components:\n  securitySchemes:\n    key: {type: apiKey, in: cookie, name: key}\n"
        "x-gatebench:\n  auth: {api_key: {env: KEY}}",
    )
    request = _request_of(spec, tmp_path)
    assert [h[0] for h in request["headers"]] == ["X-Ids"]
    assert request["auth"] == [
        {"header": "Cookie", "prefix": "session=s1; prefs=k,v; key=", "env": "KEY"}
    ]


FORMS = """\
openapi: 3.1.0
info: {title: f, version: "1"}
paths:
  /form:
    post:
      operationId: form
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [user, tags, ids, meta, deep]
              properties:
                user: {type: string, example: "a b&c"}
                tags: {type: array, items: {type: string}, example: [x, y]}
                ids: {type: array, items: {type: integer}, example: [1, 2]}
                meta: {type: object, properties: {k: {type: string}}}
                deep: {type: object, properties: {k: {type: string}}}
            encoding:
              ids: {style: form, explode: false}
              deep: {style: deepObject, explode: true}
      responses: {"200": {description: ok}}
  /up:
    post:
      operationId: up
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              type: object
              required: [photo, pics, labels, meta]
              properties:
                photo: {type: string, contentMediaType: image/png}
                pics: {type: array, items: {type: string, format: binary}, minItems: 2}
                labels: {type: array, items: {type: string}, example: [a, b]}
                meta: {type: object, properties: {k: {type: string}}}
      responses: {"200": {description: ok}}
x-gatebench:
  gateways: [nginx]
  workloads: [{name: w, operation: OPERATION, injection: {at_once: 1}}]
"""

SWAGGER_FORM = """\
swagger: "2.0"
info: {title: s, version: "1"}
consumes: [application/x-www-form-urlencoded]
paths:
  /login:
    post:
      operationId: login
      parameters:
        - {name: user, in: formData, type: string, required: true, x-example: joe}
        - {name: multi, in: formData, type: array, items: {type: integer}, collectionFormat: multi, required: true, x-example: [1, 2]}
        - {name: csv, in: formData, type: array, items: {type: string}, required: true, x-example: [a, b]}
        - {name: pipes, in: formData, type: array, items: {type: string}, collectionFormat: pipes, required: true, x-example: [c, d]}
      responses: {"200": {description: ok}}
x-gatebench:
  gateways: [nginx]
  workloads: [{name: w, operation: login, injection: {at_once: 1}}]
"""


def _body_of(spec: str, tmp_path: Path) -> dict[str, Any]:
    body: dict[str, Any] = _request_of(spec, tmp_path)["body"]
    return body


def test_a_form_body_is_written_as_its_encoding_says(tmp_path: Path) -> None:
    """Each property of an application/x-www-form-urlencoded body is written as a query
    parameter: form and exploded by default (OpenAPI's Encoding Object), or as the encoding
    says; before, a list or an object went as its JSON (tags=%5B%22x%22...)."""
    body = _body_of(FORMS.replace("OPERATION", "form"), tmp_path)
    assert body["content_type"] == "application/x-www-form-urlencoded"
    assert [p["text"] for p in body["parts"]] == [
        "user=a%20b%26c&tags=x&tags=y&ids=1,2&k=example&deep%5Bk%5D=example"
    ]
    # a media type with parameters is the same media type (it went out as JSON before)
    typed = "'application/x-www-form-urlencoded; charset=utf-8':"
    spec = FORMS.replace("OPERATION", "form").replace("application/x-www-form-urlencoded:", typed)
    body = _body_of(spec, tmp_path)
    assert body["content_type"] == "application/x-www-form-urlencoded; charset=utf-8"
    assert body["parts"][0]["text"].startswith("user=a%20b%26c&tags=x&tags=y&")


def test_a_swagger_form_is_written_by_its_collection_formats(tmp_path: Path) -> None:
    """formData parameters: collectionFormat (csv by default, multi repeats the name) and the
    parameter's x-example."""
    body = _body_of(SWAGGER_FORM, tmp_path)
    assert [p["text"] for p in body["parts"]] == ["user=joe&multi=1&multi=2&csv=a,b&pipes=c%7Cd"]


def test_multipart_parts_from_the_description(tmp_path: Path) -> None:
    """A file named by OpenAPI 3.1's contentMediaType is a file of that type; an array is one
    part per item (before, one text part holding the JSON list); an object is its JSON, typed
    application/json."""
    parts = _body_of(FORMS.replace("OPERATION", "up"), tmp_path)["parts"]
    files = [(p["name"], p["content_type"]) for p in parts if "size" in p]
    assert files == [("photo", "image/png"), ("pics", OCTETS), ("pics", OCTETS)]
    texts = [
        (p["name"], p["parts"][0]["text"], p.get("content_type")) for p in parts if "parts" in p
    ]
    assert texts == [
        ("labels", "a", None),
        ("labels", "b", None),
        ("meta", '{"k": "example"}', "application/json"),
    ]


def test_an_encoding_content_type_types_the_part_it_names(tmp_path: Path) -> None:
    """OpenAPI's Encoding Object ``contentType``: a file part is sent as the first concrete
    type it lists (``image/jpeg, image/*``; it went as the property's own type), a text part
    with that type, a JSON one as its JSON; a form property typed application/json is its JSON
    text. A wildcard alone names no type: the part keeps its default."""
    encoding = (
        "                meta: {type: object, properties: {k: {type: string}}}\n"
        "            encoding:\n"
        "              photo: {contentType: 'image/jpeg, image/*'}\n"
        "              pics: {contentType: 'image/*'}\n"
        "              labels: {contentType: text/csv}\n"
        "              meta: {contentType: application/vnd.meta+json}\n"
        "      responses:"
    )
    up = FORMS.replace("OPERATION", "up")
    marker = (
        "                meta: {type: object, properties: {k: {type: string}}}\n      responses:"
    )
    assert up.count(marker) == 1
    parts = _body_of(up.replace(marker, encoding), tmp_path)["parts"]
    files = [(p["name"], p["content_type"]) for p in parts if "size" in p]
    assert files == [("photo", "image/jpeg"), ("pics", OCTETS), ("pics", OCTETS)]
    texts = [
        (p["name"], p["parts"][0]["text"], p.get("content_type")) for p in parts if "parts" in p
    ]
    assert texts == [
        ("labels", "a", "text/csv"),
        ("labels", "b", "text/csv"),
        ("meta", '{"k": "example"}', "application/vnd.meta+json"),
    ]
    form = FORMS.replace("OPERATION", "form").replace(
        "              ids: {style: form, explode: false}",
        "              ids: {style: form, explode: false}\n"
        "              meta: {contentType: application/json}",
    )
    [text] = [p["text"] for p in _body_of(form, tmp_path)["parts"]]
    assert "&meta=%7B%22k%22%3A%22example%22%7D&" in text  # it was k=example (form, exploded)


UPLOAD = """
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /files:
    post:
      operationId: upload
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema: {$ref: "#/components/schemas/Upload"}
      responses: {"201": {description: ok}}
components:
  schemas:
    Upload:
      type: object
      required: [file, label]
      properties:
        file: {type: string, format: binary}
        label: {type: string, example: cat}
        note: {type: string}
x-gatebench:
  gateways: [nginx]
  workloads: [{name: w, operation: upload, injection: {at_once: 1}BODY}]
"""


def test_multipart_parts_through_a_reference_and_the_required_parts_a_plan_leaves_out(
    tmp_path: Path,
) -> None:
    """A multipart schema written as a $ref is read through it: its file went out as the text
    'example'. A multipart body the plan writes keeps the parts the description requires and
    the plan leaves out, as a required parameter the plan leaves out is sent."""
    parts = _body_of(UPLOAD.replace("BODY", ""), tmp_path)["parts"]
    assert [(p["name"], p.get("size"), p.get("parts")) for p in parts] == [
        ("file", 1024, None),
        ("label", None, [{"text": "cat"}]),
        ("note", None, [{"text": "example"}]),
    ]
    sized = UPLOAD.replace("BODY", ", body: {multipart: {file: {size: 64kB}}}")
    parts = _body_of(sized, tmp_path)["parts"]
    assert [(p["name"], p.get("size"), p.get("parts")) for p in parts] == [
        ("file", 64_000, None),
        ("label", None, [{"text": "cat"}]),
    ]
    given = UPLOAD.replace("BODY", ", body: {multipart: {label: {value: dog}}}")
    parts = _body_of(given, tmp_path)["parts"]
    assert [(p["name"], p.get("size"), p.get("parts")) for p in parts] == [
        ("label", None, [{"text": "dog"}]),
        ("file", 1024, None),
    ]


def test_multipart_values_the_plan_gives_are_written_as_the_descriptions_are(
    tmp_path: Path,
) -> None:
    """A part's list, object, boolean or number went out as Python's text of it (``['a',
    'b']``, ``{'k': 1}``, ``True``): now a list is one part per item, an object its JSON
    (``application/json``), a boolean or a number its JSON text, text as written."""
    given = UPLOAD.replace(
        "BODY",
        ", body: {multipart: {label: {value: [a, b]}, meta: {value: {k: 1, who: '${id}'}}, "
        "public: {value: true}, n: {value: 2.5}, none: {value: null}, "
        "note: {value: '${id}', content_type: text/plain}}}, params: {id: 7}",
    )
    parts = _body_of(given, tmp_path)["parts"]
    shown = [(p["name"], p.get("parts"), p.get("content_type")) for p in parts]
    assert shown == [
        ("label", [{"text": "a"}], None),
        ("label", [{"text": "b"}], None),
        (
            "meta",
            [{"text": '{"k":1,"who":'}, {"param": "id", "as": "json"}, {"text": "}"}],
            "application/json",
        ),
        ("public", [{"text": "true"}], None),
        ("n", [{"text": "2.5"}], None),
        ("none", [{"text": "null"}], None),
        ("note", [{"param": "id", "as": "raw"}], "text/plain"),
        ("file", None, "application/octet-stream"),
    ]


def test_a_base64_part_is_sent_as_base64_text_not_as_a_file(tmp_path: Path) -> None:
    """``format: byte`` is base64 text (OpenAPI 3.0 Data Types), as is 3.1's
    ``contentEncoding: base64``: the first went out as 1 kB of raw bytes, the second as the
    text 'example'; ``format: binary`` stays a file."""
    spec = UPLOAD.replace(
        "        note: {type: string}\n",
        "        note: {type: string, format: byte}\n"
        "        logo: {type: string, contentEncoding: base64, contentMediaType: image/png}\n",
    ).replace("BODY", "")
    parts = {p["name"]: p for p in _body_of(spec, tmp_path)["parts"]}
    assert parts["file"]["size"] == 1024
    assert parts["note"]["parts"] == [{"text": "ZXhhbXBsZQ=="}] and "size" not in parts["note"]
    assert parts["logo"]["parts"] == [{"text": "ZXhhbXBsZQ=="}]
