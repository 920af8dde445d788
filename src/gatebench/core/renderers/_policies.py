"""Policies per gateway: which gateways can apply a plan's policies, the configuration with
them applied, and the support matrix docs/gateways.md carries.

Each renderer declares the policy features it renders natively (``supported_policies``) and
the values it cannot express (``policy_limits``); a gateway lacking one the plan needs is left
out of the comparison with the reason (:func:`policy_exclusions`), never run without it
silently, nor with a limit other than the plan's. ``--allow-missing-policies``
runs it bare instead, marked as such (:func:`render_with_policies` with ``allow_missing``).
"""

from __future__ import annotations

from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.policies import (
    FEATURE_LABELS,
    FEATURES,
    PolicySet,
    missing_features,
    missing_reason,
)
from gatebench.core.renderers._base import Renderer, RenderTarget
from gatebench.core.renderers._registry import all_renderers

POLICIES_POINTER = "/x-gatebench/policies"
LEFT_OUT = "; it is left out (--allow-missing-policies runs it without them, marked)"
"""What a render refused for its policies says of the run (``gatebench render --policies``)."""


def policy_exclusions(gateways: tuple[str, ...], policies: PolicySet) -> dict[str, str]:
    """Gateway → why it cannot apply ``policies`` (absent: it can)."""
    from gatebench.core.renderers._registry import get_renderer

    out: dict[str, str] = {}
    for name in gateways:
        reason = _exclusion_reason(get_renderer(name), policies)
        if reason is not None:
            out[name] = reason
    return out


def _exclusion_reason(renderer: Renderer, policies: PolicySet) -> str | None:
    """Why ``renderer`` cannot apply ``policies``: a feature it lacks, else a value it cannot
    express (``Renderer.policy_limits``); ``None`` when it can."""
    missing = missing_features(renderer.supported_policies, policies)
    limits = () if missing or policies.empty else renderer.policy_limits(policies)
    if not missing and not limits:
        return None
    return missing_reason(renderer.name, missing, renderer.policy_gaps, limits)


def render_with_policies(
    renderer: Renderer,
    api: Api,
    target: RenderTarget,
    policies: PolicySet,
    *,
    allow_missing: bool = False,
) -> dict[str, str]:
    """Every file of the configuration with ``policies`` enforced.

    Raises :class:`UnsupportedFeature` (pointer ``/x-gatebench/policies``) when the gateway
    lacks a feature the policies need or cannot express one of their values; with
    ``allow_missing`` it renders the bare proxy instead (the caller marks the result as run
    without its policies).
    """
    files = renderer.render(api, target)
    if policies.empty:
        return files
    reason = _exclusion_reason(renderer, policies)
    if reason is not None:
        if allow_missing:
            return files
        raise UnsupportedFeature([Problem(POLICIES_POINTER, reason + LEFT_OUT)])
    return renderer.apply_policies(files, api, target, policies)


def support_matrix() -> str:
    """The Markdown table of docs/gateways.md: one row per feature, one column per gateway."""
    renderers = all_renderers()
    head = "| policy | " + " | ".join(r.name for r in renderers) + " |"
    rule = "|---|" + "---|" * len(renderers)
    rows = [head, rule]
    for feature in FEATURES:
        cells = ["yes" if feature in r.supported_policies else "—" for r in renderers]
        rows.append(f"| {FEATURE_LABELS[feature]} (`{feature}`) | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


__all__ = ["POLICIES_POINTER", "policy_exclusions", "render_with_policies", "support_matrix"]
