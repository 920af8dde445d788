"""Access logs in every format gatebench imports (written for these tests: tests/data/traffic),
read into what a replay needs: each request's operation, arrival, status and size; every line
that does not fit located and counted; gzip read incrementally, several files in time order;
bad input in bounded memory."""

from __future__ import annotations

import gzip
import io
import random
import re
import tracemalloc
from pathlib import Path

import pytest

from gatebench.core.errors import TrafficError
from gatebench.core.ir import Api
from gatebench.core.spec import load_spec
from gatebench.core.traffic import ImportOptions, TrafficImport, Window, import_traffic
from gatebench.core.traffic._formats import builtin, compile_format
from gatebench.core.traffic._logs import (
    Chunk,
    Skips,
    columns_by_line,
    columns_of,
    read_chunks,
    read_columns,
)
from gatebench.core.traffic._summary import import_stats, path_shape
from paths import DATA

TRAFFIC = DATA / "traffic"


@pytest.fixture(scope="module")
def shop() -> Api:
    api = load_spec(TRAFFIC / "shop.yaml").api
    assert api is not None
    return api


def imported(api: Api, *names: str, **options: object) -> TrafficImport:
    paths = [n if isinstance(n, Path) else TRAFFIC / n for n in names]
    return import_traffic(api, paths, ImportOptions(**options), spec_ref=None)  # type: ignore[arg-type]


def ops(result: TrafficImport) -> dict[str, int]:
    stats = import_stats(result)
    return {o["operation"]: o["requests"] for o in stats["operations"]}


def test_combined_lines_become_requests_matched_with_the_gateways_routing(shop: Api) -> None:
    result = imported(shop, "combined.log")
    assert result.format == "combined"
    # /api/users/me is the literal route, not /api/users/{userId} with "me"
    assert ops(result) == {
        "getItem": 4,
        "listItems": 2,
        "createItem": 1,
        "getMe": 1,
        "deleteItem": 1,
        "getUser": 1,
    }
    stats = import_stats(result)
    assert stats["requests"]["read"] == 13
    assert stats["requests"]["matched"] == 10
    assert stats["requests"]["unmatched"] == 2
    assert stats["requests"]["not_requests"] == 1  # the TLS handshake nginx logged as a request
    # the line that is no access log line: skipped, its place named
    assert result.skips.count == 1
    assert result.skips.shown == [("combined.log", 11, "not in the combined format")]
    unmatched = {(u["method"], u["path"], u["reason"]): u["requests"] for u in stats["unmatched"]}
    assert unmatched == {
        ("GET", "/api/health", "path"): 1,
        ("PATCH", "/api/items/{n}", "method"): 1,
    }
    get_item = next(o for o in stats["operations"] if o["operation"] == "getItem")
    assert get_item["statuses"] == {"200": 75.0, "404": 25.0}


def test_a_request_time_moves_the_arrival_back_by_the_duration(shop: Api) -> None:
    result = imported(shop, "combined_time.log")
    assert result.format == "combined+time"
    assert result.stats is not None
    # the upload logged at 12:00:03 after 2.75 s arrived at 12:00:00 (+0.5 - 2.75 = 0.75)
    index = [o.operation_id for o in result.stats.matcher.operations].index("putImage")
    first = min(result.stats.total_curve())
    assert result.stats.operation_curve(index) == {first: 1}
    assert first == 1769860800


def test_common_and_apache_microsecond_request_times(shop: Api) -> None:
    common = imported(shop, "common.log")
    assert common.format == "common"
    assert ops(common) == {"getItem": 2, "listItems": 1, "createItem": 1}
    usec = imported(shop, "apache_common_usec.log")
    assert usec.format == "common+time_us"
    assert usec.stats is not None
    # 2,500,000 µs: the upload logged at :37 arrived 2.5 s before the middle of that second
    assert usec.stats.first == pytest.approx(971211336.5 - 0.001542)
    assert ops(usec) == {"getItem": 1, "putImage": 1}


