"""The workload's token signer (gatebench.tokens) and the plan's auth.jwt: claims with expiry,
a pool of subjects, the key never in what a run records."""

from __future__ import annotations

import os
from pathlib import Path

import jwt
import pytest

from gatebench.errors import PlanError, RunError
from gatebench.plan import load_plan
from gatebench.runner import SIGNED_TOKEN_ENV, RunOutcome, _sign_tokens
from gatebench.spec import load_spec
from gatebench.tokens import (
    TokenSigner,
    TokenSignerError,
    generate_private_key,
    public_pem,
    subject_pool,
)
from paths import ROOT

RSA = generate_private_key("RS256")
EC = generate_private_key("ES256")


def test_a_token_carries_the_claims_and_verifies_with_the_public_key() -> None:
    signer = TokenSigner(RSA, "RS256", "https://iss.test", "aud", lifetime=60, subjects=("a", "b"))
    token = signer.sign(1, now=1_000_000)
    claims = jwt.decode(
        token,
        public_pem(RSA),
        algorithms=["RS256"],
        audience="aud",
        issuer="https://iss.test",
        options={"verify_exp": False},
    )
    assert claims == {
        "iss": "https://iss.test",
        "aud": "aud",
        "sub": "b",
        "iat": 1_000_000,
        "exp": 1_000_060,
    }
    assert jwt.get_unverified_header(token)["alg"] == "RS256"


def test_expiry_is_enforced_by_a_verifier() -> None:
    signer = TokenSigner(EC, "ES256", "i", "a", lifetime=10)
    with pytest.raises(jwt.ExpiredSignatureError):
        jwt.decode(signer.sign(now=0), public_pem(EC), algorithms=["ES256"], audience="a")


def test_the_pool_of_subjects() -> None:
    signer = TokenSigner(RSA, "RS256", "i", "a", subjects=subject_pool("user", 3))
    subjects = [jwt.decode(t, options={"verify_signature": False})["sub"] for t in signer.tokens(5)]
    assert subjects == ["user-1", "user-2", "user-3"]
    assert jwt.decode(signer.sign(4), options={"verify_signature": False})["sub"] == "user-2"


def test_a_key_that_does_not_fit_the_algorithm_is_refused() -> None:
    with pytest.raises(TokenSignerError, match="the signing key does not fit ES256"):
        TokenSigner(RSA, "ES256", "i", "a")


def test_what_a_run_records_never_holds_the_key() -> None:
    signer = TokenSigner(RSA, "RS256", "i", "a")
    described = repr(signer.describe()) + repr(signer)
    assert "PRIVATE" not in described and RSA.splitlines()[1] not in described
    assert signer.describe()["key_sha256"] and len(signer.describe()["key_sha256"]) == 16


def _plan(tmp_path: Path, auth: str) -> object:
    spec = (ROOT / "tests" / "data" / "policies" / "openapi.yaml").read_text()
    spec = spec.replace("    bearer: {env: AUCTION_TOKEN}\n", auth)
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "public.pem").write_text(public_pem(RSA))
    (tmp_path / "openapi.yaml").write_text(spec)
    return load_plan(load_spec(tmp_path / "openapi.yaml"))


def test_the_run_signs_the_bearer_token_and_notes_only_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path, "    jwt: {private_key_env: TEST_JWT_KEY, subjects: 4, lifetime: 10m}\n")
    assert plan.auth.jwt_private_key_env == "TEST_JWT_KEY"  # type: ignore[attr-defined]
    assert (plan.auth.jwt_subjects, plan.auth.jwt_lifetime) == (4, 600.0)  # type: ignore[attr-defined]
    monkeypatch.setenv("TEST_JWT_KEY", RSA)
    monkeypatch.delenv(SIGNED_TOKEN_ENV, raising=False)
    outcome = RunOutcome(record=None, measurements=[], run_dir=tmp_path)  # type: ignore[arg-type]
    signed = _sign_tokens(plan, outcome)  # type: ignore[arg-type]
    assert signed.auth.bearer_env == SIGNED_TOKEN_ENV
    claims = jwt.decode(
        os.environ[SIGNED_TOKEN_ENV],
        public_pem(RSA),
        algorithms=["RS256"],
        audience="auction",
        issuer="https://issuer.gatebench.test",
    )
    assert claims["sub"] == "gatebench-1" and claims["exp"] - claims["iat"] == 600
    assert len(outcome.notes) == 1 and outcome.notes[0].startswith(
        "bearer tokens signed by the run (algorithm RS256, issuer https://issuer.gatebench.test, "
        "audience auction, lifetime 600.0, subjects 4, key_sha256 "
    )
    assert "PRIVATE" not in repr(signed.to_dict())
    monkeypatch.delenv("TEST_JWT_KEY")
    with pytest.raises(RunError, match="environment variable TEST_JWT_KEY is not set"):
        _sign_tokens(plan, outcome)  # type: ignore[arg-type]


def test_auth_jwt_needs_a_jwt_policy(tmp_path: Path) -> None:
    spec_auth = "    jwt: {private_key_env: K}\n    bearer: {env: T}\n"
    with pytest.raises(PlanError) as info:
        _plan(tmp_path, spec_auth)
    assert [(p.pointer, p.message) for p in info.value.errors] == [
        (
            "/x-gatebench/auth/jwt",
            "give either auth.bearer (a token from a variable) or auth.jwt (signed tokens), not both",
        )
    ]
