"""The gateway as deployed: TLS termination and an upstream pool, the same for every gateway.

A target may ask a gateway to terminate TLS (``RenderTarget.tls``: the run's certificate,
``gatebench.core.tls``'s protocols and ciphers, ALPN ``h2`` when asked, resumption on or off) and to
spread requests over several backend replicas (``RenderTarget.replicas`` with a ``balance``),
health-checking them where the gateway can. Each renderer declares why it lacks what it does
not render (``deployment_gaps``, names in :data:`FEATURES`); it renders the rest natively
(``supported_deployment``, derived: :func:`supported`); a gateway lacking what a plan needs is left out of the comparison with
the reason (:func:`deployment_exclusions`), never run without it. The health-check settings
every gateway gets are defined here once, and so is the retry policy every pooled gateway
gets (:data:`RETRY_TRIES`, :data:`IDEMPOTENT_METHODS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gatebench.core.errors import Problem, UnsupportedFeature

FEATURES: tuple[str, ...] = (
    "tls",
    "tls.http2",
    "tls.no_resumption",
    "pool.round_robin",
    "pool.least_conn",
)


def supported(gaps: Mapping[str, str]) -> frozenset[str]:
    """The features a renderer with these ``gaps`` renders: every other one, but none of a
    feature that needs one it lacks (``tls.http2`` needs ``tls``)."""
    return frozenset(f for f in FEATURES if f not in gaps and f.split(".", 1)[0] not in gaps)


FEATURE_LABELS: Mapping[str, str] = {
    "tls": "TLS termination (the run's certificate, TLS 1.2 + 1.3)",
    "tls.http2": "HTTP/2 by ALPN",
    "tls.no_resumption": "TLS session resumption off",
    "pool.round_robin": "replicas, round robin",
    "pool.least_conn": "replicas, least connections",
}
FEATURE_POINTERS: Mapping[str, str] = {
    "tls": "/x-gatebench/tls",
    "tls.http2": "/x-gatebench/tls/http2",
    "tls.no_resumption": "/x-gatebench/tls/resumption",
    "pool.round_robin": "/x-gatebench/backend/replicas",
    "pool.least_conn": "/x-gatebench/backend/balance",
}

HEALTH_PATH = "/__gatebench__/health"
"""What active health checks request from each replica (the backend answers 200 there,
straight, never through a gateway: ``gatebench.core.backend.CONTROL_PREFIX``)."""
HEALTH_INTERVAL_S = 1
"""Seconds between two active checks of one replica."""
HEALTH_TIMEOUT_S = 1
"""Seconds a check may take before it counts as failed."""
HEALTH_FALL = 2
"""Failed checks in a row that take a replica out of the pool."""
HEALTH_RISE = 2
"""Passed checks in a row that put it back."""
PASSIVE_FAILS = 1
"""Failed requests (connection refused, reset, timed out) that take a replica out at once,
for gateways that watch real traffic (passive checks)."""
PASSIVE_WINDOW_S = 10
"""How long a replica taken out by passive checks stays out before it is tried again."""

RETRY_TRIES = 3
"""With replicas, the most tries a request gets (the first and at most two more, each on
another replica, within the same timeouts): the one retry policy every pooled gateway is
rendered with, nginx's default spelled out (``proxy_next_upstream error timeout``). A
request whose connection to a replica failed (refused, reset or timed out: nothing was sent)
goes to another replica whatever its method; a request already sent that got no answer
(connection closed or reset, the response timeout) goes to another only when its method is
idempotent (:data:`IDEMPOTENT_METHODS`); an answer, whatever its status, is never retried.
Without replicas nothing is retried (there is nowhere else to send), and nothing is
rendered: docs/gateways.md, "The same pool everywhere"."""
IDEMPOTENT_METHODS: tuple[str, ...] = ("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE")
"""RFC 9110's idempotent methods (section 9.2.2): the ones resent after a failure once sent
(nginx's non-idempotent ones are POST, LOCK and PATCH)."""


def idempotent(method: str) -> bool:
    """True when a request of ``method`` may be resent once it was sent."""
    return method.upper() in IDEMPOTENT_METHODS


def deployment_needs(
    *,
    tls: bool = False,
    http2: bool = False,
    resumption: bool = True,
    replicas: int = 1,
    balance: str = "round_robin",
) -> frozenset[str]:
    """The features (:data:`FEATURES`) a deployment needs."""
    needs: set[str] = set()
    if tls:
        needs.add("tls")
        if http2:
            needs.add("tls.http2")
        if not resumption:
            needs.add("tls.no_resumption")
    if replicas > 1:
        needs.add("pool.least_conn" if balance == "least_conn" else "pool.round_robin")
    return frozenset(needs)


def missing_reason(gateway: str, missing: Iterable[str], gaps: Mapping[str, str]) -> str:
    """One line saying what ``gateway`` cannot render and why (without TLS, what TLS would
    carry goes unsaid)."""
    missing = set(missing)
    if "tls" in missing:
        missing -= {"tls.http2", "tls.no_resumption"}
    parts = []
    for feature in sorted(missing, key=FEATURES.index):
        why = gaps.get(feature)
        label = FEATURE_LABELS[feature]
        parts.append(f"{label}: {why}" if why else label)
    return f"{gateway} cannot render {'; '.join(parts)}"


def refuse_missing(
    gateway: str, supported: frozenset[str], gaps: Mapping[str, str], needs: frozenset[str]
) -> None:
    """:class:`UnsupportedFeature` (located at the plan key) for what the gateway lacks."""
    missing = sorted(needs - supported, key=FEATURES.index)
    if missing:
        raise UnsupportedFeature(
            [
                Problem(FEATURE_POINTERS[missing[0]], missing_reason(gateway, missing, gaps)),
            ]
        )


__all__ = [
    "FEATURES",
    "FEATURE_LABELS",
    "FEATURE_POINTERS",
    "HEALTH_FALL",
    "HEALTH_INTERVAL_S",
    "HEALTH_PATH",
    "HEALTH_RISE",
    "HEALTH_TIMEOUT_S",
    "IDEMPOTENT_METHODS",
    "PASSIVE_FAILS",
    "PASSIVE_WINDOW_S",
    "RETRY_TRIES",
    "deployment_needs",
    "idempotent",
    "missing_reason",
    "refuse_missing",
]
