"""What a log's writer controls cannot reach the plan's structure, the console or the
``--stats`` file as anything but escaped text: a query parameter's name or a status with a line
break (``\\r``, NEL, U+2028) or a terminal escape stays inside its comment, and a plan that
would read back as other workloads than those built is refused before it is written. And the
import says what it replays: the busiest window of the requests it can replay, recorded in
``traffic:``; no step finer than the log's times; no time gatebench cannot write; the URLs of
HAR files and JSON logs as clients send them (UTF-8, percent-encoded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatebench.core.errors import TrafficError
from gatebench.core.ir import Api
from gatebench.core.plan import build_plan
from gatebench.core.plan._describe import describe_plan
from gatebench.core.spec import load_spec
from gatebench.core.traffic import ImportOptions, TrafficImport, Window, _yaml, import_traffic
from gatebench.core.traffic._summary import describe_import, import_stats
from paths import DATA

PETS = """\
openapi: 3.0.3
info: {title: Pets, version: "1"}
servers: [{url: "http://localhost/v1"}]
paths:
  /pets/mine:
    get:
      operationId: myPets
      responses: {"200": {description: ok}}
  /pets/{id}:
    get:
      operationId: getPet
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"200": {description: ok}}
    delete:
      operationId: deletePet
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"204": {description: ok}}
  /caf%C3%A9:
    get:
      operationId: cafe
      responses: {"200": {description: ok}}
"""
EVIL = "    - {name: evil, operation: deletePet, injection: {concurrent: 1, requests: 5}}"
COMBINED = '192.0.2.1 - - [31/Jan/2026:12:00:{s:02d} +0000] "GET {target} HTTP/1.1" 200 1 "-" "-"\n'
LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


@pytest.fixture(scope="module")
def pets(tmp_path_factory: pytest.TempPathFactory) -> Api:
    spec = tmp_path_factory.mktemp("spec") / "api.yaml"
    spec.write_text(PETS, encoding="utf-8")
    api = load_spec(spec).api
    assert api is not None
    return api


def imported(api: Api, path: Path, **options: object) -> TrafficImport:
    return import_traffic(api, [path], ImportOptions(**options), spec_ref=None)  # type: ignore[arg-type]


def json_lines(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def read_back(text: str) -> list[str]:
    """The workloads' names as ``gatebench run`` reads the plan file."""
    from gatebench.core.spec import DEFAULT_LIMITS
    from gatebench.core.spec._yaml import load_yaml

    data, _ = load_yaml(text, "plan", DEFAULT_LIMITS)
    return [w["name"] for w in data["x-gatebench"]["workloads"]]


def one_line_each(lines: list[str]) -> None:
    for line in lines:
        assert not any(c in line for c in LINE_BREAKS), line
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line), line


def test_one_line_escapes_every_line_break_and_control() -> None:
    from gatebench.core.traffic._yaml import one_line

    text = "a" + "b".join(LINE_BREAKS) + "\x1b[31m\u202e\x07z"
    shown = one_line(text)
    assert shown.splitlines() == [shown]
    one_line_each([shown])
    assert shown == (
        "a\\nb\\rb\\x0bb\\x0cb\\x1cb\\x1db\\x1eb\\x85b\\u2028b\\u2029\\x1b[31m\\u202e\\x07z"
    )


@pytest.mark.parametrize(
    ("name", "records"),
    [
        # a query parameter's name, decoded: %0D (CR) and %85 (NEL) end a YAML comment
        (
            "cr.log",
            COMBINED.format(s=0, target="/v1/pets/mine?%0D" + EVIL.replace(" ", "%20") + "%0D%23=1"),
        ),
        (
            "nel.jsonl",
            [{"time": "2026-01-31T12:00:00Z", "method": "GET", "status": 200,
              "uri": "/v1/pets/mine?%85" + EVIL.replace(" ", "%20") + "%85%23=1"}],
        ),
        # a JSON log's status: U+2028, and controls YAML refuses to read (a terminal escape)
        (
            "ls.jsonl",
            [{"time": "2026-01-31T12:00:00Z", "method": "GET", "uri": "/v1/pets/mine",
              "status": "200\u2028" + EVIL + "\u2028#"}],
        ),
        (
            "ctrl.jsonl",
            [{"time": "2026-01-31T12:00:00Z", "method": "GET", "uri": "/v1/pets/mine",
              "status": "2\x070\x1b[31m0"}],
        ),
    ],
)  # fmt: skip
def test_a_log_line_cannot_add_to_the_plan_or_the_console(
    pets: Api, tmp_path: Path, name: str, records: str | list[dict[str, object]]
) -> None:
    path = tmp_path / name
    if isinstance(records, str):
        path.write_text(records, encoding="utf-8")
    else:
        json_lines(path, records)
    result = imported(pets, path)
    text = result.text("gatebench import api.yaml " + name)
    assert read_back(text) == ["myPets"]
    assert text.splitlines() == text.split("\n")[:-1]  # no line break but "\n"
    one_line_each(text.splitlines())
    one_line_each(describe_import(result))
    one_line_each(result.plan.notes + [why for _, why in result.plan.left_out])


