"""auth.jwt on the cloud path: the render step names the Secret Manager secret and the claims,
never the key; the tester VM reads the key with its own service account (the only one
infra/secrets.tf grants it) and signs the pool's tokens just before the load, into a
temporary file that is gone when the load ends. Secret Manager has no emulator: the stand-in
(tests/cloud/secretgate.py) reads the grant from infra/ and answers as the real one does."""

from __future__ import annotations

import contextlib
import io
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from cloud.secretgate import SecretGrant, SecretManagerStandIn, secret_grants
from cloud.settings import deployment
from gatebench.cloud._objects import ObjectRef
from gatebench.cloud._render import render_run
from gatebench.cloud._secrets import EMULATOR_ENV
from gatebench.core.errors import RunError
from gatebench.core.tokens import SIGNED_TOKENS_FILE_ENV, generate_private_key, public_pem
from gatebench.vm._roles import _load_signed
from gatebench.vm._tokens import signed_tokens_on_tester
from paths import ROOT

PRIVATE = generate_private_key("RS256")
SECRET = "projects/proj/secrets/gb-jwt"
VARIABLES = {"project_id": "proj", "jwt_signer": "gb-jwt"}
SETTINGS = deployment(jwt_signer="gb-jwt")


def _bundle() -> bytes:
    text = (ROOT / "tests" / "data" / "policies" / "openapi.yaml").read_text()
    text = text.replace(
        "    bearer: {env: AUCTION_TOKEN}\n", "    jwt: {private_key_env: KEY, subjects: 3}\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("openapi.yaml", text)
        bundle.writestr("keys/public.pem", public_pem(PRIVATE))
    return buffer.getvalue()


def test_the_render_step_names_the_secret_and_the_claims_never_a_key() -> None:
    rendered = render_run(_bundle(), ObjectRef("gb-uploads", "specs/x.zip", "9"), SETTINGS, "b")
    signing = rendered.workload["signing"]
    lifetime = signing.pop("lifetime")
    assert signing == {
        "algorithm": "RS256",
        "issuer": "https://issuer.gatebench.test",
        "audience": "auction",
        "subjects": 3,
        "secret": SECRET,
    }
    assert lifetime % 60 == 0 and lifetime > 300  # the run's estimated length + 5 minutes
    auth = {json.dumps(p["request"]["auth"]) for p in rendered.workload["phases"]}
    assert auth == {
        json.dumps(
            [
                {
                    "header": "Authorization",
                    "prefix": "Bearer ",
                    "env": SIGNED_TOKENS_FILE_ENV,
                    "per_user": True,
                }
            ]
        )
    }
    objects = rendered.objects()
    assert not [n for n, text in objects.items() if "PRIVATE KEY" in text]
    workload = next(text for name, text in objects.items() if name.endswith("/workload.json"))
    assert f'"secret": "{SECRET}"' in workload


def test_the_stand_in_reads_the_grant_from_infra() -> None:
    assert secret_grants(VARIABLES) == [
        SecretGrant("tester", "roles/secretmanager.secretAccessor", "proj", "gb-jwt")
    ]
    # no signer named: Terraform creates no grant (count 0), so nobody can read a key
    assert secret_grants({"project_id": "proj", "jwt_signer": ""}) == []


@pytest.fixture
def document() -> dict[str, Any]:
    return {
        "phases": [],
        "signing": {
            "algorithm": "RS256",
            "issuer": "https://issuer.gatebench.test",
            "audience": "auction",
            "subjects": 3,
            "lifetime": 600.0,
            "secret": SECRET,
        },
    }


@contextlib.contextmanager
def _stand_in(
    monkeypatch: pytest.MonkeyPatch, vm: str | None, variables: dict[str, str] = VARIABLES
) -> Iterator[SecretManagerStandIn]:
    with SecretManagerStandIn(vm, {SECRET: PRIVATE}, variables) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        yield stand_in


def test_the_tester_signs_the_pool_with_the_key_it_reads(
    monkeypatch: pytest.MonkeyPatch, document: dict[str, Any]
) -> None:
    monkeypatch.delenv(SIGNED_TOKENS_FILE_ENV, raising=False)
    with _stand_in(monkeypatch, "tester") as stand_in:
        with signed_tokens_on_tester(document):
            path = Path(os.environ[SIGNED_TOKENS_FILE_ENV])
            assert path.stat().st_mode & 0o777 == 0o600
            claims = [
                jwt.decode(t, public_pem(PRIVATE), algorithms=["RS256"], audience="auction")
                for t in path.read_text().splitlines()
            ]
        assert stand_in.requests == [(f"/v1/{SECRET}/versions/latest:access", 200)]
    assert [c["sub"] for c in claims] == ["gatebench-1", "gatebench-2", "gatebench-3"]
    assert {c["exp"] - c["iat"] for c in claims} == {600}
    assert not path.parent.exists() and SIGNED_TOKENS_FILE_ENV not in os.environ


DENIED = (
    "the tester could not sign the run's tokens: projects/proj/secrets/gb-jwt: Secret Manager "
    "answered 403: Permission 'secretmanager.versions.access' denied for resource "
    "'projects/proj/secrets/gb-jwt/versions/latest' (or it may not exist). (does this VM's "
    "service account hold roles/secretmanager.secretAccessor on it? infra/secrets.tf)"
)


@pytest.mark.parametrize(
    ("vm", "variables"),
    [
        ("gateway", VARIABLES),  # another VM's account: infra/ grants it nothing
        ("tester", {"project_id": "proj", "jwt_signer": ""}),  # no grant applied
        ("tester", {"project_id": "proj", "jwt_signer": "another"}),  # granted another secret
    ],
)
def test_without_the_grant_the_load_does_not_start(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    document: dict[str, Any],
    vm: str,
    variables: dict[str, str],
) -> None:
    written: list[str] = []

    class Bucket:  # the load never starts, so nothing reaches storage
        def read_optional(self, bucket: str, name: str) -> bytes | None:
            raise AssertionError(f"read {name}")

        def write(self, bucket: str, name: str, data: Any, content_type: str = "") -> None:
            written.append(name)

    with _stand_in(monkeypatch, vm, variables) as stand_in:
        done = _load_signed(Bucket(), "b", "r1", tmp_path, document)  # type: ignore[arg-type]
        assert stand_in.requests == [(f"/v1/{SECRET}/versions/latest:access", 403)]
    assert done == {"ok": False, "reason": DENIED}
    assert written == [] and SIGNED_TOKENS_FILE_ENV not in os.environ


def test_a_granted_secret_that_holds_no_version_says_so(
    monkeypatch: pytest.MonkeyPatch, document: dict[str, Any]
) -> None:
    with SecretManagerStandIn("tester", {}, VARIABLES) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        with pytest.raises(RunError) as info, signed_tokens_on_tester(document):
            pass
    assert str(info.value).startswith(
        "projects/proj/secrets/gb-jwt: Secret Manager answered 404: Secret "
        "[projects/proj/secrets/gb-jwt] not found or has no versions."
    )


def test_a_key_that_does_not_fit_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch, document: dict[str, Any]
) -> None:
    ec = generate_private_key("ES256")
    with SecretManagerStandIn("tester", {SECRET: ec}, VARIABLES) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        with pytest.raises(RunError) as info, signed_tokens_on_tester(document):
            pass
    assert str(info.value) == ("projects/proj/secrets/gb-jwt: the signing key does not fit RS256")
