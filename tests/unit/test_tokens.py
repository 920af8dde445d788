"""The workload's token signer (gatebench.core.tokens) and the plan's auth.jwt: claims with expiry,
a pool of subjects, the key never in what a run records."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import jwt
import pytest

from gatebench.core.errors import PlanError, RunError
from gatebench.core.plan import load_plan
from gatebench.core.spec import load_spec
from gatebench.core.testers import split_document
from gatebench.core.tokens import (
    SIGNED_TOKEN_ENV,
    SIGNED_TOKENS_FILE_ENV,
    TokenSigner,
    TokenSignerError,
    generate_private_key,
    public_pem,
    subject_of_user,
    subject_pool,
    token_file,
    token_lifetime,
)
from gatebench.core.workload import compile_load
from gatebench.local.engines.wrk import _document_problems
from gatebench.run import RunOutcome
from gatebench.run.stages.parse import check_engine_supports, signed_tokens
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


def _outcome(tmp_path: Path) -> RunOutcome:
    return RunOutcome(record=None, measurements=[], run_dir=tmp_path)  # type: ignore[arg-type]


def test_the_run_signs_the_bearer_token_and_notes_only_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path, "    jwt: {private_key_env: TEST_JWT_KEY, lifetime: 10m}\n")
    assert plan.auth.jwt_private_key_env == "TEST_JWT_KEY"  # type: ignore[attr-defined]
    assert (plan.auth.jwt_subjects, plan.auth.jwt_lifetime) == (1, 600.0)  # type: ignore[attr-defined]
    monkeypatch.setenv("TEST_JWT_KEY", RSA)
    monkeypatch.delenv(SIGNED_TOKEN_ENV, raising=False)
    outcome = _outcome(tmp_path)
    with signed_tokens(plan, outcome) as signed:  # type: ignore[arg-type]
        assert signed.auth.bearer_env == SIGNED_TOKEN_ENV and not signed.auth.bearer_per_user
        claims = jwt.decode(
            os.environ[SIGNED_TOKEN_ENV],
            public_pem(RSA),
            algorithms=["RS256"],
            audience="auction",
            issuer="https://issuer.gatebench.test",
        )
    assert SIGNED_TOKEN_ENV not in os.environ  # the token leaves the environment with the run
    assert claims["sub"] == "gatebench-1" and claims["exp"] - claims["iat"] == 600
    assert len(outcome.notes) == 1 and outcome.notes[0].startswith(
        "bearer tokens signed by the run (algorithm RS256, issuer https://issuer.gatebench.test, "
        "audience auction, lifetime 600.0, subjects 1, key_sha256 "
    )
    assert "PRIVATE" not in repr(signed.to_dict())
    monkeypatch.delenv("TEST_JWT_KEY")
    with (
        pytest.raises(RunError, match="environment variable TEST_JWT_KEY is not set"),
        signed_tokens(plan, outcome),  # type: ignore[arg-type]
    ):
        pass


def test_a_pool_gives_each_subject_its_token_in_a_file_that_lives_as_long_as_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path, "    jwt: {private_key_env: TEST_JWT_KEY, subjects: 4}\n")
    monkeypatch.setenv("TEST_JWT_KEY", RSA)
    monkeypatch.delenv(SIGNED_TOKENS_FILE_ENV, raising=False)
    run_dir = tmp_path / "results"
    with signed_tokens(plan, _outcome(run_dir)) as signed:  # type: ignore[arg-type]
        assert (signed.auth.bearer_env, signed.auth.bearer_per_user) == (
            SIGNED_TOKENS_FILE_ENV,
            True,
        )
        path = Path(os.environ[SIGNED_TOKENS_FILE_ENV])
        assert path.is_file() and not path.is_relative_to(tmp_path)  # not with the results
        assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
        tokens = path.read_text().splitlines()
        claims = [
            jwt.decode(t, public_pem(RSA), algorithms=["RS256"], audience="auction") for t in tokens
        ]
        # the workload names the variable and marks the header per user, never a token
        api = load_spec(tmp_path / "openapi.yaml").api
        assert api is not None
        document = compile_load(signed, api, {"envoy": "http://127.0.0.1:1"}).document
    assert [c["sub"] for c in claims] == [
        "gatebench-1",
        "gatebench-2",
        "gatebench-3",
        "gatebench-4",
    ]
    # no lifetime given: the run's estimated length (72.5 s: gatebench.core.cost.load_seconds,
    # the engine's own warm-up included) plus the 300-s margin, rounded up to a minute
    assert {c["exp"] - c["iat"] for c in claims} == {420}
    assert not path.exists() and not path.parent.exists()
    assert SIGNED_TOKENS_FILE_ENV not in os.environ
    auth = document["phases"][-1]["request"]["auth"]
    assert auth == [
        {
            "header": "Authorization",
            "prefix": "Bearer ",
            "env": SIGNED_TOKENS_FILE_ENV,
            "per_user": True,
        }
    ]
    assert document["secret_env"] == [SIGNED_TOKENS_FILE_ENV]
    assert not any(t in json.dumps(document) for t in tokens)


def test_the_token_file_is_deleted_when_the_run_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _plan(tmp_path, "    jwt: {private_key_env: TEST_JWT_KEY, subjects: 2}\n")
    monkeypatch.setenv("TEST_JWT_KEY", RSA)
    seen: list[Path] = []

    def fail() -> None:
        with signed_tokens(plan, _outcome(tmp_path)):  # type: ignore[arg-type]
            seen.append(Path(os.environ[SIGNED_TOKENS_FILE_ENV]))
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match=r"^boom$"):
        fail()
    assert seen[0].name == "tokens" and not seen[0].parent.exists()


def test_token_file_holds_one_token_a_line_until_the_block_ends() -> None:
    with token_file(["a.b.c", "d.e.f"]) as path:
        assert path.read_text() == "a.b.c\nd.e.f\n"
    assert not path.parent.exists()


def test_a_lifetime_shorter_than_the_run_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert token_lifetime(100.0, None) == 420.0
    assert token_lifetime(100.0, 400.0) == 400.0
    with pytest.raises(TokenSignerError) as info:
        token_lifetime(100.0, 399.0)
    assert str(info.value) == (
        "lifetime 399s is shorter than this run (about 100s of load) plus a 300s margin: its "
        "tokens would expire during the run; give at least 400s, or leave lifetime out (the "
        "run's length plus the margin)"
    )
    plan = _plan(tmp_path, "    jwt: {private_key_env: TEST_JWT_KEY, lifetime: 1m}\n")
    monkeypatch.setenv("TEST_JWT_KEY", RSA)
    with (
        pytest.raises(RunError) as run_info,
        signed_tokens(plan, _outcome(tmp_path)),  # type: ignore[arg-type]
    ):
        pass
    # 15 s engine start + 5 targets × (3-s warm-up + 2 s + 10 requests × 10 ms + 2 s) + the
    # engine's own warm-up (20 s + 2 s) = 72.5 s
    assert str(run_info.value) == (
        "auth.jwt: lifetime 60s is shorter than this run (about 72s of load) plus a 300s margin: "
        "its tokens would expire during the run; give at least 373s, or leave lifetime out (the "
        "run's length plus the margin) (key from $TEST_JWT_KEY)"
    )


def test_user_i_carries_subject_i_modulo_the_pool() -> None:
    assert [subject_of_user(u, 3) for u in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    # a phase split across testers: closed users follow on, open arrivals interleave
    assert [subject_of_user(u, 10, base=3) for u in range(3)] == [3, 4, 5]
    assert [subject_of_user(u, 10, base=1, stride=2) for u in range(3)] == [1, 3, 5]


def test_split_testers_keep_their_users_apart() -> None:
    doc = {
        "format": "gatebench-workload/1",
        "seed": 1,
        "secret_env": [],
        "skip_file": "",
        "phases": [
            {
                "id": f"p{i:04d}",
                "index": i,
                "target": "envoy",
                "seed": 1,
                "before": [],
                "params": {},
                "injection": inj,
            }
            for i, inj in enumerate(
                [
                    {"kind": "at_once", "users": 5},
                    {"kind": "ramp", "users": 7, "duration_ms": 1000},
                ]
            )
        ],
    }
    testers = split_document(doc, 3)
    closed = [
        [
            subject_of_user(
                u, 100, base=d["phases"][0]["user_base"], stride=d["phases"][0]["user_stride"]
            )
            for u in range(d["phases"][0]["injection"]["users"])
        ]
        for d in testers
    ]
    assert closed == [[0, 1], [2, 3], [4]]
    opened = [
        [
            subject_of_user(
                u, 100, base=d["phases"][1]["user_base"], stride=d["phases"][1]["user_stride"]
            )
            for u in range(d["phases"][1]["injection"]["users"])
        ]
        for d in testers
    ]
    assert opened == [[0, 3, 6], [1, 4], [2, 5]]
    assert "user_base" not in split_document(doc, 1)[0]["phases"][0]


def test_wrk_cannot_give_each_user_its_token(tmp_path: Path) -> None:
    spec = "    jwt: {private_key_env: K, subjects: 3}\n  engine: wrk\n"
    with pytest.raises(PlanError) as info:
        _plan(tmp_path, spec)
    problems = [(p.pointer, p.message) for p in info.value.errors]
    assert (
        "/x-gatebench/auth/jwt/subjects",
        "engine wrk sends one token from every connection; a pool of 3 subjects (one token per "
        "simulated user) needs engine: gatling, or subjects: 1",
    ) in problems
    (tmp_path / "g").mkdir()
    plan = _plan(tmp_path / "g", "    jwt: {private_key_env: K, subjects: 3}\n")
    with pytest.raises(RunError) as run_info:
        # without its sequential workload, which wrk refuses first
        check_engine_supports("wrk", replace(plan, workloads=()))  # type: ignore[type-var]
    assert str(run_info.value) == (
        "auth.jwt.subjects: engine wrk sends one token from every connection; a pool of 3 "
        "subjects (one token per simulated user) needs engine: gatling, or subjects: 1"
    )
    document = {
        "phases": [
            {
                "injection": {"kind": "concurrent", "users": 2, "duration_ms": 1000},
                "request": {"auth": [{"header": "Authorization", "env": "X", "per_user": True}]},
            }
        ]
    }
    assert [(p.pointer, p.message) for p in _document_problems(document)] == [
        (
            "/phases/0/request/auth/0",
            "engine wrk sends one token from every connection, not one per simulated user "
            "(auth.jwt with a pool of subjects): use engine: gatling",
        )
    ]


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
