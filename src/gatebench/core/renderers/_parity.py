"""A fair fight, written down: the rules every renderer follows and how each gateway meets them.

Every gateway is rendered as its vendor advises for production, with the same CPU share and the
same limits as the others (docs/gateways.md, "A fair fight"). The rules are :data:`RULES`; each
renderer declares, in its :attr:`~gatebench.core.renderers.Renderer.parity`, the settings that meet
each rule and the vendor pages they follow. ``gatebench.core.renderers.parity_table`` turns the
declarations into the table of docs/gateways.md, and ``tests/unit/test_parity.py`` renders
every gateway for 1, 2 and 8 cores on both paths and reads the files back to hold each one to
the rules (and fails when the table and the declarations differ).

The numbers every renderer writes are here, once.
"""

from __future__ import annotations

from dataclasses import dataclass

IDLE_TIMEOUT_S = 60
"""A client's idle keep-alive connection is closed after this long by every gateway that has
the setting, and no gateway closes an idle backend connection sooner (the backends gatebench
starts keep theirs 120 s)."""
KEEPALIVE_REQUESTS = 100_000
"""Requests one keep-alive connection may carry where a gateway limits them (nginx, Kong,
Zuul's Tomcat); the others set no limit."""
LISTEN_BACKLOG = 4096
"""Connections a gateway's listener queues before it accepts them, where it has the setting
(Linux's ``net.core.somaxconn`` caps it, 4096 by default; the gateways without the setting
take that): a run that opens a connection per request (``connections: new``, route scale)
must not find one gateway's queue at 100 (Tomcat) or 511 (Apache) and another's at 4096."""
CONNECT_TIMEOUT_S = 10
"""Time to open a connection to the backend."""
RESPONSE_TIMEOUT_S = 300
"""Time the backend may take to answer."""
MAX_CONNECTIONS = 4000
"""The most client connections a gateway is configured to hold (HAProxy's ``maxconn``; the
machine's hard limit is 20,000 open files, and a proxied request holds two):
``gatebench.core.fairness.MAX_CONCURRENCY``."""


@dataclass(frozen=True)
class VendorPage:
    """A page of the gateway's own documentation a setting follows."""

    title: str
    url: str

    def markdown(self) -> str:
        return f"[{self.title}]({self.url})"


@dataclass(frozen=True)
class Parity:
    """How one gateway meets each rule of :data:`RULES` (one line each, in its own words), and
    the vendor pages behind them."""

    cores: str
    pools: str
    keepalive: str
    timeouts: str
    bodies: str
    logs: str
    routes: str
    retries: str
    pages: tuple[VendorPage, ...]
    warmup: str = "none needed (no JIT)"

    def cell(self, rule: str) -> str:
        value: str = getattr(self, rule)
        return value


RULES: tuple[tuple[str, str, str], ...] = (
    (
        "cores",
        "cores → workers",
        "Every gateway is given the same cores (locally an equal share, pinned where the "
        "machine allows; on Google Cloud every vCPU of its own VM) and sets its worker "
        "processes, threads or event loops to that number, the way its vendor advises.",
    ),
    (
        "pools",
        "pools",
        "No upstream connection pool, idle-connection cache or request-thread limit is below "
        "the plan's concurrency (the most requests it holds in flight at once, "
        "`gatebench.core.fairness.plan_concurrency`).",
    ),
    (
        "keepalive",
        "keep-alive, idle",
        f"A client's idle connection closes after {IDLE_TIMEOUT_S} s; a connection carries "
        f"at least {KEEPALIVE_REQUESTS:,} requests; an idle backend connection is kept at "
        f"least {IDLE_TIMEOUT_S} s and reused by any client.",
    ),
    (
        "timeouts",
        "timeouts",
        f"{CONNECT_TIMEOUT_S} s to connect to the backend, {RESPONSE_TIMEOUT_S} s for its answer.",
    ),
    (
        "bodies",
        "bodies",
        "Request bodies of any size stream to the backend.",
    ),
    (
        "logs",
        "logs, metrics",
        "No access log, per-request metrics, tracing, analytics or usage reporting the plan "
        "did not ask for.",
    ),
    (
        "routes",
        "route table",
        "The routes are written as the gateway's own documentation advises for a large table: "
        "no route is evaluated per request where the gateway offers a structure that avoids "
        "it, and the configuration compiles in time linear in the routes.",
    ),
    (
        "warmup",
        "warm-up",
        "A gateway that compiles its code at run time (the JVMs) warms up until its latency "
        "stops falling, in every kind of run and benchmark.",
    ),
    (
        "retries",
        "retries (replicas)",
        "With replicas, one retry policy (`_deployment.RETRY_TRIES`): a request whose "
        "connection to a replica fails (nothing sent) goes to another replica, whatever its "
        "method; one already sent that gets no answer goes to another only when its method is "
        "idempotent; at most 2 more tries, within the same timeouts; an answer is never "
        "retried. Without replicas nothing is retried or rendered.",
    ),
)
"""(key, column title, rule): the rules of a fair fight, in the table's order."""


__all__ = [
    "CONNECT_TIMEOUT_S",
    "IDLE_TIMEOUT_S",
    "KEEPALIVE_REQUESTS",
    "MAX_CONNECTIONS",
    "RESPONSE_TIMEOUT_S",
    "RULES",
    "Parity",
    "VendorPage",
]
