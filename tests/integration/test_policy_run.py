"""A real run with policies: Envoy validates the tokens the run signs (Gatling sends them), a
gateway that cannot apply the policies is left out with the reason, or run bare and marked
with --allow-missing-policies; the private key is in no file of the run."""

from __future__ import annotations

from pathlib import Path

import pytest

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
