"""JMeter plans as workloads: one test plan per supported element (thread groups by loops and
by duration, HTTP samplers with arguments and raw bodies, CSV data sets, constant and
constant-throughput timers) and one with elements gatebench does not support, each listed by
name and place and left out. Not-JMeter XML, entities and broken XML are located errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gatebench.core.errors import TrafficError
from gatebench.core.ir import Api
from gatebench.core.plan import build_plan
from gatebench.core.spec import load_spec
from gatebench.core.traffic import ImportOptions, KeepValues, TrafficImport, import_traffic
from paths import DATA

JMX = DATA / "traffic" / "jmx"


@pytest.fixture(scope="module")
def shop() -> Api:
    api = load_spec(DATA / "traffic" / "shop.yaml").api
    assert api is not None
    return api


def jmx(api: Api, name: str, keep: KeepValues | None = None) -> TrafficImport:
    return import_traffic(
        api, [JMX / name], ImportOptions(keep=keep or KeepValues()), spec_ref=None
    )


def workloads(result: TrafficImport) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in result.plan.section["workloads"]}


def test_a_thread_group_by_loops(shop: Api) -> None:
    result = jmx(shop, "thread_group_loops.jmx")
    assert result.format == "jmx"
    # the test plan's variable ${base} is substituted before matching
    assert workloads(result) == {
        "getItem": {
            "name": "getItem",
            "operation": "getItem",
            "params": {"itemId": 42},
            "injection": {"concurrent": 8, "requests": 200},
        }
    }
    assert result.plan.section["warmup"] == {"duration": "4s"}
    assert result.plan.section["traffic"] == {
        "files": ["thread_group_loops.jmx"],
        "format": "jmx",
        "requests": 1,
        "matched": 1,
    }
    build_plan(result.plan.section, shop)


def test_a_thread_group_by_duration_with_a_property_default(shop: Api) -> None:
    result = jmx(shop, "thread_group_duration.jmx")
    assert workloads(result)["getItem"]["injection"] == {"concurrent": 12, "duration": "30s"}
    assert any("${__P(users,12)}: its default '12' is used" in n for n in result.plan.notes)


def test_sampler_arguments_and_a_raw_json_body(shop: Api) -> None:
    result = jmx(shop, "sampler_arguments.jmx")
    found = workloads(result)
    assert found["listItems"]["params"] == {"limit": 50, "category": "books"}
    assert (
        "utm_source: not a parameter of the description; left out"
        in result.plan.comments["listItems"]
    )
    # a full URL keeps its path: the target is each gateway
    assert found["createItem"]["body"] == {"json": {"name": "kite", "price": 12.5}}
    assert [p.message for p in result.warnings] == [
        "HTTP sampler 'not described' (GET /api/orders) matches no operation of the "
        "description; left out"
    ]
    assert result.plan.section["traffic"]["requests"] == 3
    assert result.plan.section["traffic"]["matched"] == 2
    build_plan(result.plan.section, shop)


def test_a_csv_data_set_gives_synthetic_values_of_its_cardinality(shop: Api) -> None:
    result = jmx(shop, "csv_data_set.jmx")
    found = workloads(result)
    # 4 distinct ids in file order: 1..4 cycling, as JMeter cycles the file
    assert found["getItem"]["params"] == {"itemId": {"range": [1, 4]}}
    # titles repeat (kite twice): weighted synthetic values
    assert found["createItem"]["params"]["title"] == {"list": [1, 2, 3], "weights": [2, 1, 1]}
    assert found["createItem"]["body"] == {"json": {"name": "${title}", "price": "${itemId}"}}
    text = result.text("gatebench import")
    for secret in ("hunter2", "letmein", "123456", "kite", "yoyo"):
        assert secret not in text
    build_plan(result.plan.section, shop)


def test_a_csv_data_set_kept_when_allowed_but_never_a_password(shop: Api) -> None:
    result = jmx(shop, "csv_data_set.jmx", KeepValues(everything=True))
    found = workloads(result)
    assert found["getItem"]["params"] == {"itemId": {"list": [101, 102, 103, 104]}}
    assert found["createItem"]["params"]["title"] == {"list": ["kite", "ball", "kite", "yoyo"]}
    assert "hunter2" not in result.text("gatebench import")


def test_a_constant_timer_makes_an_open_model_rate(shop: Api) -> None:
    result = jmx(shop, "constant_timer.jmx")
    # 8 threads pausing 250 ms per pass: 32 requests a second, 200 requests in all
    assert workloads(result)["getItem"]["injection"] == {
        "constant_rate": {"rate": 32.0, "duration": "6.25s"}
    }


def test_a_constant_throughput_timer_shared_by_all_threads(shop: Api) -> None:
    result = jmx(shop, "throughput_timer.jmx")
    # 1,200 a minute for all active threads: 20 a second
    assert workloads(result)["getItem"]["injection"] == {
        "constant_rate": {"rate": 20.0, "duration": "10s"}
    }


def test_unsupported_elements_are_listed_with_their_place_and_left_out(shop: Api) -> None:
    result = jmx(shop, "unsupported.jmx")
    assert result.unsupported == [
        "line 42: HeaderManager 'auth header' in Test Plan › Browsers › item 42: not "
        "supported, left out",
        "line 51: RegexExtractor 'take id' in Test Plan › Browsers › item 42: not supported, "
        "left out",
        "line 57: IfController 'sometimes' in Test Plan › Browsers and the 1 element inside "
        "it: not supported, left out",
        "line 67: JSR223Sampler 'script' in Test Plan › Browsers: not supported, left out",
        "line 71: ResultCollector 'View Results Tree' in Test Plan › Browsers: not supported, "
        "left out",
    ]
    assert "line 75: HTTPSamplerProxy 'switched off' in Test Plan › Browsers is disabled" in (
        result.plan.notes
    )
    assert list(workloads(result)) == ["getItem"]
    assert "do-not-copy-me" not in result.text("gatebench import")


@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        (
            "not_jmeter.jmx",
            2,
            "not a JMeter plan: the root element is <project>, expected <jmeterTestPlan>",
        ),
        (
            "entities.jmx",
            2,
            "the document declares a document type or an entity; a JMeter plan has neither, "
            "and gatebench expands no entity",
        ),
        ("broken.jmx", 5, "not XML: no element found"),
    ],
)
def test_what_is_not_a_jmeter_plan_is_a_located_error(
    shop: Api, name: str, line: int, message: str
) -> None:
    with pytest.raises(TrafficError) as err:
        jmx(shop, name)
    [problem] = err.value.problems
    assert (problem.source, problem.line, problem.message) == (name, line, message)


def test_a_data_set_outside_the_plans_folder_is_refused(shop: Api, tmp_path: Path) -> None:
    text = (JMX / "csv_data_set.jmx").read_text().replace("items.csv", "../secrets.csv")
    (tmp_path / "p.jmx").write_text(text)
    with pytest.raises(TrafficError) as err:
        import_traffic(shop, [tmp_path / "p.jmx"], ImportOptions(), spec_ref=None)
    assert "'../secrets.csv' is outside the plan's folder" in err.value.problems[0].message


def test_synthetic_values_of_a_csv_data_set_are_valid_for_the_parameter(tmp_path: Path) -> None:
    """A column that feeds a parameter with a pattern gets numbered values that match it
    (``1``..``4`` did not), as an access log's values do."""
    spec = (DATA / "traffic" / "shop.yaml").read_text()
    typed = "{name: itemId, in: path, required: true, schema: {type: integer}}"
    assert typed in spec
    patterned = (
        "{name: itemId, in: path, required: true, schema: {type: string, pattern: '^SKU[0-9]{5}$'}}"
    )
    (tmp_path / "shop.yaml").write_text(spec.replace(typed, patterned))
    api = load_spec(tmp_path / "shop.yaml").api
    assert api is not None
    for name in ("csv_data_set.jmx", "items.csv"):
        (tmp_path / name).write_bytes((JMX / name).read_bytes())
    result = import_traffic(api, [tmp_path / "csv_data_set.jmx"], ImportOptions(), spec_ref=None)
    found = workloads(result)
    assert found["getItem"]["params"] == {
        "itemId": {"list": ["SKU00001", "SKU00002", "SKU00003", "SKU00004"]}
    }
    build_plan(result.plan.section, api)


