"""A request the target closed its connection on without an answer is a failed request of its
phase, whatever the engine did next (docs/engine.md, "A connection closed without a
response"): Gatling's own resends, which simulation.log hides, read back from the lines its
logback configuration writes and counted in the phase whose time span holds them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from gatebench.core.stats import PhaseSample, phase_stats
from gatebench.local.engines.gatling import RETRY_REASON, attribute_retries, retry_times

ROOT = Path(__file__).resolve().parents[2]
START = 1_796_666_652_000  # the run's start (epoch ms): records are offsets from it


def _line(epoch_ms: int) -> str:
    at = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return f"{at.strftime('%Y-%m-%dT%H:%M:%S')}.{epoch_ms % 1000:03d}Z Retrying with new HTTP/1.1 connection"


def _phase(first: int, last: int, n: int) -> PhaseSample:
    sample = PhaseSample()
    for i in range(n):
        start = first + (last - first) * i // max(1, n - 1)
        sample.add(start, min(last, start + 2), True)
    return sample


def test_the_resend_lines_are_read_to_the_millisecond() -> None:
    lines = [
        _line(START + 12),
        "2026-12-07T17:50:38.425Z Retrying with new HTTP/2 connection",  # not one request
        "garbage",
        _line(START + 1999),
        "",
    ]
    assert retry_times(lines) == [START + 12, START + 1999]


def test_each_resend_is_a_failed_request_of_the_phase_that_holds_it() -> None:
    first, second = _phase(100, 900, 50), _phase(1000, 1800, 50)
    # a resend inside each phase, one between them (a control request's), one at each edge
    pending = [START + t for t in (100, 450, 950, 1000, 1500, 1800, 2500)]
    pending = attribute_retries(first, START, pending)
    assert pending == [START + t for t in (950, 1000, 1500, 1800, 2500)]
    pending = attribute_retries(second, START, pending)
    assert pending == [START + 2500]  # a later phase's
    for sample, resent in ((first, 2), (second, 3)):
        stats = phase_stats(sample)
        assert (stats.requests, stats.ok, stats.ko) == (50 + resent, 50, resent)
        assert dict(stats.errors) == {RETRY_REASON: resent}
        # the failed attempt has no time of its own (the resent request's includes it)
        assert sample.unanswered == resent and sample.latency_count == 50


def test_a_phase_without_records_leaves_the_resends_for_later() -> None:
    pending = [START + 5]
    assert attribute_retries(PhaseSample(), START, pending) == pending


def test_only_the_resend_line_reaches_the_file_and_the_console_keeps_warnings_only() -> None:
    config = ET.parse(ROOT / "gatling/src/test/resources/logback-test.xml").getroot()
    appenders = {a.get("name"): a for a in config.iter("appender")}
    retries = appenders["RETRIES"]
    assert [f.get("class") for f in retries.iter("filter")] == ["gatebench.RetryLines"]
    assert retries.findtext("file") == "${gatebench.retries:-/dev/null}"
    assert retries.findtext("encoder/pattern") == "%d{yyyy-MM-dd'T'HH:mm:ss.SSS'Z',UTC} %msg%n"
    console = appenders["CONSOLE"]
    assert console.findtext("filter/level") == "WARN"
    client = next(
        lg
        for lg in config.iter("logger")
        if lg.get("name") == "io.gatling.http.client.impl.DefaultHttpClient"
    )
    assert client.get("level") == "DEBUG"
    assert [r.get("ref") for r in client.iter("appender-ref")] == ["RETRIES"]
    java = (ROOT / "gatling/src/test/java/gatebench/RetryLines.java").read_text()
    assert 'RETRY = "Retrying with new HTTP/1.1 connection"' in java
