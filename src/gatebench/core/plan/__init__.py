"""The benchmark plan: what to run, read from ``x-gatebench`` (or a separate benchmark file).

Every key is checked; unknown keys are errors with a suggestion, because a typo such as
``repetiton: 10`` would otherwise silently run the default. Every problem is collected and
located (JSON pointer into the document that holds the section) before :class:`PlanError`
is raised.

Secrets never live in a plan. Cloud credentials are refused outright (the cloud path runs as
its own service accounts), and authentication tokens are named by environment variable
(``auth: {bearer: {env: API_TOKEN}}``): the value is read when requests are sent, and never
stored.

Sketch::

    x-gatebench:
      gateways: [nginx, haproxy, caddy]
      baseline: true
      repetitions: 10
      warmup: {duration: 5s}
      backend: {mock: {latency: 5ms}}        # or {url: http://10.0.0.5:8080}, {builtin: auction}
      # backend: {mock: true, replicas: 3, balance: least_conn}   # an upstream pool
      # tls: {key: ecdsa-p256, http2: true}  # TLS at every gateway, a throwaway CA per run
      # fault: {replica: 2, workload: bid, at: 50%}   # a replica killed mid-phase
      engine: gatling                        # or wrk: closed-model load only (docs/trust.md)
      auth: {bearer: {env: AUCTION_TOKEN}}
      scoring: {profile: paper}
      workloads:
        - name: bid
          operation: bid                      # operationId, or "POST /auctions/{auctionId}/bids"
          params: {auctionId: {range: [1, 100]}, amount: {counter: {start: 1}}}
          body: {json: {amount: "${amount}"}}
          injection: {concurrent: 50, duration: 30s}

The package: ``_document`` (every key as written: its type, default, bounds, documentation
and message, in typed models that generate the JSON Schema shipped for editors),
``_build`` (what was read into the plan, checked as a whole), ``_policies``, ``_checks``
(against the description and the engines), ``_model`` (the plan as data), ``_load`` (where
the section comes from), ``_describe`` (words).
"""

from __future__ import annotations

from gatebench.core.plan import _model
from gatebench.core.plan._build import build_plan
from gatebench.core.plan._checks import find_operation
from gatebench.core.plan._describe import (
    CANNOT_APPLY,
    CANNOT_DEPLOY,
    LeftOut,
    deployment_needs_of,
    describe_injection,
    describe_plan,
    left_out,
    workload_summary,
)
from gatebench.core.plan._document import OTHERS_PREFIX, SCHEMA_PATH, json_schema, schema_text
from gatebench.core.plan._load import load_plan
from gatebench.core.plan._model import *  # noqa: F403  (the plan as data: every name it exports)
from gatebench.core.plan._traffic import scaled_counts

__all__ = [
    "CANNOT_APPLY",
    "CANNOT_DEPLOY",
    "OTHERS_PREFIX",
    "SCHEMA_PATH",
    "LeftOut",
    "build_plan",
    "deployment_needs_of",
    "describe_injection",
    "describe_plan",
    "find_operation",
    "json_schema",
    "left_out",
    "load_plan",
    "scaled_counts",
    "schema_text",
    "workload_summary",
]
__all__ += _model.__all__
