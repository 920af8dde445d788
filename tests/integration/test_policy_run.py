"""A real run with policies: Envoy validates the tokens the run signs (Gatling sends them), a
gateway that cannot apply the policies is left out with the reason, or run bare and marked
with --allow-missing-policies; the private key is in no file of the run. A run with API keys:
the gateways read the valid keys from their variable, the workload sends one (2xx only), and
no file of the run's folder holds a key. With a pool of subjects every simulated user carries
its own token: a per-subject rate limit on Envoy and HAProxy counts each user apart, and
Gatling gives user i subject i mod the pool."""

from __future__ import annotations

import http.server
import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import jwt
import pytest

from gatebench.core.errors import RunError
from gatebench.core.plan import build_plan
from gatebench.core.report import render
from gatebench.core.spec import load_spec
from gatebench.core.tokens import (
    SIGNED_TOKEN_ENV,
    SIGNED_TOKENS_FILE_ENV,
    generate_private_key,
    public_pem,
)
from gatebench.local.runner import RunOptions, run_benchmark
from gatebench.store import open_store

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
        # The cache outlives a phase: the warm-up fills it, and the second repetition is
        # answered from what the first left (they were 'crossed' answers, every one).
        "repetitions": 2,
        "warmup": {"requests": 5},
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
            results_dir=tmp_path,
            seed=3,
            ceiling=False,
            engine_warmup=False,
            allow_missing_policies=allow_missing,
        ),
    )
    record = outcome.record
    reason = (
        "caddy cannot apply the requested policies natively: JWT validation (auth.jwt), "
        "response cache (key: path and query) (cache)"
    )
    by_target = {m.target: m for m in outcome.measurements}
    for envoy in (m for m in outcome.measurements if m.target == "envoy"):
        assert (envoy.requests, envoy.ko) == (20, 0), "Envoy refused the signed tokens"
        # Envoy answers the cached operation from its cache: the answer to a request of the
        # run already sent (the warm-up's, the first repetition's), which the check accepts
        # held to its own signature (docs/trust.md)
        assert envoy.answers_checked is True
        assert envoy.wrong_answers == 0, (envoy.repetition, envoy.wrong_evidence)
    if allow_missing:
        assert f"caddy: run WITHOUT its policies: {reason}" in outcome.notes
        assert record.environment["without_policies"] == {"caddy": reason}
        assert (by_target["caddy"].requests, by_target["caddy"].ko) == (20, 0)
    else:
        assert record.target_errors["caddy"] == reason
        assert record.environment["left_out"] == {"caddy": "cannot apply the plan's policies"}
        assert outcome.report is not None
        assert (
            "caddy was left out before the run, as it cannot apply the plan's policies: not "
            "ranked." in outcome.report.verdict
        )
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
        options=RunOptions(
            results_dir=tmp_path / "results", seed=5, ceiling=False, engine_warmup=False
        ),
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
            options=RunOptions(
                results_dir=tmp_path / "results", seed=5, ceiling=False, engine_warmup=False
            ),
        )
    assert str(err.value) == (
        f"environment variable {KEYS_ENV} (the valid keys of the auth.api_key policy): key 2 of "
        "2 has a double quote at position 9; a key is A-Za-z0-9-._~ only (keys are separated "
        "by commas)"
    )
    assert not list((tmp_path / "results").rglob("nginx.conf")), "a gateway was rendered"


# -- a pool of subjects: every simulated user its own token ------------------------------------

USERS = 6


def _rate_limited_plan(gateways: list[str], subjects: int) -> tuple[Any, Any]:
    """Each user sends one request; the gateways allow one request per subject per minute."""
    result = load_spec(Path(__file__).parents[2] / "examples" / "auction" / "openapi.yaml")
    api = result.api
    assert api is not None
    section = {
        "gateways": gateways,
        "baseline": False,
        "repetitions": 1,
        "warmup": False,
        "backend": {"builtin": "auction"},
        "auth": {"jwt": {"private_key_env": KEY_ENV, "subjects": subjects}},
        "policies": {
            "auth": {"jwt": {"issuer": ISSUER, "audience": "auction", "keys": "public.pem"}},
            "rate_limit": {"requests": 1, "window": "60s", "key": "subject"},
        },
        "workloads": [
            {
                "name": "retrieve",
                "operation": "getAuction",
                "params": {"auctionId": 7},
                "expect": [200],
                "injection": {"at_once": USERS},
            }
        ],
    }
    return api, build_plan(section, api, read_file=lambda name: public_pem(PRIVATE))


def _tokens_seen(seen: list[str]) -> Callable[[Any], None]:
    """A display callback that keeps the tokens the engine was given (read while the run
    lasts: the test's only way to know the strings it then looks for)."""

    def display(progress: Any) -> None:
        if seen:
            return
        if os.environ.get(SIGNED_TOKENS_FILE_ENV):
            path = Path(os.environ[SIGNED_TOKENS_FILE_ENV])
            seen.extend(path.read_text().splitlines())
            seen.append(str(path))
        elif os.environ.get(SIGNED_TOKEN_ENV):
            seen.append(os.environ[SIGNED_TOKEN_ENV])

    return display


