"""Policies proven by replay on the real gateways that declare them: each gateway is booted
once, with JWT validation on every operation of the auction example, a cache on its GET and
a rate limit on its bid, in front of the real auction backend, whose request counter
(``GET /__gatebench__/stats``, read directly, never through the gateway) says what reached it.

- a valid token → 200; absent, expired, wrongly signed, wrong audience → 401/403 from the
  gateway, and the backend saw nothing (even for a path the cache already holds);
- the request past the limit in its window → 429, not seen by the backend; a limit given for
  every operation counts each operation apart (per operation and per key: the plan's rule), so
  the requests that use up one operation's count leave another operation's untouched;
- a repeated cacheable GET is answered without reaching the backend; another key reaches it;
  where the gateway declares ``cache.vary_header`` the key also holds X-Variant: another value
  reaches the backend, the same value does not.

A second stack per gateway declaring ``auth.api_key`` has API keys instead of tokens (the
X-Api-Key header on the create and the GET, the api_key query parameter on the bid) and,
where the gateway declares ``cache.path_only``, a cache on the GET keyed on the path only:

- a valid key → 2xx; absent, wrong, wrongly cased, extended, or sent in the other place →
  401/403 from the gateway, and the backend saw nothing;
- the same path with another query is answered from the cache, another path is not.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from booted import skip_unless_installed
from gatebench.core.api_keys import with_api_keys
from gatebench.core.ir import Api
from gatebench.core.policies import (
    ApiKeyAuth,
    Cache,
    JwtAuth,
    Policies,
    PolicySet,
    RateLimit,
    RateLimitKey,
)
from gatebench.core.renderers import RenderTarget, all_renderers, get_renderer
from gatebench.core.tokens import TokenSigner, generate_private_key, public_pem
from gatebench.local.backends import start_backend
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners import boot_gateway

LOCAL = tuple(r.name for r in all_renderers() if r.runs_here)
"""Every gateway that runs here; KrakenD and Tyk where installed (skipped, with the reason,
elsewhere)."""


def _declaring(feature: str) -> list[str]:
    return [name for name in LOCAL if feature in get_renderer(name).supported_policies]


JWT_GATEWAYS = _declaring("auth.jwt")
LIMIT_GATEWAYS = _declaring("rate_limit.address")
CACHE_GATEWAYS = _declaring("cache")
SUBJECT_GATEWAYS = [g for g in _declaring("rate_limit.subject") if g in JWT_GATEWAYS]
HEADER_GATEWAYS = [g for g in _declaring("rate_limit.header") if g not in SUBJECT_GATEWAYS]
VARY_GATEWAYS = [g for g in CACHE_GATEWAYS if g in _declaring("cache.vary_header")]
POLICY_GATEWAYS = sorted({*JWT_GATEWAYS, *LIMIT_GATEWAYS, *CACHE_GATEWAYS})
LIMIT = 3
ISSUER = "https://issuer.gatebench.test"
AUDIENCE = "auction"
PRIVATE = generate_private_key("RS256")
OTHER = generate_private_key("RS256")


def policy_set(
    supported: frozenset[str] = frozenset({"auth.jwt", "rate_limit.address", "cache"}),
) -> PolicySet:
    """JWT on every operation, a cache on the GET, a rate limit on the bid: the part of it the
    gateway declares."""
    jwt: JwtAuth | None = JwtAuth(
        issuer=ISSUER,
        audience=AUDIENCE,
        algorithms=("RS256",),
        keys_file="keys/public.pem",
        keys=public_pem(PRIVATE),
        keys_format="pem",
    )
    if "auth.jwt" not in supported:
        jwt = None
    limit = RateLimit(requests=LIMIT, window=30.0) if "rate_limit.address" in supported else None
    cache = Cache(ttl=60.0) if "cache" in supported else None
    if cache is not None and "cache.vary_header" in supported:
        cache = Cache(ttl=60.0, vary=("path", "query", "header:x-variant"))
    per_subject: RateLimit | None = None
    if jwt is not None and "rate_limit.subject" in supported:
        per_subject = RateLimit(requests=LIMIT, window=30.0, key="subject")
    elif "rate_limit.header" in supported:
        per_subject = RateLimit(requests=LIMIT, window=30.0, key="header", header="X-Client")
    return PolicySet(
        default=Policies(auth=jwt),
        operations=(
            ("createAuction", Policies(auth=jwt, rate_limit=per_subject)),
            ("bid", Policies(auth=jwt, rate_limit=limit)),
            ("getAuction", Policies(auth=jwt, cache=cache)),
        ),
    )


SIGNER = TokenSigner(PRIVATE, "RS256", ISSUER, AUDIENCE, subjects=("alice", "bob"))


@dataclass
class Stack:
    gateway: str
    port: int
    backend_port: int

    def request(
        self,
        method: str,
        path: str,
        token: str | None,
        body: bytes | None = None,
        *,
        source: str = "127.0.0.1",
        client: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> int:
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=10, source_address=(source, 0)
        )
        headers = {"Content-Type": "application/json", **(extra or {})}
        if client is not None:
            headers["X-Client"] = client
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    def backend_requests(self) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", self.backend_port, timeout=5)
        try:
            conn.request("GET", "/__gatebench__/stats")
            count: int = json.loads(conn.getresponse().read())["requests"]
            return count
        finally:
            conn.close()


@contextlib.contextmanager
def _booted_stack(
    supervisor: Supervisor, api: Api, name: str, policies: PolicySet, prefix: str
) -> Iterator[Stack]:
    """``name`` booted with ``policies`` in front of the auction backend, both stopped after."""
    skip_unless_installed(name)
    # nginx's workers (an unprivileged user when the tests run as root) write the cache
    # below the workdir: a world-traversable folder, not pytest's private one.
    workdir = Path(tempfile.mkdtemp(prefix=f"gatebench-{prefix}-{name}-"))
    workdir.chmod(0o755)
    try:
        backend, backend_port = start_backend(supervisor, "auction", workdir)
        target = RenderTarget(
            workdir=str(workdir / "gw"),
            listen_port=free_port(),
            backend_url=f"http://127.0.0.1:{backend_port}",
            admin_port=free_port(),
            redis_port=free_port(),
        )
        proc = boot_gateway(name, api, target, supervisor, policies=policies)
        try:
            yield Stack(name, target.listen_port, backend_port)
        finally:
            supervisor.stop(proc)
            supervisor.stop(backend)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(
    request: pytest.FixtureRequest,
    supervisor: Supervisor,
    replay_api: object,
) -> Iterator[Stack]:
    api: Api = replay_api("auction")  # type: ignore[operator]
    name: str = request.param
    policies = policy_set(get_renderer(name).supported_policies)
    with _booted_stack(supervisor, api, name, policies, "policy") as booted:
        yield booted


@pytest.mark.parametrize("stack", CACHE_GATEWAYS, indirect=True)
def test_a_valid_token_passes_and_the_cache_answers_a_repeat(stack: Stack) -> None:
    token = SIGNER.sign(0)
    before = stack.backend_requests()
    assert stack.request("GET", "/auctions/1", token) == 200
    assert stack.backend_requests() == before + 1
    assert stack.request("GET", "/auctions/1", token) == 200
    assert stack.request("GET", "/auctions/1", SIGNER.sign(1)) == 200
    assert stack.backend_requests() == before + 1, "a repeated GET reached the backend"
    assert stack.request("GET", "/auctions/2", token) == 200
    assert stack.backend_requests() == before + 2, "a different key did not reach the backend"


@pytest.mark.parametrize("stack", VARY_GATEWAYS, indirect=True)
def test_a_cache_keyed_on_a_header(stack: Stack) -> None:
    """GET /auctions/4 is cached on path, query and X-Variant: another value is a miss, the
    same value a hit (the JWT stack: Envoy caches only what its JWT filter vouched for)."""
    token = SIGNER.sign(0)
    before = stack.backend_requests()
    assert stack.request("GET", "/auctions/4", token) == 200
    assert stack.request("GET", "/auctions/4", token) == 200
    assert stack.backend_requests() == before + 1, "a repeated GET reached the backend"
    assert stack.request("GET", "/auctions/4", token, extra={"X-Variant": "a"}) == 200
    assert stack.backend_requests() == before + 2, "another X-Variant did not reach it"
    assert stack.request("GET", "/auctions/4", token, extra={"X-Variant": "a"}) == 200
    assert stack.backend_requests() == before + 2, "the same X-Variant reached the backend"
    assert stack.request("GET", "/auctions/4", token, extra={"X-Variant": "b"}) == 200
    assert stack.backend_requests() == before + 3, "X-Variant b did not reach the backend"
    assert stack.request("GET", "/auctions/5", token) == 200
    assert stack.backend_requests() == before + 4, "another path did not reach the backend"


@pytest.mark.parametrize("stack", JWT_GATEWAYS, indirect=True)
@pytest.mark.parametrize(
    ("label", "token"),
    [
        ("absent", None),
        ("expired", SIGNER.sign(0, now=time.time() - 3600)),
        (
            "wrongly signed",
            TokenSigner(OTHER, "RS256", ISSUER, AUDIENCE).sign(0),
        ),
        ("wrong audience", SIGNER.sign(0, extra={"aud": "someone-else"})),
        ("wrong issuer", SIGNER.sign(0, extra={"iss": "https://elsewhere.test"})),
        ("garbage", "not.a.jwt"),
    ],
)
def test_a_bad_token_is_refused_by_the_gateway(stack: Stack, label: str, token: str | None) -> None:
    before = stack.backend_requests()
    # /auctions/1 is in the cache by now (test order): a refusal must not come from it.
    for path in ("/auctions/1", "/auctions/3"):
        status = stack.request("GET", path, token)
        assert status in (401, 403), f"{stack.gateway}: {label} token on {path} got {status}"
    assert stack.request("POST", "/bid/5", token, b'{"bid": 1}') in (401, 403)
    assert stack.backend_requests() == before, (
        f"{stack.gateway}: a {label} token reached the backend"
    )


@pytest.mark.parametrize("stack", LIMIT_GATEWAYS, indirect=True)
def test_the_request_past_the_limit_gets_429(stack: Stack) -> None:
    token = SIGNER.sign(0)
    before = stack.backend_requests()
    statuses = [
        stack.request("POST", "/bid/7", token, json.dumps({"bid": 10 + i}).encode())
        for i in range(LIMIT)
    ]
    assert 429 not in statuses, statuses
    assert stack.backend_requests() == before + LIMIT
    assert stack.request("POST", "/bid/7", token, b'{"bid": 100}') == 429
    assert stack.backend_requests() == before + LIMIT, (
        "the request past the limit reached the backend"
    )
    # Another client address has its own count (127.0.0.2 is loopback too).
    assert stack.request("POST", "/bid/7", token, b'{"bid": 101}', source="127.0.0.2") != 429
    assert stack.backend_requests() == before + LIMIT + 1


@pytest.mark.parametrize("stack", SUBJECT_GATEWAYS, indirect=True)
def test_a_limit_per_subject_counts_each_user_apart(stack: Stack) -> None:
    """createAuction is limited per token subject: alice's tokens run out, bob's do not."""
    alice, bob = SIGNER.sign(0), SIGNER.sign(1)
    before = stack.backend_requests()
    statuses = [stack.request("POST", "/auctions", alice, b"{}") for _ in range(LIMIT)]
    assert 429 not in statuses, statuses
    assert stack.request("POST", "/auctions", alice, b"{}") == 429
    assert stack.backend_requests() == before + LIMIT
    assert stack.request("POST", "/auctions", bob, b"{}") != 429
    assert stack.backend_requests() == before + LIMIT + 1, "bob's request did not reach the backend"


@pytest.mark.parametrize("stack", HEADER_GATEWAYS, indirect=True)
def test_a_limit_per_header_counts_each_value_apart(stack: Stack) -> None:
    """createAuction is limited per X-Client value on the gateways without a subject limit."""
    token = SIGNER.sign(0)
    before = stack.backend_requests()
    statuses = [stack.request("POST", "/auctions", token, b"{}", client="a") for _ in range(LIMIT)]
    assert 429 not in statuses, statuses
    assert stack.request("POST", "/auctions", token, b"{}", client="a") == 429
    assert stack.backend_requests() == before + LIMIT
    assert stack.request("POST", "/auctions", token, b"{}", client="b") != 429
    assert stack.backend_requests() == before + LIMIT + 1, "client b did not reach the backend"


SCOPE_CASES: list[tuple[str, RateLimitKey]] = [
    *((g, "address") for g in LIMIT_GATEWAYS),
    *((g, "header") for g in _declaring("rate_limit.header")),
    *((g, "subject") for g in SUBJECT_GATEWAYS),
]


def scope_policy_set(key: RateLimitKey) -> PolicySet:
    """One rate limit for every operation (``policies.rate_limit`` with no override), counted
    per client address, X-Client value or token subject; JWT with the subject key."""
    jwt = None
    if key == "subject":
        jwt = JwtAuth(
            issuer=ISSUER,
            audience=AUDIENCE,
            algorithms=("RS256",),
            keys_file="keys/public.pem",
            keys=public_pem(PRIVATE),
            keys_format="pem",
        )
    header = "X-Client" if key == "header" else None
    limit = RateLimit(requests=LIMIT, window=30.0, key=key, header=header)
    return PolicySet(default=Policies(auth=jwt, rate_limit=limit))


@pytest.fixture(scope="module")
def scope_stack(
    request: pytest.FixtureRequest,
    supervisor: Supervisor,
    replay_api: object,
) -> Iterator[tuple[Stack, str]]:
    api: Api = replay_api("auction")  # type: ignore[operator]
    name, key = request.param
    with _booted_stack(supervisor, api, name, scope_policy_set(key), "scope") as booted:
        yield booted, key


@pytest.mark.parametrize(
    "scope_stack", SCOPE_CASES, indirect=True, ids=[f"{g}-{k}" for g, k in SCOPE_CASES]
)
def test_a_limit_for_all_operations_counts_each_operation_apart(
    scope_stack: tuple[Stack, str],
) -> None:
    """A limit given for every operation applies to each operation separately (docs/gateways.md,
    Policies): LIMIT GETs use up getAuction's count for this key, the bid (another operation,
    same key) still passes, the next GET gets 429; then the bid's own count runs out too."""
    stack, key = scope_stack
    token, client = SIGNER.sign(0), "scope-a"
    before = stack.backend_requests()
    statuses = [
        stack.request("GET", f"/auctions/{20 + i}", token, client=client) for i in range(LIMIT)
    ]
    assert statuses == [200] * LIMIT, statuses
    bid = stack.request("POST", "/bid/21", token, b'{"bid": 5}', client=client)
    assert bid == 200, f"{stack.gateway}: the bid, another operation, got {bid}"
    assert stack.backend_requests() == before + LIMIT + 1
    status = stack.request("GET", "/auctions/24", token, client=client)
    assert status == 429, f"{stack.gateway}: GET number {LIMIT + 1} got {status}"
    assert stack.backend_requests() == before + LIMIT + 1, "the GET past the limit reached it"
    bids = [
        stack.request("POST", "/bid/21", token, json.dumps({"bid": 6 + i}).encode(), client=client)
        for i in range(LIMIT - 1)
    ]
    assert bids == [200] * (LIMIT - 1), bids
    status = stack.request("POST", "/bid/21", token, b'{"bid": 50}', client=client)
    assert status == 429, f"{stack.gateway}: bid number {LIMIT + 1} got {status}"
    assert stack.backend_requests() == before + 2 * LIMIT, "the bid past the limit reached it"
    # Another key (address, X-Client value or subject) still has its own count on both.
    source = "127.0.0.2" if key == "address" else "127.0.0.1"
    other_client = "scope-b" if key == "header" else client
    other_token = SIGNER.sign(1) if key == "subject" else token
    for method, path, body in (("GET", "/auctions/25", None), ("POST", "/bid/21", b'{"bid": 60}')):
        status = stack.request(method, path, other_token, body, source=source, client=other_client)
        assert status == 200, f"{stack.gateway}: another {key} on {method} {path} got {status}"
    assert stack.backend_requests() == before + 2 * LIMIT + 2


