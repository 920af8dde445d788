"""The table of docs/scale.md: how each gateway takes a new configuration while it runs,
from the renderers' own declarations (``Renderer.live_change``)."""

from __future__ import annotations

from gatebench.core.renderers._registry import all_renderers


def live_change_table() -> str:
    """One row per gateway: its mechanism's kind, whether it runs here, and the mechanism."""
    rows = ["| gateway | kind | runs here | mechanism |", "|---|---|---|---|"]
    for renderer in all_renderers():
        change = renderer.live_change
        here = (
            "cloud path only"
            if not renderer.runs_here
            else "where installed"
            if renderer.vendor_installed
            else "yes"
        )
        rows.append(f"| {renderer.name} | {change.kind} | {here} | {change.mechanism} |")
    return "\n".join(rows) + "\n"


__all__ = ["live_change_table"]
