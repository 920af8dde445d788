"""The shipped JSON Schema of ``x-gatebench``: generated from the plan's models (the file is
what they generate, and says so), valid draft 2020-12, satisfied by every plan the project
ships; and the models decide which keys a plan may hold, with located suggestions."""

from __future__ import annotations

import json
from typing import Any

import jsonschema_rs
import pytest

from gatebench.core.ir import Api
from gatebench.core.plan import SCHEMA_PATH, schema_text
from gatebench.core.plan._document import PlanDoc, Section, _models
from gatebench.core.spec import load_spec
from paths import DATA, EXAMPLES
from plans import auction_api, plan_errors, section

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
PLANS = [EXAMPLES / "auction" / "openapi.yaml", EXAMPLES / "petstore" / "openapi.yaml"]
PLANS += [DATA / "engine" / "items.yaml"]


@pytest.fixture(scope="module")
def auction() -> Api:
    return auction_api()


def test_the_published_schema_is_the_one_the_models_generate() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), "run `make schema`"
    assert next(iter(SCHEMA)) == "$comment"
    assert SCHEMA["$comment"].startswith(
        "Generated from the plan's models (src/gatebench/core/plan/_document.py) by `make schema`"
    )


def test_the_schema_is_a_valid_2020_12_schema_shipped_in_the_package() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert jsonschema_rs.meta.is_valid(SCHEMA)
    assert SCHEMA_PATH.parent.name == "schemas" and SCHEMA_PATH.parent.parent.name == "core"


@pytest.mark.parametrize("path", PLANS, ids=lambda p: p.name)
def test_every_shipped_plan_satisfies_the_schema(path: Any) -> None:
    result = load_spec(path)
    assert result.api is not None and result.benchmark is not None
    errors = [
        e.message
        for e in jsonschema_rs.validator_for(SCHEMA).iter_errors({"x-gatebench": result.benchmark})
    ]
    assert errors == []


# one unknown key in each part of a plan the schema describes: (where it goes, the message)
UNKNOWN = [
    (
        {"repetiton": 1},
        "/x-gatebench/repetiton",
        "unknown key 'repetiton' in x-gatebench; did you mean 'repetitions'?",
    ),
    (
        {"warmup": {"durations": "1s"}},
        "/x-gatebench/warmup/durations",
        "unknown key 'durations' in warmup; did you mean 'duration'?",
    ),
    (
        {"backend": {"mock": {"latncy": "1ms"}}},
        "/x-gatebench/backend/mock/latncy",
        "unknown key 'latncy' in backend.mock; did you mean 'latency'?",
    ),
    (
        {"scoring": {"profil": "paper"}},
        "/x-gatebench/scoring/profil",
        "unknown key 'profil' in scoring; did you mean 'profile'?",
    ),
    (
        {"capacity": {"probes": "2s"}},
        "/x-gatebench/capacity/probes",
        "unknown key 'probes' in capacity; did you mean 'probe'?",
    ),
    (
        {"capacity": {"objective": {"p98": "20ms"}}},
        "/x-gatebench/capacity/objective/p98",
        "unknown key 'p98' in capacity.objective; did you mean 'p99'?",
    ),
    (
        {"backend": {"mock": {"latency": "10ms", "worker": 4}}},
        "/x-gatebench/backend/mock/worker",
        "unknown key 'worker' in backend.mock; did you mean 'workers'?",
    ),
    (
        {"infrastructure": {"zome": "europe-central2-a"}},
        "/x-gatebench/infrastructure/zome",
        "unknown key 'zome' in infrastructure; did you mean 'zone'?",
    ),
]


@pytest.mark.parametrize(("overrides", "where", "message"), UNKNOWN)
def test_unknown_keys_are_located_with_a_suggestion(
    auction: Api, overrides: dict[str, Any], where: str, message: str
) -> None:
    assert plan_errors(auction, section(**overrides)) == [(where, message)]