def test_a_samplers_query_never_reaches_a_comment_or_a_warning(shop: Api, tmp_path: Path) -> None:
    """A sampler's path may carry a token in its query: the comment names the route, a
    warning the path without its query."""
    text = (JMX / "sampler_arguments.jmx").read_text(encoding="utf-8")
    for path in ("/api/items", "/api/orders"):
        found = f'<stringProp name="HTTPSampler.path">{path}</stringProp>'
        assert found in text
        text = text.replace(
            found,
            f'<stringProp name="HTTPSampler.path">{path}?access_token=TOKSECRET&amp;tag=x'
            "</stringProp>",
        )
    (tmp_path / "token.jmx").write_text(text, encoding="utf-8")
    result = import_traffic(shop, [tmp_path / "token.jmx"], ImportOptions(), spec_ref=None)
    assert result.plan.comments["listItems"][0].startswith(
        "GET /api/items: HTTP sampler 'list books' (line "
    )
    assert "TOKSECRET" not in result.text("gatebench import shop.yaml token.jmx")
    assert [p.message for p in result.warnings] == [
        "HTTP sampler 'not described' (GET /api/orders) matches no operation of the "
        "description; left out"
    ]


def test_the_import_says_the_load_of_a_plan_bounded_by_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A thread group by loops is bounded by its requests, not by time: the import says how
    many (it said '0ms of load per target')."""
    import shutil

    from gatebench.cli import main

    shutil.copy(DATA / "traffic" / "shop.yaml", tmp_path / "shop.yaml")
    shutil.copy(JMX / "thread_group_loops.jmx", tmp_path / "loops.jmx")
    assert main(["import", str(tmp_path / "shop.yaml"), str(tmp_path / "loops.jmx")]) == 0
    out = capsys.readouterr().out
    assert "1 workload, 200 requests (their time is the target's) per target" in out
    assert "0ms" not in out
