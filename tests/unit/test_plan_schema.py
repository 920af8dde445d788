"""The shipped JSON Schema of ``x-gatebench``: valid draft 2020-12, satisfied by every plan
the project ships, and the one that decides which keys a plan may hold (checked with
jsonschema-rs while the plan is read)."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema_rs
import pytest

from gatebench.core.ir import Api
from gatebench.core.plan import SCHEMA_PATH
from gatebench.core.plan import _schema as plan_schema
from gatebench.core.spec import load_spec
from paths import DATA, EXAMPLES
from plans import auction_api, plan_errors, section

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
PLANS = [EXAMPLES / "auction" / "openapi.yaml", EXAMPLES / "petstore" / "openapi.yaml"]
PLANS += [DATA / "engine" / "items.yaml"]


@pytest.fixture(scope="module")
def auction() -> Api:
    return auction_api()


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
            "expected a duration such as '30s' or '500ms', got None",
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


def test_the_schema_decides_which_keys_exist(auction: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Take 'seed' out of the schema: the same plan now has an unknown key, worded from the
    schema (its title, its remaining keys: no close one, so all of them)."""
    narrowed = copy.deepcopy(SCHEMA)
    del narrowed["$defs"]["plan"]["properties"]["seed"]
    monkeypatch.setattr(plan_schema, "_schema", lambda: narrowed)
    monkeypatch.setattr(plan_schema, "_validator", lambda: jsonschema_rs.validator_for(narrowed))
    assert plan_errors(auction, section(seed=3)) == [
        (
            "/x-gatebench/seed",
            "unknown key 'seed' in x-gatebench; expected one of: spec, gateways, baseline, "
            "repetitions, warmup, order, backend, tls, fault, engine, cpus, infrastructure, auth, "
            "scoring, thresholds, capacity, workloads, policies",
        )
    ]
