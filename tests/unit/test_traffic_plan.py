"""The plan an import writes: privacy by default (no secret, header, address or recorded value
reaches it unless allowed), the recorded value distribution kept as a shape (cardinality and
frequencies), bounds that keep it small, and an ordinary plan ``gatebench`` reads back."""

from __future__ import annotations

import io
import json
import random
import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import pytest
import yaml

from gatebench.cli import main
from gatebench.core.ir import Api
from gatebench.core.plan import build_plan
from gatebench.core.spec import load_spec
from gatebench.core.traffic import ImportOptions, KeepValues, TrafficImport, _stats, import_traffic
from gatebench.core.workload import build_schedule, render_workload, weighted_value
from paths import DATA

TRAFFIC = DATA / "traffic"
SECRETS = (
    "hunter2",
    "eyJ",
    "abc123secret",
    "s3cr3t",
    "shop.example",
    "Authorization",
    "Bearer",
    "Cookie",
    "192.0.2",
    "alice",
    "curl",
    "Mozilla",
    "kube-probe",
)


@pytest.fixture(scope="module")
def shop() -> Api:
    api = load_spec(TRAFFIC / "shop.yaml").api
    assert api is not None
    return api


def imported(api: Api, path: Path, **options: object) -> TrafficImport:
    return import_traffic(api, [path], ImportOptions(**options), spec_ref=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["combined.log", "session.har", "json.log"])
def test_nothing_secret_or_recorded_reaches_the_plan(shop: Api, name: str) -> None:
    result = imported(shop, TRAFFIC / name)
    text = result.text("gatebench import shop.yaml " + name)
    for secret in SECRETS:
        assert secret not in text, secret
    workloads = {w["name"]: w for w in yaml.safe_load(text)["x-gatebench"]["workloads"]}
    # recorded ids (42, 7, 11, 12) became synthetic ones with the same frequencies
    get_item = workloads["getItem"]["params"]["itemId"]
    assert get_item in (
        1,
        {"list": [1, 2], "weights": [1, 1]},
        {"list": [1, 2, 3], "weights": [2, 1, 1]},
    )


