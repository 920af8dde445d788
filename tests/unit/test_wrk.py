"""The wrk engine's pure parts: what it refuses, the Lua data it writes (escaped, no secret),
its histogram arithmetic (wrk's coordinated-omission correction removed exactly) and the
phase result it builds."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatebench.core.errors import RunError, UnsupportedFeature
from gatebench.core.stats import phase_stats
from gatebench.local.engines import ENGINES, get_engine, injection_problem
from gatebench.local.engines.wrk import (
    apply_correction,
    correction_interval,
    lua_string,
    lua_value,
    remove_correction,
    render_phase_data,
    sample_from_result,
    split_users,
    value_texts,
)


def _decode_lua(literal: str) -> bytes:
    """Undo lua_string (the only escapes it writes are \\ddd)."""
    assert literal[0] == literal[-1] == '"'
    body = literal[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        if body[i] == "\\":
            out.append(int(body[i + 1 : i + 4]))
            i += 4
        else:
            out.append(ord(body[i]))
            i += 1
    return bytes(out)


@given(st.text())
def test_lua_strings_escape_everything_but_a_safe_set(text: str) -> None:
    literal = lua_string(text)
    assert re.fullmatch(r'"(?:[A-Za-z0-9 _.,/:=+-]|\\[0-9]{3})*"', literal)
    assert _decode_lua(literal) == text.encode("utf-8")


def test_a_description_string_cannot_end_the_lua_literal() -> None:
    hostile = '"]] os.execute("rm -rf /") --\n\\'
    literal = lua_string(hostile)
    assert '"' not in literal[1:-1] and "\n" not in literal and "(" not in literal
    assert lua_value({"k": [1, 2.5, True, None]}) == '{["k"] = {1, 2.5, true, nil}}'


def test_value_texts_follow_the_gatling_simulation() -> None:
    assert value_texts("a b/é") == {
        "path": "a%20b%2F%C3%A9",
        "query": "a%20b%2F%C3%A9",
        "json": '"a b/é"',
        "json-string": "a b/é",
        "raw": "a b/é",
    }
    assert value_texts(True)["raw"] == "true"
    assert value_texts(7) == {
        "path": "7",
        "query": "7",
        "json": "7",
        "json-string": "7",
        "raw": "7",
    }


def test_only_the_closed_model_runs_on_wrk() -> None:
    assert ENGINES == ("gatling", "wrk")
    assert injection_problem("gatling", "at_once", None, None) is None
    assert injection_problem("wrk", "concurrent", 2.0, None) is None
    assert injection_problem("wrk", "at_once", None, None) == (
        "engine wrk runs only the closed model (concurrent users for a whole number of "
        "seconds); got at_once: use engine: gatling for it"
    )
    assert injection_problem("wrk", "concurrent", None, 100) == (
        "engine wrk cannot stop after a number of requests; give the concurrent users a "
        "duration instead, or use engine: gatling"
    )
    assert injection_problem("wrk", "concurrent", 1.5, None) == (
        "engine wrk runs whole seconds; got 1.5s"
    )
    assert get_engine("wrk").name == "wrk"
    with pytest.raises(RunError, match=r"^no load engine 'k6'; available: gatling, wrk$"):
        get_engine("k6")


def test_split_users_gives_every_thread_the_same_connections() -> None:
    assert split_users(10, cpus=2) == (2, 10)
    assert split_users(7, cpus=2) == (1, 7)
    assert split_users(1, cpus=8) == (1, 1)
    assert split_users(12, cpus=8) == (6, 12)


def _phase(**request: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "method": "POST",
        "base_url": "http://127.0.0.1:8080/api",
        "path": [{"text": "/bid/"}, {"param": "id", "as": "path"}],
        "query": [["q", [{"param": "id", "as": "query"}]], ["key", [{"secret": "API_KEY"}]]],
        "headers": [["X-Tag", [{"text": "t-"}, {"param": "tag", "as": "raw"}]]],
        "auth": [
            {"header": "Authorization", "prefix": "Bearer ", "env": "TOKEN"},
            {"header": "X-Basic", "prefix": "Basic ", "env": ["USER", "PASS"]},
        ],
        "body": {
            "kind": "template",
            "content_type": "application/json",
            "parts": [{"text": '{"bid":'}, {"param": "n", "as": "json"}, {"text": "}"}],
        },
        "expect": [200],
        "timeout_ms": 1500,
    }
    base.update(request)
    return {
        "id": "p0003",
        "index": 3,
        "target": "nginx",
        "workload": "bid",
        "seed": 42,
        "measured": True,
        "injection": {"kind": "concurrent", "users": 6, "duration_ms": 2000},
        "params": {
            "id": {"kind": "range", "low": 1, "high": 9},
            "tag": {"kind": "list", "values": ["a", "b"], "random": False},
            "n": {"kind": "counter", "start": 1, "step": 1},
        },
        "request": base,
    }


SECRETS = {"TOKEN": "s3cret-token", "USER": "ann", "PASS": "pa:ss", "API_KEY": "k&y"}


def test_phase_data_names_secrets_but_never_holds_them(tmp_path: Path) -> None:
    text, env, argv = render_phase_data(
        _phase(), out_path=tmp_path / "out.json", secret_env=SECRETS, cpus=2
    )
    for value in SECRETS.values():
        assert value not in text
    assert env == {
        "GATEBENCH_WRK_SECRET_H0": "Bearer s3cret-token",
        "GATEBENCH_WRK_SECRET_H1": "Basic " + base64.b64encode(b"ann:pa:ss").decode(),
        "GATEBENCH_WRK_SECRET_Q1": "k%26y",
    }
    assert argv == [
        "-t",
        "2",
        "-c",
        "6",
        "-d",
        "2s",
        "--timeout",
        "2s",
        "http://127.0.0.1:8080/",
    ]
    assert text.startswith(
        "-- phase p0003 (nginx · bid), rendered by gatebench.local.engines.wrk\n"
    )
    assert '["path"] = {"/api", "/bid/", {["p"] = "id", ["e"] = "path"}}' in text
    assert '["host"] = "127.0.0.1:8080"' in text


def test_a_line_break_never_reaches_a_header(tmp_path: Path) -> None:
    phase = _phase()
    phase["params"]["tag"]["values"] = ["a", "b\r\nX-Injected: 1"]
    with pytest.raises(RunError, match=r"^a value of header 'X-Tag' holds a line break"):
        render_phase_data(phase, out_path=tmp_path / "o.json", secret_env=SECRETS)


def test_the_engine_refuses_a_document_it_cannot_run_with_the_place(tmp_path: Path) -> None:
    from gatebench.local.procs import Supervisor

    doc = {
        "format": "gatebench-workload/1",
        "secret_env": [],
        "phases": [
            _phase(),
            dict(_phase(), injection={"kind": "at_once", "users": 5}),
        ],
    }
    with Supervisor() as sup, pytest.raises(UnsupportedFeature) as info:
        get_engine("wrk").run(doc, tmp_path, _NoHooks(), supervisor=sup)
    assert [(p.pointer, p.message) for p in info.value.errors] == [
        (
            "/phases/1/injection",
            "engine wrk runs only the closed model (concurrent users for a whole number of "
            "seconds); got at_once: use engine: gatling for it",
        )
    ]


class _NoHooks:
    def on_event(self, event: Any) -> None:
        pass

    def on_phase(self, result: Any) -> None:
        pass

    def tick(self) -> None:
        pass


# -- wrk's histogram ------------------------------------------------------------------------


def test_correction_interval_is_wrks_integer_arithmetic() -> None:
    assert correction_interval(2_001_791, 102_638, 10) == 2_001_791 // 10_263
    assert correction_interval(1_000_000, 5, 10) is None


def test_correction_adds_copies_below_long_latencies() -> None:
    # E = 100: a 350 µs latency adds copies at 250 and 150 (not at 50: not above E)
    assert apply_correction({90: 3, 350: 2}, 100) == {90: 3, 150: 2, 250: 2, 350: 2}
    assert remove_correction({90: 3, 150: 2, 250: 2, 350: 2}, 100) == {90: 3, 350: 2}


@settings(max_examples=300)
@given(
    st.dictionaries(st.integers(0, 3000), st.integers(1, 50), max_size=40),
    st.integers(1, 400),
)
def test_removing_the_correction_restores_what_wrk_recorded(
    bins: dict[int, int], expected: int
) -> None:
    corrected = apply_correction(bins, expected)
    assert remove_correction(corrected, expected) == bins


def test_a_histogram_that_does_not_add_up_is_refused() -> None:
    result = _result(latency_us=[[5000, 10]], requests=12)
    with pytest.raises(
        RunError,
        match=r"^wrk's latency histogram holds 10 latencies and 0 timeouts, but it counted 12 "
        r"responses$",
    ):
        sample_from_result(result, [200], 60000)


def test_a_histogram_read_at_the_wrong_place_is_refused() -> None:
    check = {"ffi_min": 0, "ffi_max": 7, "min": 5000, "max": 5000, "count": 10, "limit": 1}
    with pytest.raises(RunError, match=r"^the script read wrk's latency histogram at the wrong"):
        sample_from_result(_result(histogram_check=check), [200], 60000)


def _result(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format": "gatebench-wrk/1",
        "finished_us": 1_700_000_002_000_000,
        "duration_us": 2_000_000,
        "requests": 10,
        "bytes": 1000,
        "errors": {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0},
        "connections": 2,
        "threads": 1,
        "statuses": [[200, 10]],
        "latency_us": [[5000, 10]],
    }
    base.update(fields)
    return base


def test_a_result_becomes_an_exact_microsecond_sample() -> None:
    # 4 connections, 2 s, 8 responses: E = 2_000_000 // 2 = 1_000_000 µs, nothing corrected
    result = _result(
        requests=8,
        connections=4,
        statuses=[[200, 6], [409, 2]],
        latency_us=[[5012, 3], [5100, 2], [7250, 2]],
        errors={"connect": 0, "read": 1, "write": 0, "status": 2, "timeout": 1},
    )
    sample, start_ms, end_ms = sample_from_result(result, [200], 60000)
    stats = phase_stats(sample)
    # 8 responses and a connection closed without one: 9 requests, 3 failed
    assert (stats.requests, stats.ok, stats.ko) == (9, 6, 3)
    assert stats.min == 5.012  # the failed request has no time: not in the latency figures
    assert stats.p50 == 5.1
    assert stats.max == 60000.0  # the timeout, counted at the timeout
    assert stats.throughput == 4.5
    assert end_ms - start_ms == 2000.0
    assert dict(stats.errors) == {
        "status 409, expected 200": 2,
        "took 60000 ms or more (the timeout; counted at the timeout)": 1,
        "connection closed without a response (wrk read error; no time measured)": 1,
    }


def test_a_connection_closed_without_a_response_is_a_failed_request() -> None:
    # a target that closed (or reset) a kept-alive connection on 5 requests, refused 2
    # connections, and cut 1 request while it was sent: wrk counts 100 responses and the
    # 8 socket errors apart; each of those is a failed request of the phase
    result = _result(
        requests=100,
        statuses=[[200, 100]],
        latency_us=[[5000, 100]],
        errors={"connect": 2, "read": 5, "write": 1, "status": 0, "timeout": 0},
    )
    sample, _, _ = sample_from_result(result, [200], 60000)
    stats = phase_stats(sample)
    assert (stats.requests, stats.ok, stats.ko) == (108, 100, 8)
    assert stats.error_pct == pytest.approx(100.0 * 8 / 108)
    assert dict(stats.errors) == {
        "connection closed without a response (wrk read error; no time measured)": 5,
        "connection refused or failed, no response (wrk connect error; no time measured)": 2,
        "connection closed while the request was sent, no response (wrk write error; no "
        "time measured)": 1,
    }
    # no time of their own: never in the latency figures (at 0 ms the target that dropped
    # them would have been the fastest)
    assert sample.counts[0.0] == 0 and sample.unanswered == 8
    assert stats.min == 5.0


def test_a_target_refusing_every_connection_fails_every_request() -> None:
    result = _result(
        requests=0,
        statuses=[],
        latency_us=[],
        errors={"connect": 40, "read": 0, "write": 0, "status": 0, "timeout": 0},
    )
    stats = phase_stats(sample_from_result(result, [200], 60000)[0])
    assert (stats.requests, stats.ok, stats.ko, stats.error_pct) == (40, 0, 40, 100.0)


def test_without_expect_a_status_below_400_is_ok() -> None:
    result = _result(statuses=[[200, 7], [302, 1], [404, 2]])
    sample, _, _ = sample_from_result(result, [], 60000)
    assert (sample.ok, sample.ko) == (8, 2)
    assert dict(sample.errors) == {"status 404, expected below 400": 2}


def test_the_lua_script_is_package_data() -> None:
    from gatebench.local.engines.wrk import LUA_SCRIPT

    text = LUA_SCRIPT.read_text(encoding="utf-8")
    assert "GATEBENCH_WRK_PHASE" in text
    assert json.dumps("gatebench-wrk/1") in text
