"""A real run with policies: Envoy validates the tokens the run signs (Gatling sends them), a
gateway that cannot apply the policies is left out with the reason, or run bare and marked
with --allow-missing-policies; the private key is in no file of the run. A run with API keys:
the gateways read the valid keys from their variable, the workload sends one (2xx only), and
no file of the run's folder holds a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatebench.errors import RunError
from gatebench.plan import build_plan
from gatebench.runner import SIGNED_TOKEN_ENV, RunOptions, run_benchmark
from gatebench.spec import load_spec
from gatebench.tokens import generate_private_key, public_pem

KEY_ENV = "GATEBENCH_TEST_JWT_KEY"
PRIVATE = generate_private_key("RS256")
ISSUER = "https://issuer.gatebench.test"


def _plan(gateways: list[str]) -> tuple[object, object]:
    result = load_spec(Path(__file__).parents[2] / "examples" / "auction" / "openapi.yaml")
    api = result.api
    assert api is not None
    section = {
        "gateways": gateways,
        "baseline": False,
        "repetitions": 1,
        "warmup": False,
        "backend": {"builtin": "auction"},
        "auth": {"jwt": {"private_key_env": KEY_ENV, "subjects": 3, "lifetime": "10m"}},
        "policies": {
            "auth": {"jwt": {"issuer": ISSUER, "audience": "auction", "keys": "public.pem"}},
            "operations": {"getAuction": {"cache": {"ttl": "30s"}}},
        },
        "workloads": [
            {
                "name": "retrieve",
                "operation": "getAuction",
                "params": {"auctionId": 7},
                "expect": [200],
                "injection": {"sequential": 20},
            }
        ],
    }
    plan = build_plan(section, api, read_file=lambda name: public_pem(PRIVATE))
    return api, plan


@pytest.mark.parametrize("allow_missing", [False, True])
def test_a_run_with_policies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allow_missing: bool
) -> None:
    monkeypatch.setenv(KEY_ENV, PRIVATE)
    monkeypatch.setenv(SIGNED_TOKEN_ENV, "")  # restored after the test; the run overwrites it
    api, plan = _plan(["envoy", "caddy"])
    outcome = run_benchmark(
        api,  # type: ignore[arg-type]
        plan,  # type: ignore[arg-type]
        spec_uri="auction",
        spec_sha256="0" * 64,
        options=RunOptions(
            results_dir=tmp_path, seed=3, ceiling=False, allow_missing_policies=allow_missing
        ),
    )
    record = outcome.record
    reason = (
        "caddy cannot apply the requested policies natively: JWT validation (auth.jwt), "
        "response cache (key: path and query) (cache); it is left out "
        "(--allow-missing-policies runs it without them, marked)"
    )
    by_target = {m.target: m for m in outcome.measurements}
    envoy = by_target["envoy"]
    assert (envoy.requests, envoy.ko) == (20, 0), "Envoy refused the signed tokens"
    if allow_missing:
        assert f"caddy: run WITHOUT its policies: {reason}" in outcome.notes
        assert record.environment["without_policies"] == {"caddy": reason}
        assert (by_target["caddy"].requests, by_target["caddy"].ko) == (20, 0)
    else:
        assert record.target_errors["caddy"] == reason
        assert "without_policies" not in record.environment
        assert "caddy" not in by_target
    assert any(
        n.startswith("bearer tokens signed by the run (algorithm RS256") for n in outcome.notes
    )
    body = PRIVATE.splitlines()[1]
    leaked = [
        p
        for p in outcome.run_dir.rglob("*")
        if p.is_file() and body in p.read_text(errors="replace")
    ]
    assert not leaked, f"the private key was written to {leaked}"


KEYS_ENV = "GATEBENCH_TEST_RUN_KEYS"
CLIENT_ENV = "GATEBENCH_TEST_RUN_CLIENT_KEY"
TOKEN_ENV = "GATEBENCH_TEST_RUN_TOKEN"
RUN_KEYS = ("run-key-first-0123456789", "run.key~second_ABCDEFGHIJ")


def _key_plan(tmp_path: Path, gateways: list[str]) -> tuple[object, object]:
    """The auction example whose operations also want an X-Api-Key header (its backend wants
    a bearer token of any value)."""
    source = Path(__file__).parents[2] / "examples" / "auction" / "openapi.yaml"
    text = source.read_text()
    text = text.replace(
        "security:\n  - bearerAuth: []\n",
        "security:\n  - bearerAuth: []\n    apiKeyAuth: []\n",
        1,
    ).replace(
        "  securitySchemes:\n",
        "  securitySchemes:\n    apiKeyAuth: {type: apiKey, in: header, name: X-Api-Key}\n",
        1,
    )
    spec = tmp_path / "openapi.yaml"
    spec.write_text(text)
    api = load_spec(spec).api
    assert api is not None
    section = {
        "gateways": gateways,
        "baseline": False,
        "repetitions": 1,
        "warmup": False,
        "backend": {"builtin": "auction"},
        "auth": {"bearer": {"env": TOKEN_ENV}, "api_key": {"env": CLIENT_ENV}},
        "policies": {"auth": {"api_key": {"keys_env": KEYS_ENV}}},
        "workloads": [
            {
                "name": "retrieve",
                "operation": "getAuction",
                "params": {"auctionId": 7},
                "expect": [200],
                "injection": {"sequential": 20},
            }
        ],
    }
    return api, build_plan(section, api)


def test_a_run_with_api_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEYS_ENV, ", ".join(RUN_KEYS))
    monkeypatch.setenv(CLIENT_ENV, RUN_KEYS[1])
    monkeypatch.setenv(TOKEN_ENV, "any-token")
    gateways = ["caddy", "nginx", "varnish"]
    api, plan = _key_plan(tmp_path, gateways)
    outcome = run_benchmark(
        api,  # type: ignore[arg-type]
        plan,  # type: ignore[arg-type]
        spec_uri="auction-keys",
        spec_sha256="1" * 64,
        options=RunOptions(results_dir=tmp_path / "results", seed=5, ceiling=False),
    )
    by_target = {m.target: m for m in outcome.measurements}
    assert outcome.record.target_errors == {}
    for gw in gateways:
        assert (by_target[gw].requests, by_target[gw].ko) == (20, 0), (
            f"{gw} refused the workload's API key"
        )
    leaked = [
        p
        for p in outcome.run_dir.rglob("*")
        if p.is_file() and any(k.encode() in p.read_bytes() for k in RUN_KEYS)
    ]
    assert not leaked, f"an API key was written to {leaked}"
    caddyfile = (outcome.run_dir / "gateways" / "caddy" / "Caddyfile").read_text()
    assert "header X-Api-Key REDACTED-API-KEY" in caddyfile


def test_a_run_refuses_a_bad_key_list_naming_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEYS_ENV, 'run-key-first-0123456789,run-key-"quoted"-0123456')
    monkeypatch.setenv(CLIENT_ENV, RUN_KEYS[0])
    monkeypatch.setenv(TOKEN_ENV, "any-token")
    api, plan = _key_plan(tmp_path, ["nginx"])
    with pytest.raises(RunError) as err:
        run_benchmark(
            api,  # type: ignore[arg-type]
            plan,  # type: ignore[arg-type]
            spec_uri="auction-keys",
            spec_sha256="2" * 64,
            options=RunOptions(results_dir=tmp_path / "results", seed=5, ceiling=False),
        )
    assert str(err.value) == (
        f"environment variable {KEYS_ENV} (the valid keys of the auth.api_key policy): key 2 of "
        "2 has a double quote at position 9; a key is A-Za-z0-9-._~ only (keys are separated "
        "by commas)"
    )
    assert not list((tmp_path / "results").rglob("nginx.conf")), "a gateway was rendered"
