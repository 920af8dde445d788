"""The local fan-out's refusals and URL rewriting (gatebench.local._fanout; the runs themselves are in
tests/integration/test_testers_local.py)."""

from __future__ import annotations

import os

import pytest

from gatebench.local._fanout import fanout_problem, for_host
from gatebench.local._netns import LoadHost


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


def test_the_phase_barrier_waits_for_testers_still_in_earlier_phases() -> None:
    import threading
    import urllib.request

    from gatebench.local._fanout import PhaseBarrier

    # phase 0: testers 0 and 1; phase 1: tester 0 alone (a one-user phase)
    with PhaseBarrier({0: {0, 1}, 1: {0}}, timeout=5) as barrier:
        base = f"http://127.0.0.1:{barrier.port}"
        passed: list[str] = []

        def call(path: str) -> None:
            req = urllib.request.Request(base + path, method="POST")
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.status == 204
            passed.append(path)

        first = threading.Thread(target=call, args=("/1/a/0",))
        first.start()
        first.join(0.5)
        assert passed == []  # tester 1 is still in phase 0
        barrier.gone(1)  # it finished
        first.join(5)
        assert passed == ["/1/a/0"]
        assert barrier.notes == []
        doc = barrier.controls({"phases": [{"index": 3, "before": [{"url": "r"}]}]}, 2)
        assert [c["url"] for c in doc["phases"][0]["before"]] == [
            f"{base}/3/a/2",
            "r",
            f"{base}/3/b/2",
        ]


def test_the_cli_refuses_a_tester_count_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    from gatebench.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "tests/data/engine/items.yaml", "--testers", "17"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert (
        err
        == "gatebench run: error: argument --testers: expected a whole number from 1 to 16, got '17'"
    )


def test_a_tester_left_behind_is_not_waited_for_again_and_gone_is_an_endpoint() -> None:
    """The cloud path's testers reach the barrier over the network: a tester that ends says
    so with ``/gone/T``; one that never comes is left behind once (a note), and later
    barriers do not wait for it; ``record`` is what tester 0 keeps with its load-done."""
    import time
    import urllib.request

    from gatebench.local._fanout import PhaseBarrier, barrier_controls

    def call(base: str, path: str) -> int:
        req = urllib.request.Request(base + path, method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status)

    with PhaseBarrier({0: {0, 1, 2}, 1: {0, 1, 2}}, timeout=0.5) as barrier:
        base = f"http://127.0.0.1:{barrier.port}"
        assert call(base, "/gone/2") == 204  # tester 2 ended: nobody waits for it
        started = time.monotonic()
        assert call(base, "/0/a/0") == 204  # tester 1 never comes: 0.5 s, then a note
        assert call(base, "/0/b/0") == 204  # already left behind: no second wait
        assert call(base, "/1/a/0") == 204
        assert call(base, "/1/b/0") == 204
        assert time.monotonic() - started < 1.5
        assert barrier.notes == [
            "phase 0: tester(s) [1] did not reach the barrier within 0.5s; the others went on"
        ]
        assert barrier.record() == {
            "phases": {"0": {"a": [0], "b": [0]}, "1": {"a": [0], "b": [0]}},
            "notes": barrier.notes,
        }
        try:
            call(base, "/gone/x")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
        else:
            raise AssertionError("/gone/x answered")
    doc = barrier_controls({"phases": [{"index": 4, "before": []}]}, 1, "http://t0:8090")
    assert [c["url"] for c in doc["phases"][0]["before"]] == [
        "http://t0:8090/4/a/1",
        "http://t0:8090/4/b/1",
    ]
