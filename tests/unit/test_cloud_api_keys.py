"""auth.api_key on the cloud path: the render step stores every configuration without a key;
each gateway VM reads the deployment's ``api_clients`` secret with its own service account and
writes the key-bearing files itself before its gateway starts; the tester reads the same
secret to send the first key. Secret Manager has no emulator: the stand-in
(tests/cloud/secretgate.py) reads the grants from infra/ and answers as the real one does."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cloud.secretgate import SecretGrant, SecretManagerStandIn, secret_grants
from cloud.settings import deployment
from gatebench.cloud._objects import ObjectRef, RequestError
from gatebench.cloud._render import render_run
from gatebench.cloud._secrets import EMULATOR_ENV
from gatebench.core.api_keys import REDACTED, sha256_hex
from gatebench.core.errors import RunError
from gatebench.vm._gateway_config import configure_gateway
from gatebench.vm._roles import _load_signed
from gatebench.vm._tokens import client_key_on_tester
from paths import ROOT

KEYS = ["k" * 8 + "0123456789abcdef", "Z9-._~" + "q" * 20]
SECRET = "projects/proj/secrets/gb-api"
VARIABLES = {"project_id": "proj", "jwt_signer": "", "api_clients": "gb-api"}
SETTINGS = deployment(api_clients="gb-api")
REF = ObjectRef("gb-uploads", "specs/api-key.yaml", "9")
SPEC = (ROOT / "tests" / "data" / "policies" / "api-key.yaml").read_bytes()
TEMPLATES = ROOT / "infra" / "vms" / "templates"


class MemoryBucket:
    """The runs bucket, in memory (what the render function wrote)."""

    def __init__(self, objects: dict[str, str]) -> None:
        self.objects = {name: text.encode() for name, text in objects.items()}

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        assert bucket == "gb-runs"
        return self.objects.get(name)

    def write(self, bucket: str, name: str, data: Any, content_type: str = "") -> None:
        self.objects[name] = data.encode() if isinstance(data, str) else bytes(data)


def rendered() -> Any:
    return render_run(SPEC, REF, SETTINGS, "gb-runs")


def test_the_render_step_stores_no_key_and_asks_each_vm_to_write_them() -> None:
    run = rendered()
    assert sorted(run.configs) == ["caddy", "envoy", "haproxy", "nginx"] and not run.failures
    # The stored configurations hold the stand-in key (or its hash), never a real one.
    assert REDACTED in run.configs["nginx"]["nginx.conf"]
    assert sha256_hex(REDACTED) in run.configs["haproxy"]["haproxy.cfg"]
    for name, entry in run.fleet["gateways"].items():
        assert entry["configure"] == [
            [
                "cloud",
                "gateway-config",
                "--run-id",
                run.run_id,
                "--runs-bucket",
                "gb-runs",
                "--gateway",
                name,
                "--out",
                entry["mount"],
            ]
        ]
    # The tester sends the first key of the same secret, read on its VM.
    assert run.workload["client_key"] == {"env": "AUCTION_KEY", "secret": SECRET}
    objects = run.objects()
    assert f"runs/{run.run_id}/render-input.json" in objects
    assert SECRET in objects[f"runs/{run.run_id}/workload.json"]


def test_without_api_clients_the_render_step_refuses_the_plan() -> None:
    settings = {k: v for k, v in SETTINGS.items() if k != "api_clients"}
    with pytest.raises(RequestError) as info:
        render_run(SPEC, REF, settings, "gb-runs")
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        (
            "/x-gatebench/policies",
            "this deployment has no API keys for auth.api_key: set the Terraform variable "
            "api_clients to a Secret Manager secret holding the valid keys, comma-separated "
            '(docs/cloud.md, "API keys")',
        )
    ]


def test_a_plan_without_api_keys_gets_no_configure_step() -> None:
    spec = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()
    run = render_run(spec, REF, {k: v for k, v in SETTINGS.items() if k != "api_clients"}, "b")
    assert [e["configure"] for e in run.fleet["gateways"].values()] == [[]] * len(
        run.fleet["gateways"]
    )
    assert run.render_input is None and "client_key" not in run.workload


def test_infra_grants_the_secret_to_the_gateway_and_tester_vms_alone() -> None:
    assert secret_grants(VARIABLES) == [
        SecretGrant("gateway", "roles/secretmanager.secretAccessor", "proj", "gb-api"),
        SecretGrant("tester", "roles/secretmanager.secretAccessor", "proj", "gb-api"),
    ]
    assert secret_grants({**VARIABLES, "api_clients": ""}) == []


def test_the_gateway_vm_writes_its_keys_with_its_own_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = rendered()
    bucket = MemoryBucket(run.objects())
    with SecretManagerStandIn("gateway", {SECRET: ",".join(KEYS)}, VARIABLES) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        nginx = configure_gateway(bucket, "gb-runs", run.run_id, "nginx", tmp_path / "nginx")  # type: ignore[arg-type]
        haproxy = configure_gateway(bucket, "gb-runs", run.run_id, "haproxy", tmp_path / "ha")  # type: ignore[arg-type]
        assert [status for _, status in stand_in.requests] == [200, 200]
    assert nginx == sorted(run.configs["nginx"])
    conf = (tmp_path / "nginx" / "nginx.conf").read_text()
    # nginx compares in a regex (in a quoted string): the second key's dot is escaped there.
    assert f"(?:{KEYS[0]}|{KEYS[1].replace('.', chr(92) * 2 + '.')})" in conf
    assert REDACTED not in conf
    # The same text as the render step's, the stand-in key replaced.
    stored = run.configs["nginx"]["nginx.conf"]
    assert conf.count(KEYS[0]) == stored.count(REDACTED)
    cfg = (tmp_path / "ha" / haproxy[0]).read_text()
    assert all(sha256_hex(k) in cfg for k in KEYS) and not any(k in cfg for k in KEYS)
    # Nothing the VM wrote to the bucket (nothing at all) holds a key.
    assert bucket.objects == {n: t.encode() for n, t in run.objects().items()}
    assert not [n for n, data in bucket.objects.items() if any(k.encode() in data for k in KEYS)]


DENIED = (
    "nginx: the gateway VM could not write its API keys: projects/proj/secrets/gb-api: Secret "
    "Manager answered 403: Permission 'secretmanager.versions.access' denied for resource "
    "'projects/proj/secrets/gb-api/versions/latest' (or it may not exist). (does this VM's "
    "service account hold roles/secretmanager.secretAccessor on it? infra/secrets.tf)"
)


@pytest.mark.parametrize(
    ("vm", "variables"),
    [
        ("backend", VARIABLES),  # another VM's account: infra/ grants it nothing
        ("gateway", {**VARIABLES, "api_clients": ""}),  # no grant applied
        ("gateway", {**VARIABLES, "api_clients": "another"}),  # granted another secret
    ],
)
def test_without_the_grant_the_gateway_vm_writes_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, vm: str, variables: dict[str, str]
) -> None:
    run = rendered()
    bucket = MemoryBucket(run.objects())
    with SecretManagerStandIn(vm, {SECRET: ",".join(KEYS)}, variables) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        with pytest.raises(RunError) as info:
            configure_gateway(bucket, "gb-runs", run.run_id, "nginx", tmp_path / "out")  # type: ignore[arg-type]
        assert [status for _, status in stand_in.requests] == [403]
    assert str(info.value) == DENIED
    assert not (tmp_path / "out").exists()
    said = bucket.objects[f"runs/{run.run_id}/gateways/nginx/config-error.json"]
    assert json.loads(said) == {"reason": DENIED}


def test_a_secret_with_a_bad_key_is_refused_without_showing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = rendered()
    bucket = MemoryBucket(run.objects())
    bad = KEYS[0] + ',short"key'
    with SecretManagerStandIn("gateway", {SECRET: bad}, VARIABLES) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        with pytest.raises(RunError) as info:
            configure_gateway(bucket, "gb-runs", run.run_id, "nginx", tmp_path / "out")  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith(
        "nginx: the gateway VM could not write its API keys: projects/proj/secrets/gb-api: "
    )
    assert "key 2 of 2 has a double quote at position 6" in message
    assert KEYS[0] not in message and "short" not in message


def test_the_tester_sends_the_first_key_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    document = {"client_key": {"env": "AUCTION_KEY", "secret": SECRET}}
    monkeypatch.delenv("AUCTION_KEY", raising=False)
    with SecretManagerStandIn("tester", {SECRET: ",".join(KEYS)}, VARIABLES) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        with client_key_on_tester(document):
            assert os.environ["AUCTION_KEY"] == KEYS[0]
    assert "AUCTION_KEY" not in os.environ


def test_a_tester_that_cannot_read_the_key_does_not_start_its_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Bucket:  # the load never starts, so nothing reaches storage
        def read_optional(self, bucket: str, name: str) -> bytes | None:
            raise AssertionError(f"read {name}")

        def write(self, bucket: str, name: str, data: Any, content_type: str = "") -> None:
            raise AssertionError(f"wrote {name}")

    document = {"phases": [], "client_key": {"env": "AUCTION_KEY", "secret": SECRET}}
    with SecretManagerStandIn("backend", {SECRET: ",".join(KEYS)}, VARIABLES) as stand_in:
        monkeypatch.setenv(EMULATOR_ENV, stand_in.url)
        done = _load_signed(Bucket(), "b", "r1", tmp_path, document)  # type: ignore[arg-type]
    assert done["ok"] is False
    assert done["reason"].startswith(
        "the tester could not read the run's API key: projects/proj/secrets/gb-api: Secret "
        "Manager answered 403"
    )


# -- the gateway VM's startup script: no keys, no gateway


def _script_section(configure: list[list[str]]) -> str:
    from test_terraform_templates import GATEWAY, render

    script = render(
        (TEMPLATES / "gateway.sh.tftpl").read_text(), {**GATEWAY, "configure": configure}
    )
    start = script.index("# With auth.api_key")
    end = script.index("# The gateway container's cgroup")
    return script[start:end]


@pytest.mark.parametrize("fails", [False, True])
def test_the_gateway_starts_only_after_its_keys_are_written(tmp_path: Path, fails: bool) -> None:
    """The script's own lines, with a stand-in for docker: the configure step runs first, as
    the runner image, and when it fails the script stops before the gateway's container."""
    argv = ["cloud", "gateway-config", "--run-id", "r-1", "--gateway", "nginx", "--out", "/m"]
    part = tmp_path / "part.sh"
    part.write_text(f"set -euo pipefail\ndir={tmp_path}\n{_script_section([argv])}")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "docker").write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {calls}\n'
        f'if [[ "$*" == *gateway-config* ]]; then exit {1 if fails else 0}; fi\n'
    )
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(part)], capture_output=True, text=True, env=env)
    lines = calls.read_text().splitlines()
    assert re.fullmatch(
        rf"run --rm --network host --log-driver=gcplogs -v {tmp_path}:/etc/gatebench "
        r"europe-central2-docker\.pkg\.dev/proj/gb-gatebench/runner:0\.1\.0 " + " ".join(argv),
        lines[0],
    ), lines[0]
    if fails:
        assert done.returncode == 1 and lines == lines[:1]
    else:
        assert done.returncode == 0, done.stderr
        assert len(lines) == 2 and lines[1].startswith("run -d --name gateway ")
