"""What each load engine can run: the data a plan is checked against.

It is core, apart from the engines that run the load (``gatebench.local.engines``), so reading a
plan (``gatebench.core.plan``) loads no engine, no process management, nothing that runs.
``engines`` re-exports both names for the code that starts an engine.
"""

from __future__ import annotations

ENGINES = ("gatling", "wrk")
"""Every engine, sorted; a plan picks one with ``engine:`` (``gatling`` by default).

- ``gatling``: every injection profile, whole-millisecond latencies (docs/engine.md).
- ``wrk``: closed-model load only (concurrent users for whole seconds), microsecond
  latencies (docs/trust.md)."""
ANSWER_CHECKING = ("gatling", "loadgen")
"""The engines that check every answer of a measured phase against the request it answers
(gatebench.core.answers, docs/trust.md "Right answers under load"). wrk does not: its Lua
``request`` and ``response`` hooks run per thread, not per connection, so an answer cannot be
matched to the request it answers when a thread keeps several connections, its LuaJIT has no
SHA-256, and a ``response`` hook makes wrk hand every header and body to Lua, the CPU that
makes it the light engine; its phases are recorded unchecked (``answers_checked`` False)."""
ENGINE_WARMUP_S = {"gatling": 20.0}
"""How long an engine with a JIT compiler loads the backend itself, checking its answers, before
the first phase of a run, so that no target is measured on a colder engine than the others
(docs/trust.md, "The engine's own warm-up": measured, 10 s left 2-4 % and 20 s none)."""
WRK_SUPPORTED = "the closed model (concurrent users for a whole number of seconds)"


def engine_warmup_s(engine: str) -> float:
    """How long ``engine`` warms itself before a run's first phase (``ENGINE_WARMUP_S``)."""
    return ENGINE_WARMUP_S.get(engine, 0.0)


def checks_answers(engine: str) -> bool:
    """Whether ``engine`` checks the answers of the phases the workload asks it to check."""
    return engine in ANSWER_CHECKING


def injection_problem(
    engine: str, kind: str, duration_s: float | None, requests: int | None
) -> str | None:
    """Why ``engine`` cannot run an injection profile (None: it can). Gatling runs them all."""
    if engine == "wrk":
        return wrk_injection_problem(kind, duration_s, requests)
    return None


def token_pool_problem(engine: str, subjects: int) -> str | None:
    """Why ``engine`` cannot give each simulated user its own signed token (``auth.jwt`` with
    a pool of ``subjects``); None: it can. wrk's Lua script runs per thread, not per
    connection, so it sends one token from every connection."""
    if engine == "wrk" and subjects > 1:
        return (
            f"engine wrk sends one token from every connection; a pool of {subjects} subjects "
            "(one token per simulated user) needs engine: gatling, or subjects: 1"
        )
    return None


def tls_problem(engine: str, *, http2: bool) -> str | None:
    """Why ``engine`` cannot load a TLS plan (None: it can). Gatling trusts the run's CA
    only (its trust store) and speaks HTTP/2 by ALPN; wrk checks no certificate at all and
    speaks HTTP/1.1 only."""
    if engine == "wrk":
        what = "speaks no HTTP/2 and " if http2 else ""
        return (
            f"engine wrk {what}accepts any server certificate, so it cannot load a TLS plan "
            "trusting the run's CA only; use engine: gatling"
        )
    return None


def wrk_injection_problem(kind: str, duration_s: float | None, requests: int | None) -> str | None:
    """Why wrk cannot run this injection profile (None: it can)."""
    if kind != "concurrent":
        return f"engine wrk runs only {WRK_SUPPORTED}; got {kind}: use engine: gatling for it"
    if requests is not None:
        return (
            "engine wrk cannot stop after a number of requests; give the concurrent users a "
            "duration instead, or use engine: gatling"
        )
    if duration_s is None:
        return "engine wrk needs a duration for concurrent users"
    if abs(duration_s - round(duration_s)) > 1e-9 or duration_s < 1:
        return f"engine wrk runs whole seconds; got {duration_s:g}s"
    return None


__all__ = [
    "ANSWER_CHECKING",
    "ENGINES",
    "ENGINE_WARMUP_S",
    "WRK_SUPPORTED",
    "checks_answers",
    "engine_warmup_s",
    "injection_problem",
    "tls_problem",
    "token_pool_problem",
    "wrk_injection_problem",
]