def test_an_nginx_log_format_given_by_the_user(shop: Api) -> None:
    template = (TRAFFIC / "nginx_custom.format").read_text()
    result = imported(shop, "nginx_custom.log", log_format=template)
    assert result.format == "nginx"
    assert result.stats is not None and result.stats.precise  # $msec wins over $time_iso8601
    stats = import_stats(result)
    put = next(o for o in stats["operations"] if o["operation"] == "putImage")
    assert put["requests"] == 2
    assert put["request_bytes"] == {"median": 48211, "p90": 96211, "max": 96211}
    # $msec minus $request_time: the arrivals, to the millisecond
    assert result.stats.first == pytest.approx(1769860800.0)
    assert result.stats.last == pytest.approx(1769860801.498)


def test_envoys_default_format(shop: Api) -> None:
    result = imported(shop, "envoy.log")
    assert result.format == "envoy"
    assert result.stats is not None and result.stats.precise
    assert ops(result) == {"getItem": 1, "createItem": 1, "putImage": 1, "getMe": 1}
    stats = import_stats(result)
    assert stats["unmatched"] == [{"method": "GET", "path": "/", "reason": "path", "requests": 1}]
    # %START_TIME% is the arrival, to the millisecond
    assert result.stats.first == pytest.approx(1796177435.088)
    # %BYTES_RECEIVED% (the body; Envoy answered these itself, before reading one)
    create = next(o for o in stats["operations"] if o["operation"] == "createItem")
    assert create["request_bytes"]["max"] == 0


def test_json_lines_of_several_servers(shop: Api) -> None:
    result = imported(shop, "json.log")
    assert result.format == "json"
    assert ops(result) == {"getItem": 2, "createItem": 1, "getMe": 1}
    assert result.skips.by_reason == {"not JSON": 2, "no request": 1}
    assert [line for _, line, _ in result.skips.shown] == [4, 6, 7]
    assert result.stats is not None
    # Traefik's Duration is in ns and its StartUTC is the start: no shift
    assert result.stats.last == pytest.approx(1769860802.5)


def test_har_entries(shop: Api) -> None:
    result = imported(shop, "session.har")
    assert result.format == "har"
    assert ops(result) == {"getItem": 2, "listItems": 1, "createItem": 1, "putImage": 1}
    # the page's script from its CDN is no request to the API: left out, said so
    assert result.skips.shown == [
        (
            "session.har",
            0,
            "/log/entries/3: a request to cdn.example, not to shop.example (the host most "
            "requests went to)",
        ),
        ("session.har", 0, "/log/entries/5: no startedDateTime (ISO 8601)"),
    ]
    stats = import_stats(result)
    assert stats["unmatched"] == []
    assert stats["arrivals"]["inter_arrival_s"]["p50"] > 0


def test_gzip_and_rotated_files_in_any_order(shop: Api, tmp_path: Path) -> None:
    lines = (TRAFFIC / "combined.log").read_bytes().splitlines(keepends=True)
    (tmp_path / "access.log").write_bytes(b"".join(lines[7:]))
    with gzip.open(tmp_path / "access.log.1.gz", "wb") as f:
        f.write(b"".join(lines[:7]))
    split = imported(shop, tmp_path / "access.log", tmp_path / "access.log.1.gz")
    whole = imported(shop, "combined.log")
    assert import_stats(split)["operations"] == import_stats(whole)["operations"]
    assert split.files == ["access.log", "access.log.1.gz"]
    # the later file's bad line keeps its own line number
    assert split.skips.shown == [("access.log", 4, "not in the combined format")]