def test_kept_values_are_decoded_but_secrets_never(shop: Api, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text(
        "".join(
            f'192.0.2.1 - - [31/Jan/2026:12:00:0{i} +0000] "GET /api/items?limit={v}&token=t{i} HTTP/1.1" 200 1 "-" "-"\n'
            for i, v in enumerate(["20", "20", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"])
        )
        + '192.0.2.1 - - [31/Jan/2026:12:00:05 +0000] "GET /api/users/a%20b HTTP/1.1" 200 1 "-" "-"\n'
    )
    kept = imported(shop, log, keep=KeepValues(everything=True))
    found = {w["name"]: w for w in kept.plan.section["workloads"]}
    # a JWT-looking value is never kept: the whole parameter falls back to synthetic values
    assert found["listItems"]["params"] == {"limit": {"list": [1, 2], "weights": [2, 1]}}
    assert found["getUser"]["params"] == {"userId": "a b"}
    assert "t1" not in kept.text("x") and "token: in 100 % of requests" in kept.text("x")
    named = imported(shop, log, keep=KeepValues(names=frozenset({"limit"})))
    found = {w["name"]: w for w in named.plan.section["workloads"]}
    assert found["getUser"]["params"] == {"userId": "00000000-0000-4000-8000-000000000001"}


def _zipf_log(path: Path, n: int, ids: int) -> Counter[int]:
    rng = random.Random(9)
    drawn = [int(ids ** rng.random()) for _ in range(n)]
    line = '192.0.2.1 - - [31/Jan/2026:12:{m:02d}:{s:02d} +0000] "GET /api/items/{i} HTTP/1.1" 200 1 "-" "-"\n'
    path.write_text(
        "".join(line.format(m=k // 60000 % 60, s=k // 1000 % 60, i=i) for k, i in enumerate(drawn))
    )
    return Counter(drawn)


def test_the_value_distribution_keeps_its_cardinality_and_shape(shop: Api, tmp_path: Path) -> None:
    truth = _zipf_log(tmp_path / "z.log", 30_000, 5_000)
    result = imported(shop, tmp_path / "z.log")
    plan = build_plan(result.plan.section, shop)
    section = {w["name"]: w for w in result.plan.section["workloads"]}
    gen = section["getItem"]["params"]["itemId"]
    top = [c for _, c in truth.most_common(100)]
    assert gen["weights"] == top
    assert gen["others"] == {
        "count": len(truth) - 100,
        "weight": 30_000 - sum(top),
        "start": 101,
    }
    document = render_workload(plan, shop, build_schedule(plan, {"baseline": "http://x"}, seed=1))
    spec = next(p for p in document["phases"] if p["workload"] == "getItem")["params"]["itemId"]
    replayed = Counter(weighted_value(spec, n) for n in range(30_000))
    # what a cache sees: the share of the 10 and 100 most frequent, and how many distinct
    for k in (10, 100):
        want = sum(c for _, c in truth.most_common(k)) / 30_000
        got = sum(c for _, c in replayed.most_common(k)) / 30_000
        assert got == pytest.approx(want, abs=0.02), k
    assert len(replayed) == pytest.approx(len(truth), rel=0.15)


CATALOG = """
openapi: 3.0.3
info: {title: Catalog, version: "1"}
paths:
  /skus/{sku}:
    get:
      parameters:
        - {name: sku, in: path, required: true, schema: {type: string, pattern: "^[A-Z]{3}-[0-9]{4}$"}}
      responses: {"200": {description: ok}}
  /regions/{region}:
    get:
      parameters:
        - {name: region, in: path, required: true, schema: {type: string, pattern: "^[A-Z]{2}$"}}
        - name: warehouse
          in: query
          required: true
          style: pipeDelimited
          schema: {type: array, items: {type: string, enum: [north, south, east]}}
      responses: {"200": {description: ok}}
"""


def test_synthetic_values_are_valid_for_the_parameters_schema(tmp_path: Path) -> None:
    """A replay sends values the description accepts: a patterned path parameter's synthetic
    values (the listed ones and the ``others`` past them) match its pattern; a list of the
    description's own enum values is kept; where no numbered value fits, the import says so."""
    (tmp_path / "catalog.yaml").write_text(CATALOG)
    api = load_spec(tmp_path / "catalog.yaml").api
    assert api is not None
    line = '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET {path} HTTP/1.1" 200 1 "-" "-"\n'
    paths = [f"/skus/XYZ-{i:04d}" for i in range(150) for _ in range(1 + (i < 10))]
    paths += ["/regions/QQ?warehouse=north%7Ceast", "/regions/RR?warehouse=south"] * 2
    paths += ["/regions/QQ?warehouse=west"]
    log = tmp_path / "a.log"
    log.write_text("".join(line.format(s=i % 60, path=p) for i, p in enumerate(paths)))
    result = imported(api, log)
    plan = build_plan(result.plan.section, api)
    found = {w["name"]: w["params"] for w in result.plan.section["workloads"]}
    sku = found["get_skus_sku"]["sku"]
    assert sku["list"][:2] == ["AAA-0001", "AAA-0002"] and sku["others"]["count"] == 50
    document = render_workload(plan, api, build_schedule(plan, {"baseline": "http://x"}, seed=1))
    spec = next(p for p in document["phases"] if p["workload"] == "get_skus_sku")["params"]["sku"]
    drawn = {weighted_value(spec, n) for n in range(5_000)}
    assert len(drawn) > 140 and all(re.fullmatch(r"[A-Z]{3}-[0-9]{4}", v) for v in drawn)
    assert found["get_regions_region"]["warehouse"] == {
        "list": ["north|east", "south"],
        "weights": [2, 2],
    }
    assert found["get_regions_region"]["region"] == {"list": ["v1", "v2"], "weights": [3, 2]}
    assert result.plan.notes[0] == (
        "get_regions_region: region takes values that its schema refuses (no numbered values fit "
        "it): give valid ones in params"
    )


FILTERED = """
openapi: 3.0.3
info: {title: Shipments, version: "1"}
paths:
  /shipments:
    get:
      parameters:
        - name: filter
          in: query
          style: deepObject
          schema: {type: object, properties: {status: {type: string, enum: [new, sent]}, carrier: {type: string}}}
        - {name: ids, in: query, explode: false, schema: {type: array, items: {type: integer}, minItems: 2}}
      responses: {"200": {description: ok}}
"""


@pytest.mark.parametrize("keep", [False, True])
def test_a_deep_object_and_an_array_parameter_are_imported_as_the_plan_reads_them(
    tmp_path: Path, keep: bool
) -> None:
    """``filter[status]=sent`` is a key of the deepObject parameter ``filter`` (it was 'not a
    parameter of the description'), and an array parameter's one value is written as
    ``{value: [...]}`` (it was a bare list, which the written plan then refused): the plan the
    import writes is read back, and the request sends what the traffic sent, by the style."""
    (tmp_path / "api.yaml").write_text(FILTERED)
    api = load_spec(tmp_path / "api.yaml").api
    assert api is not None
    line = '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET {path} HTTP/1.1" 200 1 "-" "-"\n'
    paths = ["/shipments?filter%5Bstatus%5D=sent&ids=7,8"] * 3
    paths += ["/shipments?filter%5Bstatus%5D=new&filter%5Bcarrier%5D=ups&ids=7,8"]
    log = tmp_path / "a.log"
    log.write_text("".join(line.format(s=i, path=p) for i, p in enumerate(paths)))
    result = imported(api, log, keep=KeepValues(everything=True) if keep else KeepValues())
    [workload] = result.plan.section["workloads"]
    status = "sent" if keep else "new"
    expected = {"status": status, "carrier": "ups" if keep else "example"}
    assert workload["params"]["filter"] == {"value": expected}
    # a kept value is the recorded text; a synthetic one the schema's own list
    assert workload["params"]["ids"] == ("7,8" if keep else {"value": [1, 1]})
    plan = build_plan(result.plan.section, api)
    document = render_workload(plan, api, build_schedule(plan, {"baseline": "http://x"}, seed=1))
    query = document["phases"][-1]["request"]["query"]
    params = document["phases"][-1]["params"]
    written = {"ids": "7%2C8"}  # a constant text the engines encode (values_test.go)
    sent = "&".join(
        f"{n}={''.join(p.get('text') or written[p['param']] for p in parts)}" for n, parts in query
    )
    assert params["ids"] == {"kind": "constant", "value": "7,8" if keep else [1, 1]}
    carrier = "ups" if keep else "example"
    ids = "7%2C8" if keep else "1,1"
    assert sent == f"filter%5Bstatus%5D={status}&filter%5Bcarrier%5D={carrier}&ids={ids}"
    said = "\n".join(result.plan.comments[workload["name"]])
    assert "filter[status], filter[carrier]: in 100 % of requests, keys of the deepObject" in said


def test_an_array_parameter_that_may_hold_one_item_replays_one_valid_item(
    tmp_path: Path,
) -> None:
    """An array of integers took the text values v1, v2, ... (its schema refuses them) when
    the traffic had several: now one numbered item a request, valid exploded or not."""
    (tmp_path / "api.yaml").write_text(
        FILTERED.replace(
            "items: {type: integer}, minItems: 2}}", "items: {type: integer, minimum: 3}}}"
        )
    )
    api = load_spec(tmp_path / "api.yaml").api
    assert api is not None
    line = '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET {path} HTTP/1.1" 200 1 "-" "-"\n'
    paths = [f"/shipments?ids={i},{i + 1}" for i in range(3)] + ["/shipments?ids=0,1"]
    log = tmp_path / "a.log"
    log.write_text("".join(line.format(s=i, path=p) for i, p in enumerate(paths)))
    result = imported(api, log)
    [workload] = result.plan.section["workloads"]
    assert workload["params"]["ids"] == {"list": [3, 4, 5], "weights": [2, 1, 1]}
    said = [c for c in result.plan.comments[workload["name"]] if c.startswith("ids:")]
    assert said == [
        "ids: in 100 % of requests; 3 distinct values; synthetic values with the recorded "
        "frequencies, one item a request"
    ]
    assert not result.plan.notes


def test_a_query_name_repeated_in_a_request_is_counted_once_for_its_share(
    tmp_path: Path,
) -> None:
    """``tags=a&tags=b`` is one request carrying ``tags``: it read 'in 150 % of requests'."""
    (tmp_path / "api.yaml").write_text(
        FILTERED.replace(
            "        - {name: ids,",
            "        - {name: tags, in: query, "
            "schema: {type: array, items: {type: string}}}\n        - {name: ids,",
        )
    )
    api = load_spec(tmp_path / "api.yaml").api
    assert api is not None
    line = '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET {path} HTTP/1.1" 200 1 "-" "-"\n'
    paths = ["/shipments?tags=a&tags=b", "/shipments?tags=a"]
    log = tmp_path / "a.log"
    log.write_text("".join(line.format(s=i, path=p) for i, p in enumerate(paths)))
    result = imported(api, log)
    [workload] = result.plan.section["workloads"]
    [said] = [c for c in result.plan.comments[workload["name"]] if c.startswith("tags:")]
    assert said.startswith("tags: in 100 % of requests; 2 distinct values")
    assert said.endswith(
        "repeated within a request (3 values in 2 requests), replayed one value a request"
    )


@pytest.mark.parametrize("keep", [False, True])
def test_recorded_values_of_an_array_of_two_or_more_items_are_said_to_be_refused(
    tmp_path: Path, keep: bool
) -> None:
    """``tags=a&tags=b`` of an array with ``minItems: 2`` is replayed one value a request,
    which the description refuses: with ``--keep-values`` the plan said nothing of it."""
    (tmp_path / "api.yaml").write_text(
        FILTERED.replace(
            "        - {name: ids,",
            "        - {name: tags, in: query, required: true, "
            "schema: {type: array, minItems: 2, items: {type: string}}}\n        - {name: ids,",
        )
    )
    api = load_spec(tmp_path / "api.yaml").api
    assert api is not None
    line = '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET {path} HTTP/1.1" 200 1 "-" "-"\n'
    paths = ["/shipments?tags=a&tags=b", "/shipments?tags=c&tags=d&tags=e"]
    log = tmp_path / "a.log"
    log.write_text("".join(line.format(s=i, path=p) for i, p in enumerate(paths)))
    result = imported(api, log, keep=KeepValues(everything=True) if keep else KeepValues())
    [workload] = result.plan.section["workloads"]
    [said] = [c for c in result.plan.comments[workload["name"]] if c.startswith("tags:")]
    why = "at least 2 items a request" if keep else "no numbered values fit it"
    assert f"that its schema refuses ({why}): give valid ones in params" in said
    assert result.plan.notes == [
        f"{workload['name']}: tags takes values that its schema refuses ({why}): "
        "give valid ones in params"
    ]


def test_past_its_bound_a_parameter_keeps_the_most_frequent_and_estimates_the_rest(
    shop: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth = _zipf_log(tmp_path / "z.log", 30_000, 20_000)
    monkeypatch.setattr(_stats, "MAX_VALUES", 500)
    result = imported(shop, tmp_path / "z.log")
    assert result.stats is not None
    [get_item] = [s for s in result.stats.operation_stats() if s.path_values]
    counts = get_item.path_values["itemId"]
    assert not counts.exact
    assert counts.distinct == pytest.approx(len(truth), rel=0.05)
    assert [int(v) for v, _ in counts.top(5)] == [v for v, _ in truth.most_common(5)]
    assert len(result.stats.values) <= 5_000 + 1_000


def test_past_its_bound_the_curve_doubles_its_step(
    shop: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _zipf_log(tmp_path / "z.log", 30_000, 50)
    monkeypatch.setattr(_stats, "MAX_CURVE", 10)
    result = imported(shop, tmp_path / "z.log")
    assert result.stats is not None and result.stats.step >= 2
    counts = result.plan.section["workloads"][0]["injection"]["arrivals"]
    assert sum(counts["counts"]) == 30_000 and counts["step"] == f"{result.stats.step:g}s"
    assert any("its curve is kept at" in n for n in result.plan.notes)


def test_few_requests_left_out_and_listed(shop: Api) -> None:
    result = imported(shop, TRAFFIC / "combined.log", min_requests=2)
    assert [w["name"] for w in result.plan.section["workloads"]] == ["getItem", "listItems"]
    assert ("getMe", "1 request, fewer than --min-requests 2") in result.plan.left_out


def test_the_command_writes_a_plan_gatebench_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("shop.yaml", "combined.log"):
        shutil.copy(TRAFFIC / name, tmp_path / name)
    stats = tmp_path / "stats.json"
    code = main(
        [
            "import",
            str(tmp_path / "shop.yaml"),
            str(tmp_path / "combined.log"),
            "--window",
            "busiest:2s",
            "--scale",
            "2",
            "--stats",
            str(stats),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    plan_file = tmp_path / "shop.traffic.yaml"
    assert f"wrote {plan_file}: 4 workloads" in out
    assert "left out: getUser: no request in the chosen window" in out
    assert f"run it: gatebench run {plan_file}" in out
    assert "matched 10 (76.9 %) to 6 operations of the description" in out
    assert yaml.safe_load(plan_file.read_text())["x-gatebench"]["spec"] == "shop.yaml"
    assert main(["plan", str(plan_file)]) == 0
    described = capsys.readouterr().out
    assert "traffic:     replayed from combined.log (combined, 2026-01-31T12:00:00Z" in described
    assert json.loads(stats.read_text())["requests"]["matched"] == 10
    for secret in SECRETS:
        assert secret not in stats.read_text()


def test_the_upload_form_and_the_cloud_parse_step_accept_it_unchanged(
    shop: Api, tmp_path: Path
) -> None:
    from gatebench.cloud import ObjectRef, parse_upload, plain_value
    from gatebench.kinds.request import RunRequest, check_upload

    result = import_traffic(shop, [TRAFFIC / "session.har"], ImportOptions(), spec_ref="shop.yaml")
    bundle = io.BytesIO()
    with zipfile.ZipFile(bundle, "w") as zipped:
        zipped.write(TRAFFIC / "shop.yaml", "shop.yaml")
        zipped.writestr("shop.traffic.yaml", result.text("gatebench import"))
    data = bundle.getvalue()
    for kind in ("fixed", "capacity"):
        checked = check_upload(data, "traffic.zip", RunRequest(kind=kind))  # type: ignore[arg-type]
        assert checked.plan.traffic is not None and checked.plan.traffic.format == "har"
        assert {w.injection.kind for w in checked.plan.workloads} == {"arrivals"}
    outcome = parse_upload(data, ObjectRef("b", "specs/traffic.zip", "7"), now=0.0)
    assert outcome.ok, outcome.message
    assert outcome.run.plan["traffic"]["files"] == ["session.har"]
    response = outcome.response("exec-1")
    document = plain_value({"mapValue": response["document"]})
    assert document["plan"]["workloads"][0]["injection"]["counts"]


def test_each_workloads_comment_says_what_the_plan_replays_scaled_and_sped_up(
    tmp_path: Path,
) -> None:
    """``--scale 3 --speed 2``: the comment said the recorded counts over the recorded time
    ('replayed: 2 over 4s'), where the plan replays 6 in 2s."""
    (tmp_path / "api.yaml").write_text(FILTERED)
    api = load_spec(tmp_path / "api.yaml").api
    assert api is not None
    line = (
        '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET /shipments HTTP/1.1" 200 1 "-" "-"\n'
    )
    log = tmp_path / "a.log"
    log.write_text(line.format(s=0) + line.format(s=3))
    result = imported(api, log, scale=3.0, speed=2.0)
    [workload] = result.plan.section["workloads"]
    plan = build_plan(result.plan.section, api)
    runs = plan.workloads[0].injection
    assert (sum(runs.counts), runs.duration) == (6, 2.0)
    said = result.plan.comments[workload["name"]][0]
    assert said == "GET /shipments: 2 requests recorded; replayed: 6 over 2s, peak 6/s"


def test_inter_arrival_times_read_in_ms_or_s_never_in_an_exponent() -> None:
    from gatebench.core.traffic._summary import _gap

    assert [_gap(s) for s in (0.0125, 0.9996, 1.14, 75.0)] == [
        "12.5 ms",
        "1 s",
        "1.14 s",
        "1.25 min",
    ]