@pytest.mark.parametrize("subjects", [USERS, 1])
def test_a_limit_per_subject_counts_each_user_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subjects: int
) -> None:
    """Envoy and HAProxy allow one request per token subject per minute; six users send one
    request each. Six subjects: every user stays under its own limit. One subject shared by
    all: the limit is reached after the first request, the other five get 429."""
    monkeypatch.setenv(KEY_ENV, PRIVATE)
    api, plan = _rate_limited_plan(["envoy", "haproxy"], subjects)
    store = open_store(tmp_path / "store.sqlite")
    seen: list[str] = []
    outcome = run_benchmark(
        api,
        plan,
        spec_uri="auction",
        spec_sha256="0" * 64,
        options=RunOptions(
            results_dir=tmp_path / "results", seed=5, ceiling=False, engine_warmup=False
        ),
        store=store,
        display=_tokens_seen(seen),
    )
    by_target = {m.target: m for m in outcome.measurements}
    assert sorted(by_target) == ["envoy", "haproxy"], outcome.record.target_errors
    for target, m in by_target.items():
        # a 429 past the plan's limit is the policy working: counted as rate-limited, apart
        # from the errors (docs/trust.md)
        if subjects == USERS:
            assert (m.requests, m.ok, m.ko, m.rate_limited) == (USERS, USERS, 0, 0), (
                target,
                m.errors,
            )
        else:
            assert (m.requests, m.ok, m.ko, m.rate_limited) == (USERS, 1, 0, USERS - 1), (
                target,
                m.errors,
            )
            assert m.errors == () and m.error_pct == 0.0
    # the tokens and the key: in no file of the run, not in the store, not in the report
    if subjects == USERS:
        *tokens, token_path = seen
        assert len(tokens) == USERS and not Path(token_path).exists()
        assert not Path(token_path).is_relative_to(tmp_path)
    else:
        tokens = seen
        assert len(tokens) == 1 and SIGNED_TOKEN_ENV not in os.environ
    assert outcome.report is not None
    report = render(outcome.report, "html") + render(outcome.report, "json")
    secrets = [*(t.rsplit(".", 1)[1] for t in tokens), PRIVATE.splitlines()[1]]
    store.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "store.sqlite" for p in files) and any(
        p.name.endswith(".log") for p in files
    )
    leaked = [(p.name, s[:12]) for p in files for s in secrets if s.encode() in p.read_bytes()]
    assert not leaked, f"a token or the private key was written: {leaked}"
    assert not [s for s in secrets if s in report]


class _Recorder(http.server.BaseHTTPRequestHandler):
    """A backend that answers 200 and keeps the ``sub`` of every bearer token it sees, over
    kept-alive HTTP/1.1 connections as the gateways' backends do (an HTTP/1.0 answer without
    ``Connection: close`` makes Gatling reuse the connection the server then closes, and send
    the next request again: docs/engine.md)."""

    protocol_version = "HTTP/1.1"
    subjects: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            claims = jwt.decode(
                auth[7:], public_pem(PRIVATE), algorithms=["RS256"], audience="auction"
            )
            self.subjects.append(f"{self.path.split('?')[0]} {claims['sub']}")
        body = b'{"id": 7}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_user_i_sends_the_token_of_subject_i_modulo_the_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gatling against a recording backend (the baseline, no gateway): a pool of 4 subjects;
    6 users at once get subjects 1 2 3 4 1 2; 3 looping users keep subjects 1 to 3 for all
    their requests; 5 arrivals of a ramp (the open model) get 1 2 3 4 1."""
    monkeypatch.setenv(KEY_ENV, PRIVATE)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    _Recorder.subjects = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = load_spec(Path(__file__).parents[2] / "examples" / "auction" / "openapi.yaml")
        api = result.api
        assert api is not None

        def workload(name: str, injection: dict[str, Any], auction: int) -> dict[str, Any]:
            return {
                "name": name,
                "operation": "getAuction",
                "params": {"auctionId": auction},
                "expect": [200],
                "injection": injection,
            }

        section = {
            "gateways": [],
            "baseline": True,
            "repetitions": 1,
            "warmup": False,
            "order": "fixed",
            "backend": {"url": f"http://127.0.0.1:{server.server_address[1]}"},
            "auth": {"jwt": {"private_key_env": KEY_ENV, "subjects": 4}},
            "policies": {
                "auth": {"jwt": {"issuer": ISSUER, "audience": "auction", "keys": "public.pem"}}
            },
            "workloads": [
                workload("at-once", {"at_once": 6}, 1),
                workload("looping", {"concurrent": 3, "requests": 12}, 2),
                workload("arrivals", {"ramp": {"users": 5, "duration": "1s"}}, 3),
            ],
        }
        plan = build_plan(section, api, read_file=lambda name: public_pem(PRIVATE))
        outcome = run_benchmark(
            api,
            plan,
            spec_uri="auction",
            spec_sha256="0" * 64,
            options=RunOptions(results_dir=tmp_path, seed=5, ceiling=False, engine_warmup=False),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert sorted((m.workload, m.ok, m.ko) for m in outcome.measurements) == [
        ("arrivals", 5, 0),
        ("at-once", 6, 0),
        ("looping", 12, 0),
    ]
    by_path = Counter(_Recorder.subjects)
    assert {k: v for k, v in by_path.items() if k.startswith("/auctions/1 ")} == {
        "/auctions/1 gatebench-1": 2,
        "/auctions/1 gatebench-2": 2,
        "/auctions/1 gatebench-3": 1,
        "/auctions/1 gatebench-4": 1,
    }
    looping = {k.split()[1] for k in by_path if k.startswith("/auctions/2 ")}
    assert looping == {"gatebench-1", "gatebench-2", "gatebench-3"}
    assert {k: v for k, v in by_path.items() if k.startswith("/auctions/3 ")} == {
        "/auctions/3 gatebench-1": 2,
        "/auctions/3 gatebench-2": 1,
        "/auctions/3 gatebench-3": 1,
        "/auctions/3 gatebench-4": 1,
    }