KEY_GATEWAYS = _declaring("auth.api_key")
KEYS_ENV = "GATEBENCH_TEST_REPLAY_KEYS"
KEYS = ("replay-key-0123456789abcdef", "replay.key_2~ABCDEFGHIJ")
TOKEN = SIGNER.sign(0)
"""The auction backend itself wants a bearer token: every request carries one."""


def key_policy_set(supported: frozenset[str]) -> PolicySet:
    """Keys in the X-Api-Key header (create, GET) or the api_key query parameter (bid); a cache
    on the GET keyed on the path only where the gateway declares it."""
    header = ApiKeyAuth(header="X-Api-Key", query=None, keys_env=KEYS_ENV)
    query = ApiKeyAuth(header=None, query="api_key", keys_env=KEYS_ENV)
    cache = Cache(ttl=60.0, vary=("path",)) if "cache.path_only" in supported else None
    policies = PolicySet(
        default=Policies(auth=header),
        operations=(
            ("bid", Policies(auth=query)),
            ("getAuction", Policies(auth=header, cache=cache)),
        ),
    )
    return with_api_keys(policies, {KEYS_ENV: ",".join(KEYS)})


@pytest.fixture(scope="module")
def key_stack(
    request: pytest.FixtureRequest,
    supervisor: Supervisor,
    replay_api: object,
) -> Iterator[Stack]:
    api: Api = replay_api("auction")  # type: ignore[operator]
    name: str = request.param
    policies = key_policy_set(get_renderer(name).supported_policies)
    with _booted_stack(supervisor, api, name, policies, "keys") as booted:
        yield booted


