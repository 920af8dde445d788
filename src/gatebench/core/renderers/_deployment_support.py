"""Which gateways can render a deployment (TLS, a pool of replicas), from their own
declarations: the exclusions a run reports and the support matrix docs/gateways.md carries."""

from __future__ import annotations

from collections.abc import Iterable

from gatebench.core.renderers._deployment import FEATURE_LABELS, FEATURES, missing_reason
from gatebench.core.renderers._registry import all_renderers, get_renderer


def deployment_exclusions(gateways: Iterable[str], needs: frozenset[str]) -> dict[str, str]:
    """Gateway → why it cannot render what ``needs`` asks (absent: it can)."""
    out: dict[str, str] = {}
    for name in gateways:
        renderer = get_renderer(name)
        missing = needs - renderer.supported_deployment
        if missing:
            out[name] = missing_reason(name, missing, renderer.deployment_gaps)
    return out


def deployment_matrix() -> str:
    """The Markdown table of docs/gateways.md ("TLS and replicas"): one row per feature and
    one for the health checks, one column per gateway."""
    renderers = all_renderers()
    rows = [
        "| deployment | " + " | ".join(r.name for r in renderers) + " |",
        "|---|" + "---|" * len(renderers),
    ]
    for feature in FEATURES:
        cells = ["yes" if feature in r.supported_deployment else "—" for r in renderers]
        rows.append(f"| {FEATURE_LABELS[feature]} (`{feature}`) | " + " | ".join(cells) + " |")
    rows.append(
        "| health checks of the replicas | "
        + " | ".join(r.health_checks if r.health_checks != "none" else "—" for r in renderers)
        + " |"
    )
    return "\n".join(rows) + "\n"


__all__ = ["deployment_exclusions", "deployment_matrix"]
