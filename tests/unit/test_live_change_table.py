"""docs/scale.md's table of live mechanisms is the renderers' declarations, and every gateway
that runs here declares one it can carry out."""

from __future__ import annotations

import re

from gatebench.core.renderers import all_renderers, live_change_table
from paths import ROOT

DOC = ROOT / "docs" / "scale.md"


def test_the_doc_table_is_the_declarations() -> None:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- live-changes:start -->\n(.*?)<!-- live-changes:end -->", text, re.S)
    assert found, "docs/scale.md has no live-changes markers"
    assert found.group(1) == live_change_table(), (
        "docs/scale.md's table differs from the renderers' live_change declarations; paste "
        "gatebench.core.renderers.live_change_table() between the markers"
    )


def test_every_declaration_is_complete() -> None:
    for renderer in all_renderers():
        change = renderer.live_change
        assert change.mechanism, renderer.name
        if change.kind == "signal":
            assert change.signal in ("SIGHUP", "SIGUSR1", "SIGUSR2"), renderer.name
        if change.kind == "admin-api":
            assert change.path.startswith("/") and change.method, renderer.name
        if change.kind == "command":
            assert change.commands and all(
                c and "{label}" in " ".join(change.commands[0]) for c in change.commands[:1]
            )
    # Each of these has a live mechanism gatebench drives (a gateway without one is listed
    # with a restart, and its restart is what a change under load measures).
    driven = {
        "apache",
        "caddy",
        "envoy",
        "haproxy",
        "nginx",
        "spring-cloud-gateway",
        "traefik",
        "varnish",
        "zuul",
    }
    kinds = {r.name: r.live_change.kind for r in all_renderers() if r.name in driven}
    assert set(kinds) == driven and "restart" not in kinds.values(), kinds
