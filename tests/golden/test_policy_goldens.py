"""Byte-exact goldens of the configurations with policies: every renderer × two policy cases
(``tests/data/policies/openapi.yaml``: JWT on every operation, a cache on the GET, a
per-subject rate limit on the bid; ``limit-cache.yaml``: a cache and a per-address rate
limit, no authentication; ``jwt-limit.yaml``: JWT and a per-header rate limit, no cache;
``cache.yaml``: a cache only; ``api-key.yaml``: API keys in a header and a query parameter;
``cache-path-only.yaml`` and ``cache-vary-header.yaml``: the cache key variants), written to ``tests/golden/<gateway>/<case>/`` — the
configuration, or ``errors.txt`` with the reason a gateway that lacks a feature is left out.
``make goldens`` rewrites them like the other cases.
"""

from __future__ import annotations

from functools import cache

import pytest
from _cases import ERRORS_FILE, GOLDEN, golden_target

from gatebench.api_keys import with_api_keys
from gatebench.errors import UnsupportedFeature
from gatebench.plan import Plan, load_plan
from gatebench.renderers import all_renderers, get_renderer, render_with_policies
from gatebench.spec import load_spec
from paths import ROOT

CASES = {
    "policies": "tests/data/policies/openapi.yaml",
    "policies-limit-cache": "tests/data/policies/limit-cache.yaml",
    "policies-jwt-limit": "tests/data/policies/jwt-limit.yaml",
    "policies-cache": "tests/data/policies/cache.yaml",
    "policies-api-key": "tests/data/policies/api-key.yaml",
    "policies-cache-path-only": "tests/data/policies/cache-path-only.yaml",
    "policies-cache-vary-header": "tests/data/policies/cache-vary-header.yaml",
}
GOLDEN_KEYS = {"GATEBENCH_API_KEYS": "golden-key-0123456789abcdef, golden.key_2~ABCDEFGHIJ"}
"""Stand-in keys (not secrets): a '.' and a '~' show each configuration's escaping."""
NAMES = [r.name for r in all_renderers()]
PAIRS = [(n, c) for n in NAMES for c in CASES]


@cache
def _plan(case: str) -> tuple[object, Plan]:
    result = load_spec(ROOT / CASES[case])
    return result.api, load_plan(result)


def render_policy_case(name: str, case: str) -> dict[str, str]:
    api, plan = _plan(case)
    try:
        return render_with_policies(
            get_renderer(name),
            api,  # type: ignore[arg-type]
            golden_target(name),
            with_api_keys(plan.policies, GOLDEN_KEYS),
        )
    except UnsupportedFeature as exc:
        return {ERRORS_FILE: "".join(p.format(CASES[case]) + "\n" for p in exc.problems)}


@pytest.mark.parametrize(("gateway", "case"), PAIRS)
def test_policy_golden(
    gateway: str, case: str, golden: object, request: pytest.FixtureRequest
) -> None:
    files = render_policy_case(gateway, case)
    folder = GOLDEN / gateway / case
    if request.config.getoption("--update-goldens") and folder.is_dir():
        for stale in sorted(folder.rglob("*")):
            rel = stale.relative_to(folder).as_posix()
            if stale.is_file() and rel not in files and not rel.endswith(".actual"):
                stale.unlink()
    for name, text in sorted(files.items()):
        golden.check(folder / name, text)  # type: ignore[attr-defined]
    produced = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    leftovers = sorted(p for p in produced if p not in files and not p.endswith(".actual"))
    assert not leftovers, f"tests/golden/{gateway}/{case}/ holds stale files: {leftovers}"


@pytest.mark.parametrize(("gateway", "case"), PAIRS)
def test_declared_support_renders_and_the_rest_is_refused(gateway: str, case: str) -> None:
    """A gateway declaring every feature the case needs renders it; the others are refused
    with the reason, never rendered bare."""
    _, plan = _plan(case)
    from gatebench.policies import missing_features

    files = render_policy_case(gateway, case)
    missing = missing_features(get_renderer(gateway).supported_policies, plan.policies)
    assert (ERRORS_FILE in files) == bool(missing), (gateway, missing)


@pytest.mark.parametrize("case", sorted(CASES))
def test_krakend_policies_match_the_official_schema(case: str) -> None:
    """KrakenD runs only on the cloud path: its configuration with policies is checked against
    KrakenD's own schema (auth/validator, qos/ratelimit/router included)."""
    import json

    from krakend_schema import krakend_validator

    files = render_policy_case("krakend", case)
    if ERRORS_FILE in files:
        assert case != "policies-jwt-limit", files[ERRORS_FILE]
        return
    config = json.loads(files["krakend.json"])
    errors = sorted(krakend_validator().iter_errors(config), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:20])
    extras = {
        e["endpoint"] + " " + e["method"]: e.get("extra_config", {}) for e in config["endpoints"]
    }
    assert set(extras["/bid/{auctionId} POST"]) == {"auth/validator", "qos/ratelimit/router"}
    assert extras["/bid/{auctionId} POST"]["qos/ratelimit/router"] == {
        "client_max_rate": 10,
        "client_capacity": 10,
        "every": "1s",
        "strategy": "header",
        "key": "X-Client",
    }
    assert set(extras["/auctions/{auctionId} GET"]) == {"auth/validator"}
    jwks = json.loads(files["jwks.json"])
    assert [k["kty"] for k in jwks["keys"]] == ["RSA"]


def test_the_krakend_policy_schema_check_can_fail() -> None:
    import json

    from krakend_schema import krakend_validator

    config = json.loads(render_policy_case("krakend", "policies-jwt-limit")["krakend.json"])
    limit = config["endpoints"][-1]["extra_config"]["qos/ratelimit/router"]
    limit["strategy"] = "subject"
    assert [e.message for e in krakend_validator().iter_errors(config)][:1] == [
        "'subject' is not one of ['ip', 'header', 'param']"
    ]