def test_a_jmeter_sampler_cannot_add_to_the_plan(tmp_path: Path) -> None:
    shop = load_spec(DATA / "traffic" / "shop.yaml").api
    assert shop is not None
    original = (DATA / "traffic" / "jmx" / "sampler_arguments.jmx").read_text(encoding="utf-8")
    found = '<stringProp name="HTTPSampler.path">/api/items</stringProp>'
    assert found in original
    evil = EVIL.replace("deletePet", "createItem")
    (tmp_path / "evil.jmx").write_text(
        original.replace(
            found,
            f'<stringProp name="HTTPSampler.path">/api/items?x=&#13;{evil}&#13;#</stringProp>',
        ),
        encoding="utf-8",
    )
    result = imported(shop, tmp_path / "evil.jmx")
    text = result.text("gatebench import shop.yaml evil.jmx")
    assert read_back(text) == ["listItems", "createItem"]
    one_line_each(text.splitlines())


def test_a_plan_that_reads_back_as_other_workloads_is_refused(
    pets: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard: were a line break to slip through a comment, nothing is written."""
    path = tmp_path / "cr.log"
    path.write_text(
        COMBINED.format(s=0, target="/v1/pets/mine?%0A" + EVIL.replace(" ", "%20") + "%0A%23=1")
    )
    result = imported(pets, path)
    monkeypatch.setattr(_yaml, "one_line", lambda text, limit=0: text)
    with pytest.raises(TrafficError) as err:
        result.text("gatebench import api.yaml cr.log")
    [problem] = err.value.problems
    assert problem.message.startswith(
        "the plan as written reads back as 2 workloads (evil, myPets), not the 1 built (myPets); "
        "nothing written"
    )
    # a comment YAML cannot read (a control character) is refused too
    result.plan.comments["myPets"].append("statuses: 2\x070")
    with pytest.raises(TrafficError) as err:
        result.text("gatebench import api.yaml cr.log")
    assert err.value.problems[0].message.startswith("the plan as written does not read back (")


def busy(tmp_path: Path) -> Path:
    """150 health checks and 5 requests of myPets in the first 5 seconds; 100 of getPet and
    10 of myPets from second 30 to 39."""
    lines = [(s, "/healthz") for s in range(5) for _ in range(30)]
    lines += [(s, "/v1/pets/mine") for s in range(5)]
    lines += [(30 + s, f"/v1/pets/{s}") for s in range(10) for _ in range(10)]
    lines += [(30 + s, "/v1/pets/mine") for s in range(10)]
    (tmp_path / "busy.log").write_text(
        "".join(COMBINED.format(s=s, target=t) for s, t in sorted(lines))
    )
    return tmp_path / "busy.log"


def test_the_busiest_window_is_chosen_by_the_requests_it_replays(pets: Api, tmp_path: Path) -> None:
    result = imported(pets, busy(tmp_path), window=Window(busiest=5.0))
    counts = {
        w["operation"]: w["injection"]["arrivals"]["counts"]
        for w in result.plan.section["workloads"]
    }
    assert counts == {"getPet": [10] * 5, "myPets": [1] * 5}


def test_the_traffic_section_says_which_window_is_replayed(pets: Api, tmp_path: Path) -> None:
    result = imported(pets, busy(tmp_path), window=Window(busiest=5.0))
    assert result.plan.section["traffic"] == {
        "files": ["busy.log"],
        "format": "combined",
        "requests": 55,
        "matched": 55,
        "start": "2026-01-31T12:00:30Z",
        "end": "2026-01-31T12:00:35Z",
    }
    plan = build_plan(result.plan.section, pets)
    assert (
        "  traffic:     replayed from busy.log (combined, 2026-01-31T12:00:30Z to "
        "2026-01-31T12:00:35Z): 55 read, 55 (100.0 %) matched" in describe_plan(plan, pets)
    )
    # the whole log: what it holds
    whole = imported(pets, tmp_path / "busy.log").plan.section["traffic"]
    assert (whole["requests"], whole["matched"]) == (265, 115)
    assert (whole["start"], whole["end"]) == ("2026-01-31T12:00:00Z", "2026-01-31T12:00:39Z")


def test_a_step_finer_than_the_logs_times_is_refused(pets: Api, tmp_path: Path) -> None:
    path = tmp_path / "sec.log"
    path.write_text(
        "".join(COMBINED.format(s=s, target="/v1/pets/mine") for s in range(3) for _ in range(10))
    )
    with pytest.raises(TrafficError) as err:
        imported(pets, path, step=0.1)
    [problem] = err.value.problems
    assert problem.source == "sec.log"
    assert problem.message.startswith(
        "--step 100ms is finer than the times in the files, which are to the second: choose "
        "--step 1s or more"
    )
    assert imported(pets, path, step=2.0).plan.section["workloads"]


def test_unmatched_paths_show_no_session_email_or_password(pets: Api, tmp_path: Path) -> None:
    targets = [
        "/v1/pets/mine",
        "/v1/cart;jsessionid=A1B2C3D4E5F6A7B8C9D0E1F2",
        "/v1/users/john.smith@example.com/reset/pw-SuperSecretPassword",
        "/v1/login/alice:hunter2",
        "/v1/static/app.js",
    ]
    path = tmp_path / "leak.log"
    path.write_text("".join(COMBINED.format(s=0, target=t) for t in targets))
    result = imported(pets, path)
    shown = {u["path"] for u in import_stats(result)["unmatched"]}
    assert shown == {"/v1/cart", "/v1/users/{x}/reset/{x}", "/v1/login/{x}", "/v1/static/app.js"}
    said = "\n".join(describe_import(result)) + json.dumps(import_stats(result))
    for secret in ("A1B2", "jsessionid", "john", "Secret", "alice", "hunter2"):
        assert secret not in said


@pytest.mark.parametrize(("unit", "digits"), [(1e6, 16), (1e9, 19)])
def test_epoch_times_in_microseconds_and_nanoseconds(
    pets: Api, tmp_path: Path, unit: float, digits: int
) -> None:
    start = 1769860800123456789 // 10 ** (19 - digits)  # 2026-01-31T12:00:00.123456789Z
    records = [
        {"ts": start + i * round(unit), "method": "GET", "uri": "/v1/pets/mine", "status": 200}
        for i in range(3)
    ]
    result = imported(pets, json_lines(tmp_path / "t.jsonl", records))
    assert result.stats is not None and result.skips.count == 0
    assert result.stats.first == pytest.approx(1769860800.123456)
    assert result.plan.section["traffic"]["start"] == "2026-01-31T12:00:00Z"


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00", -1])
def test_a_time_out_of_range_is_a_located_skip(pets: Api, tmp_path: Path, ts: object) -> None:
    good = {"ts": "2026-01-31T12:00:01Z", "method": "GET", "uri": "/v1/pets/mine", "status": 200}
    result = imported(pets, json_lines(tmp_path / "t.jsonl", [good, {**good, "ts": ts}, good]))
    assert result.stats is not None and result.stats.read == 2
    [(source, line, said)] = result.skips.shown
    assert (source, line) == ("t.jsonl", 2)
    assert said == f"a time out of range ({ts}): before 1970 or after 9999"


@pytest.mark.parametrize("year", ["01/Jan/0001:00:00:00 +0100", "31/Dec/9999:23:59:59 -0100"])
def test_a_log_of_times_out_of_range_is_a_located_error(
    pets: Api, tmp_path: Path, year: str
) -> None:
    path = tmp_path / "y.log"
    path.write_text(
        COMBINED.replace("31/Jan/2026:12:00:{s:02d} +0000", year).format(target="/v1/pets/mine")
    )
    with pytest.raises(TrafficError) as err:
        imported(pets, path)
    [problem] = err.value.problems
    assert (problem.source, problem.line) == ("y.log", 1)
    assert problem.message == (
        f"no request left to import: 1 line skipped, the first: a time out of range ({year}): "
        "before 1970 or after 9999"
    )


def test_non_ascii_urls_match_as_clients_send_them(pets: Api, tmp_path: Path) -> None:
    har = {
        "log": {
            "version": "1.2",
            "entries": [
                {
                    "startedDateTime": "2026-01-31T12:00:00.000Z",
                    "request": {"method": "GET", "url": "https://api.example.com/v1/café"},
                    "response": {"status": 200},
                },
                {
                    "startedDateTime": "2026-01-31T12:00:00.500Z",
                    "request": {"method": "GET", "url": "https://api.example.com/v1/thé"},
                    "response": {"status": 200},
                },
            ],
        }
    }
    (tmp_path / "s.har").write_text(json.dumps(har, ensure_ascii=False), encoding="utf-8")
    result = imported(pets, tmp_path / "s.har")
    assert [o["operation"] for o in import_stats(result)["operations"]] == ["cafe"]
    assert [u["path"] for u in import_stats(result)["unmatched"]] == ["/v1/{x}"]
    path = json_lines(
        tmp_path / "c.jsonl",
        [{"time": "2026-01-31T12:00:00Z", "method": "GET", "uri": "/v1/café", "status": 200}],
    )
    assert [o["operation"] for o in import_stats(imported(pets, path))["operations"]] == ["cafe"]


def test_a_window_without_requests_says_what_the_files_hold(pets: Api, tmp_path: Path) -> None:
    start = 1577836800.0  # 2020-01-01
    with pytest.raises(TrafficError) as err:
        imported(pets, busy(tmp_path), window=Window(start=start, end=start + 86400))
    assert err.value.problems[0].message == (
        "no request in the window: the 265 requests read span 2026-01-31T12:00:00Z to "
        "2026-01-31T12:00:39Z; choose a --window within that span"
    )


def test_one_stray_line_decades_away_coarsens_the_curve(pets: Api, tmp_path: Path) -> None:
    """A line of 1970 in a log of 2026 (epoch 0: a clock not yet set) would make the curve 1.7
    billion steps long, which every reader walks: its step doubles until it spans at most
    MAX_CURVE steps, and the import says so."""
    good = {"time": "2026-01-31T12:00:01Z", "method": "GET", "uri": "/v1/pets/mine"}
    stray = {**good, "time": "1970-01-01T00:00:01Z"}
    result = imported(pets, json_lines(tmp_path / "t.jsonl", [stray, good, good]))
    assert result.stats is not None and result.stats.step == 1024.0
    assert any(
        n.startswith(
            "the traffic spans more steps than gatebench keeps in memory: its curve is kept at "
            "1024s steps"
        )
        for n in result.plan.notes
    )


def test_har_entries_to_other_hosts_are_left_out_and_said(pets: Api, tmp_path: Path) -> None:
    """A page's HAR holds its CDN and analytics too: only the host most requests went to is
    the API's traffic; the others are counted and named, not matched (a CDN's /v1/pets/mine is
    no request to the API)."""

    def entry(url: str, ms: int) -> dict[str, object]:
        return {
            "startedDateTime": f"2026-01-31T12:00:00.{ms:03d}Z",
            "request": {"method": "GET", "url": url},
            "response": {"status": 200},
        }

    urls = ["https://api.example.com/v1/pets/mine", "https://api.example.com/v1/pets/1"] * 2
    urls += ["https://cdn.thirdparty.com/v1/pets/mine", "data:image/png;base64,iVBORw0KGgo="]
    har = {"log": {"version": "1.2", "entries": [entry(u, i) for i, u in enumerate(urls)]}}
    (tmp_path / "s.har").write_text(json.dumps(har), encoding="utf-8")
    result = imported(pets, tmp_path / "s.har")
    stats = import_stats(result)
    assert {o["operation"]: o["requests"] for o in stats["operations"]} == {
        "myPets": 2,
        "getPet": 2,
    }
    assert stats["unmatched"] == []
    assert result.skips.shown == [
        (
            "s.har",
            0,
            "/log/entries/4: a request to cdn.thirdparty.com, not to api.example.com (the host "
            "most requests went to)",
        ),
        ("s.har", 0, "/log/entries/5: not an HTTP request (data: URL)"),
    ]