def _key(value: str) -> dict[str, str]:
    return {"X-Api-Key": value}


@pytest.mark.parametrize("key_stack", KEY_GATEWAYS, indirect=True)
def test_a_valid_api_key_in_the_header_passes(key_stack: Stack) -> None:
    before = key_stack.backend_requests()
    for n, key in enumerate(KEYS):
        status = key_stack.request("GET", f"/auctions/{11 + n}", TOKEN, extra=_key(key))
        assert status == 200, f"{key_stack.gateway}: key {n + 1} in the header got {status}"
    # The backend answers 415 to this body (it wants multipart): it was reached.
    assert key_stack.request("POST", "/auctions", TOKEN, b"{}", extra=_key(KEYS[1])) == 415
    assert key_stack.backend_requests() == before + 3


@pytest.mark.parametrize("key_stack", KEY_GATEWAYS, indirect=True)
def test_a_valid_api_key_in_the_query_passes(key_stack: Stack) -> None:
    before = key_stack.backend_requests()
    for n, key in enumerate(KEYS):
        body = json.dumps({"bid": 1000 + n}).encode()
        status = key_stack.request("POST", f"/bid/9?api_key={key}", TOKEN, body)
        assert status == 200, f"{key_stack.gateway}: key {n + 1} in the query got {status}"
    status = key_stack.request("POST", f"/bid/9?x=1&api_key={KEYS[0]}&y=2", TOKEN, b'{"bid": 2000}')
    assert status == 200, f"{key_stack.gateway}: a key between other parameters got {status}"
    assert key_stack.backend_requests() == before + 3


