"""The parity table of docs/gateways.md, built from the renderers' declarations
(``Renderer.parity``; the rules in ``_parity``). ``tests/unit/test_parity.py`` fails when the
page and this function differ, and when a rendered file breaks a rule."""

from __future__ import annotations

from gatebench.core.renderers._parity import RULES
from gatebench.core.renderers._registry import all_renderers


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def parity_table() -> str:
    """The rules, numbered, then one row per gateway: how it meets each, and the vendor pages
    it follows (Markdown)."""
    lines = [f"{n}. **{title}**: {rule}" for n, (_, title, rule) in enumerate(RULES, 1)]
    lines.append("")
    header = ["gateway", *(title for _, title, _ in RULES), "vendor pages"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for renderer in all_renderers():
        parity = renderer.parity
        if parity is None:
            cells = [
                f"managed by its provider: {renderer.cloud_only_reason}",
                *("—" for _ in RULES[1:]),
                "—",
            ]
        else:
            cells = [
                *(parity.cell(key) for key, _, _ in RULES),
                "; ".join(page.markdown() for page in parity.pages),
            ]
        lines.append("| " + " | ".join([renderer.name, *map(_cell, cells)]) + " |")
    return "\n".join(lines)


__all__ = ["parity_table"]