def test_unknown_keys_inside_a_workload(auction: Api) -> None:
    workload = {
        "name": "b",
        "operation": "bid",
        "params": {"auctionId": {"rnage": [1, 2]}},
        "body": {"jsno": {}},
        "injection": {"ramp": {"users": 2, "durtion": "1s"}},
        "timout": "1s",
    }
    assert plan_errors(auction, section(workloads=[workload])) == [
        (
            "/x-gatebench/workloads/0/timout",
            "unknown key 'timout' in a workload; did you mean 'timeout'?",
        ),
        (
            "/x-gatebench/workloads/0/injection/ramp/durtion",
            "unknown key 'durtion' in ramp; did you mean 'duration'?",
        ),
        (
            "/x-gatebench/workloads/0/injection/ramp/duration",
            "expected a duration such as '30s' or '500ms', got nothing",
        ),
        (
            "/x-gatebench/workloads/0/params/auctionId/rnage",
            "unknown key 'rnage' in a parameter; did you mean 'range'?",
        ),
        (
            "/x-gatebench/workloads/0/params/auctionId",
            "give exactly one of value, list, range, random, counter",
        ),
        ("/x-gatebench/workloads/0/body/jsno", "unknown key 'jsno' in body; did you mean 'json'?"),
        (
            "/x-gatebench/workloads/0/body",
            "give exactly one of example, synthesized, binary, multipart, json, text, none",
        ),
    ]


def test_a_load_written_beside_the_injection_is_sent_to_it(auction: Api) -> None:
    """Other load tools write users and a duration on the scenario: 'duration' was answered
    "did you mean 'operation'?", which sends people the wrong way."""
    workload = {"name": "b", "operation": "bid", "users": 2, "duration": "2s", "injection": None}
    moved = (
        "how requests arrive goes in 'injection', e.g. injection: {concurrent: 10, duration: "
        "5s} (10 users looping for 5 s) or injection: {constant_rate: {rate: 50, duration: 5s}}"
    )
    found = plan_errors(auction, section(workloads=[workload], concurrent=3))
    assert found[:3] == [
        (
            "/x-gatebench/concurrent",
            "unknown key 'concurrent' in x-gatebench; "
            + moved.replace("goes in 'injection'", "is each workload's 'injection'"),
        ),
        ("/x-gatebench/workloads/0/users", "unknown key 'users' in a workload; " + moved),
        ("/x-gatebench/workloads/0/duration", "unknown key 'duration' in a workload; " + moved),
    ]


def test_the_models_decide_which_keys_exist() -> None:
    """Every mapping of the schema lists exactly its model's keys, titled as the messages name
    it; a key with no close match is answered with the model's keys."""
    for model in _models():
        node = SCHEMA["$defs"][model.__name__]
        assert list(node["properties"]) == model.key_names(), model.__name__
        assert node["title"] == model.title()
        assert node["additionalProperties"] is False
        assert issubclass(model, Section)
    assert PlanDoc.key_names()[:4] == ["spec", "gateways", "baseline", "repetitions"]


def test_an_unknown_key_with_no_close_match_lists_the_known_ones(auction: Api) -> None:
    assert plan_errors(auction, section(zzzzzz=3)) == [
        (
            "/x-gatebench/zzzzzz",
            "unknown key 'zzzzzz' in x-gatebench; expected one of: "
            + ", ".join(PlanDoc.key_names()),
        )
    ]


def test_bounds_are_defined_once() -> None:
    """The schema's bounds are the plan's constants (MAX_REPETITIONS, ...), not a copy."""
    from gatebench.core.plan import MAX_REPETITIONS, MAX_REPLICAS, MAX_USERS

    plan = SCHEMA["$defs"]["PlanDoc"]["properties"]
    assert plan["repetitions"]["maximum"] == MAX_REPETITIONS
    assert SCHEMA["$defs"]["BackendDoc"]["properties"]["replicas"]["maximum"] == MAX_REPLICAS
    assert SCHEMA["$defs"]["InjectionDoc"]["properties"]["at_once"]["maximum"] == MAX_USERS
    assert (
        json.dumps(SCHEMA).count('"maximum": 1000,') + json.dumps(SCHEMA).count('"maximum": 1000}')
        == 1
    )  # repetitions only


def test_a_warmup_written_as_its_duration_is_refused_where_it_is_written(auction: Api) -> None:
    assert plan_errors(auction, section(warmup="3 seconds")) == [
        (
            "/x-gatebench/warmup",
            "expected a duration such as '30s', '500ms' or '2m', got '3 seconds'",
        )
    ]
    assert plan_errors(auction, section(warmup={"duration": None})) == [
        (
            "/x-gatebench/warmup/duration",
            "expected a duration such as '30s' or '500ms', got nothing",
        )
    ]


def test_a_null_is_nothing_in_the_messages(auction: Api) -> None:
    assert plan_errors(auction, section(repetitions=None)) == [
        ("/x-gatebench/repetitions", "expected a whole number from 1 to 1,000, got nothing")
    ]
