"""The capacity search: how much of a team's traffic each gateway carries within their latency
objective, per endpoint, with a 95 % confidence interval (docs/capacity.md).

Built like Nighthawk's adaptive load controller (``source/adaptive_load/``): small parts with
one job each, each tested alone on a simulated target before any real load.

* ``_metrics`` — the **metrics plugin**: a probe's raw records (every request's latency from its
  intended start, and how the engine kept its schedule: ``gatebench.core.loadlog``) reduced to
  :class:`ProbeMetrics`.
* ``_scoring`` — the **scoring function**: a probe is ``within`` the objective, ``breached``, or
  ``tester-bound`` (the engine could not offer the rate: never the target's knee).
* ``_controller`` — the **step controller**: exponential growth until the objective breaks,
  geometric bisection to the plan's precision, then a confirmation run at the rate found.
* ``_search`` — **the loop** that connects them for one target on one endpoint, and nothing else.
* ``_campaign`` — repetitions in a shuffled target order, stopped early when every pair's order
  is decided, or when the time budget is spent (it says which).
* ``_summary`` — knees with their intervals, comparisons, the verdict in words, the price.

Pure: no process, no clock of its own (the loop takes one), no engine; the stages that run a
capacity search give it a probe function that offers the load.
"""

from __future__ import annotations

from gatebench.kinds.capacity._campaign import (
    MIN_REPETITIONS_TO_STOP,
    Campaign,
    SearchKey,
    campaign_for,
    drive,
)
from gatebench.kinds.capacity._controller import (
    MAX_CONFIRMATIONS,
    MAX_PROBES,
    MIN_RATE,
    SearchStatus,
    StepController,
)
from gatebench.kinds.capacity._document import (
    CAPACITY_AS_RUN,
    CAPACITY_FORMAT,
    QUICK,
    capacity_as_run,
    capacity_input,
    capacity_problems,
    capacity_workloads,
    measured_index,
    probe_document,
    probe_template,
    settings_dict,
    settings_from_dict,
)
from gatebench.kinds.capacity._metrics import (
    ProbeKind,
    ProbeMetrics,
    ProbeRequest,
    read_probe,
)
from gatebench.kinds.capacity._result import (
    FORMAT,
    RESULT_KEY,
    RESULT_KIND,
    CapacityResult,
    CurvePoint,
    EndpointResult,
    capacity_result,
    capacity_status,
    stored_capacity,
)
from gatebench.kinds.capacity._scoring import (
    Outcome,
    TesterLimits,
    Verdict,
    breaches,
    late_threshold_ms,
    score_probe,
)
from gatebench.kinds.capacity._search import (
    Probe,
    ProbeOutcome,
    SearchResult,
    TargetDown,
    ceiling_of,
    ceiling_settings,
    search,
    start_rate_for,
)
from gatebench.kinds.capacity._summary import (
    BASELINE,
    Comparison,
    KneeSummary,
    all_decided,
    below_text,
    compare,
    price_per_million,
    price_text,
    rate_text,
    share_of_baseline,
    summarize,
    undecided_pairs,
    verdict,
)
from gatebench.kinds.capacity._thresholds import evaluate_capacity

__all__ = [
    "BASELINE",
    "CAPACITY_AS_RUN",
    "CAPACITY_FORMAT",
    "FORMAT",
    "MAX_CONFIRMATIONS",
    "MAX_PROBES",
    "MIN_RATE",
    "MIN_REPETITIONS_TO_STOP",
    "QUICK",
    "RESULT_KEY",
    "RESULT_KIND",
    "Campaign",
    "CapacityResult",
    "Comparison",
    "CurvePoint",
    "EndpointResult",
    "KneeSummary",
    "Outcome",
    "Probe",
    "ProbeKind",
    "ProbeMetrics",
    "ProbeOutcome",
    "ProbeRequest",
    "SearchKey",
    "SearchResult",
    "SearchStatus",
    "StepController",
    "TargetDown",
    "TesterLimits",
    "Verdict",
    "all_decided",
    "below_text",
    "breaches",
    "campaign_for",
    "capacity_as_run",
    "capacity_input",
    "capacity_problems",
    "capacity_result",
    "capacity_status",
    "capacity_workloads",
    "ceiling_of",
    "ceiling_settings",
    "compare",
    "drive",
    "evaluate_capacity",
    "late_threshold_ms",
    "measured_index",
    "price_per_million",
    "price_text",
    "probe_document",
    "probe_template",
    "rate_text",
    "read_probe",
    "score_probe",
    "search",
    "settings_dict",
    "settings_from_dict",
    "share_of_baseline",
    "start_rate_for",
    "stored_capacity",
    "summarize",
    "undecided_pairs",
    "verdict",
]