@pytest.mark.parametrize("key_stack", KEY_GATEWAYS, indirect=True)
@pytest.mark.parametrize(
    ("label", "headers", "query"),
    [
        ("absent", {}, ""),
        ("wrong", _key("replay-key-0123456789abcdeX"), "?api_key=replay-key-0123456789abcdeX"),
        ("wrongly cased", _key(KEYS[0].upper()), f"?api_key={KEYS[0].upper()}"),
        ("extended", _key(KEYS[0] + "0"), f"?api_key={KEYS[0]}0"),
        ("a prefix", _key(KEYS[0][:-1]), f"?api_key={KEYS[0][:-1]}"),
        (
            "with '.' as any character",
            _key("replayXkey_2~ABCDEFGHIJ"),
            "?api_key=replayXkey_2~ABCDEFGHIJ",
        ),
        (
            "in the other place",
            {"api_key": KEYS[0]},
            "",
        ),
        ("empty", _key(""), "?api_key="),
    ],
)
def test_a_bad_api_key_is_refused_by_the_gateway(
    key_stack: Stack, label: str, headers: dict[str, str], query: str
) -> None:
    before = key_stack.backend_requests()
    header_paths = [("POST", "/auctions" + query, b"{}"), ("GET", "/auctions/1" + query, None)]
    # The bid reads its key from the query: the header form is "the other place" there.
    bid_query = query if label != "in the other place" else ""
    bid_headers = headers if label != "in the other place" else _key(KEYS[0])
    for method, path, body in header_paths:
        status = key_stack.request(method, path, TOKEN, body, extra=headers)
        assert status in (401, 403), f"{key_stack.gateway}: {label} key on {path} got {status}"
    status = key_stack.request(
        "POST", f"/bid/9{bid_query}", TOKEN, b'{"bid": 1}', extra=bid_headers
    )
    assert status in (401, 403), f"{key_stack.gateway}: {label} key on the bid got {status}"
    assert key_stack.backend_requests() == before, (
        f"{key_stack.gateway}: a {label} API key reached the backend"
    )


@pytest.mark.parametrize("key_stack", _declaring("cache.path_only"), indirect=True)
def test_a_cache_keyed_on_the_path_only(key_stack: Stack) -> None:
    """GET /auctions/3 is cached on its path: another query is a hit, another path a miss."""
    key = _key(KEYS[0])
    before = key_stack.backend_requests()
    assert key_stack.request("GET", "/auctions/3?page=1", TOKEN, extra=key) == 200
    assert key_stack.backend_requests() == before + 1
    assert key_stack.request("GET", "/auctions/3?page=2", TOKEN, extra=key) == 200
    assert key_stack.request("GET", "/auctions/3", TOKEN, extra=key) == 200
    assert key_stack.backend_requests() == before + 1, "another query reached the backend"
    assert key_stack.request("GET", "/auctions/6?page=1", TOKEN, extra=key) == 200
    assert key_stack.backend_requests() == before + 2, "another path did not reach the backend"