def test_a_truncated_gzip_keeps_what_it_holds_with_a_warning(shop: Api, tmp_path: Path) -> None:
    rng = random.Random(5)
    line = '192.0.2.{a} - - [31/Jan/2026:12:00:{s:02d} +0000] "GET /api/items/{i} HTTP/1.1" 200 {b} "-" "-"\n'
    text = "".join(
        line.format(
            a=rng.randrange(256), s=n // 5000, i=rng.randrange(10**6), b=rng.randrange(10**5)
        )
        for n in range(50_000)
    )
    data = gzip.compress(text.encode())
    (tmp_path / "cut.log.gz").write_bytes(data[: len(data) // 2])
    result = imported(shop, tmp_path / "cut.log.gz")
    assert result.stats is not None and 10_000 < result.stats.read < 50_000
    [warning] = result.warnings
    assert warning.severity == "warning" and warning.source == "cut.log.gz"
    assert warning.message.startswith("the gzip stream ends before its end marker, after line ")
    assert warning.line == result.stats.read + result.skips.count + 1


def test_a_corrupt_gzip_is_a_located_error(shop: Api, tmp_path: Path) -> None:
    data = bytearray(gzip.compress((TRAFFIC / "combined.log").read_bytes()))
    data[20:40] = b"\xff" * 20
    (tmp_path / "bad.log.gz").write_bytes(bytes(data))
    with pytest.raises(TrafficError) as err:
        imported(shop, tmp_path / "bad.log.gz", format="combined")
    [problem] = err.value.problems
    assert problem.source == "bad.log.gz"
    assert problem.message.startswith("the gzip stream is corrupt at its start (Error -3 ")


def test_lines_in_no_known_format_are_refused_naming_the_first(shop: Api, tmp_path: Path) -> None:
    (tmp_path / "odd.log").write_text("Jan 31 12:00:00 host sshd[1]: Accepted key\n" * 3)
    with pytest.raises(TrafficError) as err:
        imported(shop, tmp_path / "odd.log")
    [problem] = err.value.problems
    assert (problem.source, problem.line) == ("odd.log", 1)
    assert problem.message.startswith("the lines are in no format gatebench knows")
    assert "--log-format" in problem.message


def test_most_lines_outside_the_format_given_is_an_error(shop: Api) -> None:
    with pytest.raises(TrafficError) as err:
        imported(shop, "json.log", format="combined")
    assert "most lines do not fit the combined format" in err.value.problems[0].message


def test_nothing_to_replay_says_why(shop: Api, tmp_path: Path) -> None:
    """A log without the description's base path (written behind a gateway that strips
    ``/api``) matches nothing: the error names the requests most often unmatched and what they
    lack; a log whose every operation is left out says why the first was."""
    lines = re.sub(r'"([A-Z]+) /api/', r'"\1 /', (TRAFFIC / "combined.log").read_text())
    (tmp_path / "stripped.log").write_text(lines)
    with pytest.raises(TrafficError) as err:
        imported(shop, tmp_path / "stripped.log")
    [problem] = err.value.problems
    assert problem.source == "stripped.log"
    assert problem.message.startswith("no operation of the description is left to replay (")
    assert "0 matched; most often unmatched: GET /items" in problem.message
    assert problem.message.endswith(
        "the description's paths start with /api (its server URL) and the logged ones do not; "
        "import a log of what clients send"
    )
    (tmp_path / "other.log").write_text(re.sub(r'"([A-Z]+) /', r'"\1 /elsewhere/', lines))
    with pytest.raises(TrafficError) as err:
        imported(shop, tmp_path / "other.log", format="combined")
    assert "most often unmatched: GET /elsewhere/" in err.value.problems[0].message
    assert "/api" not in err.value.problems[0].message
    with pytest.raises(TrafficError) as err:
        imported(shop, "combined.log", min_requests=10**6)
    assert (
        "matched): every operation matched was left out, such as " in err.value.problems[0].message
    )
    assert err.value.problems[0].message.endswith("fewer than --min-requests 1000000")


def test_a_har_that_is_not_json_is_located(shop: Api) -> None:
    with pytest.raises(TrafficError) as err:
        imported(shop, "not_json.har")
    assert err.value.problems[0].format() == ("not_json.har:1: error: /: not JSON: Expecting value")
    with pytest.raises(TrafficError) as err:
        imported(shop, "truncated.har")
    assert err.value.problems[0].message.startswith("not JSON: Unterminated string")


def test_a_line_without_end_is_skipped_in_bounded_memory() -> None:
    """A 64 MB 'line' (no newline) costs a few chunks of memory (4 MB each), whatever its
    length, and is a counted skip with its line number."""

    class Endless(io.RawIOBase):
        def __init__(self, size: int) -> None:
            self.left = size

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
            n = min(len(buffer), self.left)
            buffer[:n] = b"a" * n
            self.left -= n
            if self.left == 0 and n == 0:
                return 0
            return n

    stream = io.BufferedReader(Endless(64 * 1024 * 1024))
    skips, warnings = Skips(), []
    tracemalloc.start()
    chunks = list(read_chunks(stream, "huge.log", skips, warnings))  # type: ignore[arg-type]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert chunks == []
    assert skips.shown == [("huge.log", 1, "a line longer than 65,536 bytes")]
    assert peak < 16 * 1024 * 1024


def test_columns_and_lines_read_the_same(shop: Api) -> None:
    """The columnar reader (every field cut by C-level maps) and the line-by-line one agree
    on every built-in format."""
    for name, text in (
        ("combined", (TRAFFIC / "combined.log").read_bytes()),
        ("combined+time", (TRAFFIC / "combined_time.log").read_bytes()),
        ("envoy", (TRAFFIC / "envoy.log").read_bytes()),
    ):
        fmt = builtin(name)
        lines = [line for line in text.splitlines(keepends=True) if line.count(b'"') == fmt.quotes]
        data = b"".join(lines)
        fast = columns_of(fmt, data)
        slow = columns_by_line(fmt, Chunk(1, data), "x", Skips())
        assert fast.request == slow.request, name
        assert fast.arrival == pytest.approx(slow.arrival), name
        assert fast.status == slow.status, name
        assert (fast.size is None) == (slow.size is None)


def test_a_chunk_with_a_stray_quote_is_read_line_by_line() -> None:
    fmt = builtin("combined")
    data = (TRAFFIC / "combined.log").read_bytes()
    skips = Skips()
    cols = read_columns(fmt, Chunk(1, data), "combined.log", skips)
    assert len(cols) == 13 and skips.count == 1


def test_a_template_without_a_time_or_request_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no time \(\$time_local"):
        compile_format("nginx", '$remote_addr "$request" $status')
    with pytest.raises(ValueError, match="no request"):
        compile_format("nginx", "[$time_local] $status")


def test_the_busiest_window_and_a_window_by_times(shop: Api, tmp_path: Path) -> None:
    template = '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET /api/items/{i} HTTP/1.1" 200 1 "-" "-"\n'
    rates = [1, 1, 5, 9, 2, 1, 1, 1]
    text = "".join(template.format(s=s, i=s) for s, n in enumerate(rates) for _ in range(n))
    (tmp_path / "a.log").write_text(text)
    busiest = imported(shop, tmp_path / "a.log", window=Window(busiest=2.0))
    workload = busiest.plan.section["workloads"][0]
    assert workload["injection"]["arrivals"]["counts"] == [5, 9]
    # the import says which window it chose (it named none)
    from gatebench.core.traffic._summary import describe_import

    assert (
        "replays 2026-01-31 12:00:02 → 2026-01-31 12:00:04 UTC, the busiest window: 14 requests "
        "of those read" in describe_import(busiest)
    )
    start = 1769860800.0
    cut = imported(shop, tmp_path / "a.log", window=Window(start=start + 2, end=start + 4))
    assert cut.plan.section["workloads"][0]["injection"]["arrivals"]["counts"] == [5, 9]
    assert cut.stats is not None and cut.stats.outside == sum(rates) - 14


def test_unmatched_paths_are_shown_by_shape() -> None:
    assert path_shape("/users/123/orders/4f6c1e2a-8b5d-4c3e-9a7f-1b2c3d4e5f60") == (
        "/users/{n}/orders/{uuid}"
    )
    assert path_shape("/files/a1b2c3d4e5f6a7b8c9d0") == "/files/{id}"
    assert path_shape("/static/app.js") == "/static/app.js"
    # matrix parameters cut; what is neither the description's nor a short plain word hidden
    assert path_shape("/v2/cart;jsessionid=A1B2C3D4E5F6A7B8C9D0E1F2") == "/v2/cart"
    assert path_shape("/users/john.smith@example.com/reset/pw-SuperSecretPassword") == (
        "/users/{x}/reset/{x}"
    )
    assert path_shape("/login/alice:hunter2") == "/login/{x}"
    assert path_shape("/Login/Alice", frozenset({"Login"})) == "/Login/{x}"


def test_a_json_line_nested_too_deep_or_too_long_is_a_counted_skip(
    shop: Api, tmp_path: Path
) -> None:
    good = (TRAFFIC / "json.log").read_text().splitlines()[1]
    deep = "[" * 60_000 + "]" * 60_000
    lines = [good, good, good, "[" * 1000 + "]" * 1000, deep, good]
    (tmp_path / "j.log").write_text("\n".join(lines) + "\n")
    result = imported(shop, tmp_path / "j.log", format="json")
    assert result.stats is not None and result.stats.read == 4
    assert result.skips.shown == [
        ("j.log", 4, "a JSON value nested too deep"),
        ("j.log", 5, "a line longer than 65,536 bytes"),
    ]
