"""The local fan-out's refusals and URL rewriting (gatebench._fanout; the runs themselves are in
tests/integration/test_testers_local.py)."""

from __future__ import annotations

import os

import pytest

from gatebench._fanout import fanout_problem, for_host
from gatebench._netns import LoadHost


def test_not_root_refuses_more_than_one_tester(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert fanout_problem(2, "gatling") == (
        "--testers 2 runs each tester in a network namespace of its own, and network "
        "namespaces need root; run as root or use --testers 1"
    )
    assert fanout_problem(1, "gatling") is None
    assert fanout_problem(0, "gatling") == "--testers: expected 1 to 16, got 0"


def test_loopback_urls_point_at_the_host_way_back() -> None:
    host = LoadHost(1, "gbabcdeft1", "100.127.1.2", "100.127.1.1")
    doc = {
        "phases": [
            {
                "request": {"base_url": "http://127.0.0.1:8080/api"},
                "before": [{"url": "http://127.0.0.1:9/__gatebench__/reset"}],
            },
            {"request": {"base_url": "http://example.test:80"}, "before": []},
        ]
    }
    out = for_host(doc, host)
    assert out["phases"][0]["request"]["base_url"] == "http://100.127.1.1:8080/api"
    assert out["phases"][0]["before"][0]["url"] == "http://100.127.1.1:9/__gatebench__/reset"
    assert out["phases"][1]["request"]["base_url"] == "http://example.test:80"
    assert doc["phases"][0]["request"]["base_url"] == "http://127.0.0.1:8080/api"
    assert host.wrapper == ("ip", "netns", "exec", "gbabcdeft1")
