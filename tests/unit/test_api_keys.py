"""API keys (``gatebench.core.api_keys``): the variable's format, refusals that name the variable and
never show a key, keys filled at the edge and never in the plan, hashes where the gateway
compares them, keys that cannot escape their string, and the redaction of a stored copy."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from gatebench.core.api_keys import (
    REDACTED,
    api_key_envs,
    parse_api_keys,
    policy_keys,
    redact,
    with_api_keys,
)
from gatebench.core.errors import RenderError, RunError
from gatebench.core.plan import load_plan
from gatebench.core.policies import ApiKeyAuth, Policies, PolicySet
from gatebench.core.renderers import RenderTarget, get_renderer, render_with_policies
from gatebench.core.spec import load_spec
from gatebench.local.provisioners._boot import redact_file
from paths import ROOT

ENV = "GATEBENCH_API_KEYS"
WHERE = f"environment variable {ENV} (the valid keys of the auth.api_key policy)"
KEY_A = "key-aaaaaaaaaaaaaaaa"
KEY_B = "key.bbbbbbbbbbbb~B_9"
SPEC = ROOT / "tests" / "data" / "policies" / "api-key.yaml"
TARGET = RenderTarget(workdir="/srv/gatebench/x", listen_port=8080, admin_port=8081)
KEY_GATEWAYS = ("apache", "caddy", "envoy", "haproxy", "nginx", "varnish")


def _plan_policies() -> PolicySet:
    result = load_spec(SPEC)
    return load_plan(result).policies


def test_keys_are_comma_separated_trimmed_and_deduplicated() -> None:
    assert parse_api_keys(ENV, f" {KEY_A} ,\t{KEY_B},{KEY_A}\n") == (KEY_A, KEY_B)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            None,
            f"{WHERE} is not set or empty; export {ENV}=KEY1,KEY2 (comma-separated, 16 to 256 "
            "characters of A-Za-z0-9-._~ each)",
        ),
        (
            " ",
            f"{WHERE} is not set or empty; export {ENV}=KEY1,KEY2 (comma-separated, 16 to 256 "
            "characters of A-Za-z0-9-._~ each)",
        ),
        (
            f'{KEY_A},key-"quoted"-0123456',
            f"{WHERE}: key 2 of 2 has a double quote at position 5; a key is A-Za-z0-9-._~ "
            "only (keys are separated by commas)",
        ),
        (
            "key with spaces 0123456",
            f"{WHERE}: key 1 of 1 has a space at position 4; a key is A-Za-z0-9-._~ only (keys "
            "are separated by commas)",
        ),
        (
            "key-0123456789;return",
            f"{WHERE}: key 1 of 1 has a semicolon at position 15; a key is A-Za-z0-9-._~ only "
            "(keys are separated by commas)",
        ),
        (
            "key-0123456789\nreturn-401",
            f"{WHERE}: key 1 of 1 has a newline at position 15; a key is A-Za-z0-9-._~ only "
            "(keys are separated by commas)",
        ),
        (
            "key-0123456789'x',key-{brace}-012345",
            f"{WHERE}: key 1 of 2 has a single quote at position 15; a key is A-Za-z0-9-._~ "
            f"only (keys are separated by commas); {WHERE}: key 2 of 2 has a brace at position "
            "5; a key is A-Za-z0-9-._~ only (keys are separated by commas)",
        ),
        (
            "key-0123456789-é",
            f"{WHERE}: key 1 of 1 has character U+00E9 at position 16; a key is A-Za-z0-9-._~ "
            "only (keys are separated by commas)",
        ),
        (f"{KEY_A},short", f"{WHERE}: key 2 of 2 has 5 characters; a key has 16 to 256"),
        (f"{KEY_A},,{KEY_B}", f"{WHERE}: key 2 of 3 has 0 characters; a key has 16 to 256"),
        ("k" * 257, f"{WHERE}: key 1 of 1 has 257 characters; a key has 16 to 256"),
    ],
)
def test_a_bad_key_list_is_refused_naming_the_variable(value: str | None, message: str) -> None:
    with pytest.raises(RunError) as err:
        parse_api_keys(ENV, value)
    assert str(err.value) == message
    assert "quoted" not in message and "return" not in message, "the error shows a key"


def test_keys_are_filled_at_the_edge_never_in_the_plan() -> None:
    policies = _plan_policies()
    assert api_key_envs(policies) == (ENV,)
    assert all(
        not p.auth.keys for p in policies.all_policies() if isinstance(p.auth, ApiKeyAuth)
    ), "a plan holds keys"
    filled = with_api_keys(policies, {ENV: f"{KEY_A},{KEY_B}"})
    keyed = [p.auth for p in filled.all_policies() if isinstance(p.auth, ApiKeyAuth)]
    assert [a.keys for a in keyed] == [(KEY_A, KEY_B), (KEY_A, KEY_B)]
    assert policy_keys(filled) == (KEY_A, KEY_B)
    assert KEY_A not in repr(filled), "a key shows in a repr (logs, tracebacks)"
    with pytest.raises(RunError, match=f"^{re.escape(WHERE)} is not set or empty; "):
        with_api_keys(policies, {})
    assert with_api_keys(PolicySet(), {}) == PolicySet()


def test_redaction_replaces_longer_keys_first() -> None:
    keys = (KEY_A, KEY_A + "-longer")
    assert redact(f"a {KEY_A}-longer b {KEY_A}", keys) == f"a {REDACTED} b {REDACTED}"


def test_a_stored_copy_is_redacted_and_a_binary_one_removed(tmp_path: Path) -> None:
    text, binary, clean = tmp_path / "a.conf", tmp_path / "vgc.so", tmp_path / "b.conf"
    text.write_text(f'key "{KEY_A}";\n')
    text.chmod(0o640)
    binary.write_bytes(b"\x7fELF\xff\xfe" + KEY_B.encode())
    clean.write_text("nothing\n")
    before = clean.stat().st_mtime_ns
    for path in (text, binary, clean, tmp_path / "missing"):
        redact_file(path, (KEY_A, KEY_B))
    assert text.read_text() == f'key "{REDACTED}";\n'
    assert oct(text.stat().st_mode & 0o777) == oct(0o640)
    assert not binary.exists()
    assert clean.stat().st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.conf", "b.conf"]


@pytest.mark.parametrize("gateway", KEY_GATEWAYS)
def test_a_renderer_without_keys_says_where_they_come_from(gateway: str) -> None:
    with pytest.raises(RenderError) as err:
        render_with_policies(get_renderer(gateway), load_spec(SPEC).api, TARGET, _plan_policies())  # type: ignore[arg-type]
    assert [p.message for p in err.value.problems] == [
        f"{gateway}: the auth.api_key policy has no keys; they are read from "
        f"${ENV} when the configuration is rendered for a run "
        "(gatebench.core.api_keys.with_api_keys)"
    ]


@pytest.mark.parametrize("gateway", KEY_GATEWAYS)
@pytest.mark.parametrize(
    "hostile", ['key-0123456789" 1; }', "key-0123456789\nreturn 200;", "key-01234567,89abcdef"]
)
def test_a_renderer_refuses_a_key_that_could_escape_its_string(gateway: str, hostile: str) -> None:
    """A renderer is pure: called with keys that did not come through with_api_keys, it checks
    them again rather than writing them into its configuration."""
    auth = ApiKeyAuth(header="X-Api-Key", query=None, keys_env=ENV, keys=(KEY_A, hostile))
    with pytest.raises(RenderError) as err:
        render_with_policies(
            get_renderer(gateway),
            load_spec(SPEC).api,  # type: ignore[arg-type]
            TARGET,
            PolicySet(Policies(auth=auth)),
        )
    assert err.value.problems[0].pointer == "/x-gatebench/policies"
    assert err.value.problems[0].message.startswith(f"{WHERE}: key 2 of ")


@pytest.mark.parametrize(("gateway", "digest"), [("haproxy", "sha256"), ("apache", "sha1")])
def test_gateways_that_compare_hashes_hold_no_key(gateway: str, digest: str) -> None:
    files = render_with_policies(
        get_renderer(gateway),
        load_spec(SPEC).api,  # type: ignore[arg-type]
        TARGET,
        with_api_keys(_plan_policies(), {ENV: f"{KEY_A},{KEY_B}"}),
    )
    text = "".join(files.values())
    for key in (KEY_A, KEY_B):
        assert key not in text
        assert hashlib.new(digest, key.encode()).hexdigest() in text


def test_traefik_is_left_out_with_the_reason() -> None:
    from gatebench.core.renderers import policy_exclusions

    assert policy_exclusions(("traefik", "nginx"), _plan_policies()) == {
        "traefik": "traefik cannot apply the requested policies natively: API key (auth.api_key)"
    }


def test_the_environment_is_not_read_by_the_core() -> None:
    """Keys come from the mapping given, never from os.environ behind the caller's back."""
    os.environ.pop("GATEBENCH_TEST_UNSET_KEYS", None)
    auth = ApiKeyAuth(header="X-Api-Key", query=None, keys_env="GATEBENCH_TEST_UNSET_KEYS")
    filled = with_api_keys(PolicySet(Policies(auth=auth)), {"GATEBENCH_TEST_UNSET_KEYS": KEY_A})
    assert policy_keys(filled) == (KEY_A,)


def test_gatebench_render_reads_the_keys_from_their_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`render --policies` writes a configuration to deploy: with the keys; without the
    variable it stops, naming it."""
    from gatebench.cli import main

    monkeypatch.delenv(ENV, raising=False)
    args = ["render", str(SPEC), "-g", "nginx,haproxy", "--out", str(tmp_path), "--policies"]
    assert main(args) == 1
    assert capsys.readouterr().err == (
        f"gatebench render: {WHERE} is not set or empty; export {ENV}=KEY1,KEY2 "
        "(comma-separated, 16 to 256 characters of A-Za-z0-9-._~ each)\n"
    )
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv(ENV, f"{KEY_A},{KEY_B}")
    assert main(args) == 0
    assert (
        "(?:key-aaaaaaaaaaaaaaaa|key\\\\.bbbbbbbbbbbb~B_9)$"
        in (tmp_path / "nginx" / "nginx.conf").read_text()
    )
    assert (
        hashlib.sha256(KEY_B.encode()).hexdigest()
        in (tmp_path / "haproxy" / "haproxy.cfg").read_text()
    )
